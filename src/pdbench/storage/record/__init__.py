"""The round record, owned in one place: its fields and types (`fields`), the rounds.jsonl
encoder (`pdbench.storage.rounds`), the columnar parts under `rounds/` (`columns`), and the
readers every command uses (`reader`)."""
