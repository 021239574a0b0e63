"""The fields of rounds.jsonl and aggregates.parquet, and checks on records read back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pdbench.core.metrics import AGGREGATE_COLUMNS

ROUNDS_FILE = "rounds.jsonl"
MANIFEST_FILE = "run_manifest.json"
AGGREGATES_FILE = "aggregates.parquet"
CALLS_FILE = "llm_calls.jsonl"
ARTIFACTS = (ROUNDS_FILE, MANIFEST_FILE, AGGREGATES_FILE, CALLS_FILE)

# Every rounds.jsonl record has these keys (the spec's minimum plus names, seed, noise and parse flags).
ROUND_FIELDS: tuple[str, ...] = (
    "run_id",
    "condition",
    "replicate",
    "round_index",
    "seed",
    "agent_a_name",
    "agent_b_name",
    "agent_a_action",
    "agent_b_action",
    "agent_a_intended_action",
    "agent_b_intended_action",
    "agent_a_payoff",
    "agent_b_payoff",
    "agent_a_cum_payoff",
    "agent_b_cum_payoff",
    "agent_a_parse_failure",
    "agent_b_parse_failure",
    "horizon_type",
    "fixed_n",
    "stop_prob",
    "timestamp_utc",
)
# Present when configured (LLM agents, store_prompts / store_raw_responses).
OPTIONAL_ROUND_FIELDS: tuple[str, ...] = ("prompts", "raw_responses")

# The columns `pdbench aggregate` reads back from rounds.jsonl.
AGGREGATE_INPUT_FIELDS: tuple[str, ...] = (
    "run_id",
    "condition",
    "replicate",
    "round_index",
    "agent_a_name",
    "agent_b_name",
    "agent_a_action",
    "agent_b_action",
    "agent_a_payoff",
    "agent_b_payoff",
    "agent_a_parse_failure",
    "agent_b_parse_failure",
)

# Spending columns appended to aggregates.parquet (from llm_calls.jsonl; null for policy agents).
USAGE_FIELDS: tuple[str, ...] = (
    "llm_calls",
    "cached_calls",
    "input_tokens",
    "output_tokens",
    "cost_usd",
)
USAGE_COLUMNS: tuple[str, ...] = tuple(
    f"agent_{side}_{name}" for side in ("a", "b") for name in USAGE_FIELDS
)

__all__ = ["AGGREGATE_COLUMNS", "ROUND_FIELDS", "USAGE_COLUMNS", "missing_round_fields"]


def missing_round_fields(record: Mapping[str, Any]) -> list[str]:
    """Required fields absent from one rounds.jsonl record."""
    return [name for name in ROUND_FIELDS if name not in record]


def aggregates_arrow_schema() -> Any:
    """The pyarrow schema of aggregates.parquet (pyarrow is imported only here)."""
    import pyarrow as pa

    types: dict[str, Any] = {
        "run_id": pa.string(),
        "condition": pa.string(),
        "scope": pa.string(),
        "replicate": pa.int64(),
        "n_replicates": pa.int64(),
        "n_rounds": pa.float64(),
        "agent_a_name": pa.string(),
        "agent_b_name": pa.string(),
        "cooperation_rate_over_time": pa.string(),
    }
    return pa.schema(
        [(name, types.get(name, pa.float64())) for name in AGGREGATE_COLUMNS + USAGE_COLUMNS]
    )
