"""A condition's per-game values read at once (`core.game_values`, issue 28) are the floats the
row by row reading gives, bit for bit: `_numbers`/`_numeric` per column, `_pooled`, and
`series_values` per game padded with NaN; on tables with None, ints, NaN, -0.0, text, missing
keys, and series of several lengths, empty, or not in the fixed tokens."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tests.unit.test_fast_paths_same_values import same

from pdbench.core.game_values import series_matrix, value_table
from pdbench.core.metrics import (
    POOLED_COLUMNS,
    _GameValues,
    _numbers,
    _numeric,
    _pooled,
    _series_json,
    series_values,
)

RATIO = next(iter(POOLED_COLUMNS))
VISITS = POOLED_COLUMNS[RATIO]


def random_games(rng: np.random.Generator, odd: str | None) -> list[dict[str, object]]:
    """Games with a rate, a count, a pooled ratio and its visits; `odd` adds one kind of
    value the fast path must leave to the row by row reading (or handle as it does)."""
    games: list[dict[str, object]] = []
    for _ in range(int(rng.integers(1, 30))):
        visits = int(rng.integers(0, 9))
        games.append(
            {
                "rate": None if rng.random() < 0.2 else float(rng.random()),
                "count": int(rng.integers(0, 5)),
                RATIO: None if visits == 0 else float(rng.integers(0, visits + 1) / visits),
                VISITS: visits,
            }
        )
    if odd == "nan":
        games[0]["rate"] = math.nan
        games[-1][RATIO] = math.nan
    elif odd == "negative zero":
        games[0][RATIO] = -0.0
        games[-1]["rate"] = -0.0
    elif odd == "text":
        games[0]["rate"] = "0.5"
    elif odd == "flag":
        games[0]["count"] = True
    elif odd == "missing":
        del games[-1]["count"]
    return games


@pytest.mark.parametrize("odd", [None, "nan", "negative zero", "text", "flag", "missing"])
def test_values_read_at_once_are_the_row_by_row_values(odd: str | None) -> None:
    rng = np.random.default_rng(2830)
    for trial in range(25):
        games = random_games(rng, odd)
        names = ["rate", "count", RATIO]
        values = _GameValues(games, names)
        if odd in ("text", "flag", "missing"):
            assert values.table is None  # left to the row by row reading
        want = np.array([_numbers([g.get(c) for g in games]) for c in names]).T
        got = values.matrix(names)
        assert got.flags.c_contiguous and same(got, want), trial
        for column in names:
            column_want = np.array([_numeric(g.get(column)) for g in games])
            assert same(np.asarray(values.column(column), dtype=np.float64), column_want)
        got_visits, got_coops = values.pooled(RATIO)
        want_visits, want_coops = _pooled(games, RATIO)
        assert same(got_visits, want_visits) and same(got_coops, want_coops), trial
        signs = np.signbit(np.asarray(got_coops)) == np.signbit(np.asarray(want_coops))
        assert signs.all()


def test_value_table_marks_whether_nan_stands_for_none_only() -> None:
    table, nones_only = value_table([{"x": None, "y": 1}, {"x": 2.5, "y": 3}], ["x", "y"])
    assert nones_only and np.isnan(table[0, 0]) and table[1].tolist() == [2.5, 3.0]
    _, nones_only = value_table([{"x": math.nan, "y": 1}, {"x": None, "y": 3}], ["x", "y"])
    assert not nones_only


def reference_series_matrix(texts: list[str]) -> np.ndarray:
    """The bands' matrix as first written: each game's series read, padded with NaN."""
    series = [series_values(text) for text in texts]
    longest = max(len(s) for s in series)
    matrix = np.full((len(series), longest), np.nan)
    for i, values in enumerate(series):
        matrix[i, : len(values)] = values
    return matrix


def test_series_read_at_once_are_each_games_series() -> None:
    rng = np.random.default_rng(2831)
    for trial in range(40):
        texts = []
        for _ in range(int(rng.integers(1, 12))):
            rounds = int(rng.integers(0, 30)) if trial % 2 else 17  # several lengths, or one
            a, b = rng.random(rounds) < 0.5, rng.random(rounds) < 0.5
            texts.append(_series_json(a, b))
        if trial % 5 == 0:
            texts.append("[0.25,1.0,0.5]")  # a value not in the fixed tokens: orjson reads it
        if trial % 7 == 0:
            texts.append("[1.0,0.5,0.0,0.5]")
            texts.append("[]")
        assert same(series_matrix(texts, series_values), reference_series_matrix(texts)), trial
