"""The artifacts' schema: file names of a run directory by mode, and the aggregate and
spending columns. The round record (its fields, types and schema version) is owned by
`pdbench.storage.record`; its names are re-exported here for the artifact writers.
"""

from __future__ import annotations

from typing import Any

from pdbench.core.exact import EXACT_COLUMN, IDENTICAL_COLUMN
from pdbench.core.metrics import (
    AGGREGATE_COLUMNS,
    CLIPPED_COLUMN,
    CONDITION_FLAGS,
    COUNT_COLUMNS,
    interval_columns,
)
from pdbench.storage.record.fields import (
    AGGREGATE_INPUT_FIELDS,
    CUM_FIELDS,
    LLM_FIELDS,
    ROUND_FIELD_TYPES,
    ROUND_FIELDS,
    SCHEMA_VERSION,
    GameKey,
    RoundValues,
    SchemaVersionError,
    check_version,
    rounds_arrow_schema,
)

__all__ = [
    "AGGREGATE_INPUT_FIELDS",
    "CUM_FIELDS",
    "LLM_FIELDS",
    "ROUND_FIELD_TYPES",
    "ROUND_FIELDS",
    "SCHEMA_VERSION",
    "GameKey",
    "RoundValues",
    "SchemaVersionError",
    "check_version",
    "rounds_arrow_schema",
]

PARQUET_VERSION_KEY = b"pdbench.schema_version"

# Files of a run directory, by mode.
ROUNDS_FILE = "rounds.jsonl"
ROUNDS_COLUMNS_DIR = "rounds"  # the same rounds in columns (Parquet parts)
CALLS_FILE = "llm_calls.jsonl"
MANIFEST_FILE = "run_manifest.json"
AGGREGATES_FILE = "aggregates.parquet"
TOURNAMENT_MANIFEST_FILE = "tournament_manifest.json"
MATCHES_FILE = "matches.parquet"
LEADERBOARD_FILE = "leaderboard.parquet"
PAYOFF_MATRIX_FILE = "payoff_matrix.parquet"
EVOLUTION_MANIFEST_FILE = "evolution_manifest.json"
GENERATIONS_FILE = "generations.parquet"
GROUPS_MANIFEST_FILE = "groups_manifest.json"
SEATS_FILE = "seats.parquet"  # groups: per condition and seat
FIXATION_FILE = "fixation.parquet"  # evolution.seeds > 1: fixation share per type over seeds
GROUP_TOURNAMENT_MANIFEST_FILE = "group_tournament_manifest.json"
GROUP_GAMES_FILE = "groups.parquet"  # group tournaments: one row per game
GROUP_EVOLUTION_MANIFEST_FILE = "group_evolution_manifest.json"
PAYOFF_TABLE_FILE = "payoff_table.parquet"  # group evolution: payoffs by group composition
PGG_MANIFEST_FILE = "pgg_manifest.json"  # public goods games with contributions (issue 31)
COMMONS_MANIFEST_FILE = "commons_manifest.json"  # a commons (GovSim's fishery)
RESOURCE_ROUNDS_FILE = "resource_rounds.parquet"  # pgg, commons: per condition and round
RESOURCE_SEATS_FILE = "resource_seats.parquet"  # pgg, commons: per condition and seat
LOCK_FILE = ".pdbench.lock"  # held by the process using a run directory

MANIFEST_FILES: dict[str, str] = {
    "experiment": MANIFEST_FILE,
    "tournament": TOURNAMENT_MANIFEST_FILE,
    "evolution": EVOLUTION_MANIFEST_FILE,
    "groups": GROUPS_MANIFEST_FILE,
    "group_tournament": GROUP_TOURNAMENT_MANIFEST_FILE,
    "group_evolution": GROUP_EVOLUTION_MANIFEST_FILE,
    "pgg": PGG_MANIFEST_FILE,
    "commons": COMMONS_MANIFEST_FILE,
}
ARTIFACTS: dict[str, tuple[str, ...]] = {
    "experiment": (ROUNDS_FILE, MANIFEST_FILE, AGGREGATES_FILE, CALLS_FILE, ROUNDS_COLUMNS_DIR),
    "tournament": (
        TOURNAMENT_MANIFEST_FILE,
        MATCHES_FILE,
        LEADERBOARD_FILE,
        PAYOFF_MATRIX_FILE,
        ROUNDS_FILE,
        CALLS_FILE,
        ROUNDS_COLUMNS_DIR,
    ),
    "evolution": (
        EVOLUTION_MANIFEST_FILE,
        GENERATIONS_FILE,
        FIXATION_FILE,
        ROUNDS_FILE,
        CALLS_FILE,
        ROUNDS_COLUMNS_DIR,
    ),
    "groups": (GROUPS_MANIFEST_FILE, ROUNDS_FILE, AGGREGATES_FILE, SEATS_FILE, CALLS_FILE),
    "group_tournament": (
        GROUP_TOURNAMENT_MANIFEST_FILE,
        GROUP_GAMES_FILE,
        LEADERBOARD_FILE,
        ROUNDS_FILE,
        CALLS_FILE,
    ),
    "group_evolution": (
        GROUP_EVOLUTION_MANIFEST_FILE,
        PAYOFF_TABLE_FILE,
        GENERATIONS_FILE,
        FIXATION_FILE,
        ROUNDS_FILE,
        CALLS_FILE,
    ),
    "pgg": (
        PGG_MANIFEST_FILE,
        ROUNDS_FILE,
        AGGREGATES_FILE,
        RESOURCE_ROUNDS_FILE,
        RESOURCE_SEATS_FILE,
        CALLS_FILE,
    ),
    "commons": (
        COMMONS_MANIFEST_FILE,
        ROUNDS_FILE,
        AGGREGATES_FILE,
        RESOURCE_ROUNDS_FILE,
        RESOURCE_SEATS_FILE,
        CALLS_FILE,
    ),
}


# LLM usage columns appended to aggregates.parquet (from llm_calls.jsonl; null for policy
# agents): the replies a game used, their tokens and price, however they were served.
USAGE_FIELDS: tuple[str, ...] = (
    "llm_calls",
    "input_tokens",
    "output_tokens",
    "cost_usd",
)
USAGE_COLUMNS: tuple[str, ...] = tuple(
    f"agent_{side}_{name}" for side in ("a", "b") for name in USAGE_FIELDS
)


def aggregates_arrow_schema() -> Any:
    """The pyarrow schema of aggregates.parquet."""
    import pyarrow as pa

    types_: dict[str, Any] = {
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
    columns = AGGREGATE_COLUMNS + USAGE_COLUMNS
    intervals = [
        f"{name}_{end}"
        for name in (*interval_columns(columns), "cooperation_rate_over_time")
        for end in ("ci_low", "ci_high")
    ]
    types_[CLIPPED_COLUMN] = pa.string()
    types_[EXACT_COLUMN] = types_[IDENTICAL_COLUMN] = pa.bool_()
    types_["cooperation_rate_over_time_ci_low"] = pa.string()
    types_["cooperation_rate_over_time_ci_high"] = pa.string()
    for name in COUNT_COLUMNS:
        types_[name] = pa.int64()
    return pa.schema(
        [
            (name, types_.get(name, pa.float64()))
            for name in (*columns, *intervals, *CONDITION_FLAGS)
        ]
    )
