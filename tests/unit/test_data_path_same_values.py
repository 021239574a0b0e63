"""The faster paths of `pdbench run` and `pdbench aggregate` (issue 21) give the same values as
what they replaced, checked against that literal computation on random inputs: Parquet columns
built from buffers against `pyarrow.array`, Arrow columns read from their buffers against
`to_numpy` / `to_pylist`, and the bootstrap's float32 sums against float64 matrix products."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from pdbench.core.bootstrap_t import _exact_products, _weighted_sums
from pdbench.core.stats import resample_weights
from pdbench.storage.parquet import masked_array, typed_array
from pdbench.storage.record.arrays import column_values, text_codes, text_is


def random_values(rng: np.random.Generator, kind: str, n: int) -> list[object]:
    """A list of one kind of Python value with None here and there."""
    if kind == "int":
        values: list[object] = rng.integers(-(2**40), 2**40, n).tolist()
    elif kind == "float":
        values = (rng.standard_normal(n) * 1e3).tolist()
        values[: n // 4] = rng.integers(-100, 100, n // 4).tolist()  # ints in a float column
    elif kind == "bool":
        values = (rng.random(n) < 0.5).tolist()
    else:
        numbers, repeats = rng.integers(0, 50, n), rng.integers(0, 4, n)
        values = [str(v) * int(k) for v, k in zip(numbers, repeats, strict=True)]
    for i in np.flatnonzero(rng.random(n) < 0.2):
        values[i] = None
    return values


@pytest.mark.parametrize(
    ("kind", "arrow_type"),
    [("int", pa.int64()), ("float", pa.float64()), ("str", pa.string()), ("bool", pa.bool_())],
)
def test_typed_array_is_pyarrows_array(kind: str, arrow_type: pa.DataType) -> None:
    rng = np.random.default_rng(2121)
    for trial in range(40):
        values = random_values(rng, kind, int(rng.integers(0, 60)))
        if trial % 5 == 0:
            values = [None] * len(values)
        got = typed_array(values, arrow_type)
        assert got.type == arrow_type
        assert got.to_pylist() == pa.array(values, arrow_type).to_pylist(), trial


def test_typed_array_leaves_what_it_cannot_build_to_pyarrow() -> None:
    huge = [2**60, 1.5]  # an int without an exact float64: pyarrow refuses it, so does this
    with pytest.raises(pa.ArrowInvalid):
        pa.array(huge, pa.float64())
    with pytest.raises(pa.ArrowInvalid):
        typed_array(huge, pa.float64())
    assert typed_array([True, None], pa.float64()).to_pylist() == [1.0, None]


def test_masked_array_marks_nulls() -> None:
    got = masked_array(np.array([1.5, 2.0, 3.0]), np.array([True, False, True]))
    assert got.to_pylist() == [1.5, None, 3.0]


def chunked(rng: np.random.Generator, values: list[object], arrow_type: pa.DataType) -> object:
    """The values as a chunked array of sliced chunks (offsets into their buffers)."""
    whole = pa.array([None, *values, None], arrow_type).slice(1, len(values))
    cuts = sorted(rng.integers(0, len(values) + 1, 2).tolist())
    pieces = [whole.slice(0, cuts[0]), whole.slice(cuts[0], cuts[1] - cuts[0])]
    pieces.append(whole.slice(cuts[1]))
    return pa.chunked_array(pieces, arrow_type)


@pytest.mark.parametrize(
    ("arrow_type", "dtype", "fill"),
    [
        (pa.float64(), np.float64, np.nan),
        (pa.int64(), np.int64, -7),
        (pa.int32(), np.int64, 0),
        (pa.bool_(), bool, False),
    ],
)
def test_column_values_are_to_numpys(arrow_type: pa.DataType, dtype: object, fill: object) -> None:
    rng = np.random.default_rng(2122)
    for trial in range(40):
        n = int(rng.integers(1, 80))
        if arrow_type == pa.bool_():
            values: list[object] = (rng.random(n) < 0.5).tolist()
        else:
            values = rng.integers(-1000, 1000, n).tolist()
        nulls = rng.random(n) < (0.3 if trial % 2 else 0.0)
        for i in np.flatnonzero(nulls):
            values[i] = None
        column = chunked(rng, values, arrow_type)
        got = column_values(column, dtype, fill)
        want = np.array([fill if v is None else v for v in values], dtype=dtype)
        assert got.dtype == np.dtype(dtype)
        assert np.array_equal(got, want, equal_nan=True), trial


def test_column_values_of_an_all_null_column() -> None:
    got = column_values(pa.nulls(3, pa.float64()), np.float64, np.nan)
    assert np.isnan(got).all() and got.shape == (3,)


def test_text_codes_and_matches_read_dictionaries_and_plain_text() -> None:
    rng = np.random.default_rng(2123)
    for trial in range(40):
        n = int(rng.integers(1, 60))
        values: list[object] = [str(v) for v in rng.choice(["C", "D", "x", "CC"], n)]
        for i in np.flatnonzero(rng.random(n) < 0.2):
            values[i] = None
        column = chunked(rng, values, pa.string())
        if trial % 2:  # as the columnar parts store it: each chunk its own dictionary
            column = pa.chunked_array([c.dictionary_encode() for c in column.chunks])
        codes, texts = text_codes(column)
        assert [None if c < 0 else texts[c] for c in codes.tolist()] == values, trial
        assert text_is(column, ("C", "D")).tolist() == [v in ("C", "D") for v in values]


def test_bootstrap_sums_in_float32_are_the_float64_products() -> None:
    rng = np.random.default_rng(2124)
    for trial in range(30):
        games, columns = int(rng.integers(2, 120)), int(rng.integers(1, 50))
        if trial % 3 == 0:
            values = rng.integers(0, 3, (games, columns)) / 2.0  # the per-round bands
        elif trial % 3 == 1:
            values = rng.integers(-40, 40, (games, columns)) / 4.0  # quarters, negative too
        else:
            values = rng.standard_normal((games, columns))  # not on the grid: float64
        weights = resample_weights(games, int(rng.integers(10, 400)), rng)
        assert _exact_products(weights, values) == (trial % 3 != 2), trial
        sums, squares = _weighted_sums(weights, values, _exact_products(weights, values))
        assert sums.dtype == np.float64 and squares.dtype == np.float64
        assert np.array_equal(sums, weights @ values), trial
        assert np.array_equal(squares, weights @ (values * values)), trial
