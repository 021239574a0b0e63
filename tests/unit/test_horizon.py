"""Unit tests of pdbench.core.horizon: fixed and geometric horizons, scalar vs vectorized."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdbench.core.horizon import FixedHorizon, GeometricHorizon
from pdbench.core.rng import Purpose, counter_uniform, game_seed


def seeds(n: int, run_seed: int = 99) -> list[int]:
    """Game seeds as the runner derives them (spread over 63 bits)."""
    return [game_seed(run_seed, "horizon-test", i) for i in range(n)]


def reference_length(seed: int, stop_prob: float, max_rounds: int | None = None) -> int:
    """Independent geometric length: play rounds 0, 1, ...; stop after round t when the STOP draw
    for (seed, t) is below stop_prob, or when t + 1 reaches max_rounds."""
    t = 0
    while True:
        if max_rounds is not None and t + 1 >= max_rounds:
            return t + 1
        if counter_uniform(seed, t, Purpose.STOP) < stop_prob:
            return t + 1
        t += 1


# --- fixed ------------------------------------------------------------------------------------


def test_fixed_horizon_length_and_stops():
    h = FixedHorizon(7)
    assert h.type == "fixed"
    assert h.length(123) == 7
    assert h.lengths(np.array([1, 2, 3], dtype=np.uint64)).tolist() == [7, 7, 7]
    # Stops after the 0-based round 6 (the 7th round) and never before.
    assert [h.stops_after(t, 123) for t in range(7)] == [False] * 6 + [True]


def test_fixed_horizon_of_one_round():
    assert FixedHorizon(1).stops_after(0, 5)
    assert FixedHorizon(1).length(5) == 1


# --- geometric --------------------------------------------------------------------------------


def test_geometric_is_deterministic_for_a_seed():
    h = GeometricHorizon(0.2)
    for s in seeds(50):
        first = h.length(s)
        assert h.length(s) == first
        assert GeometricHorizon(0.2).length(s) == first
        assert first == reference_length(s, 0.2)
    # And the lengths actually vary between seeds.
    assert len({h.length(s) for s in seeds(50)}) > 5


def test_stops_after_follows_the_stop_draw():
    h = GeometricHorizon(0.3)
    s = seeds(1)[0]
    for t in range(100):
        assert h.stops_after(t, s) == (counter_uniform(s, t, Purpose.STOP) < 0.3)


@pytest.mark.parametrize("max_rounds", [None, 1, 5, 300])
@pytest.mark.parametrize("stop_prob", [0.1, 0.5])
def test_vectorized_lengths_equal_scalar_length(stop_prob, max_rounds):
    ss = seeds(300, run_seed=int(stop_prob * 1000))
    h = GeometricHorizon(stop_prob, max_rounds)
    vec = h.lengths(np.array(ss, dtype=np.uint64))
    assert vec.tolist() == [h.length(s) for s in ss]
    assert vec.tolist() == [reference_length(s, stop_prob, max_rounds) for s in ss]


def test_vectorized_lengths_cross_the_256_round_chunk():
    # stop_prob 0.005: mean length 200, so many of 300 games run past round 256 (one chunk).
    ss = seeds(300, run_seed=5)
    h = GeometricHorizon(0.005)
    vec = h.lengths(np.array(ss, dtype=np.uint64))
    assert int(vec.max()) > 256
    assert vec.tolist() == [reference_length(s, 0.005) for s in ss]


def test_max_rounds_caps_the_length():
    ss = seeds(500, run_seed=3)
    free = GeometricHorizon(0.05)
    capped = GeometricHorizon(0.05, max_rounds=8)
    for s in ss:
        # A cap can only shorten a game, to exactly min(uncapped, cap).
        assert capped.length(s) == min(free.length(s), 8)
    assert any(free.length(s) > 8 for s in ss)  # the cap really bit
    assert all(GeometricHorizon(0.05, max_rounds=1).length(s) == 1 for s in ss)


def test_mean_length_is_one_over_p():
    # Length ~ Geometric(p) on {1, 2, ...}: mean 1/p = 10, sd sqrt(1-p)/p = sqrt(0.9)/0.1 = 9.487.
    # Mean of n=4000: standard error 9.487/sqrt(4000) = 0.150; 5 sigma = 0.750.
    p, n = 0.1, 4000
    lengths = GeometricHorizon(p).lengths(np.array(seeds(n, run_seed=11), dtype=np.uint64))
    bound = 5 * math.sqrt(1 - p) / p / math.sqrt(n)
    assert abs(float(lengths.mean()) - 1 / p) < bound
    assert int(lengths.min()) >= 1


def test_first_round_stop_probability_is_p():
    # P(length == 1) = p. Binomial(n=4000, p=0.1): sd of the fraction = sqrt(.1*.9/4000) = 0.00474;
    # 5 sigma = 0.0237. Same for p = 0.3: sqrt(.3*.7/4000) = 0.00725; 5 sigma = 0.0362.
    n = 4000
    arr = np.array(seeds(n, run_seed=13), dtype=np.uint64)
    for p in (0.1, 0.3):
        frac = float((GeometricHorizon(p).lengths(arr) == 1).mean())
        assert abs(frac - p) < 5 * math.sqrt(p * (1 - p) / n)
