"""The round record, owned in one place: its fields and types (`fields`), rounds.jsonl's
encoder, ordered writer and resume reader (`jsonl`), the columnar parts under `rounds/`
(`columns`, written by `writer`), the readers every command uses (`reader`), and the check of a
shard's records against the plan (`shard_check`). No module outside this package spells a
record field (tests/unit/test_record_fields.py)."""
