"""Parquet columns built from buffers (`storage.parquet.arrow_array`) are exactly what
`pyarrow.array` makes of the same values (type, values, nulls), and writing them does not import
pandas (which `pyarrow.array` does, to check for pandas objects)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from pdbench.storage.parquet import arrow_array, write_columns

CASES: list[Any] = [
    np.arange(5),
    np.array([0.5, np.nan, -np.inf, 1e300]),
    np.array([True, False, True, True, False, False, True, False, True]),
    np.array([3, 1], dtype=np.int32),
    np.array([2.5, 1.0], dtype=np.float32),
    np.array([7, 9], dtype=np.uint64),
    np.arange(12)[::3],  # not contiguous
    np.array([], dtype=np.float64),
    ["ALLC", "TFT", "", "héllo ☃"],
    [1, 2, 3, 2**62],
    [1, None, 3],
    [0.25, None, float("nan"), 3.0],
    [1, 2.5, None],  # ints among floats: doubles
    [True, None, False],
    [None, None],  # null type: pyarrow's own
    [],
    ["a", None],  # text with a null: pyarrow's own
    [2**64],  # beyond 64 bits: pyarrow's own (an error)
    [2**63],  # beyond int64
    [np.float64(1.5), 2.0],  # numpy scalars: pyarrow's own
    [True, 1],  # bool and int: pyarrow's own (an error)
    np.array(["x", "y"]),  # a NumPy text array: pyarrow's own
]


def outcome(build: Any, values: Any) -> Any:
    """What `build(values)` gives: its type, null count and values (NaN as the text "nan"),
    or the type of the error it raises."""
    try:
        array = build(values)
    except (pa.ArrowException, OverflowError, TypeError, ValueError) as exc:
        return type(exc)
    array.validate(full=True)
    items = ["nan" if isinstance(v, float) and v != v else v for v in array.to_pylist()]
    return array.type, array.null_count, items


@pytest.mark.parametrize("values", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_arrow_array_is_pyarrow_array(values: Any) -> None:
    assert outcome(arrow_array, values) == outcome(pa.array, values)


def test_random_columns_are_pyarrow_arrays() -> None:
    gen = np.random.default_rng(7)
    for _ in range(200):
        n = int(gen.integers(0, 40))
        nulls = gen.random(n) < 0.2
        floats = [None if m else float(v) for m, v in zip(nulls, gen.normal(size=n), strict=True)]
        ints = [None if m else int(v) for m, v in zip(nulls, gen.integers(-9, 9, n), strict=True)]
        texts = [str(v) * int(v % 4) for v in gen.integers(0, 100, n)]
        for values in (floats, ints, texts, gen.random(n) < 0.5, gen.normal(size=n)):
            assert outcome(arrow_array, values) == outcome(pa.array, values)


def test_writing_columns_does_not_import_pandas(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from pdbench.storage.parquet import write_columns\n"
        "write_columns(Path(sys.argv[1]), {'x': [1.5, None], 'name': ['a', 'b'], 'n': [1, 2]})\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "t.parquet")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "False"
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "t.parquet")
    assert table.to_pydict() == {"x": [1.5, None], "name": ["a", "b"], "n": [1, 2]}
    write_columns(tmp_path / "u.parquet", {"x": np.array([1.0, 2.0])})
    assert pq.read_table(tmp_path / "u.parquet").column("x").to_pylist() == [1.0, 2.0]
