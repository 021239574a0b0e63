"""Parquet artifacts (aggregates, matches, leaderboard, payoff matrix, generations): written
atomically with the schema version in the file's metadata, and read back only when this pdbench
knows that version. pyarrow is imported only here, when a Parquet file is touched."""

from __future__ import annotations

import io
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from pdbench.errors import PdbenchError
from pdbench.storage.files import write_bytes_atomic
from pdbench.storage.schema import PARQUET_VERSION_KEY, SCHEMA_VERSION, check_version


def write_columns(path: Path, columns: dict[str, Any]) -> None:
    """Write named columns (arrays or lists of equal length)."""
    import pyarrow as pa

    arrays = [arrow_array(v if isinstance(v, list) else np.asarray(v)) for v in columns.values()]
    _write(path, pa.Table.from_arrays(arrays, names=list(columns)))


_NUMBER_KINDS = "biuf"  # NumPy kinds whose memory is an Arrow array's as it is (bool: packed)


def arrow_array(values: list[Any] | np.ndarray) -> Any:
    """`pyarrow.array(values)` (same type, values and nulls), built from buffers for a NumPy
    number array and for a list of str, of int, of float (ints mixed in) or of bool with None
    for missing: `pyarrow.array` imports pandas (a second of start-up) to check whether the
    values are pandas objects, and a command that only writes Parquet needs none of it.
    Anything else (nested lists, numpy scalars in a list, ints beyond 64 bits) goes to
    `pyarrow.array` itself."""
    import pyarrow as pa

    if isinstance(values, np.ndarray):
        if values.ndim == 1 and values.dtype.kind in _NUMBER_KINDS and values.dtype.isnative:
            return _from_numpy(pa, values, None)
        return pa.array(values)
    kinds = {type(v) for v in values}
    nulls = type(None) in kinds
    kinds.discard(type(None))
    valid = np.array([v is not None for v in values], dtype=bool) if nulls else None
    if kinds == {str} and not nulls:
        data = [v.encode() for v in values]
        offsets = np.zeros(len(data) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in data], out=offsets[1:])
        if offsets[-1] < 2**31:
            buffers = [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(data))]
            return pa.Array.from_buffers(pa.string(), len(data), buffers)
    elif kinds in ({int}, {float}, {float, int}, {bool}):
        dtype = {bool: np.bool_, int: np.int64}.get(next(iter(kinds)), np.float64)
        if len(kinds) == 2:
            dtype = np.float64
        filled = [v if v is not None else 0 for v in values] if nulls else values
        try:
            array = np.array(filled, dtype=dtype)
        except OverflowError:  # ints beyond 64 bits: pyarrow's own error
            return pa.array(values)
        return _from_numpy(pa, array, valid)
    return pa.array(values)


def masked_array(values: np.ndarray, valid: np.ndarray | None = None) -> Any:
    """An Arrow array over a 1-D NumPy array of numbers or bools, null where `valid` is False
    (None: no null); what `pyarrow.array` gives for the same values as a list with None."""
    import pyarrow as pa

    return _from_numpy(pa, np.ascontiguousarray(values), valid)


def _from_numpy(pa: Any, values: np.ndarray, valid: np.ndarray | None) -> Any:
    """An Arrow array over a 1-D NumPy array of numbers or bools (valid: False for a null)."""
    n = len(values)
    if values.dtype.kind == "b":
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
        arrow_type = pa.bool_()
    else:
        data = pa.py_buffer(np.ascontiguousarray(values))
        arrow_type = pa.from_numpy_dtype(values.dtype)
    mask = None
    if valid is not None and not valid.all():
        mask = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(arrow_type, n, [mask, data])


def write_rows(path: Path, rows: list[dict[str, Any]], schema: Any) -> None:
    """Write rows (dicts) with an explicit pyarrow schema: the table
    `pyarrow.Table.from_pylist(rows, schema=schema)` builds, column by column (`typed_array`),
    so that writing needs no pandas."""
    import pyarrow as pa

    arrays = [typed_array(list(map(dict.get, rows, repeat(f.name))), f.type) for f in schema]
    _write(path, pa.Table.from_arrays(arrays, schema=schema))


_EXACT_INT = 2**53  # beyond this, an int has no exact float64 (pyarrow refuses it)


def typed_array(values: list[Any], arrow_type: Any) -> Any:
    """`pyarrow.array(values, arrow_type)` (same values and nulls), built from buffers for a
    string, int64, float64 or bool column of plain Python values with None for missing (ints in a
    float64 column within 2**53, where the conversion is exact); anything else goes to
    `pyarrow.array` itself (which imports pandas, see `arrow_array`)."""
    import pyarrow as pa

    kinds = {type(v) for v in values}
    nulls = type(None) in kinds
    kinds.discard(type(None))
    valid = np.array([v is not None for v in values], dtype=bool) if nulls else None
    if arrow_type == pa.string() and kinds <= {str}:
        data = [b"" if v is None else v.encode() for v in values]
        offsets = np.zeros(len(data) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in data], out=offsets[1:])
        if offsets[-1] < 2**31:
            mask = None
            if valid is not None and not valid.all():
                mask = pa.py_buffer(np.packbits(valid, bitorder="little"))
            buffers = [mask, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(data))]
            return pa.Array.from_buffers(pa.string(), len(data), buffers)
    elif arrow_type == pa.int64() and kinds <= {int}:
        filled = [0 if v is None else v for v in values] if nulls else values
        try:
            return _from_numpy(pa, np.array(filled, dtype=np.int64), valid)
        except OverflowError:
            pass
    elif arrow_type == pa.float64() and kinds <= {int, float}:
        filled = [0.0 if v is None else v for v in values] if nulls else values
        if int not in kinds or all(
            -_EXACT_INT <= v <= _EXACT_INT for v in filled if type(v) is int
        ):
            return _from_numpy(pa, np.array(filled, dtype=np.float64), valid)
    elif arrow_type == pa.bool_() and kinds <= {bool}:
        filled = [False if v is None else v for v in values] if nulls else values
        return _from_numpy(pa, np.array(filled, dtype=np.bool_), valid)
    elif not kinds:  # every value missing
        return pa.nulls(len(values), arrow_type)
    return pa.array(values, arrow_type)


def _write(path: Path, table: Any) -> None:
    import pyarrow.parquet as pq

    metadata = dict(table.schema.metadata or {})
    metadata[PARQUET_VERSION_KEY] = str(SCHEMA_VERSION).encode()
    buffer = io.BytesIO()
    # Page checksums let a reader tell a damaged page from data (read_checked_rows checks them).
    pq.write_table(table.replace_schema_metadata(metadata), buffer, write_page_checksum=True)
    write_bytes_atomic(path, buffer.getvalue())


def read_frame(path: Path) -> Any:
    """A Parquet artifact as a pandas DataFrame; SchemaVersionError when it is newer."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    version = (table.schema.metadata or {}).get(PARQUET_VERSION_KEY)
    check_version(str(path), version.decode() if version else None)
    return table.to_pandas()


class ArtifactError(PdbenchError):
    """A Parquet artifact that is damaged, truncated or edited by hand (one line naming it)."""


def numeric_columns(schema: Any) -> list[str]:
    """The names of a pyarrow schema's number columns (integers and floats)."""
    import pyarrow as pa

    return [f.name for f in schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)]


def read_checked_rows(
    path: Path,
    numbers: Any = (),
    remedy: str = "re-run the command that writes it",
    texts: Any = (),
    required: Any = (),
) -> list[dict[str, Any]] | None:
    """The rows of a Parquet artifact (None when there is none), checked before anything uses
    them: a file pyarrow cannot read (truncated, damaged), a column of `numbers` holding
    anything but numbers or one of `texts` holding anything but text, or a `texts` or
    `required` column absent or with empty values (edited by hand) is one ArtifactError line
    naming the file; a NaN or infinite number reads as None (missing), so it can never become
    a result."""
    import math

    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        return None
    remedy = remedy.replace("RUN_DIR", str(path.parent))
    try:
        # ParquetFile, not pq.read_table: that reads through pyarrow.dataset, whose import
        # imports pandas (half a second of `pdbench report`); the table is the same.
        with pq.ParquetFile(path, page_checksum_verification=True) as parquet:
            table = parquet.read()
        fields = list(table.schema)  # names and metadata decoded here: damage shows now
        _ = [f.name for f in fields], table.column_names, table.schema.metadata
    except (pa.ArrowException, OSError, ValueError):  # UnicodeDecodeError is a ValueError
        raise ArtifactError(
            f"{path}: not a readable Parquet file (damaged or truncated); {remedy}"
        ) from None
    version = (table.schema.metadata or {}).get(PARQUET_VERSION_KEY)
    check_version(str(path), version.decode("utf-8", "replace") if version else None)
    wanted = set(numbers)
    for field in fields:
        if field.name in wanted and not (
            pa.types.is_integer(field.type)
            or pa.types.is_floating(field.type)
            or pa.types.is_null(field.type)
        ):
            raise ArtifactError(
                f"{path}: column {field.name!r} holds {field.type} values where numbers belong "
                f"(a damaged or hand-edited file); {remedy}"
            )
    for name in texts:
        if name in table.column_names and not (
            pa.types.is_string(table.schema.field(name).type)
            or pa.types.is_large_string(table.schema.field(name).type)
        ):
            raise ArtifactError(
                f"{path}: column {name!r} holds {table.schema.field(name).type} values where "
                f"text belongs (a damaged or hand-edited file); {remedy}"
            )
    for name in (*texts, *required):
        if name not in table.column_names or table.column(name).null_count:
            raise ArtifactError(
                f"{path}: column {name!r} is missing or has empty values (a damaged or "
                f"hand-edited file); {remedy}"
            )
    try:
        rows = table.to_pylist()
    except (pa.ArrowException, UnicodeDecodeError, ValueError):
        raise ArtifactError(
            f"{path}: not a readable Parquet file (damaged: invalid values); {remedy}"
        ) from None
    for row in rows:
        for key, value in row.items():
            if isinstance(value, float) and not math.isfinite(value):
                row[key] = None
    return rows
