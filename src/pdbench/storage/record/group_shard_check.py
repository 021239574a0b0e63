"""Reading a groups shard's rounds.jsonl for `pdbench merge`, strictly: whole records of the
games that shard owns, each game exactly its planned rounds 0..n-1 in order, every record with
the group record's fields (`group_fields`: the key of a game of its seats, the seats' round
fields, nothing else but `prompts`, `raw_responses` and `exchange`), each well typed and with
the values the plan fixes (schema version, run id, seed, seat names, horizon; moves as intended
in a game without noise). Anything else is damage, named in one line (file, line, what).

What the stage game says of the moves (payoffs, running totals) and what the messages are is
checked game by game afterwards, by the reader a resume uses (`group_session.game_from_lines`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from pdbench.errors import RunError
from pdbench.storage.record.fields import LLM_FIELDS, MESSAGES, ROUND_INDEX, TIMESTAMP
from pdbench.storage.record.group_fields import (
    ROUND_SEAT_FIELDS,
    group_key,
    round_values,
    seat_fields,
)
from pdbench.storage.record.shard_check import GameId, _game_id, check_whole, short

MOVES = ("C", "D")


@dataclass(frozen=True)
class ExpectedGroupGame:
    """What the plan says about one group game: the shard that owns it and the values its
    records must carry."""

    condition: str
    replicate: int
    owner: int
    seed: int
    n_rounds: int
    noise: float
    horizon_type: str
    fixed_n: int | None
    stop_prob: float | None
    names: tuple[str, ...]

    def key_fields(self, run_id: str) -> dict[str, Any]:
        """The fields (and values) every record of the game shares."""
        return group_key(
            run_id,
            self.condition,
            self.replicate,
            self.seed,
            self.names,
            self.horizon_type,
            self.fixed_n,
            self.stop_prob,
        )


@dataclass(frozen=True)
class _SeatFields:
    """The per-round field names of a record of n seats, by what they hold."""

    moves: tuple[str, ...]  # every seat's action and intended action
    numbers: tuple[str, ...]  # payoffs and running totals
    flags: tuple[str, ...]  # parse failures
    chances: tuple[str, ...]  # P(C)
    played_and_meant: tuple[tuple[str, str], ...]  # (action, intended action) per seat
    round_names: frozenset[str]  # round index, the seats' fields, timestamp


@functools.lru_cache(maxsize=32)
def _seat_fields(n: int) -> _SeatFields:
    """The field names of a record of n seats (computed once per group size)."""
    empty: dict[str, list[Any]] = {what: [None] * n for what in ROUND_SEAT_FIELDS}
    played, meant = seat_fields("action", n), seat_fields("intended_action", n)
    return _SeatFields(
        moves=played + meant,
        numbers=seat_fields("payoff", n) + seat_fields("cum_payoff", n),
        flags=seat_fields("parse_failure", n),
        chances=seat_fields("p_cooperate", n),
        played_and_meant=tuple(zip(played, meant, strict=True)),
        round_names=frozenset(round_values(0, empty, "")),
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _value_problem(record: dict[str, Any], names: _SeatFields) -> str:
    """Why a record's per-round values have the wrong type ('' when they fit)."""
    for name in names.moves:
        if record[name] not in MOVES:
            return f"{name} is not C or D (got {short(record[name])})"
    for name in names.numbers:
        if not _is_number(record[name]):
            return f"{name} should be a number (got {type(record[name]).__name__})"
    for name in names.flags:
        if not isinstance(record[name], bool):
            return f"{name} should be bool (got {type(record[name]).__name__})"
    for name in names.chances:
        p = record[name]
        if p is not None and not (_is_number(p) and 0 <= p <= 1):
            return f"{name} is not a probability (got {short(p)})"
    for name in LLM_FIELDS:
        kind = list if name == MESSAGES else dict
        if name in record and not isinstance(record[name], kind):
            return f"{name} should be {'a list' if kind is list else 'an object'}"
    return ""


def _record_problem(
    record: Any,
    game: ExpectedGroupGame,
    key: dict[str, Any],
    required: frozenset[str],
    allowed: frozenset[str],
    t: int,
) -> str:
    """Why one record is not round `t` of `game` ('' when it is)."""
    if not isinstance(record, dict):
        return "not a JSON object"
    if record.get(ROUND_INDEX) != t or type(record.get(ROUND_INDEX)) is not int:
        return f"{ROUND_INDEX} {short(record.get(ROUND_INDEX))} where the plan has {t}"
    for name, want in key.items():
        if name not in record:
            return f"missing field {name}"
        if record[name] != want or type(record[name]) is not type(want):
            return f"{name} {short(record[name])} where the plan has {short(want)}"
    keys = record.keys()
    if not required <= keys:
        return f"missing field {sorted(required - keys)[0]}"
    if not keys <= allowed:
        return f"unexpected field {short(sorted(keys - allowed)[0])}"
    if not isinstance(record[TIMESTAMP], str):
        return f"{TIMESTAMP} should be str"
    names = _seat_fields(len(game.names))
    problem = _value_problem(record, names)
    if problem:
        return problem
    if game.noise == 0 and any(record[a] != record[b] for a, b in names.played_and_meant):
        return "a move differs from the intended one in a game without noise"
    return ""


def group_shard_rounds(
    path: Path,
    shard: int,
    k: int,
    games: dict[GameId, ExpectedGroupGame],
    run_id: str,
) -> dict[GameId, list[bytes]]:
    """The lines (with their newlines) of every game in a groups shard's rounds.jsonl, checked
    against the plan (see the module docstring); RunError naming the file, the line and the
    damage otherwise (a torn or invalid line, a game of another shard or of no plan, a round
    missing, repeated or out of order, a value the plan contradicts, a game missing)."""
    hint = f"the shard is damaged; `pdbench resume {path.parent}` replays its damaged games"
    if not path.exists() and not any(g.owner == shard for g in games.values()):
        return {}  # a shard of more shards than games, which played none
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RunError(f"{path}: cannot read ({exc.strerror or exc}); {hint}") from None
    lines = data.splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        raise RunError(f"{path}: line {len(lines)}: torn (no end of line); {hint}")
    out: dict[GameId, list[bytes]] = {}
    keys: dict[GameId, dict[str, Any]] = {}
    fields: dict[GameId, tuple[frozenset[str], frozenset[str]]] = {}  # required, allowed
    for number, line in enumerate(lines, 1):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise RunError(f"{path}: line {number}: not a JSON record; {hint}") from None
        gid = _game_id(record)
        game = games.get(gid) if gid is not None else None
        if gid is None or game is None:
            where = f"condition {short(gid[0])} replicate {gid[1]}" if gid else "no game"
            raise RunError(f"{path}: line {number}: a record of {where}, not in the plan; {hint}")
        label = f"condition {gid[0]!r} replicate {gid[1]}"
        if game.owner != shard:
            raise RunError(
                f"{path}: line {number}: {label} is a game of shard {game.owner}/{k}, not of "
                f"this shard {shard}/{k}"
            )
        done = out.setdefault(gid, [])
        if len(done) >= game.n_rounds:
            raise RunError(
                f"{path}: line {number}: {label} has more than its {game.n_rounds} rounds "
                f"(repeated records); {hint}"
            )
        if gid not in keys:
            keys[gid] = game.key_fields(run_id)
            required = frozenset(keys[gid]) | _seat_fields(len(game.names)).round_names
            fields[gid] = required, required | frozenset(LLM_FIELDS)
        problem = _record_problem(record, game, keys[gid], *fields[gid], len(done))
        if problem:
            raise RunError(f"{path}: line {number}: {label}: {problem}; {hint}")
        done.append(line)
    check_whole(out, games, shard, path, hint)
    return out
