"""The round record's fields, types and schema version: spelled here and nowhere else.

A rounds record is a `GameKey` (fields constant over a game) followed by `RoundValues`
(fields of one round), then, for LLM agents, `prompts` and `raw_responses`. Every writer builds
records from these two named tuples and every reader takes its field names and types from them.
`schema_version` is in every rounds record, every manifest and every Parquet file's metadata;
readers refuse a newer version than they know (`check_version`).
"""

from __future__ import annotations

import types
import typing
from typing import Any, NamedTuple

from pdbench.errors import PdbenchError

SCHEMA_VERSION = 2  # 2: p_cooperate per round and agent, attempt facts


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


# JSON-valued fields, present only where they apply: prompt texts (or hashes) and every reply of
# LLM agents (objects by seat), and `exchange`: the messages written before the round's moves (a
# list, in games with a message channel; `RoundsEncoder.message_record` gives an entry's fields).
LLM_FIELDS: tuple[str, ...] = ("prompts", "raw_responses", "exchange")
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

# Names for code that reads or writes records: no module outside pdbench.storage.record spells
# a record field (tests/unit/test_record_fields.py reads src/ for it).
ROUND_INDEX = "round_index"
TIMESTAMP = "timestamp_utc"
HORIZON_TYPE = "horizon_type"
FIXED_N = "fixed_n"
PROMPTS, RAW_RESPONSES, MESSAGES = LLM_FIELDS
MESSAGE_FIELDS = ("from", "turn", "text", "intent", "source")  # an entry of `exchange`
SIDE_FIELDS = (
    "name",
    "action",
    "intended_action",
    "payoff",
    "cum_payoff",
    "parse_failure",
    "p_cooperate",
)


def side_field(side: str, what: str) -> str:
    """The record field of one seat: side_field("a", "action") is "agent_a_action".

    `side` is "a" or "b" (or "agent_a"/"agent_b"); `what` one of SIDE_FIELDS."""
    seat = side if side.startswith("agent_") else f"agent_{side}"
    name = f"{seat}_{what}"
    if what not in SIDE_FIELDS or name not in _ALL_FIELDS:
        raise KeyError(f"no record field {name!r}")
    return name


def side_fields(what: str) -> tuple[str, str]:
    """The two seats' fields of one kind: side_fields("action") is (agent_a_action, agent_b_action)."""
    return side_field("a", what), side_field("b", what)


# Running totals: stored in rounds.jsonl, derived from the payoffs by columnar readers.
CUM_FIELDS: tuple[str, ...] = ("agent_a_cum_payoff", "agent_b_cum_payoff")


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
_ALL_FIELDS = frozenset((*ROUND_FIELDS, *LLM_FIELDS))


# What the talk metrics read besides AGGREGATE_INPUT_FIELDS (runs with a message channel).
TALK_INPUT_FIELDS: tuple[str, ...] = (
    "agent_a_intended_action",
    "agent_b_intended_action",
    MESSAGES,
)


def rounds_arrow_schema(fields: tuple[str, ...] = ROUND_FIELDS) -> Any:
    """The pyarrow schema to read these record fields with (pyarrow is imported only here);
    `exchange` (the messages) is read as its entries' writer, turn, intention and fallback."""
    import pyarrow as pa

    def arrow_type(name: str) -> Any:
        if name == MESSAGES:
            entry = [
                ("from", pa.string()),
                ("turn", pa.int64()),
                ("intent", pa.string()),
                ("fallback", pa.bool_()),
            ]
            return pa.list_(pa.struct(entry))
        return pa.type_for_alias(ROUND_FIELD_TYPES[name])

    return pa.schema([(name, arrow_type(name)) for name in fields])


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
