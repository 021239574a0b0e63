"""Resampling weights drawn ahead (`storage.intervals.Predrawn`, issue 21: `pdbench run` draws
them while the games play) are the numbers the condition's own generator gives: checked
against `np.random.default_rng` on the same seed, draw by draw, when the draws asked for are
the ones made ahead and when they are not; and whole aggregates with and without them."""

from __future__ import annotations

import time

import numpy as np
import pytest

from pdbench.core.metrics import BAND_RESAMPLES, GameOutcome, aggregate_rows
from pdbench.core.stats import IntervalSettings, resample_weights
from pdbench.storage.intervals import (
    Predrawn,
    PredrawnGenerator,
    interval_generators,
    with_intervals,
)


def _ahead(seed: int, calls: list[tuple[int, int]]) -> list[tuple[int, int, np.ndarray, dict]]:
    """What `Predrawn` keeps for `calls` (n, size) drawn from a fresh generator."""
    rng = np.random.default_rng(seed)
    out = []
    for n, size in calls:
        result = rng.multinomial(n, np.full(n, 1.0 / n), size=size)
        out.append((n, size, result, rng.bit_generator.state))
    return out


def test_draws_made_ahead_are_the_generators_own() -> None:
    calls = [(7, 50), (7, 20), (12, 30)]
    plain = np.random.default_rng(99)
    ahead = PredrawnGenerator(99, _ahead(99, calls[:2]))
    for n, size in calls:  # the two made ahead, then one drawn as usual from their state
        assert np.array_equal(resample_weights(n, size, ahead), resample_weights(n, size, plain))
    assert ahead.random() == plain.random()


def test_a_draw_unlike_the_one_made_ahead_is_drawn_from_where_the_generator_is() -> None:
    plain = np.random.default_rng(5)
    ahead = PredrawnGenerator(5, _ahead(5, [(10, 40), (10, 8)]))
    assert np.array_equal(resample_weights(10, 40, ahead), resample_weights(10, 40, plain))
    # 9 games where 10 were expected: not the draw made ahead, nor is any draw after it
    assert np.array_equal(resample_weights(9, 8, ahead), resample_weights(9, 8, plain))
    assert np.array_equal(resample_weights(10, 8, ahead), resample_weights(10, 8, plain))
    other = np.random.default_rng(5)
    skewed = PredrawnGenerator(5, _ahead(5, [(4, 10)]))
    pvals = np.array([0.1, 0.2, 0.3, 0.4])  # other probabilities than the ones drawn ahead
    assert np.array_equal(
        skewed.multinomial(4, pvals, size=10), other.multinomial(4, pvals, size=10)
    )


def _outcomes(condition: str, games: int, rounds: int, seed: int) -> list[GameOutcome]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(games):
        a, b = rng.random(rounds) < 0.6, rng.random(rounds) < 0.4
        out.append(
            GameOutcome(condition, i, "A", "B", a, b, rng.random(rounds), rng.random(rounds))
        )
    return out


def test_aggregates_with_weights_drawn_ahead_are_the_same() -> None:
    settings = IntervalSettings(resamples=300, seed=21)
    games = {"x": 12, "y": 9, "z": 4}
    parts = {c: aggregate_rows("r", _outcomes(c, n, 30, 7), [c]) for c, n in games.items()}
    # "y" expected with 10 games where it has 9: drawn as usual
    predrawn = Predrawn(settings, {"x": 12, "y": 10, "z": 4})
    for condition, rows in parts.items():
        plain = with_intervals([dict(r) for r in rows], settings)
        ahead = with_intervals([dict(r) for r in rows], settings, predrawn=predrawn)
        assert repr(ahead) == repr(plain), condition  # every float the same, NaN included


def test_the_draws_made_ahead_are_handed_out_once() -> None:
    settings = IntervalSettings(resamples=300, seed=21)
    predrawn = Predrawn(settings, {"x": 12})
    assert predrawn._ready["x"].wait(timeout=60)  # the thread has drawn for "x"
    made = predrawn._ahead["x"][0][2]
    generator = interval_generators(settings)("x")
    first = resample_weights(12, 300, generator)
    second = resample_weights(12, min(BAND_RESAMPLES, 300), generator)
    replay = predrawn.generator_for("x")
    assert replay.multinomial(12, np.full(12, 1.0 / 12), size=300) is made  # not drawn again
    assert np.array_equal(made, first)
    assert np.array_equal(resample_weights(12, min(BAND_RESAMPLES, 300), replay), second)
    again = predrawn.generator_for("x")  # asked again: drawn as usual, the same numbers
    assert np.array_equal(resample_weights(12, 300, again), first)
    assert "x" not in predrawn._ahead


def test_other_settings_do_not_use_the_draws() -> None:
    rows = aggregate_rows("r", _outcomes("x", 8, 20, 3), ["x"])
    predrawn = Predrawn(IntervalSettings(resamples=200, seed=1), {"x": 8})
    settings = IntervalSettings(resamples=200, seed=2)
    plain = with_intervals([dict(r) for r in rows], settings)
    assert repr(with_intervals([dict(r) for r in rows], settings, predrawn=predrawn)) == repr(plain)


def test_draws_stay_within_their_budget_and_any_order_gets_the_same_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pdbench.storage.intervals as intervals_module

    settings = IntervalSettings(resamples=50, seed=4)
    one = 50 * 6 * 8 + min(BAND_RESAMPLES, 50) * 6 * 8  # one condition's draws (int64), bytes
    monkeypatch.setattr(intervals_module, "AHEAD_BYTES", one + 1)  # room for two at most
    names = ["a", "b", "c", "d", "e"]
    predrawn = Predrawn(settings, dict.fromkeys(names, 6))
    assert predrawn._ready["b"].wait(timeout=60)
    time.sleep(0.2)  # the thread now waits for room: "c" and later are not drawn
    assert set(predrawn._ahead) == {"a", "b"} and not predrawn._ready["c"].is_set()
    plain = interval_generators(settings)
    # "d" asked for first: drawn by its own generator, without waiting for "a" to make room
    for name in ["d", "a", "e", "b", "c"]:
        generator, fresh = predrawn.generator_for(name), plain(name)
        for size in (50, min(BAND_RESAMPLES, 50)):
            assert np.array_equal(
                resample_weights(6, size, generator), resample_weights(6, size, fresh)
            )
    assert predrawn._held == 0 and not predrawn._ahead
