"""The rounds log of a run directory in its configured form (`run.rounds_log`): rounds.jsonl,
the columnar parts under `rounds/`, or both; what a session opens, keeps on resume and puts
back in plan order.

`jsonl` and `both` keep rounds.jsonl as the crash-safe log that resume reads (with `both`, the
columns are rebuilt from it on resume); `columns` keeps the parts only (policy agents only:
a part is written every few million rounds and at the end, and the games of a part a kill
prevented are played again on resume, deterministically).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pdbench.storage.record.fields import AGGREGATE_INPUT_FIELDS
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
    run_dir: Path, mode: str, order: list[int], encoder: RoundsEncoder
) -> OrderedRoundsWriter:
    """The session's writer of logged games, in plan order, to the configured form(s)."""
    columns = None
    if keeps_columns(mode) and order:
        from pdbench.storage.record.writer import ColumnarRoundsWriter

        columns = ColumnarRoundsWriter(run_dir)
    return OrderedRoundsWriter(
        run_dir / ROUNDS_FILE, order, encoder, jsonl=keeps_jsonl(mode), columns=columns
    )


def keep_finished(
    run_dir: Path,
    mode: str,
    expected: dict[Key, int],
    order: list[Key],
    fields: tuple[str, ...] = AGGREGATE_INPUT_FIELDS,
) -> dict[Key, Any]:
    """Keep the complete games (exactly their planned rounds) in plan order, drop the rest;
    returns key -> the game's rounds as a pyarrow Table of `fields` (the metrics' input). A
    kill mid-write loses no complete game: each form is rewritten atomically (columns: new
    parts first, old ones after)."""
    if keeps_jsonl(mode):
        import pyarrow as pa

        from pdbench.storage.record.columns import lines_batch, plain, rewrite_columns

        lines = finished_games(run_dir, expected)
        write_games_in_order(run_dir, lines, order)
        batches = {
            key: lines_batch(b"\n".join(lines[key]) + b"\n") for key in order if key in lines
        }
        if keeps_columns(mode):
            rewrite_columns(run_dir, (batches[key] for key in order if key in batches))
        return {
            key: plain(pa.Table.from_batches([batch]), fields) for key, batch in batches.items()
        }
    from pdbench.storage.record.columns import complete_games, plain, rewrite_columns

    games = complete_games(run_dir, expected)
    rewrite_columns(
        run_dir, (batch for key in order if key in games for batch in games[key].to_batches())
    )
    return {key: plain(games[key], fields) for key in order if key in games}


def jsonl_stamp(run_dir: Path) -> dict[str, int] | None:
    """rounds.jsonl's size and modification time (None when there is none)."""
    try:
        st = (Path(run_dir) / ROUNDS_FILE).stat()
    except FileNotFoundError:
        return None
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
