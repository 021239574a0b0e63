"""Reading a shard's records for `pdbench merge`, strictly: a completed shard's rounds.jsonl holds
whole, well-typed records of the games that shard owns, each game exactly its planned rounds in
order, with moves and payoffs that agree with the payoff matrix; its llm_calls.jsonl holds calls
of those games only. Anything else is damage, named in one line (file, line, what), so a merge
never builds a completed run on it.

What a record's values can be checked against: the plan (condition, replicate, seed, horizon,
length, round index, schema version, run id), the payoff matrix (payoffs and running totals from
the moves), the noise (no noise: moves as intended), the agents (only an LLM agent falls back after invalid
replies, only one with record_logprobs records P(C)) and the schema (every field present with its
type, nothing else). Timestamps, an LLM agent's P(C) and parse-failure flags, prompts and replies
are facts only the shard recorded: they are type-checked and carried over as they are.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from pdbench.core.payoff import PayoffMatrix
from pdbench.errors import RunError
from pdbench.storage.record.fields import MESSAGES
from pdbench.storage.schema import LLM_FIELDS, ROUND_FIELDS, SCHEMA_VERSION, GameKey, RoundValues

GameId = tuple[str, int]
MOVES = ("C", "D")
MOVE_FIELDS = tuple(f"agent_{s}_{f}" for f in ("action", "intended_action") for s in "ab")


def short(value: Any, limit: int = 40) -> str:
    """A value for an error line: its repr, cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class ExpectedGame:
    """What the plan says about one game: the shard that owns it and the values its records
    must carry."""

    condition: str
    replicate: int
    owner: int
    seed: int
    n_rounds: int
    noise: float
    horizon_type: str
    fixed_n: int | None
    stop_prob: float | None
    # Per side (a, b): whether it can fall back after invalid replies (an LLM agent), and
    # whether it records P(C) (an LLM agent with record_logprobs).
    may_fail: tuple[bool, bool] = (True, True)
    records_p: tuple[bool, bool] = (True, True)


def _field_kinds() -> dict[str, tuple[type, bool]]:
    """(base type, may be null) of every record field, from the schema's named tuples."""
    out: dict[str, tuple[type, bool]] = {}
    for cls in (GameKey, RoundValues):
        for name, hint in typing.get_type_hints(cls).items():
            args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
            out[name] = (next(a for a in args if a is not type(None)), type(None) in args)
    return out


FIELD_KINDS = _field_kinds()


def _type_problem(name: str, value: Any) -> str:
    """Why a field's value does not fit the schema ('' when it does)."""
    base, nullable = FIELD_KINDS[name]
    if value is None:
        return "" if nullable else f"{name} is null"
    if isinstance(value, bool):
        ok = base is bool
    elif base is float:
        ok = isinstance(value, int | float)
    else:
        ok = isinstance(value, base)
    return "" if ok else f"{name} should be {base.__name__} (got {type(value).__name__})"


_REQUIRED = frozenset(ROUND_FIELDS)
_ALLOWED = _REQUIRED | frozenset(LLM_FIELDS)
# The exact Python types each field may hold (bool is not an int here; an int is a float).
_EXACT: dict[str, frozenset[type]] = {
    name: frozenset(
        ((int, float) if base is float else (base,)) + ((type(None),) if nullable else ())
    )
    for name, (base, nullable) in FIELD_KINDS.items()
}
_EXACT_ITEMS = tuple(_EXACT.items())


def _record_problem(
    record: Any,
    game: ExpectedGame,
    run_id: str,
    round_index: int,
    totals: tuple[float, float],
    cells: dict[str, tuple[float, float]],
) -> str:
    """Why one record is not round `round_index` of `game` ('' when it is)."""
    if not isinstance(record, dict):
        return "not a JSON object"
    keys = record.keys()
    if not _REQUIRED <= keys:
        return f"missing field {next(f for f in ROUND_FIELDS if f not in record)}"
    if not keys <= _ALLOWED:
        return f"unexpected field {short(sorted(keys - _ALLOWED)[0])}"
    for name, allowed in _EXACT_ITEMS:
        if type(record[name]) not in allowed:
            return _type_problem(name, record[name]) or f"{name} has the wrong type"
    for name in LLM_FIELDS:
        kind = list if name == MESSAGES else dict
        if name in record and not isinstance(record[name], kind):
            return f"{name} should be {'a list' if kind is list else 'an object'}"
    if record["round_index"] != round_index:
        return f"round_index {short(record['round_index'])} where the plan has {round_index}"
    for name, want in (
        ("schema_version", SCHEMA_VERSION),
        ("run_id", run_id),
        ("seed", game.seed),
        ("horizon_type", game.horizon_type),
        ("fixed_n", game.fixed_n),
        ("stop_prob", game.stop_prob),
    ):
        if record[name] != want:
            return f"{name} {short(record[name])} where the plan has {short(want)}"
    a, b = record["agent_a_action"], record["agent_b_action"]
    for name in MOVE_FIELDS:
        if record[name] not in MOVES:
            return f"{name} is not C or D (got {short(record[name])})"
    if game.noise == 0 and (
        a != record["agent_a_intended_action"] or b != record["agent_b_intended_action"]
    ):
        return "a move differs from the intended one in a game without noise"
    cell = cells[a + b]
    for i, side in enumerate("ab"):
        payoff = record[f"agent_{side}_payoff"]
        if payoff != cell[i]:
            return (
                f"agent_{side}_payoff {short(payoff)} does not match the moves {a}{b} "
                f"(payoff matrix: {cell[i]!r})"
            )
        total = record[f"agent_{side}_cum_payoff"]
        if total != totals[i] + cell[i]:
            return f"agent_{side}_cum_payoff {short(total)} is not the running total"
    for i, side in enumerate("ab"):
        p = record[f"agent_{side}_p_cooperate"]
        if p is not None and not (game.records_p[i] and 0 <= p <= 1):
            why = "is not a probability" if game.records_p[i] else "is set for an agent without it"
            return f"agent_{side}_p_cooperate {why} (got {short(p)})"
        if record[f"agent_{side}_parse_failure"] and not game.may_fail[i]:
            return f"agent_{side}_parse_failure is true for an agent that parses no replies"
    return ""


def payoff_cells(matrix: PayoffMatrix) -> dict[str, tuple[float, float]]:
    """(A's payoff, B's payoff) by the moves played ("CC", "CD", "DC", "DD")."""
    return {"CC": matrix.cc, "CD": matrix.cd, "DC": matrix.dc, "DD": matrix.dd}


def shard_rounds(
    path: Path,
    shard: int,
    k: int,
    games: dict[GameId, ExpectedGame],
    run_id: str,
    matrix: PayoffMatrix,
    data: bytes | None = None,
) -> dict[GameId, list[bytes]]:
    """The lines (with their newlines) of every game in a shard's rounds.jsonl, checked
    against the plan; RunError naming the file, the line and the damage otherwise (a torn or
    invalid line, a game of another shard or of no plan, a round missing, repeated or out of
    order, a value the plan or the payoff matrix contradicts, a game missing). `data`: the
    records as lines when they do not come from `path` itself (a shard that keeps its rounds
    in columns only)."""
    hint = f"the shard is damaged; `pdbench resume {path.parent}` replays its damaged games"
    try:
        data = path.read_bytes() if data is None else data
    except OSError as exc:
        raise RunError(f"{path}: cannot read ({exc.strerror or exc}); {hint}") from None
    lines = data.splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        raise RunError(f"{path}: line {len(lines)}: torn (no end of line); {hint}")
    out: dict[GameId, list[bytes]] = {}
    cells = payoff_cells(matrix)
    totals: dict[GameId, tuple[float, float]] = {}
    names: dict[GameId, tuple[str, str]] = {}
    for number, line in enumerate(lines, 1):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise RunError(f"{path}: line {number}: not a JSON record; {hint}") from None
        key = _game_id(record)
        game = games.get(key) if key is not None else None
        if key is None or game is None:
            where = f"condition {short(key[0])} replicate {key[1]}" if key else "no game"
            raise RunError(f"{path}: line {number}: a record of {where}, not in the plan; {hint}")
        if game.owner != shard:
            raise RunError(
                f"{path}: line {number}: condition {key[0]!r} replicate {key[1]} is a game of "
                f"shard {game.owner}/{k}, not of this shard {shard}/{k}"
            )
        done = out.setdefault(key, [])
        if len(done) >= game.n_rounds:
            raise RunError(
                f"{path}: line {number}: condition {key[0]!r} replicate {key[1]} has more than "
                f"its {game.n_rounds} rounds (repeated records); {hint}"
            )
        before = totals.get(key, (0.0, 0.0))
        problem = _record_problem(record, game, run_id, len(done), before, cells)
        if problem:
            raise RunError(
                f"{path}: line {number}: condition {key[0]!r} replicate {key[1]}: {problem}; {hint}"
            )
        players = (record["agent_a_name"], record["agent_b_name"])
        if names.setdefault(key, players) != players:
            raise RunError(
                f"{path}: line {number}: condition {key[0]!r} replicate {key[1]}: the player "
                f"names change within the game; {hint}"
            )
        totals[key] = (record["agent_a_cum_payoff"], record["agent_b_cum_payoff"])
        done.append(line)
    check_whole(out, games, shard, path, hint)
    return out


def check_whole(
    out: dict[GameId, list[bytes]], games: dict[GameId, Any], shard: int, path: Path, hint: str
) -> None:
    """RunError (one line) when a game the shard owns does not have all its rounds."""
    for key, game in games.items():
        if game.owner == shard and len(out.get(key, ())) != game.n_rounds:
            have = len(out.get(key, ()))
            raise RunError(
                f"{path}: condition {key[0]!r} replicate {key[1]} has {have} of its "
                f"{game.n_rounds} rounds; {hint}"
            )


def _game_id(record: Any) -> GameId | None:
    """(condition, replicate) of a record, None when it has no well-typed ones."""
    if not isinstance(record, dict):
        return None
    condition, replicate = record.get("condition"), record.get("replicate")
    if not isinstance(condition, str) or type(replicate) is not int:
        return None
    return condition, replicate


def shard_calls(
    path: Path, shard: int, games: dict[GameId, ExpectedGame]
) -> dict[GameId, list[bytes]]:
    """The lines of a shard's llm_calls.jsonl by game, in file order. A line that is not JSON
    (torn by a kill in an earlier session of the shard) is dropped, as every reader of the log
    skips it; a call of a game the shard does not own is damage (RunError)."""
    out: dict[GameId, list[bytes]] = {}
    if not path.is_file():
        return out
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RunError(f"{path}: cannot read ({exc.strerror or exc})") from None
    for number, line in enumerate(data.splitlines(), 1):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        key = _game_id(record)
        game = games.get(key) if key is not None else None
        if key is None or game is None or game.owner != shard:
            raise RunError(
                f"{path}: line {number}: a call of no game this shard played; the shard is damaged"
            )
        problem = _call_problem(record)
        if problem:
            raise RunError(f"{path}: line {number}: {problem}; the shard is damaged")
        out.setdefault(key, []).append(line + b"\n")
    return out


# The call-log fields that usage and spending add up, with their types (None allowed for all).
CALL_FIELDS: dict[str, tuple[type, ...]] = {
    "agent": (str,),
    "ok": (bool,),
    "cached": (bool,),
    "session": (int,),
    "input_tokens": (int,),
    "output_tokens": (int,),
    "cost_usd": (int, float),
}


def _call_problem(record: dict[str, Any]) -> str:
    """Why a call record's counted fields do not fit ('' when they do)."""
    for name, kinds in CALL_FIELDS.items():
        value = record.get(name)
        if value is None:
            continue
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            return f"{name} should be {kinds[0].__name__} (got {type(value).__name__})"
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            return f"{name} is negative (got {short(value)})"
    return ""
