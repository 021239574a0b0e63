"""The leaderboard's uncertainty with the repetition as the unit: a player's score per
repetition, its standard error, a bootstrap interval and a rank interval, by hand on tiny
tournaments; one repetition gives no interval; the faster bootstrap gives the values of the
first formulation exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdbench.core.stats import DEFAULT_RESAMPLES, expanded_tail
from pdbench.core.tournament_metrics import (
    MatchTable,
    _ranks,
    leaderboard,
    repetition_scores,
    repetition_uncertainty,
)


def table(scores_a: list[float], scores_b: list[float], reps: list[int]) -> MatchTable:
    n = len(scores_a)
    return MatchTable.of(
        player_a=np.zeros(n, dtype=int),
        player_b=np.ones(n, dtype=int),
        rounds=np.full(n, 10),
        score_a=np.array(scores_a),
        score_b=np.array(scores_b),
        coop_a=np.zeros(n, dtype=int),
        coop_b=np.zeros(n, dtype=int),
        repetition=np.array(reps),
    )


def test_scores_per_repetition_se_and_intervals_by_hand() -> None:
    # A vs B once per repetition, 10 rounds: A scores 10, 20, 30 (1, 2, 3 per round), B 3, 2, 1.
    t = table([10, 20, 30], [30, 20, 10], [0, 1, 2])
    assert repetition_scores(["A", "B"], t).tolist() == [[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]
    rows = {r["player"]: r for r in leaderboard(["A", "B"], t, np.random.default_rng(1))}
    a = rows["A"]
    assert a["mean_score_per_round"] == pytest.approx(2.0)
    assert a["mean_score_se"] == pytest.approx(1.0 / math.sqrt(3))  # sd 1 over sqrt(3)
    assert 1.0 <= a["ci95_low"] < 2.0 < a["ci95_high"] <= 3.0  # resampled means within [1, 3]
    # A is first in a resample when its mean exceeds 2, second when below: both happen.
    assert (a["rank_ci_low"], a["rank_ci_high"]) == (1, 2)


def test_a_clear_winner_has_a_narrow_rank_interval_and_one_repetition_has_none() -> None:
    t = table([30, 31, 29, 30], [5, 6, 4, 5], [0, 1, 2, 3])
    rows = {r["player"]: r for r in leaderboard(["A", "B"], t, np.random.default_rng(2))}
    assert (rows["A"]["rank_ci_low"], rows["A"]["rank_ci_high"]) == (1, 1)
    assert (rows["B"]["rank_ci_low"], rows["B"]["rank_ci_high"]) == (2, 2)
    # The interval of the mean is narrow (per-round scores 2.9-3.1), unlike the spread of
    # scores between opponents.
    assert 2.9 <= rows["A"]["ci95_low"] <= 3.0 <= rows["A"]["ci95_high"] <= 3.1
    one = {
        r["player"]: r
        for r in leaderboard(["A", "B"], table([30], [5], [0]), np.random.default_rng(3))
    }
    assert one["A"]["ci95_low"] is None and one["A"]["mean_score_se"] is None
    assert one["A"]["rank_ci_low"] is None


def test_exact_ties_share_the_better_rank() -> None:
    # 10-round matches: A-B draw 20:20, B-C 30:10, A-C 30:10.
    t = MatchTable.of(
        player_a=np.array([0, 1, 0]),
        player_b=np.array([1, 2, 2]),
        rounds=np.full(3, 10),
        score_a=np.array([20.0, 30.0, 30.0]),
        score_b=np.array([20.0, 10.0, 10.0]),
        coop_a=np.zeros(3, dtype=int),
        coop_b=np.zeros(3, dtype=int),
        repetition=np.zeros(3, dtype=int),
    )
    board = leaderboard(["A", "B", "C"], t, None)
    # A: (20 + 30) / 20 = 2.5; B: (20 + 30) / 20 = 2.5; C: (10 + 10) / 20 = 1.0.
    assert [(r["player"], r["mean_score_per_round"], r["rank"]) for r in board] == [
        ("A", 2.5, 1),
        ("B", 2.5, 1),
        ("C", 1.0, 3),
    ]


def reference_uncertainty(scores: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The bootstrap as first written: both sums as float matrix products, NaN-aware
    percentiles always (the module now counts the defined repetitions in integers and skips the
    NaN handling when no mean is missing; the values must not change)."""
    players, reps = scores.shape
    weights = rng.multinomial(reps, np.full(reps, 1.0 / reps), size=DEFAULT_RESAMPLES)
    weights = weights.astype(np.float64)
    filled = np.where(np.isnan(scores), 0.0, scores)
    defined = (~np.isnan(scores)).astype(np.float64)
    with np.errstate(all="ignore"):
        means = (weights @ filled.T) / (weights @ defined.T)
    tail = expanded_tail(reps)
    low, high = np.nanpercentile(means, [100 * tail, 100 * (1 - tail)], axis=0)
    ranks = _ranks(np.where(np.isnan(means), -np.inf, means).T)
    rank_low, rank_high = np.percentile(ranks, [2.5, 97.5], axis=1, method="nearest")
    return {"low": low, "high": high, "rank_low": rank_low, "rank_high": rank_high}


@pytest.mark.filterwarnings("ignore:.*slice:RuntimeWarning")  # the player with no score
@pytest.mark.parametrize("seed", range(12))
def test_bootstrap_values_equal_the_first_formulation(seed: int) -> None:
    gen = np.random.default_rng(seed)
    players, reps = int(gen.integers(1, 9)), int(gen.integers(2, 60))
    scores = gen.uniform(0.0, 5.0, (players, reps))
    if seed % 3 == 0:
        scores = np.round(scores, 1)  # ties between players
    if seed % 2 == 1:  # some players miss some repetitions (one misses all when seed is 5)
        scores[gen.random((players, reps)) < 0.3] = np.nan
        if seed == 5:
            scores[0] = np.nan
    got = repetition_uncertainty(scores, np.random.default_rng(100 + seed))
    want = reference_uncertainty(scores, np.random.default_rng(100 + seed))
    for key, values in want.items():
        assert np.array_equal(got[key], values, equal_nan=True), key
