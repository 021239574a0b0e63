"""The record of the resource games (issue 31): one rounds.jsonl line per round (a season in a
commons), written when the game ends; the one place their fields are named.

Every line has the game's key (`run_id`, `condition`, `replicate`, `game_seed`), `game` ("pgg" or
"commons"), `round_index` (0-based), `n_rounds` (planned), `seats` (names in seat order),
`messages` (`{"from": seat, "text": ...}`, said in that round before the contributions, or
after the season's harvest), `decisions` (one per seat and stage: the value used, parse
failures, whether it is the fallback or was clamped, and the calls with prompts and replies
when the run stores them), `last` (true on a game's final line: the planned last round, or the
season a commons collapsed in) and `timestamp_utc`.

A public goods line adds every field of `pdbench.core.pgg.RoundResult` (punishment as sparse
`[punisher, target, tokens]` lists; the reward stage's `reward_tokens` (sparse too), `reward_given`
and `reward_received` only when the rules have it, so a line without rewards is what it was before
the stage existed, and `round_result` reads such a line with empty reward fields); a commons line every field of `SeasonResult`, `present`
(which seats were in the lake that season: an outsider arrives later) and `reflections`.
`round_result` and `season_result` read them back exactly (floats round-trip).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from pdbench.core.commons import CommonsRules, SeasonResult, step
from pdbench.core.pgg import PGGRules, RoundResult, play_round
from pdbench.storage.record.fields import TIMESTAMP
from pdbench.storage.schema import ROUNDS_FILE

KEY_FIELDS = ("run_id", "condition", "replicate", "game_seed", "game", "round_index", "n_rounds")

Key = tuple[str, int]


def _sparse(matrix: Sequence[Sequence[float]]) -> list[list[float]]:
    return [[i, j, v] for i, row in enumerate(matrix) for j, v in enumerate(row) if v]


def _dense(entries: Iterable[Sequence[Any]], n: int, cast: type) -> tuple[tuple[Any, ...], ...]:
    out = [[cast(0)] * n for _ in range(n)]
    for i, j, v in entries:
        out[int(i)][int(j)] = cast(v)
    return tuple(tuple(row) for row in out)


def round_key(
    run_id: str,
    condition: str,
    replicate: int,
    game_seed: int,
    game: str,
    round_index: int,
    n_rounds: int,
    seats: Sequence[str],
) -> dict[str, Any]:
    """The fields that name a line's game and round (`KEY_FIELDS`, then `seats`)."""
    values = (run_id, condition, replicate, game_seed, game, round_index, n_rounds)
    return {**dict(zip(KEY_FIELDS, values, strict=True)), "seats": list(seats)}


def pgg_record(result: RoundResult) -> dict[str, Any]:
    """A public goods round's own fields."""
    out: dict[str, Any] = {
        "start_balances": list(result.start_balances),
        "limits": list(result.limits),
        "contributions": list(result.contributions),
        "pot": result.pot,
        "share": result.share,
        "carry_in": result.carry_in,
        "carry_out": result.carry_out,
        "post_fund": list(result.post_fund),
        "punish_tokens": _sparse(result.punish_tokens),
        "damage": _sparse(result.damage),
        "punish_spent": list(result.punish_spent),
        "punish_received": list(result.punish_received),
        "balances": list(result.balances),
    }
    if result.reward_tokens:  # the reward stage is on (RoundResult: empty without it)
        out["reward_tokens"] = _sparse(result.reward_tokens)
        out["reward_given"] = list(result.reward_given)
        out["reward_received"] = list(result.reward_received)
    return out


def round_result(record: dict[str, Any]) -> RoundResult:
    """The RoundResult a public goods line records."""
    n = len(record["seats"])
    return RoundResult(
        start_balances=tuple(float(x) for x in record["start_balances"]),
        limits=tuple(int(x) for x in record["limits"]),
        contributions=tuple(int(x) for x in record["contributions"]),
        pot=float(record["pot"]),
        share=float(record["share"]),
        carry_in=float(record["carry_in"]),
        carry_out=float(record["carry_out"]),
        post_fund=tuple(float(x) for x in record["post_fund"]),
        punish_tokens=_dense(record["punish_tokens"], n, int),
        damage=_dense(record["damage"], n, float),
        punish_spent=tuple(float(x) for x in record["punish_spent"]),
        punish_received=tuple(float(x) for x in record["punish_received"]),
        balances=tuple(float(x) for x in record["balances"]),
        **_rewards_of(record, n),
    )


def _rewards_of(record: dict[str, Any], n: int) -> dict[str, Any]:
    """The reward fields of a public goods line (none on a line without the reward stage)."""
    if "reward_tokens" not in record:
        return {}
    return {
        "reward_tokens": _dense(record["reward_tokens"], n, int),
        "reward_given": tuple(float(x) for x in record["reward_given"]),
        "reward_received": tuple(float(x) for x in record["reward_received"]),
    }


def commons_record(season: SeasonResult, present: Sequence[bool]) -> dict[str, Any]:
    """A commons season's own fields."""
    return {
        "stock": season.stock,
        "requested": list(season.requested),
        "caught": list(season.caught),
        "left": season.left,
        "next_stock": season.next_stock,
        "collapsed": season.collapsed,
        "present": list(present),
    }


def season_result(record: dict[str, Any]) -> SeasonResult:
    """The SeasonResult a commons line records."""
    return SeasonResult(
        stock=int(record["stock"]),
        requested=tuple(int(x) for x in record["requested"]),
        caught=tuple(int(x) for x in record["caught"]),
        left=int(record["left"]),
        next_stock=int(record["next_stock"]),
        collapsed=bool(record["collapsed"]),
    )


def encode_game(records: Sequence[dict[str, Any]]) -> bytes:
    """A game's lines (JSON, keys in the order written, one line a round)."""
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def read_lines(run_dir: Path) -> list[bytes]:
    """rounds.jsonl's whole lines (a torn last line, from a kill mid-write, left out)."""
    path = run_dir / ROUNDS_FILE
    if not path.is_file():
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
    return [line for line in data.splitlines() if line.strip()]


def game_problem(records: Sequence[dict[str, Any]], planned: int) -> str | None:
    """Why a game's records are not one whole game (None when they are): rounds 0..k in order,
    one game seed and seat list, `last` on the final line only, k + 1 the planned rounds unless
    a commons collapsed in round k."""
    if not records:
        return "no rounds"
    first = records[0]
    for t, record in enumerate(records):
        if record.get("round_index") != t:
            return f"round {t}: found round_index {record.get('round_index')!r}"
        for name in ("game_seed", "seats", "game", "n_rounds"):
            if record.get(name) != first.get(name):
                return f"round {t}: {name} differs from round 0's"
        if bool(record.get("last")) != (t == len(records) - 1):
            return f"round {t}: marked last={record.get('last')!r}"
    if first.get("n_rounds") != planned:
        return f"planned {planned} rounds, the record says {first.get('n_rounds')!r}"
    end = records[-1]
    if len(records) != planned and not (end.get("game") == "commons" and end.get("collapsed")):
        return f"{len(records)} of {planned} rounds and no collapse"
    return None


def finished_resource_games(
    run_dir: Path, planned: dict[Key, int]
) -> tuple[dict[Key, list[bytes]], dict[Key, str]]:
    """The lines of every whole game of rounds.jsonl by (condition, replicate), and a problem
    for each planned game whose lines end (`last`) but are not whole. Games without a last line
    (a kill mid-game) are neither: they are played again."""
    lines_of: dict[Key, list[bytes]] = {}
    records_of: dict[Key, list[dict[str, Any]]] = {}
    for line in read_lines(run_dir):
        try:
            record = orjson.loads(line)
            key = (str(record["condition"]), int(record["replicate"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
        if key not in planned:
            continue
        lines_of.setdefault(key, []).append(line)
        records_of.setdefault(key, []).append(record)
    whole: dict[Key, list[bytes]] = {}
    damaged: dict[Key, str] = {}
    for key, records in records_of.items():
        if not records[-1].get("last"):
            continue
        problem = game_problem(records, planned[key])
        if problem is None:
            whole[key] = lines_of[key]
        else:
            damaged[key] = problem
    return whole, damaged


def read_games(run_dir: Path) -> dict[Key, list[dict[str, Any]]]:
    """Every game's records of a finished run, by (condition, replicate), in file order."""
    games: dict[Key, list[dict[str, Any]]] = {}
    for line in read_lines(run_dir):
        record = orjson.loads(line)
        games.setdefault((str(record["condition"]), int(record["replicate"])), []).append(record)
    return games


def untimed(line: bytes) -> bytes:
    """A line without its timestamp (the one field a replay may change)."""
    record = orjson.loads(line)
    record.pop(TIMESTAMP, None)
    return orjson.dumps(record)


def _same(a: Any, b: Any) -> bool:
    """Equal, floats within 1e-9 (a record's floats round-trip exactly; this only forgives a
    hand edit that wrote 13.3333333333 for 40 / 3)."""
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return abs(float(a) - float(b)) <= 1e-9
    return bool(a == b)


def pgg_records_problem(rules: PGGRules, records: Sequence[dict[str, Any]]) -> str | None:
    """Why a public goods game's records do not add up under `rules` (None when they do): each
    round starts from the last one's balances and carry, and everything after the decisions
    (pot, shares, caps, damage, balances) is what the rules give for its contributions,
    punishments and rewards."""
    balances: tuple[float, ...] = rules.initial_balances()
    carry = 0.0
    for t, record in enumerate(records):
        try:
            found = round_result(record)
            if not _same(found.start_balances, balances) or not _same(found.carry_in, carry):
                return f"round {t}: does not start from the last round's balances and carry"
            want = play_round(
                rules,
                balances,
                found.contributions,
                found.punish_tokens if rules.punishment else None,
                carry_in=carry,
                rewards=found.reward_tokens if rules.reward else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            return f"round {t}: {exc}"
        for name in RoundResult.__dataclass_fields__:
            if not _same(getattr(found, name), getattr(want, name)):
                return f"round {t}: {name} is not what the rules give for the recorded decisions"
        balances, carry = want.balances, want.carry_out
    return None


def commons_records_problem(rules: CommonsRules, records: Sequence[dict[str, Any]]) -> str | None:
    """Why a commons game's records do not add up under `rules` (None when they do): each season
    starts from the last one's regrown stock (the first from the start stock), absent seats ask
    nothing, and the catches, what is left, the regrowth and the collapse are what the rules
    give for the requests (an over-asked lake, handed out at random, is checked by its sums:
    each catch at most its request, the whole stock taken)."""
    stock = rules.start_stock
    for t, record in enumerate(records):
        try:
            season = season_result(record)
            present = [bool(p) for p in record["present"]]
            if season.stock != stock:
                return f"season {t}: starts with {season.stock}, the last season left {stock}"
            if any(r and not p for r, p in zip(season.requested, present, strict=True)):
                return f"season {t}: an absent seat asked for fish"
            if sum(season.requested) <= stock or rules.allocation == "proportional":
                want = step(rules, stock, list(season.requested))
                if want != season:
                    return f"season {t}: not what the rules give for the recorded requests"
            else:
                caught_ok = all(
                    0 <= c <= r for c, r in zip(season.caught, season.requested, strict=True)
                )
                regrown = min(rules.capacity, rules.growth * season.left)
                if not (
                    caught_ok
                    and sum(season.caught) == stock
                    and season.left == 0
                    and season.next_stock == regrown
                    and season.collapsed == (season.left < rules.collapse_below)
                ):
                    return f"season {t}: the over-asked lake's catches do not add up"
        except (KeyError, TypeError, ValueError) as exc:
            return f"season {t}: {exc}"
        stock = season.next_stock
    return None
