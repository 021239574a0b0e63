"""Where each game's lines are in rounds.jsonl, found without reading the whole file.

pdbench writes a run's games one after the other (`storage.rounds.OrderedRoundsWriter`), so the
file is a sequence of blocks of lines, one block per game. `probe_spans` finds the blocks by
bisection: it reads single lines at chosen byte offsets and narrows down every place where the
game key (condition, replicate) changes, about twenty lines read per game, so a 600 MB file is
indexed in a fraction of a second instead of being parsed. A block is only trusted after
`read_span_lines` has parsed every line of it and found exactly the rounds the game should have
(its length from aggregates.parquet or the manifest's plan); otherwise, or when the length is not
known, `scan_lines` parses every line once (the sure way, seconds for a million rounds).

The result is, per game, a (round_index, start, end) array of byte offsets sorted by round, from
which `read_lines` reads the records, `rounds_table` their scalar fields and `replies_by_round`
their replies. Pure file reading: no Streamlit, no caching (see ui.data).
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import orjson
import pandas as pd

from pdbench.storage.record.fields import MESSAGES, RAW_RESPONSES, ROUND_INDEX, side_field
from pdbench.ui.replies import ReplyAttempt, slim

GameKey = tuple[str, int]  # (condition, replicate)
_BLOCK = 8192  # bytes read at a time when looking for a line's end
_SCAN_BLOCK = 1 << 24  # bytes read at a time by the full scan


class Unreadable(Exception):
    """A line the probes cannot use (not JSON, or without a game key)."""


class BadRounds(Exception):
    """Lines that are not rounds records of the expected fields (one-line message)."""


class _Line(NamedTuple):
    start: int  # offset of its first byte
    stop: int  # offset of its newline
    key: GameKey


def _record_key(line: bytes) -> tuple[GameKey, int]:
    """(game key, round_index) of one record; Unreadable when it has none."""
    try:
        record = orjson.loads(line)
        condition, replicate, round_index = (
            record["condition"],
            record["replicate"],
            record[ROUND_INDEX],
        )
    except (orjson.JSONDecodeError, KeyError, TypeError):
        raise Unreadable(line[:80]) from None
    if not (isinstance(condition, str) and type(replicate) is int and type(round_index) is int):
        raise Unreadable(line[:80])
    return (condition, replicate), round_index


def complete_end(path: Path) -> int:
    """One past the last newline of the file: complete lines end before it (a trailing partial
    line, a crash mid-write, is left out as `storage.record.table.read_rounds_table` leaves it)."""
    with open(path, "rb") as fh:
        end = fh.seek(0, 2)
        while end > 0:
            start = max(0, end - _BLOCK)
            fh.seek(start)
            found = fh.read(end - start).rfind(b"\n")
            if found >= 0:
                return start + found + 1
            end = start
    return 0


class _Prober:
    """Reads single lines of an open rounds file at byte offsets (below `limit`)."""

    def __init__(self, fh: Any, limit: int) -> None:
        self.fh, self.limit = fh, limit
        self.probes = 0

    def line_from(self, offset: int) -> _Line | None:
        """The first non-empty line starting at or after `offset`; None past the last one."""
        self.probes += 1
        base = max(0, offset - 1)
        self.fh.seek(base)
        buf = self.fh.read(_BLOCK)

        def newline(i: int) -> int:  # index in buf of the first newline at or after i
            nonlocal buf
            while (found := buf.find(b"\n", i)) < 0:
                more = self.fh.read(_BLOCK)
                if not more:
                    raise Unreadable("no newline")
                buf += more
            return found

        start = 0 if offset <= 0 else newline(0) + 1
        while base + start < self.limit:
            stop = newline(start)
            if stop > start:
                return _Line(base + start, base + stop, _record_key(buf[start:stop])[0])
            start = stop + 1
        return None

    def last_line(self) -> _Line | None:
        """The last non-empty complete line."""
        end = self.limit - 1  # its newline
        while end > 0:
            lo = end
            while True:  # the newline before `end`, or the start of the file
                lo = max(0, lo - _BLOCK)
                self.fh.seek(lo)
                found = self.fh.read(end - lo).rfind(b"\n")
                if found >= 0 or lo == 0:
                    start = lo + found + 1
                    break
            if start < end:
                self.fh.seek(start)
                return _Line(start, end, _record_key(self.fh.read(end - start))[0])
            end = start - 1
        return None


def probe_spans(
    path: Path, want: GameKey | None = None, order: Mapping[GameKey, int] | None = None
) -> dict[GameKey, list[tuple[int, int]]]:
    """Each game's byte spans [start, end) in rounds.jsonl, found by bisection on the game key
    and assuming a game's lines are contiguous (check with `read_span_lines`); Unreadable when a
    probed line is not a record.

    With `want` and `order` (each game's place in the file, e.g. the plan's order, which
    pdbench writes games in), only the places where that game can start or end are looked at
    (some forty lines read), and only its spans are returned."""
    limit = complete_end(path)
    with open(path, "rb", buffering=0) as fh:
        prober = _Prober(fh, limit)
        first, last = prober.line_from(0), prober.last_line()
        if first is None or last is None:
            return {}
        changes = [(first.start, first.key)]
        stack = [(first, last)]
        while stack:
            a, b = stack.pop()
            if a.key == b.key:
                continue  # one game from a to b (if the file is as pdbench writes it)
            if want is not None and order and not _may_hold(order, a.key, want, b.key):
                continue
            middle = prober.line_from((a.stop + 1 + b.start) // 2)
            if middle is None or middle.start >= b.start:
                middle = prober.line_from(a.stop + 1)  # the line after a
            if middle is None or middle.start >= b.start:
                changes.append((b.start, b.key))  # a and b are neighbours
                continue
            stack += [(a, middle), (middle, b)]
    changes.sort()
    spans: dict[GameKey, list[tuple[int, int]]] = {}
    for i, (start, key) in enumerate(changes):
        end = changes[i + 1][0] if i + 1 < len(changes) else limit
        spans.setdefault(key, []).append((start, end))
    return spans if want is None else {k: v for k, v in spans.items() if k == want}


def _may_hold(order: Mapping[GameKey, int], first: GameKey, want: GameKey, last: GameKey) -> bool:
    """Whether the lines from a line of game `first` to one of game `last` may hold a boundary
    of game `want`, if the file follows `order` (unknown games: they may)."""
    if not all(k in order for k in (first, want, last)):
        return True
    return order[first] <= order[want] <= order[last]


def _sorted_lines(found: Sequence[int]) -> np.ndarray:
    """A flat (round_index, start, end, ...) sequence as an (n, 3) array sorted by round."""
    lines = np.asarray(found, dtype=np.int64).reshape(-1, 3)
    return lines[np.argsort(lines[:, 0], kind="stable")]


def read_span_lines(
    path: Path, spans: Sequence[tuple[int, int]], key: GameKey
) -> np.ndarray | None:
    """The (round_index, start, end) rows of the lines in `spans`, sorted by round, or None when
    a line there is not a record of the game `key`."""
    found = array("q")
    with open(path, "rb") as fh:
        for span_start, span_end in spans:
            fh.seek(span_start)
            offset = span_start
            for line in fh.read(span_end - span_start).split(b"\n"):
                if line:
                    try:
                        line_key, round_index = _record_key(line)
                    except Unreadable:
                        return None
                    if line_key != key:
                        return None
                    found.extend((round_index, offset, offset + len(line)))
                offset += len(line) + 1
    return _sorted_lines(found)


def scan_lines(path: Path) -> dict[GameKey, np.ndarray]:
    """Every game's (round_index, start, end) rows, sorted by round, parsing every line once
    (lines that are not records are skipped; a trailing partial line is left out)."""
    found: dict[GameKey, array[int]] = {}
    with open(path, "rb") as fh:
        rest, offset = b"", 0  # offset: where `rest` starts in the file
        while block := fh.read(_SCAN_BLOCK):
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            for line in lines:
                if line:
                    try:
                        key, round_index = _record_key(line)
                    except Unreadable:
                        pass
                    else:
                        rows = found.get(key)
                        if rows is None:
                            rows = found[key] = array("q")
                        rows.extend((round_index, offset, offset + len(line)))
                offset += len(line) + 1
    return {key: _sorted_lines(rows) for key, rows in found.items()}


def read_lines(path: Path, lines: np.ndarray) -> list[bytes]:
    """The bytes of each (round_index, start, end) row's line, in the rows' order: one read of
    the range they cover when they lie close together (a game as pdbench writes it), else one
    read per line."""
    if not len(lines):
        return []
    low, high = int(lines[:, 1].min()), int(lines[:, 2].max())
    with open(path, "rb") as fh:
        if high - low <= 2 * int((lines[:, 2] - lines[:, 1]).sum()) + _BLOCK:
            fh.seek(low)
            data = fh.read(high - low)
            return [data[start - low : end - low] for _, start, end in lines.tolist()]
        out = []
        for _, start, end in lines.tolist():
            fh.seek(start)
            out.append(fh.read(end - start))
        return out


def rounds_table(
    path: Path, lines: list[bytes], fields: tuple[str, ...], required: tuple[str, ...]
) -> Any:
    """The record `fields` of these lines of `path` as a pyarrow Table, typed from the schema as
    `storage.record.table.read_rounds_table` types them; BadRounds when the lines are not valid
    JSON or a `required` field is absent from all of them, SchemaVersionError for a newer
    record."""
    import pyarrow as pa
    import pyarrow.json as pj

    from pdbench.storage.record.table import pc_max
    from pdbench.storage.schema import check_version, rounds_arrow_schema

    read = tuple(dict.fromkeys(("schema_version", *fields)))
    options = pj.ParseOptions(
        explicit_schema=rounds_arrow_schema(read),
        unexpected_field_behavior="ignore",
    )
    try:
        table = pj.read_json(pa.BufferReader(b"\n".join(lines) + b"\n"), parse_options=options)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        reason = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BadRounds(f"{path}: not valid rounds JSON Lines ({reason})") from None
    check_version(str(path), pc_max(table.column("schema_version")))
    missing = [c for c in required if table.column(c).null_count == len(table)]
    if missing:
        raise BadRounds(f"{path}: records lack required fields: {', '.join(missing)}")
    return table.select(list(fields))


def round_frame(table: Any) -> pd.DataFrame:
    """A game's rounds table as pandas, with the gaps of older or policy-only records filled:
    intended action = the action, no parse failure, agent names A and B."""
    df = table.to_pandas()
    for side in ("a", "b"):
        intended = side_field(side, "intended_action")
        df[intended] = df[intended].fillna(df[side_field(side, "action")])
        failure = side_field(side, "parse_failure")
        df[failure] = df[failure].fillna(False).astype(bool)
        name = f"agent_{side}_name"
        df[name] = df[name].fillna(side.upper())
    return df


_MESSAGES_KEY = f'"{MESSAGES}":'.encode()  # only a top-level key has unescaped quotes


def line_messages(lines: Sequence[bytes]) -> list[Any]:
    """Each line's `messages` (its raw list of message entries, None when it has none); only
    lines that hold the key are parsed."""
    out: list[Any] = []
    for line in lines:
        value = None
        if _MESSAGES_KEY in line:
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                record = None
            value = record.get(MESSAGES) if isinstance(record, dict) else None
        out.append(value)
    return out


def with_messages(frame: pd.DataFrame, entries: Sequence[Any]) -> pd.DataFrame:
    """`frame` (a game's rounds, one row per entry of `entries`) with a `messages` column when
    a round of it has messages: each round's entries as a list (JSON text, as the columnar
    parts store it, is decoded; a round without messages has an empty list)."""
    frame = frame.drop(columns=[MESSAGES], errors="ignore")
    rounds = [orjson.loads(e) if isinstance(e, str | bytes) else e for e in entries]
    if any(rounds):
        frame[MESSAGES] = [list(r) if isinstance(r, list) else [] for r in rounds]
    return frame


def replies_by_round(path: Path, lines: np.ndarray) -> dict[int, dict[str, list[ReplyAttempt]]]:
    """round_index -> `replies.slim` of the raw_responses of each of these lines' records."""
    found: dict[int, dict[str, list[ReplyAttempt]]] = {}
    for raw in read_lines(path, lines):
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict) and type(record.get(ROUND_INDEX)) is int:
            found[record[ROUND_INDEX]] = slim(record.get(RAW_RESPONSES))
    return found
