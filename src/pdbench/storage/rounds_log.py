"""The rounds log of a run directory in its configured form (`run.rounds_log`): rounds.jsonl,
the columnar parts under `rounds/`, or both; what a session opens, keeps on resume and puts
back in plan order.

`jsonl` and `both` keep rounds.jsonl as the crash-safe log that resume reads (with `both`, the
columns are rebuilt from it on resume); `columns` keeps the parts only (policy agents only:
a part is written every few million rounds and at the end, and the games of a part a kill
prevented are played again on resume, deterministically).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pdbench.errors import RunError
from pdbench.storage.record.fields import AGGREGATE_INPUT_FIELDS, ROUND_INDEX
from pdbench.storage.record.jsonl import (
    OrderedRoundsWriter,
    RoundsEncoder,
    finished_games,
    write_games_in_order,
)
from pdbench.storage.schema import ROUNDS_FILE

ROUNDS_LOG_CHOICES = ("jsonl", "columns", "both")
# The manifest's record of rounds.jsonl as the session that wrote the parts left it: readers
# use the parts only while rounds.jsonl is still that file (else it was edited, torn or
# replaced since, and is what must be read and checked).
JSONL_STAMP_KEY = "rounds_jsonl_stamp"
Key = tuple[str, int]


def keeps_jsonl(mode: str) -> bool:
    """Whether this rounds_log setting writes rounds.jsonl."""
    return mode in ("jsonl", "both")


def keeps_columns(mode: str) -> bool:
    """Whether this rounds_log setting writes the columnar parts."""
    return mode in ("columns", "both")


def open_writer(
    run_dir: Path, mode: str, order: list[int], encoder: RoundsEncoder, manifest: dict[str, Any]
) -> OrderedRoundsWriter:
    """The session's writer of logged games, in plan order, to the configured form(s)."""
    columns = None
    if keeps_columns(mode) and order:
        from pdbench.storage.record.parts import run_origin
        from pdbench.storage.record.writer import ColumnarRoundsWriter

        columns = ColumnarRoundsWriter(run_dir, run_origin(manifest))
    return OrderedRoundsWriter(
        run_dir / ROUNDS_FILE, order, encoder, jsonl=keeps_jsonl(mode), columns=columns
    )


@dataclass
class KeptGames:
    """What `keep_finished` kept: each game's rounds (a pyarrow Table of the fields asked for),
    and the finished games it found damaged (key -> the first problem, one line), which are not
    kept and must be played again."""

    games: dict[Key, Any] = field(default_factory=dict)
    damaged: dict[Key, str] = field(default_factory=dict)


def keep_finished(
    run_dir: Path,
    mode: str,
    manifest: dict[str, Any],
    expected: dict[Key, int],
    order: list[Key],
    fields: tuple[str, ...] = AGGREGATE_INPUT_FIELDS,
    *,
    check: bool = True,
    replayable: Callable[[Key], bool] = lambda key: True,
    replay: Replay | None = None,
) -> KeptGames:
    """Keep the complete games (exactly their planned rounds) in plan order, drop the rest.

    With `check`, a complete game is kept only when it passes the checks `aggregate` applies
    (`record.table.check_rounds`: actions, payoffs against the matrix, every round once); a
    damaged game that can be replayed exactly (`replayable`) is dropped and reported in
    `damaged`, one that cannot stops the resume (RunError naming it, nothing rewritten).
    `replay(keys)`: the played moves (C as True, per side) of replayable games played again;
    a kept game whose moves differ is damaged too (a game rewritten so that it still adds up).

    `jsonl`/`both`: rounds.jsonl is rewritten atomically with the kept games in plan order (and,
    for `both`, the columnar parts from it when `check` is False: the session's last pass).
    `columns`: the parts are the only log; the first pass (`check`) only reads them, the last
    one rewrites them in plan order (`columns.rewrite_columns`: new parts written and read back
    before the old ones go, so no kill and no failure loses a game)."""
    if keeps_jsonl(mode):
        import pyarrow as pa

        from pdbench.storage.record.columns import lines_batch, plain, rewrite_columns

        lines = finished_games(run_dir, expected)
        batches = {
            key: lines_batch(b"\n".join(lines[key]) + b"\n") for key in order if key in lines
        }
        tables = {key: pa.Table.from_batches([batch]) for key, batch in batches.items()}
        kept = KeptGames({key: plain(t, fields) for key, t in tables.items()})
        if check:
            _drop_damaged(kept, _plan_view(manifest, expected), run_dir / ROUNDS_FILE, replayable)
            _drop_unreplayed(kept, run_dir / ROUNDS_FILE, replayable, replay)
        for key in kept.damaged:
            del lines[key], batches[key]
        write_games_in_order(run_dir, lines, order)
        if keeps_columns(mode) and not check:
            from pdbench.storage.record.parts import run_origin

            rewrite_columns(
                run_dir,
                (batches[key] for key in order if key in batches),
                run_origin(manifest),
                {key: expected[key] for key in batches},
            )
        return kept
    from pdbench.storage.record.columns import STORED_SCHEMA as stored
    from pdbench.storage.record.columns import ColumnsReader, plain, rewrite_columns
    from pdbench.storage.record.parts import columns_dir, run_origin

    reader = ColumnsReader(run_dir, manifest)
    wanted = [key for key in order if expected.get(key) == reader.index.get(key, (0, 0, -1))[2]]
    held = _by_game(reader, wanted, fields if check else tuple(f.name for f in stored))
    kept = KeptGames()
    for key, table in held.items():
        if _in_round_order(table):
            kept.games[key] = plain(table, fields) if check else table
        else:  # every round there, but not in order: a damaged or edited part, played again
            kept.damaged[key] = (
                f"{columns_dir(run_dir)}: game {key[0]!r} replicate {key[1]}: its rounds are not "
                "in order; the part was damaged or edited"
            )
    if check:
        _drop_damaged(kept, _plan_view(manifest, expected), columns_dir(run_dir), replayable)
        _drop_unreplayed(kept, columns_dir(run_dir), replayable, replay)
        return kept
    rewrite_columns(
        run_dir,
        (held[key] for key in order if key in kept.games),
        run_origin(manifest),
        {key: expected[key] for key in kept.games},
    )
    return kept


def _by_game(reader: Any, keys: list[Key], fields: tuple[str, ...]) -> dict[Key, Any]:
    """These games' rows (these fields as stored), one table each: slices of whole-game
    batches read in the parts' order, so no row group is decoded twice."""
    import numpy as np
    import pyarrow as pa

    from pdbench.storage.record.arrays import column_values

    out: dict[Key, Any] = {}
    for table in reader.games(fields, keys, decode=False):
        replicates = column_values(table.column("replicate"), np.int64, 0)
        conditions = np.asarray(table.column("condition").cast(pa.string()).to_pylist(), object)
        starts = np.ones(len(replicates), dtype=bool)
        starts[1:] = (replicates[1:] != replicates[:-1]) | (conditions[1:] != conditions[:-1])
        at = np.flatnonzero(starts).tolist()
        for a, b in zip(at, [*at[1:], len(replicates)], strict=True):
            out[(str(conditions[a]), int(replicates[a]))] = table.slice(a, b - a)
    return out


def _in_round_order(table: Any) -> bool:
    import numpy as np

    from pdbench.storage.record.arrays import column_values

    rounds = column_values(table.column(ROUND_INDEX), np.int64, -1)
    return bool(np.array_equal(rounds, np.arange(len(rounds))))


def _plan_view(manifest: dict[str, Any], expected: dict[Key, int]) -> dict[str, Any]:
    """The manifest as `check_rounds` reads it, with the session's plan (`expected`) as its
    conditions: the same checks for every kind of run (a tournament's or an evolution's
    manifest lists no conditions), the payoff matrix from the config it records."""
    conditions: dict[str, list[dict[str, int]]] = {}
    for (condition, replicate), n in expected.items():
        conditions.setdefault(condition, []).append({"replicate": replicate, "n_rounds": n})
    return {
        "config": manifest.get("config"),
        "conditions": [{"name": name, "games": games} for name, games in conditions.items()],
    }


def _drop_damaged(
    kept: KeptGames, manifest: dict[str, Any], where: Path, replayable: Callable[[Key], bool]
) -> None:
    """Move the kept games that fail `check_rounds` to `kept.damaged`; RunError when one of
    them cannot be replayed exactly (an LLM game), naming it."""
    from pdbench.storage.record.table import damaged_games

    kept.damaged.update(damaged_games(kept.games, manifest, where))
    for key in kept.damaged:
        kept.games.pop(key, None)
    stuck = [key for key in kept.damaged if not replayable(key)]
    if stuck:
        raise RunError(
            f"{kept.damaged[stuck[0]]} ({len(stuck)} damaged game(s) with LLM agents, which a "
            "replay would not reproduce); restore the file, or delete that game's records to "
            "play it again"
        )


# Played moves (True for C) of each side, by game, of games played again.
Replay = Callable[[list[Key]], dict[Key, tuple[Any, Any]]]


def _drop_unreplayed(
    kept: KeptGames, where: Path, replayable: Callable[[Key], bool], replay: Replay | None
) -> None:
    """Move the kept replayable games whose moves are not those their replay plays to
    `kept.damaged` (their payoffs can fit their moves and still not be what was played)."""
    if replay is None:
        return
    import numpy as np

    from pdbench.storage.record.fields import side_fields

    keys = [key for key in kept.games if replayable(key)]
    if not keys:
        return
    moves = replay(keys)
    for key in keys:
        table = kept.games[key]
        recorded = tuple(
            np.asarray(table.column(field).to_pylist()) == "C" for field in side_fields("action")
        )
        if any(
            not np.array_equal(r, np.asarray(m, dtype=bool))
            for r, m in zip(recorded, moves[key], strict=True)
        ):
            kept.damaged[key] = (
                f"{where}: game {key[0]!r} replicate {key[1]}: its moves are not what its "
                "agents play (replayed); the log was edited"
            )
            del kept.games[key]


def jsonl_stamp(run_dir: Path) -> dict[str, int] | None:
    """rounds.jsonl's size and modification time (None when there is none)."""
    try:
        st = (Path(run_dir) / ROUNDS_FILE).stat()
    except FileNotFoundError:
        return None
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
