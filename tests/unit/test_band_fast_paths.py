"""The per-round bands' fast paths (issue 28) give the floats of the plain computation, bit for
bit: equal round columns resampled once (`_distinct_columns`) against every column resampled,
and against the bootstrap-t written as whole-array expressions; the interval of a constant
column computed once per value, number of games and range against `constant_interval` per
column. Inputs: columns that repeat, constant columns, unknown values (games that ended),
two games, ties, -0.0."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tests.unit.test_fast_paths_same_values import reference_bootstrap_t, same

import pdbench.core.bootstrap_t as bootstrap_t
from pdbench.core.bootstrap_t import _bootstrap_t, _distinct_columns
from pdbench.core.stats import (
    constant_interval,
    mean_intervals,
    resample_weights,
    t_interval,
)


def band_matrix(rng: np.random.Generator, trial: int) -> np.ndarray:
    """Games x rounds of 0, 0.5 and 1 drawn from a few distinct columns (so columns repeat),
    games after the fifth ending early (NaN to the end of their row) on odd trials (the
    caller bootstraps columns with 5 or more known values)."""
    games = int(rng.integers(5, 14))
    kinds = rng.integers(0, 3, (games, int(rng.integers(1, 6)))) / 2.0
    rounds = int(rng.integers(2, 60))
    values = kinds[:, rng.integers(0, kinds.shape[1], rounds)]
    if trial % 2:
        for game in range(5, games):
            values[game, int(rng.integers(1, rounds + 1)) :] = np.nan
    if trial % 5 == 0:
        values[:, rounds // 2] = 0.5  # a constant column
    return values


@pytest.mark.parametrize("trial", range(40))
def test_equal_columns_resampled_once_give_every_columns_floats(
    trial: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(2800 + trial)
    values = band_matrix(rng, trial)
    defined = ~np.isnan(values)
    weights = resample_weights(values.shape[0], int(rng.integers(20, 400)), rng)
    first, inverse = _distinct_columns(values, defined)
    if values.shape[1] > np.unique(values.T, axis=0).shape[0] and trial % 2 == 0:
        assert first is not None  # columns repeat (every value known): found
    if first is not None:
        assert (np.diff(first) > 0).all() and np.array_equal(inverse[first], np.arange(len(first)))
        assert same(values[:, first][:, inverse], values)  # each column is its distinct one
    got = _bootstrap_t(values, defined, weights, 0.95)
    want = reference_bootstrap_t(values, defined, weights, 0.95)
    assert same(got[0], want[0]) and same(got[1], want[1])
    monkeypatch.setattr(bootstrap_t, "_distinct_columns", lambda values, defined: (None, None))
    plain = _bootstrap_t(values, defined, weights, 0.95)
    assert same(got[0], plain[0]) and same(got[1], plain[1])


def test_columns_differing_only_in_which_games_are_known_are_not_merged() -> None:
    values = np.array([[1.0, 1.0, 0.5], [0.0, 0.0, 0.0], [0.5, np.nan, 0.5]])
    first, inverse = _distinct_columns(values, ~np.isnan(values))
    assert first is None and inverse is None  # three different columns
    signed = np.array([[0.0, -0.0, 0.0], [1.0, 1.0, 1.0]])
    first, inverse = _distinct_columns(signed, ~np.isnan(signed))
    assert first.tolist() == [0, 1] and inverse.tolist() == [0, 1, 0]  # -0.0 kept apart


def test_two_games_and_off_grid_values_take_the_plain_path() -> None:
    rng = np.random.default_rng(2811)
    values = rng.standard_normal((6, 8))
    values[:, 4] = values[:, 1]  # repeated, but the products are not exact: no merging
    weights = resample_weights(6, 200, rng)
    defined = ~np.isnan(values)
    got = _bootstrap_t(values, defined, weights, 0.95)
    want = reference_bootstrap_t(values, defined, weights, 0.95)
    assert same(got[0], want[0]) and same(got[1], want[1])
    two = np.array([[0.0, 1.0, 0.0], [1.0, 0.5, 1.0]])  # 2 games: Student-t, no bootstrap
    found = mean_intervals(two, resample_weights(2, 50, rng), bounds=[(0.0, 1.0)] * 3)
    for column, (low, high) in enumerate(found):
        assert (low, high) == t_interval(two[:, column], (0.0, 1.0))


def test_constant_columns_get_constant_interval_each() -> None:
    bounds = [(0.0, 1.0), (0.0, 1.0), (0.0, 1.0), (5.0, 5.0), (-1.0, 3.0), None, (0.0, 1.0)]
    values = np.array(
        [
            [0.5, 0.5, 1.0, 5.0, -0.0, 2.0, 0.0],
            [0.5, 0.5, 1.0, 5.0, -0.0, 2.0, 0.0],
            [0.5, 0.5, 1.0, 5.0, -0.0, 2.0, np.nan],
        ]
    )
    found = mean_intervals(values, resample_weights(3, 50, np.random.default_rng(1)), bounds=bounds)
    known = [3, 3, 3, 3, 3, 3, 2]
    for column, (low, high) in enumerate(found):
        want = constant_interval(float(values[0, column]), known[column], bounds[column])
        assert (low, high) == want, column
    # by hand: 3 games at 0.5 of [0, 1]: Wilson interval of 1.5 of 3 (z = 1.959964)
    z = 1.959963984540054
    centre, half = 0.5, z / (1 + z * z / 3) * math.sqrt(0.25 / 3 + z * z / 36)
    assert found[0][0] == pytest.approx(centre - half, abs=1e-12)
    assert found[3] == (5.0, 5.0) and found[5] == (None, None)
