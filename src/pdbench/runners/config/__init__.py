"""Loading configs: `loader` (the entry points: `load_config` for a file, `load_mapping` for a
mapping such as the app's forms, with the same messages), `resolve` (reading YAML and expanding
refs, remembering where each value came from), `validation` (pydantic errors as one-line
issues) and `agent_checks` (what pydantic cannot check about an agent). The models themselves
are `pdbench.core.config`."""
