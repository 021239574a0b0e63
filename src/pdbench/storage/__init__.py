"""Artifacts on disk: rounds.jsonl, run_manifest.json, aggregates.parquet."""
