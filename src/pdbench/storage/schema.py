"""The artifacts' schema, in one place: file names, the rounds.jsonl record, the aggregate and
spending columns, and the schema version every artifact carries.

A rounds.jsonl record is a `GameKey` (fields constant over a game) followed by `RoundValues`
(fields of one round), then, for LLM agents, `prompts` and `raw_responses`. Every writer builds
records from these two named tuples and every reader takes its field names and types from them,
so a field is spelled here and nowhere else.

`schema_version` is in every rounds record, every manifest and every Parquet file's metadata;
readers refuse a newer version than they know (`check_version`).
"""

from __future__ import annotations

import types
import typing
from typing import Any, NamedTuple

from pdbench.core.metrics import (
    AGGREGATE_COLUMNS,
    CLIPPED_COLUMN,
    COUNT_COLUMNS,
    interval_columns,
)
from pdbench.errors import PdbenchError

SCHEMA_VERSION = 2  # 2: p_cooperate per round and agent, attempt facts
PARQUET_VERSION_KEY = b"pdbench.schema_version"

# Files of a run directory, by mode.
ROUNDS_FILE = "rounds.jsonl"
CALLS_FILE = "llm_calls.jsonl"
MANIFEST_FILE = "run_manifest.json"
AGGREGATES_FILE = "aggregates.parquet"
TOURNAMENT_MANIFEST_FILE = "tournament_manifest.json"
MATCHES_FILE = "matches.parquet"
LEADERBOARD_FILE = "leaderboard.parquet"
PAYOFF_MATRIX_FILE = "payoff_matrix.parquet"
EVOLUTION_MANIFEST_FILE = "evolution_manifest.json"
GENERATIONS_FILE = "generations.parquet"
FIXATION_FILE = "fixation.parquet"  # evolution.seeds > 1: fixation share per type over seeds
LOCK_FILE = ".pdbench.lock"  # held by the process using a run directory

MANIFEST_FILES: dict[str, str] = {
    "experiment": MANIFEST_FILE,
    "tournament": TOURNAMENT_MANIFEST_FILE,
    "evolution": EVOLUTION_MANIFEST_FILE,
}
ARTIFACTS: dict[str, tuple[str, ...]] = {
    "experiment": (ROUNDS_FILE, MANIFEST_FILE, AGGREGATES_FILE, CALLS_FILE),
    "tournament": (
        TOURNAMENT_MANIFEST_FILE,
        MATCHES_FILE,
        LEADERBOARD_FILE,
        PAYOFF_MATRIX_FILE,
        ROUNDS_FILE,
        CALLS_FILE,
    ),
    "evolution": (
        EVOLUTION_MANIFEST_FILE,
        GENERATIONS_FILE,
        FIXATION_FILE,
        ROUNDS_FILE,
        CALLS_FILE,
    ),
}


class GameKey(NamedTuple):
    """The fields of a rounds record that are the same for every round of a game."""

    schema_version: int
    run_id: str
    condition: str
    replicate: int
    seed: int
    agent_a_name: str
    agent_b_name: str
    horizon_type: str
    fixed_n: int | None
    stop_prob: float | None


class RoundValues(NamedTuple):
    """The fields of one round: moves played (after noise) and intended, payoffs, totals."""

    round_index: int
    agent_a_action: str
    agent_b_action: str
    agent_a_intended_action: str
    agent_b_intended_action: str
    agent_a_payoff: float
    agent_b_payoff: float
    agent_a_cum_payoff: float
    agent_b_cum_payoff: float
    agent_a_parse_failure: bool
    agent_b_parse_failure: bool
    agent_a_p_cooperate: float | None
    agent_b_p_cooperate: float | None
    timestamp_utc: str


# Present for rounds where an LLM agent played: prompt texts (or hashes) and every reply.
LLM_FIELDS: tuple[str, ...] = ("prompts", "raw_responses")
ROUND_FIELDS: tuple[str, ...] = GameKey._fields + RoundValues._fields

# The columns `pdbench aggregate` reads back from rounds.jsonl.
AGGREGATE_INPUT_FIELDS: tuple[str, ...] = (
    "schema_version",
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
    "agent_a_p_cooperate",
    "agent_b_p_cooperate",
)

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

_ARROW_ALIASES = {int: "int64", str: "string", float: "float64", bool: "bool"}


def _field_types() -> dict[str, str]:
    """Arrow type alias of every scalar record field, from the named tuples' annotations."""
    out: dict[str, str] = {}
    for cls in (GameKey, RoundValues):
        for name, hint in typing.get_type_hints(cls).items():
            args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
            base = next(a for a in args if a is not type(None))
            out[name] = _ARROW_ALIASES[base]
    return out


ROUND_FIELD_TYPES: dict[str, str] = _field_types()


def rounds_arrow_schema(fields: tuple[str, ...] = ROUND_FIELDS) -> Any:
    """The pyarrow schema to read these record fields with (pyarrow is imported only here)."""
    import pyarrow as pa

    return pa.schema([(name, pa.type_for_alias(ROUND_FIELD_TYPES[name])) for name in fields])


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
    types_["cooperation_rate_over_time_ci_low"] = pa.string()
    types_["cooperation_rate_over_time_ci_high"] = pa.string()
    for name in COUNT_COLUMNS:
        types_[name] = pa.int64()
    return pa.schema(
        [(name, types_.get(name, pa.float64())) for name in (*columns, *intervals, CLIPPED_COLUMN)]
    )


class SchemaVersionError(PdbenchError):
    """An artifact written by a newer pdbench than this one."""


def check_version(where: str, version: Any) -> None:
    """Refuse an artifact whose schema_version is newer than this pdbench knows (one line).

    A missing version (None) is an artifact from before versions were recorded: version 0, read.
    """
    if version is None:
        return
    try:
        number = int(version)
    except (TypeError, ValueError):
        raise SchemaVersionError(
            f"{where}: schema_version is not a number (got {version!r})"
        ) from None
    if number > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{where}: written with schema_version {number}, newer than this pdbench reads "
            f"({SCHEMA_VERSION}); upgrade pdbench to read it"
        )
