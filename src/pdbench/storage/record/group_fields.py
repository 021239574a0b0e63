"""The round record of a group game: one line per round with every seat, spelled here.

A group game's record is the pairwise record widened to N seats, lettered a, b, c, ...:
`agent_a_name`, `agent_b_name`, `agent_c_name`, ... among the game's fields, then per round the
same per-seat fields as `pdbench.storage.record.fields.SIDE_FIELDS` (`agent_c_action`, ...), each
kind for every seat in seat order before the next kind, exactly as the pairwise record orders its
two seats. A group game of two seats is therefore byte for byte today's pairwise record, and the
number of seats of a record is the number of `agent_*_name` fields it has (`seats_of`).

Group runs add, only where they apply: `exchange` entries with `to` (the seat a directed message
was written to; absent for a message to everyone), `prompts` and `raw_responses` keyed by seat.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any

from pdbench.storage.record.fields import (
    FIXED_N,
    HORIZON_TYPE,
    ROUND_INDEX,
    SCHEMA_VERSION,
    SIDE_FIELDS,
    TIMESTAMP,
)

SEAT_LETTERS = string.ascii_lowercase  # at most 26 seats
# Per-round seat fields in record order (names, the game's field, come first among the key).
ROUND_SEAT_FIELDS = tuple(f for f in SIDE_FIELDS if f != "name")
STOP_PROB = "stop_prob"
TO = "to"  # the addressee of a directed message (a seat name), in an `exchange` entry


def seat_name(seat: int) -> str:
    """The record's name of a seat: 0 -> "agent_a", 2 -> "agent_c"."""
    if not 0 <= seat < len(SEAT_LETTERS):
        raise ValueError(f"a seat is 0..{len(SEAT_LETTERS) - 1} (got {seat})")
    return f"agent_{SEAT_LETTERS[seat]}"


def seat_field(seat: int, what: str) -> str:
    """The record field of one seat: seat_field(2, "action") is "agent_c_action"."""
    if what not in SIDE_FIELDS:
        raise KeyError(f"no seat field {what!r} (valid: {', '.join(SIDE_FIELDS)})")
    return f"{seat_name(seat)}_{what}"


def seat_fields(what: str, n_seats: int) -> tuple[str, ...]:
    """Every seat's field of one kind, in seat order."""
    return tuple(seat_field(i, what) for i in range(n_seats))


def seats_of(record: Mapping[str, Any]) -> int:
    """How many seats a record has (its `agent_*_name` fields, which are consecutive)."""
    n = 0
    while n < len(SEAT_LETTERS) and seat_field(n, "name") in record:
        n += 1
    return n


def group_key(
    run_id: str,
    condition: str,
    replicate: int,
    seed: int,
    names: Sequence[str],
    horizon_type: str,
    fixed_n: int | None,
    stop_prob: float | None,
) -> dict[str, Any]:
    """The fields one group game's rounds share, in record order."""
    key: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "condition": condition,
        "replicate": int(replicate),
        "seed": int(seed),
    }
    for seat, name in enumerate(names):
        key[seat_field(seat, "name")] = name
    key[HORIZON_TYPE] = horizon_type
    key[FIXED_N] = fixed_n
    key[STOP_PROB] = stop_prob
    return key


def round_values(
    round_index: int,
    seats: Mapping[str, Sequence[Any]],
    timestamp: str,
) -> dict[str, Any]:
    """One round's fields in record order: `seats[what]` holds every seat's value of each of
    ROUND_SEAT_FIELDS (moves as "C"/"D")."""
    values: dict[str, Any] = {ROUND_INDEX: int(round_index)}
    for what in ROUND_SEAT_FIELDS:
        for seat, value in enumerate(seats[what]):
            values[seat_field(seat, what)] = value
    values[TIMESTAMP] = timestamp
    return values
