"""Orchestration: loading configs, playing games, keeping run directories, the commands.

- `start`: the front door. The CLI and the app start a run of any kind (experiment, tournament,
  evolution) through `start.start`; `start.plans_for` gives a config's games.
- `plan`: what `validate` and `--dry-run` print, and the tables the commands print after a run.
- `live`: the app's Play tab, a person's game replayed by the engine after every move.
- `config/`: config files (or the app's mappings) in, a validated `LoadedConfig` out.
- `engine/`: the one match engine (vectorized, synchronous and round-by-round speeds), the
  call broker every provider call goes through, and progress reporting.
- `lifecycle/`: one run directory's life (`RunSession`: prepare, play, resume, finish) and
  joining the shards of a run (`merge`).
- `science/`: the commands: experiments, tournaments, evolutions, and the analyses of a
  finished run (`profile`, `compare`).
- `ray/`: the Ray backend, games played as Ray tasks with limits kept across the cluster.
"""
