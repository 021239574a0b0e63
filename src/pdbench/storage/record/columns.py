"""Rounds in columns: the run's rounds as Parquet parts under `rounds/`, readable by game,
by condition or by column without reading the rest.

Each part (`rounds/part-NNNNNN.parquet`) holds whole games in the order they were added, and
lists them in its footer metadata (`pdbench.games`: condition, replicate, first row, rounds),
so one game is read from the row groups that hold it. A part is written to a temporary name and
renamed when complete, so a kill leaves whole parts only; the games of a part not yet written
are played again by `resume`. Every record field is stored but the running totals
(`agent_{a,b}_cum_payoff`), which a reader derives from the payoffs (the same sequential sums
the engine makes). Strings constant over a game are dictionary-encoded, so a policy round takes
a few bytes.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from pdbench.storage.parquet import arrow_array, masked_array
from pdbench.storage.record.fields import (
    CUM_FIELDS,
    LLM_FIELDS,
    ROUND_FIELD_TYPES,
    ROUND_FIELDS,
    SCHEMA_VERSION,
    GameKey,
    check_version,
)
from pdbench.storage.record.parts import (
    ORIGIN_KEY,
    PART_PREFIX,
    PART_SUFFIX,
    ROW_GROUP_ROWS_ENV,
    RoundsColumnsError,
    check_origin,
    columns_dir,
    manifest_beside,
    part_paths,
    planned_seeds,
    rows_from_env,
    run_origin,
)

GAMES_KEY = b"pdbench.games"
VERSION_KEY = b"pdbench.schema_version"
ROW_GROUP_ROWS = 1 << 16

ALL_FIELDS: tuple[str, ...] = (*ROUND_FIELDS, *LLM_FIELDS)
STORED_FIELDS: tuple[str, ...] = tuple(f for f in ROUND_FIELDS if f not in CUM_FIELDS)
_DICT = pa.dictionary(pa.int32(), pa.string())
_DICT_FIELDS = frozenset(name for name, alias in ROUND_FIELD_TYPES.items() if alias == "string") | {
    "agent_a_action",
    "agent_b_action",
    "agent_a_intended_action",
    "agent_b_intended_action",
}
_MOVES = arrow_array(["D", "C"])


def _stored_type(name: str) -> pa.DataType:
    if name in LLM_FIELDS:
        return pa.string()
    if name in _DICT_FIELDS:
        return _DICT
    return pa.type_for_alias(ROUND_FIELD_TYPES[name])


STORED_SCHEMA = pa.schema([(name, _stored_type(name)) for name in (*STORED_FIELDS, *LLM_FIELDS)])


# --------------------------------------------------------------------------------------------
# Writing


def _moves(cooperated: np.ndarray) -> pa.Array:
    return pa.DictionaryArray.from_arrays(
        arrow_array(np.asarray(cooperated, dtype=bool).astype(np.int32)), _MOVES
    )


def records_batch(records: list[dict[str, Any]]) -> pa.RecordBatch:
    """Records (rounds.jsonl lines, parsed) as a record batch; prompts and replies as JSON."""
    columns: dict[str, list[Any]] = {f.name: [] for f in STORED_SCHEMA}
    for record in records:
        for name, values in columns.items():
            value = record.get(name)
            if name in LLM_FIELDS and value is not None:
                value = orjson.dumps(value).decode()
            values.append(value)
    arrays = []
    for f in STORED_SCHEMA:
        if f.type == _DICT:
            arrays.append(pa.array(columns[f.name], pa.string()).dictionary_encode())
        else:
            arrays.append(pa.array(columns[f.name], f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=STORED_SCHEMA)


def lines_batch(blob: bytes) -> pa.RecordBatch:
    """rounds.jsonl lines (one or more games) as a record batch."""
    return records_batch([orjson.loads(line) for line in blob.splitlines() if line.strip()])


def games_of(batch: pa.RecordBatch) -> list[tuple[str, int, int]]:
    """(condition, replicate, rounds) of each run of rows of one game, in row order."""
    if batch.num_rows == 0:
        return []
    cond = batch.column("condition")
    if isinstance(cond, pa.DictionaryArray):
        cond = cond.cast(pa.string())
    conditions = np.asarray(cond.to_pylist(), dtype=object)
    replicates = batch.column("replicate").to_numpy(zero_copy_only=False)
    change = np.ones(len(replicates), dtype=bool)
    change[1:] = (conditions[1:] != conditions[:-1]) | (replicates[1:] != replicates[:-1])
    starts = np.flatnonzero(change).tolist() + [len(replicates)]
    return [
        (str(conditions[a]), int(replicates[a]), b - a)
        for a, b in zip(starts[:-1], starts[1:], strict=True)
    ]


def write_part(
    directory: Path,
    number: int,
    batches: list[pa.RecordBatch],
    games: list[Any],
    origin: dict[str, Any],
) -> None:
    """Write one part: these batches (whole games, listed in `games` as condition, replicate,
    first row, rounds), with the run's origin (`parts.run_origin`) and this part's number in
    its footer, under a temporary name renamed when complete."""
    directory.mkdir(exist_ok=True)
    table = pa.Table.from_batches(batches, schema=STORED_SCHEMA)
    table = table.replace_schema_metadata(
        {
            VERSION_KEY: str(SCHEMA_VERSION).encode(),
            GAMES_KEY: orjson.dumps(games),
            ORIGIN_KEY: orjson.dumps({**origin, "part": number}),
        }
    )
    path = directory / f"{PART_PREFIX}{number:06d}{PART_SUFFIX}"
    tmp = directory / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        pq.write_table(
            table,
            tmp,
            row_group_size=rows_from_env(ROW_GROUP_ROWS_ENV, ROW_GROUP_ROWS),
            compression="zstd",
            use_dictionary=True,
            write_statistics=["condition", "replicate"],
        )
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a full disk: the caller says so and keeps what it has
        raise


def join_spans(spans: Iterable[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """(condition, replicate, rounds) of each game, from runs of rows in row order: a game's
    rows split over consecutive batches (a table's chunks, e.g. the row groups a game was read
    back from) are one game. RoundsColumnsError when a game's rows are not together (a part
    lists each game once)."""
    joined: list[tuple[str, int, int]] = []
    for condition, replicate, n in spans:
        if joined and joined[-1][:2] == (condition, replicate):
            joined[-1] = (condition, replicate, joined[-1][2] + n)
        else:
            joined.append((condition, replicate, n))
    keys = [span[:2] for span in joined]
    if len(set(keys)) != len(keys):
        raise RoundsColumnsError(
            "the rows of a game given to the columnar writer are not together; nothing written"
        )
    return joined


def games_batch(
    keys: list[GameKey], arrays: list[dict[str, np.ndarray]], timestamps: list[str]
) -> pa.RecordBatch:
    """Consecutive games of the vectorized engine as one record batch, built column-wise."""
    lengths = np.array([int(a["played_a"].shape[0]) for a in arrays], dtype=np.int64)
    n = int(lengths.sum())
    game_of_row = np.repeat(np.arange(len(keys), dtype=np.int32), lengths)
    values: dict[str, pa.Array] = {}
    for name in GameKey._fields:
        per_game = [getattr(k, name) for k in keys]
        values[name] = _per_game(name, per_game, game_of_row, lengths)
    values["timestamp_utc"] = _per_game("timestamp_utc", timestamps, game_of_row, lengths)

    def joined(field: str, dtype: Any) -> np.ndarray:
        return (
            np.concatenate([np.asarray(a[field], dtype=dtype) for a in arrays])
            if arrays
            else np.empty(0, dtype)
        )

    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    values.update(
        round_index=arrow_array(np.arange(n, dtype=np.int64) - np.repeat(starts, lengths)),
        agent_a_action=_moves(joined("played_a", bool)),
        agent_b_action=_moves(joined("played_b", bool)),
        agent_a_intended_action=_moves(joined("intended_a", bool)),
        agent_b_intended_action=_moves(joined("intended_b", bool)),
        agent_a_payoff=arrow_array(joined("payoffs_a", np.float64)),
        agent_b_payoff=arrow_array(joined("payoffs_b", np.float64)),
        agent_a_parse_failure=arrow_array(np.zeros(n, dtype=bool)),
        agent_b_parse_failure=arrow_array(np.zeros(n, dtype=bool)),
        agent_a_p_cooperate=pa.nulls(n, pa.float64()),
        agent_b_p_cooperate=pa.nulls(n, pa.float64()),
    )
    for name in LLM_FIELDS:
        values[name] = pa.nulls(n, pa.string())
    return pa.RecordBatch.from_arrays([values[f.name] for f in STORED_SCHEMA], schema=STORED_SCHEMA)


def _per_game(
    name: str, per_game: list[Any], game_of_row: np.ndarray, lengths: np.ndarray
) -> pa.Array:
    """A field constant over each game, repeated over its rounds (strings dictionary-encoded)."""
    kind = STORED_SCHEMA.field(name).type
    if name in _DICT_FIELDS:
        uniq = list(dict.fromkeys(per_game))
        code = {v: i for i, v in enumerate(uniq)}
        indices = np.array([code[v] for v in per_game], dtype=np.int32)[game_of_row]
        return pa.DictionaryArray.from_arrays(arrow_array(indices), arrow_array(uniq))
    if all(v is None for v in per_game):
        return pa.nulls(len(game_of_row), kind)
    dtype = {pa.int64(): np.int64, pa.float64(): np.float64}.get(kind)
    if dtype is None or any(isinstance(v, bool) for v in per_game):  # no such field today
        rows = [v for v, k in zip(per_game, lengths, strict=True) for _ in range(k)]
        return pa.array(rows, kind)
    valid = np.array([v is not None for v in per_game], dtype=bool)
    filled = np.array([0 if v is None else v for v in per_game], dtype=dtype)
    return masked_array(np.repeat(filled, lengths), None if valid.all() else valid[game_of_row])


def rewrite_columns(
    run_dir: Path,
    games: Iterable[pa.Table | pa.RecordBatch],
    origin: dict[str, Any],
    expected: dict[tuple[str, int], int] | None = None,
) -> None:
    """Replace the run directory's parts by these games (tables or batches of whole games,
    e.g. kept games in plan order).

    The new parts are written first under fresh numbers and read back: when `expected` (key ->
    rounds) is given they must hold exactly those games with those rounds, else they are removed
    and RoundsColumnsError is raised with the old parts untouched. Only then are the old parts
    removed, so a kill at any moment leaves every game at least once (a reader takes the last
    copy of a game).
    """
    from pdbench.storage.record.writer import ColumnarRoundsWriter

    old = part_paths(run_dir)
    writer = ColumnarRoundsWriter(run_dir, origin)
    for game in games:
        if isinstance(game, pa.Table):
            writer.add_table(game)
        else:
            writer.add_batch(game)
    writer.close()
    new = [p for p in part_paths(run_dir) if p not in set(old)]
    if expected is not None:
        written: dict[tuple[str, int], int] = {}
        for path in new:
            for condition, replicate, _, n in _open(path, None)[1]:
                written[(condition, replicate)] = written.get((condition, replicate), 0) + n
        if written != expected:
            for path in new:
                path.unlink(missing_ok=True)
            lost = sorted(k for k in expected if written.get(k) != expected[k])
            raise RoundsColumnsError(
                f"{columns_dir(run_dir)}: rewriting the parts would change "
                f"{len(lost) or len(written)} games (first {(lost or sorted(written))[0]}); "
                "nothing was changed"
            )
    for path in old:
        path.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------------
# Reading


def _open(
    path: Path, origin: dict[str, Any] | None
) -> tuple[pq.ParquetFile, list[tuple[str, int, int, int]]]:
    """A part and the games its footer lists, checked: a pdbench part of a version this pdbench
    reads, every stored column there with its type, the game list consistent with the rows,
    and (`origin` given) written for this run under this number; else RoundsColumnsError, one
    line naming the part."""
    try:
        parquet = pq.ParquetFile(path)
        meta = parquet.schema_arrow.metadata or {}
        check_version(str(path), (meta.get(VERSION_KEY) or b"0").decode())
        listed = orjson.loads(meta[GAMES_KEY])
        found_origin = orjson.loads(meta[ORIGIN_KEY]) if ORIGIN_KEY in meta else None
        schema = parquet.schema_arrow
        rows = parquet.metadata.num_rows
    except (pa.ArrowException, OSError, KeyError, orjson.JSONDecodeError, TypeError) as exc:
        raise RoundsColumnsError(f"{path}: not a pdbench rounds part ({exc})") from None
    for f in STORED_SCHEMA:
        if f.name not in schema.names:
            if f.name in LLM_FIELDS:
                continue  # a part older than the field
            raise RoundsColumnsError(f"{path}: no column {f.name}; a damaged or edited part")
        got = schema.field(f.name).type
        if got != f.type:
            raise RoundsColumnsError(
                f"{path}: column {f.name} is {got}, not {f.type}; a damaged or edited part"
            )
    games = _listed_games(path, listed, rows)
    if origin is not None and found_origin is None:
        _check_rows_origin(path, parquet, games, origin)
    elif origin is not None:
        check_origin(path, found_origin, origin)
    return parquet, games


def _check_rows_origin(
    path: Path, parquet: pq.ParquetFile, games: list[tuple[str, int, int, int]], origin: Any
) -> None:
    """A part written before parts recorded their origin: its rows' run id and each game's seed
    must be the run's and the plan's (else RoundsColumnsError, one line)."""
    table = parquet.read(columns=["run_id", "seed"])
    run_ids = set(table.column("run_id").cast(pa.string()).unique().to_pylist())
    if run_ids - {origin.get("run_id")}:
        found = sorted(str(r) for r in run_ids if r != origin.get("run_id"))[0]
        raise RoundsColumnsError(
            f"{path}: a part of another run (run id {found!r}, this run's "
            f"{origin.get('run_id')!r}); move it out of rounds/"
        )
    planned = origin.get("seeds") or {}
    seeds = table.column("seed").to_pylist()
    for condition, replicate, first, _ in games:
        want = planned.get((condition, replicate))
        if want is not None and float(seeds[first]) != float(want):
            raise RoundsColumnsError(
                f"{path}: condition {condition!r} replicate {replicate}: seed {seeds[first]}, "
                f"not the plan's {want}; a part of another run: move it out of rounds/"
            )


def _listed_games(path: Path, listed: Any, rows: int) -> list[tuple[str, int, int, int]]:
    """The footer's games (condition, replicate, first row, rounds), which must cover the
    part's rows one after the other, each game once."""
    games: list[tuple[str, int, int, int]] = []
    at = 0
    try:
        for condition, replicate, first, n in listed:
            if not (
                isinstance(condition, str)
                and all(type(v) is int for v in (replicate, first, n))
                and first == at
                and n > 0
            ):
                raise ValueError
            games.append((condition, replicate, first, n))
            at += n
    except (TypeError, ValueError):
        raise RoundsColumnsError(
            f"{path}: its list of games does not describe its rows; a damaged or edited part"
        ) from None
    if at != rows or len({g[:2] for g in games}) != len(games):
        raise RoundsColumnsError(
            f"{path}: its list of games does not describe its {rows} rows (each game once, one "
            "after the other); a damaged or edited part"
        )
    return games


def game_index(
    run_dir: Path, manifest: dict[str, Any] | None = None
) -> dict[tuple[str, int], tuple[Path, int, int]]:
    """(condition, replicate) -> (part, first row, rounds); a game found in two parts (a
    rewrite interrupted by a kill) is taken from the later part."""
    return ColumnsReader(run_dir, manifest).index


class ColumnsReader:
    """Reads a run directory's parts: the game index once, each part's footer once, each part
    checked against the run's manifest (`_open`): the one way every command reads parts."""

    def __init__(self, run_dir: Path, manifest: dict[str, Any] | None = None) -> None:
        self.run_dir = Path(run_dir)
        manifest = manifest if manifest is not None else manifest_beside(run_dir)
        origin = {**run_origin(manifest), "seeds": planned_seeds(manifest)}
        self._files: dict[Path, pq.ParquetFile] = {}
        self.index: dict[tuple[str, int], tuple[Path, int, int]] = {}
        for path in part_paths(run_dir):
            parquet, games = _open(path, origin)
            self._files[path] = parquet
            for condition, replicate, first, n in games:
                self.index[(condition, replicate)] = (path, first, n)
        # The last row group `games` read (part, columns, group, its rows): the next batch of
        # games usually starts in it (a condition's games end mid-group), so it is not decoded
        # twice.
        self._last: tuple[Path, tuple[str, ...], int, pa.Table] | None = None

    def game(self, key: tuple[str, int], fields: tuple[str, ...]) -> pa.Table | None:
        """One game's rounds (plain types), or None when it is not stored."""
        where = self.index.get(key)
        if where is None:
            return None
        path, first, n = where
        return plain(_read_rows(self._files[path], first, n, _stored(fields)), fields)

    def stored_game(self, key: tuple[str, int]) -> pa.Table:
        """One game's rows as stored (for rewriting parts)."""
        path, first, n = self.index[key]
        return _read_rows(self._files[path], first, n, [f.name for f in STORED_SCHEMA])

    def games(
        self,
        fields: tuple[str, ...],
        keys: Iterable[tuple[str, int]] | None = None,
        batch_rounds: int = 1 << 20,
        decode: bool = True,
    ) -> Iterator[pa.Table]:
        """Tables of whole games (about `batch_rounds` rounds each, a game never split), in
        the order the parts hold them; `keys` limits the games read; `decode=False` leaves
        text columns dictionary-encoded as stored (see `plain`)."""
        wanted = self.index if keys is None else {k: self.index[k] for k in keys if k in self.index}
        by_part: dict[Path, list[tuple[int, int]]] = {}
        for path, first, n in wanted.values():
            by_part.setdefault(path, []).append((first, n))
        stored = _stored(fields)
        for path in sorted(by_part):
            spans = sorted(by_part[path])
            i = 0
            while i < len(spans):
                start, rows = spans[i]
                j = i + 1
                while (
                    j < len(spans)
                    and spans[j][0] == start + rows
                    and rows + spans[j][1] <= batch_rounds
                ):
                    rows += spans[j][1]
                    j += 1
                yield plain(self._batch_rows(path, start, rows, stored), fields, decode)
                i = j

    def _batch_rows(self, path: Path, first: int, n: int, columns: list[str]) -> pa.Table:
        """`_read_rows`, reusing the last row group read when the rows start in it."""
        parquet = self._files[path]
        sizes = [parquet.metadata.row_group(g).num_rows for g in range(parquet.num_row_groups)]
        starts = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64))).tolist()
        groups = [g for g in range(len(sizes)) if starts[g + 1] > first and starts[g] < first + n]
        if not groups:
            return _read_rows(parquet, first, n, columns)
        key = (path, tuple(columns))
        pieces: list[pa.Table] = []
        todo = groups
        if self._last is not None and self._last[:3] == (*key, groups[0]):
            pieces.append(self._last[3])
            todo = groups[1:]
        if todo:
            pieces.append(parquet.read_row_groups(todo, columns=columns))
        table = pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)
        at = starts[groups[0]]
        self._last = (*key, groups[-1], table.slice(starts[groups[-1]] - at))
        return table.slice(first - at, n)


def plain(table: pa.Table, fields: tuple[str, ...], decode: bool = True) -> pa.Table:
    """Dictionary columns as strings (`decode=False`: as stored, for readers that take either
    and read the codes, like `record.table`'s checks), running totals derived, in the order
    asked; a JSON field the part does not hold (the exchange, in a part written before it
    existed) is null."""
    columns: dict[str, pa.Array | pa.ChunkedArray] = {}
    for name in fields:
        if name in CUM_FIELDS:
            continue
        if name in LLM_FIELDS and name not in table.column_names:
            columns[name] = pa.nulls(len(table), pa.string())  # a part older than the field
            continue
        column = table.column(name)
        if decode and pa.types.is_dictionary(column.type):
            column = column.cast(pa.string())
        columns[name] = column
    wanted_cum = [name for name in fields if name in CUM_FIELDS]
    if wanted_cum:
        for name in wanted_cum:
            columns[name] = pa.array(_running_totals(table, name.replace("_cum_payoff", "_payoff")))
    return pa.table({name: columns[name] for name in fields})


def _running_totals(table: pa.Table, payoff: str) -> np.ndarray:
    values = table.column(payoff).to_numpy()
    out = np.empty_like(values)
    rounds = table.column("round_index").to_numpy()
    starts = np.flatnonzero(rounds == 0).tolist() + [len(values)]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    for a, b in zip(starts[:-1], starts[1:], strict=True):
        out[a:b] = np.cumsum(values[a:b])
    return out


def _read_rows(parquet: pq.ParquetFile, first: int, n: int, columns: list[str]) -> pa.Table:
    """Rows [first, first + n) of a part: only the row groups that hold them are read."""
    meta = parquet.metadata
    groups: list[int] = []
    offset = 0
    group_start = None
    for g in range(meta.num_row_groups):
        rows = meta.row_group(g).num_rows
        if offset + rows > first and offset < first + n:
            groups.append(g)
            group_start = offset if group_start is None else group_start
        offset += rows
    if not groups:
        return parquet.schema_arrow.empty_table().select(columns)
    table = parquet.read_row_groups(groups, columns=columns)
    return table.slice(first - (group_start or 0), n)


def _stored(fields: tuple[str, ...]) -> list[str]:
    need = [f for f in fields if f not in CUM_FIELDS]
    if any(f in CUM_FIELDS for f in fields):
        need += [f.replace("_cum_payoff", "_payoff") for f in fields if f in CUM_FIELDS]
        need.append("round_index")
    return list(dict.fromkeys(need))


def read_game(
    run_dir: Path,
    condition: str,
    replicate: int,
    fields: tuple[str, ...] | None = None,
    manifest: dict[str, Any] | None = None,
) -> pa.Table | None:
    """One game's rounds (record fields, plain types), by round; None when it is not stored."""
    reader = ColumnsReader(run_dir, manifest)
    return reader.game((condition, int(replicate)), fields or ALL_FIELDS)


def read_table(
    run_dir: Path,
    fields: tuple[str, ...] = ROUND_FIELDS,
    manifest: dict[str, Any] | None = None,
) -> pa.Table:
    """Every stored round (record fields, plain types) as one table, in stored order."""
    tables = list(ColumnsReader(run_dir, manifest).games(fields))
    return pa.concat_tables(tables) if tables else empty_table(fields)


def empty_table(fields: tuple[str, ...]) -> pa.Table:
    """A table of these record fields with no rows."""
    return pa.table({name: pa.array([], _plain_type(name)) for name in fields})


def _plain_type(name: str) -> pa.DataType:
    return pa.string() if name in LLM_FIELDS else pa.type_for_alias(ROUND_FIELD_TYPES[name])


def jsonl_bytes(run_dir: Path, manifest: dict[str, Any] | None = None) -> bytes:
    """The stored rounds as rounds.jsonl lines (record field order; prompts and replies only
    where recorded), for readers that check records line by line (merge)."""
    lines: list[bytes] = []
    for table in ColumnsReader(run_dir, manifest).games(ALL_FIELDS):
        for record in table.to_pylist():
            for name in LLM_FIELDS:
                value = record.pop(name)
                if value is not None:
                    record[name] = orjson.loads(value)
            lines.append(orjson.dumps(record))
    return b"\n".join(lines) + b"\n" if lines else b""
