"""Loading configs: `loader` (the entry point, `load_config`), `resolve` (reading YAML and expanding refs, remembering where each value
came from), `validation` (pydantic errors as one-line issues) and `agent_checks` (what pydantic
cannot check about an agent). The models themselves are `pdbench.core.config`."""
