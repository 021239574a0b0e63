"""pyarrow columns as NumPy arrays, read from their buffers.

`Array.to_numpy` imports pandas and a cast or a comparison imports `pyarrow.compute` (together
about half a second of start-up), which `pdbench aggregate` otherwise never needs. These read
the columns the record's readers produce (numbers, booleans, dictionary-encoded text) straight
from their Arrow buffers; a column of any other type goes through pyarrow as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Arrow type names whose data buffer is NumPy's array of that dtype as it is.
_NUMBER_DTYPES: dict[str, Any] = {
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float": np.float32,
    "double": np.float64,
}


def chunks_of(column: Any) -> list[Any]:
    """The arrays of a column (a ChunkedArray's chunks, or the array itself)."""
    return list(column.chunks) if hasattr(column, "chunks") else [column]


def _bits(buffer: Any, offset: int, length: int) -> np.ndarray:
    """Bits offset..offset+length of an Arrow bitmap (least significant bit first)."""
    packed = np.frombuffer(buffer, dtype=np.uint8)
    return np.unpackbits(packed, bitorder="little")[offset : offset + length].astype(bool)


def valid_of(array: Any) -> np.ndarray | None:
    """Per value of an array: whether it is not null (None when none is null)."""
    if array.null_count == 0:
        return None
    buffer = array.buffers()[0]
    if buffer is None:  # a null-typed array: every value null
        return np.zeros(len(array), dtype=bool)
    return _bits(buffer, array.offset, len(array))


def _array_values(array: Any, dtype: Any, fill: Any) -> np.ndarray | None:
    """An array of numbers or booleans as `dtype`, nulls as `fill`; None for another type."""
    name = str(array.type)
    n = len(array)
    buffers = array.buffers()
    if name == "null" or (len(buffers) > 1 and buffers[1] is None and array.null_count == n):
        return np.full(n, fill, dtype=dtype)
    if name == "bool":
        values = _bits(buffers[1], array.offset, n).astype(dtype)
    elif name in _NUMBER_DTYPES:
        raw = np.frombuffer(buffers[1], dtype=_NUMBER_DTYPES[name], count=array.offset + n)
        values = raw[array.offset : array.offset + n].astype(dtype)
    else:
        return None
    valid = valid_of(array)
    if valid is not None:
        values[~valid] = fill
    return values


def column_values(column: Any, dtype: Any, fill: Any) -> np.ndarray:
    """A column of numbers or booleans as a NumPy array of `dtype`, nulls as `fill`: the values
    `np.asarray(column.to_numpy(zero_copy_only=False), dtype)` gives where none is null."""
    parts = []
    for array in chunks_of(column):
        values = _array_values(array, dtype, fill)
        if values is None:  # not numbers or booleans: pyarrow's conversion
            values = np.asarray(array.to_numpy(zero_copy_only=False))
            nulls = valid_of(array)
            values = values.astype(dtype) if nulls is None else _filled(values, nulls, dtype, fill)
        parts.append(values)
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _filled(values: np.ndarray, valid: np.ndarray, dtype: Any, fill: Any) -> np.ndarray:
    out = np.full(len(values), fill, dtype=dtype)
    out[valid] = values[valid].astype(dtype)
    return out


def text_codes(column: Any) -> tuple[np.ndarray, list[Any]]:
    """A text column as (code per value, the distinct values): codes index the values, equal
    texts share a code, null is -1. A dictionary-encoded column is read from its indices and
    dictionaries; plain text is dictionary-encoded first (by pyarrow)."""
    import pyarrow as pa

    lookup: dict[Any, int] = {}
    parts = []
    for array in chunks_of(column):
        if not pa.types.is_dictionary(array.type):
            array = array.dictionary_encode()
        local = array.dictionary.to_pylist()
        remap = np.array([lookup.setdefault(v, len(lookup)) for v in local] + [-1], np.int64)
        indices = _array_values(array.indices, np.int64, -1)
        assert indices is not None  # dictionary indices are integers
        parts.append(remap[indices])
    codes = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
    return codes, list(lookup)


def text_is(column: Any, wanted: tuple[str, ...]) -> np.ndarray:
    """Per value of a text column: whether it is one of `wanted` (null is not)."""
    codes, values = text_codes(column)
    hits = np.array([v in wanted for v in values] + [False], dtype=bool)
    return hits[codes]
