"""The record read as a table: rounds.jsonl parsed into columns, the checks every reader runs on
a table of rounds against the run's plan (`check_rounds`, `check_all_games`), and the games'
`GameOutcome`s (`outcomes_from_table`), the one conversion from stored rounds to what the
metrics take. Works on a whole run or on a batch of whole games (e.g. one condition of the
columnar parts).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson

from pdbench.core.metrics import GameOutcome
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.talk_metrics import DEFAULT_LABELS, TalkSetting, talk_tracks
from pdbench.core.types import Action, Message
from pdbench.errors import PdbenchError
from pdbench.storage.record.arrays import column_values, text_codes, text_is
from pdbench.storage.record.fields import (
    AGGREGATE_INPUT_FIELDS,
    MESSAGES,
    check_version,
    rounds_arrow_schema,
    side_field,
)


class RunDirError(PdbenchError):
    """A run directory that is missing, empty or broken."""


def read_rounds_table(
    path: Path,
    fields: tuple[str, ...] = AGGREGATE_INPUT_FIELDS,
    required: tuple[str, ...] | None = None,
) -> Any:
    """Record fields of rounds.jsonl as a pyarrow Table (fast, multithreaded): the columns the
    metrics need by default. Types come from the schema; other fields are skipped.

    A trailing partial line (a crash mid-write) is ignored; any other bad line, an empty file,
    a `required` field (default: all of `fields`) absent from every record, or a record newer
    than this pdbench is an error (RunDirError or SchemaVersionError, one line).
    """
    import pyarrow as pa
    import pyarrow.json as pj

    if not path.is_file():
        raise RunDirError(f"{path}: rounds file not found")
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
    if not data.strip():
        raise RunDirError(f"{path}: no rounds recorded")
    fields = tuple(dict.fromkeys(("schema_version", *fields)))
    options = pj.ParseOptions(
        explicit_schema=rounds_arrow_schema(fields), unexpected_field_behavior="ignore"
    )
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            parse_options=options,
            read_options=pj.ReadOptions(block_size=1 << 24),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise RunDirError(
            f"{path}: not valid rounds JSON Lines ({str(exc).splitlines()[0]})"
        ) from None
    check_version(str(path), pc_max(table.column("schema_version")))
    if required is None:  # P(C) is null wherever it was not recorded
        wanted = tuple(f for f in fields[1:] if not f.endswith("_p_cooperate") and f != MESSAGES)
    else:
        wanted = required
    missing = [name for name in wanted if table.column(name).null_count == len(table)]
    if missing:
        raise RunDirError(f"{path}: records lack required fields: {', '.join(missing)}")
    return table


ACTIONS = ("C", "D")


def planned_lengths(manifest: dict[str, Any]) -> dict[tuple[str, int], int] | None:
    """(condition, replicate) -> the game's length, as the manifest planned it (None when the
    manifest lists no games: an older pdbench); a malformed plan is a one-line RunDirError."""
    conditions = manifest.get("conditions")
    if not isinstance(conditions, list) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) for c in conditions
    ):
        raise RunDirError(
            "run_manifest.json: conditions is not a list of named conditions (a damaged or "
            "hand-edited manifest)"
        )
    if not any("games" in c for c in conditions):
        return None  # an older pdbench, which did not record the plan
    out: dict[tuple[str, int], int] = {}
    for i, condition in enumerate(conditions):
        games = condition.get("games")
        try:
            for game in games:
                n = game["n_rounds"]
                replicate = game["replicate"]
                if not all(type(v) is int for v in (n, replicate)) or n < 1 or replicate < 0:
                    raise TypeError
                out[(str(condition["name"]), replicate)] = n
        except (KeyError, TypeError):
            raise RunDirError(
                f"run_manifest.json: conditions[{i}].games is not a list of games with "
                "replicate and n_rounds (edited by hand?)"
            ) from None
    return out


def check_rounds(
    table: Any,
    manifest: dict[str, Any],
    path: Path,
    *,
    whole_run: bool = True,
    first_record: int = 1,
) -> list[tuple[str, int]]:
    """Refuse rounds that the run could not have recorded, naming the first: an action other
    than C or D, a payoff that is not a finite number, a game the manifest does not plan, or a
    game whose rounds are not exactly 0..n-1 of the length the manifest planned (a torn line,
    a deleted or duplicated round). One-line RunDirError naming the file and the record.

    The table holds whole games: the whole run, or one batch of a streaming reader. For a
    batch, `whole_run=False` leaves the check that a completed run has every planned game to
    `check_all_games` (given the games of all batches), and `first_record` is the number of
    the batch's first record in messages. Returns the table's games (condition, replicate) in
    the order of their first records.
    """
    for side in ("agent_a", "agent_b"):
        actions = table.column(f"{side}_action")
        bad = np.flatnonzero(~_valid_actions(actions))
        if len(bad):
            shown = _shown(_text(actions)[int(bad[0])].as_py())
            raise RunDirError(
                f"{path}: record {int(bad[0]) + first_record}: {side}_action must be C or D "
                f"(got {shown}); the file was damaged or edited"
            )
        values = column_values(table.column(f"{side}_payoff"), np.float64, np.nan)
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            raise RunDirError(
                f"{path}: record {int(bad[0]) + first_record}: {side}_payoff is not a finite "
                "number; the file was damaged or edited"
            )
    _check_payoffs(table, manifest, path, first_record)
    for name in ("condition", "replicate", "round_index"):
        if table.column(name).null_count:
            row = int(
                np.flatnonzero(table.column(name).is_null().to_numpy(zero_copy_only=False))[0]
            )
            raise RunDirError(
                f"{path}: record {row + first_record}: no {name}; the file was damaged or edited"
            )
    plan = planned_lengths(manifest)
    if len(table) == 0:
        return []
    codes, first, games = _game_codes(table)
    if plan is None:
        return games
    planned = np.array([plan.get(game, -1) for game in games], dtype=np.int64)
    for g in np.flatnonzero(planned < 0)[:1]:
        condition, replicate = games[g]
        raise RunDirError(
            f"{path}: record {int(first[g]) + first_record}: condition {condition!r} replicate "
            f"{replicate}: not a game of this run's plan (run_manifest.json)"
        )
    rounds = column_values(table.column("round_index"), np.int64, 0)
    for g in np.flatnonzero(_games_not_whole(codes, rounds, planned))[:1]:
        condition, replicate = games[g]
        rows = np.flatnonzero(codes == g)
        planned_n = int(planned[g])
        where = f"{path}: record {rows[0] + first_record}: condition {condition!r} replicate {replicate}"
        indexes = rounds[rows]
        outside = np.flatnonzero((indexes < 0) | (indexes >= planned_n))
        _, firsts = np.unique(indexes, return_index=True)
        repeated = np.setdiff1d(np.arange(len(rows)), firsts)
        if len(outside) or len(repeated):
            row = rows[int((outside if len(outside) else repeated)[0])]
            where = (
                f"{path}: record {row + first_record}: condition {condition!r} "
                f"replicate {replicate}"
            )
        raise RunDirError(
            f"{where}: {len(rows)} round records where the plan has rounds 0..{planned_n - 1}"
            " (a torn, deleted, duplicated or edited line); resume the run or restore the file"
        )
    if whole_run:
        check_all_games(manifest, games, path)
    return games


def check_all_games(manifest: dict[str, Any], games: list[tuple[str, int]], path: Path) -> None:
    """Refuse a run marked completed that lacks a planned game: `games` are the games read
    (condition, replicate), from `check_rounds` of every batch."""
    plan = planned_lengths(manifest)
    if plan is None or manifest.get("status") != "completed":
        return
    seen = set(games)
    missing = [k for k in plan if k not in seen]
    if missing:
        condition, replicate = missing[0]
        raise RunDirError(
            f"{path}: condition {condition!r} replicate {replicate}: no rounds, but the "
            f"run is marked completed ({len(missing)} planned games missing)"
        )


def damaged_games(
    games: dict[tuple[str, int], Any], manifest: dict[str, Any], path: Path
) -> dict[tuple[str, int], str]:
    """The games (key -> one table of its rounds) that `check_rounds` refuses, each with its
    first problem as one line naming the game; found by halving the set of games, so a run with
    no damaged game is checked once as a whole."""
    import pyarrow as pa

    out: dict[tuple[str, int], str] = {}
    if games:  # a manifest the checks cannot use is the manifest's problem, not every game's
        check_rounds(next(iter(games.values())).slice(0, 0), manifest, path, whole_run=False)
    todo = [list(games)]
    while todo:
        keys = todo.pop()
        if not keys:
            continue
        table = pa.concat_tables([games[key] for key in keys]) if len(keys) > 1 else games[keys[0]]
        where = (
            path if len(keys) > 1 else Path(f"{path}, game {keys[0][0]!r} replicate {keys[0][1]}")
        )
        try:
            check_rounds(table, manifest, where, whole_run=False)
        except RunDirError as exc:
            if len(keys) == 1:
                out[keys[0]] = str(exc)
            else:
                half = len(keys) // 2
                todo += [keys[half:], keys[:half]]
    return {key: out[key] for key in games if key in out}


def _games_not_whole(codes: np.ndarray, rounds: np.ndarray, planned: np.ndarray) -> np.ndarray:
    """Per game (code): whether its round indexes are not exactly 0..planned-1."""
    bad = np.bincount(codes, minlength=len(planned)) != planned
    outside = (rounds < 0) | (rounds >= planned[codes])
    if outside.any():
        bad[codes[outside]] = True
    kept = ~bad[codes]  # games of the right size with every index inside: any repeated?
    sizes = np.where(bad, 0, planned)
    starts = np.cumsum(sizes) - sizes
    hits = np.bincount(starts[codes[kept]] + rounds[kept], minlength=int(sizes.sum()))
    if (hits != 1).any():
        bad[np.repeat(np.arange(len(planned)), sizes)[hits != 1]] = True
    return bad


def _check_payoffs(table: Any, manifest: dict[str, Any], path: Path, first_record: int = 1) -> None:
    """Each record's payoffs are the game's payoffs for its two (actual) actions, from the
    payoff matrix the manifest's config records (skipped when it records none)."""
    game = (manifest.get("config") or {}).get("game") if isinstance(manifest, dict) else None
    if not isinstance(game, dict) or "payoff_matrix" not in game:
        return
    try:
        matrix = PayoffMatrix.from_nested(game["payoff_matrix"])
    except (ValueError, TypeError):
        raise RunDirError(
            f"{path.parent / 'run_manifest.json'}: config.game.payoff_matrix is not a valid "
            "payoff matrix (a damaged or hand-edited manifest)"
        ) from None
    # cell = 2 * (A played C) + (B played C): DD, DC, CD, CC
    cell = 2 * _cooperated(table.column("agent_a_action")).astype(np.int64)
    cell += _cooperated(table.column("agent_b_action"))
    for side, k in (("agent_a", 0), ("agent_b", 1)):
        got = column_values(table.column(f"{side}_payoff"), np.float64, np.nan)
        cells = [matrix.payoffs(x, y)[k] for x in ACTIONS[::-1] for y in ACTIONS[::-1]]
        want = np.array(cells, dtype=np.float64)[cell]
        # np.isclose(got, want, rtol=1e-12, atol=1e-9) for finite values, as checked before
        bad = np.flatnonzero(got != want)
        if len(bad):
            close = np.abs(got[bad] - want[bad]) <= 1e-9 + 1e-12 * np.abs(want[bad])
            bad = bad[~close]
        if len(bad):
            raise RunDirError(
                f"{path}: record {int(bad[0]) + first_record}: {side}_payoff is not the payoff "
                "matrix's value for the two actions; the file was damaged or edited"
            )


def _shown(value: Any) -> str:
    """A value from a damaged record for a message: repr, cut short."""
    text = repr(value)
    return text if len(text) <= 40 else text[:36] + "...'"


def _text(column: Any) -> Any:
    """A text column as plain strings (a dictionary-encoded one decoded)."""
    import pyarrow as pa

    return column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column


def _valid_actions(actions: Any) -> np.ndarray:
    """Per record: whether the action is C or D (null is not)."""
    return text_is(actions, ACTIONS)


def _cooperated(actions: Any) -> np.ndarray:
    """Per record: whether the action is C (False for D and for null)."""
    return text_is(actions, ("C",))


def _flags(column: Any) -> np.ndarray:
    """A yes/no column as booleans (null is no)."""
    import pyarrow as pa

    if pa.types.is_boolean(column.type):
        return column_values(column, bool, False)
    import pyarrow.compute as pc

    found = pc.fill_null(column.cast(pa.bool_()), False)
    return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)


def _game_codes(table: Any) -> tuple[np.ndarray, np.ndarray, list[tuple[str, int]]]:
    """Each record's game as a code 0..G-1, games numbered in the order of their first
    records; the row of each game's first record; each game's (condition, replicate)."""
    for name in ("condition", "replicate"):
        if table.column(name).null_count:
            raise RunDirError(f"a round record has no {name}; the file was damaged or edited")
    n = len(table)
    condition = table.column("condition")
    names, texts = text_codes(condition)
    replicate = column_values(table.column("replicate"), np.int64, 0)
    changed = np.ones(n, dtype=bool)
    if n > 1:
        changed[1:] = replicate[1:] != replicate[:-1]
        changed[1:] |= names[1:] != names[:-1]  # equal texts share a code
    starts = np.flatnonzero(changed)
    if len(starts) > max(64, n // 16):  # records not grouped in runs of a game's rounds
        return _hashed_game_codes(_text(condition), replicate)
    index: dict[tuple[str, int], int] = {}
    keys = zip([texts[c] for c in names[starts].tolist()], replicate[starts].tolist(), strict=True)
    run_codes = np.array([index.setdefault(key, len(index)) for key in keys], dtype=np.int64)
    codes = np.repeat(run_codes, np.diff(np.append(starts, n)))
    _, first_run = np.unique(run_codes, return_index=True)
    return codes, starts[first_run], [(str(c), int(r)) for c, r in index]


def _texts_at(column: Any, rows: np.ndarray) -> list[Any]:
    """The values of a text column at these rows (None where null)."""
    codes, texts = text_codes(column)
    return [None if c < 0 else texts[c] for c in codes[rows].tolist()]


def _hashed_game_codes(
    condition: Any, replicate: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[tuple[str, int]]]:
    """`_game_codes` for records in any order (games interleaved)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = pc.unique(condition)
    name_codes = np.asarray(pc.index_in(condition, value_set=names), dtype=np.int64)
    reps, rep_codes = np.unique(replicate, return_inverse=True)
    combined = pa.array(name_codes * len(reps) + rep_codes)
    codes = np.asarray(pc.index_in(combined, value_set=pc.unique(combined)), dtype=np.int64)
    top = np.maximum.accumulate(codes)
    first = np.flatnonzero(np.concatenate(([True], top[1:] > top[:-1])))
    if len(first) != top[-1] + 1:  # not numbered in the order of first records: renumber
        _, first_of_code, codes = np.unique(codes, return_index=True, return_inverse=True)
        by_first = np.argsort(first_of_code)
        renumber = np.empty_like(by_first)
        renumber[by_first] = np.arange(len(by_first))
        codes, first = renumber[codes], first_of_code[by_first]
    values = names.to_pylist()
    games = [
        (str(values[c]), int(replicate[row]))
        for c, row in zip(name_codes[first].tolist(), first.tolist(), strict=True)
    ]
    return codes, first, games


def _by_game_and_round(
    codes: np.ndarray, rounds: np.ndarray, n_games: int
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """The rows sorted by game then round (ties in file order; None: as they are), each
    game's bounds in that order, and per game whether a round index repeats."""
    n = len(codes)
    counts = np.bincount(codes, minlength=n_games)
    bounds = np.concatenate(([0], np.cumsum(counts)))
    if n and ((rounds >= 0) & (rounds < counts[codes])).all():
        position = bounds[codes] + rounds
        if (np.bincount(position, minlength=n) == 1).all():  # each game's rounds are 0..n-1
            if (position == np.arange(n)).all():
                return None, bounds, np.zeros(n_games, dtype=bool)
            order = np.empty(n, dtype=np.int64)
            order[position] = np.arange(n)
            return order, bounds, np.zeros(n_games, dtype=bool)
    order = np.lexsort((rounds, codes))
    in_order, at = codes[order], rounds[order]
    repeats = (in_order[1:] == in_order[:-1]) & (at[1:] == at[:-1])
    repeated = np.zeros(n_games, dtype=bool)
    repeated[in_order[1:][repeats]] = True
    return order, bounds, repeated


def outcomes_from_table(
    table: Any, talk: dict[str, TalkSetting] | None = None
) -> list[GameOutcome]:
    """Split a rounds table into games (condition, replicate), each sorted by round; the table
    holds whole games (the whole run, or one batch of games). `talk`: per condition how its
    messages are read (`talk_settings` of the manifest; default: labels C and D, every round)."""
    if len(table) == 0:
        return []
    codes, first, games = _game_codes(table)
    rounds = column_values(table.column("round_index"), np.int64, 0)
    order, bounds, repeated = _by_game_and_round(codes, rounds, len(games))
    names = {
        side: _texts_at(table.column(f"{side}_name"), first) for side in ("agent_a", "agent_b")
    }

    def ordered(values: np.ndarray) -> np.ndarray:
        return values if order is None else values[order]

    cols: dict[str, np.ndarray] = {}
    for side in ("agent_a", "agent_b"):
        cols[f"{side}_coop"] = ordered(_cooperated(table.column(f"{side}_action")))
        column = table.column(f"{side}_payoff")
        cols[f"{side}_payoff"] = ordered(column_values(column, np.float64, np.nan))
        column = table.column(f"{side}_p_cooperate")
        cols[f"{side}_p_cooperate"] = (
            _same_everywhere(np.nan, len(table), np.float64)  # a policy's: none recorded
            if column.null_count == len(table)
            else ordered(column_values(column, np.float64, np.nan))
        )
        flags = _flags(table.column(f"{side}_parse_failure"))
        cols[f"{side}_fallback"] = (
            _same_everywhere(False, len(table), bool) if not flags.any() else ordered(flags)
        )
    messages = _talk_columns(table, ordered)
    # games in the order of "condition\x1freplicate" as text
    ranked = sorted(range(len(games)), key=lambda g: f"{games[g][0]}\x1f{games[g][1]}")
    out: list[GameOutcome] = []
    for g in ranked:
        condition, replicate = games[g]
        if repeated[g]:
            raise RunDirError(
                f"condition {condition!r} replicate {replicate}: duplicated round indexes"
            )
        at = slice(bounds[g], bounds[g + 1])
        a_fallback, b_fallback = cols["agent_a_fallback"][at], cols["agent_b_fallback"][at]
        out.append(
            GameOutcome(
                condition=condition,
                replicate=replicate,
                agent_a_name=str(names["agent_a"][g]),
                agent_b_name=str(names["agent_b"][g]),
                a_coop=cols["agent_a_coop"][at],
                b_coop=cols["agent_b_coop"][at],
                a_payoffs=cols["agent_a_payoff"][at],
                b_payoffs=cols["agent_b_payoff"][at],
                a_parse_failures=int(np.count_nonzero(a_fallback)),
                b_parse_failures=int(np.count_nonzero(b_fallback)),
                a_fallback=a_fallback,
                b_fallback=b_fallback,
                a_p_cooperate=cols["agent_a_p_cooperate"][at],
                b_p_cooperate=cols["agent_b_p_cooperate"][at],
                talk=None
                if messages is None
                else _game_talk(messages, at, (talk or {}).get(condition, TalkSetting())),
            )
        )
    return out


def _same_everywhere(value: Any, n: int, dtype: Any) -> np.ndarray:
    """n copies of one value as a read-only view of a single one (the values a column of that
    value everywhere holds, without its memory: a policy's P(C) and fallback flags)."""
    return np.broadcast_to(np.array(value, dtype=dtype), (n,))


def _talk_columns(table: Any, ordered: Any) -> dict[str, Any] | None:
    """The rounds' messages (entries as dicts, in game and round order) and the moves each
    agent chose (True for C), when the table has them."""
    if MESSAGES not in table.column_names:
        return None
    entries = table.column(MESSAGES).to_pylist()
    index = ordered(np.arange(len(entries)))
    return {
        "messages": [_entries(entries[i]) for i in index.tolist()],
        "chose_a": ordered(_cooperated(table.column(side_field("a", "intended_action")))),
        "chose_b": ordered(_cooperated(table.column(side_field("b", "intended_action")))),
    }


def _entries(value: Any) -> list[dict[str, Any]]:
    """A round's message entries (stored as a list, or as JSON text in columnar parts)."""
    if value is None:
        return []
    return orjson.loads(value) if isinstance(value, str) else value


def _game_talk(talk: dict[str, Any], at: slice, setting: TalkSetting) -> Any:
    """A game's talk tracks (None when it recorded no message)."""
    rounds = talk["messages"][at]
    if not any(rounds):
        return None
    said = [
        Message(
            r,
            int(e.get("turn") or 0),
            SEATS.index(e["from"]),
            str(e.get("text") or ""),
            _intent(e.get("intent")),
            str(e.get("source") or "none"),
        )
        for r, entries in enumerate(rounds)
        for e in entries
        if not e.get("fallback")
    ]
    return talk_tracks(
        said, talk["chose_a"][at], talk["chose_b"][at], setting.labels, setting.pregame
    )


def talk_settings(manifest: dict[str, Any]) -> dict[str, TalkSetting]:
    """Per condition with a message channel, how its messages are read: its writers' move
    labels (`message_labels` of the manifest's condition; C and D where a run older than
    issue 29 recorded none) and whether the channel is pregame."""
    out: dict[str, TalkSetting] = {}
    for cond in manifest.get("conditions") or []:
        if not isinstance(cond, dict) or not isinstance(cond.get("communication"), dict):
            continue
        recorded = cond.get("message_labels") or {}
        labels = tuple(_labels(recorded.get(side)) for side in SEATS)
        pregame = cond["communication"].get("mode") == "pregame"
        out[str(cond.get("name"))] = TalkSetting((labels[0], labels[1]), pregame)
    return out


def _labels(value: Any) -> tuple[str, str]:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return (value[0], value[1])
    return DEFAULT_LABELS


SEATS = ("agent_a", "agent_b")  # a message entry's writer


def _intent(value: Any) -> Action | None:
    return None if value is None else Action(value)


def pc_max(column: Any) -> Any:
    """The largest value of a pyarrow column (None when every value is null)."""
    import pyarrow.compute as pc

    return pc.max(column).as_py()
