"""A run directory's life: `session` (prepare or resume, play, write the manifest, finish, for
every kind of run) and `merge` (join the shards of an experiment into one run directory)."""
