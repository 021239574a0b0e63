"""The leaderboard's uncertainty with the repetition as the unit: a player's score per
repetition, its standard error, a bootstrap interval and a rank interval, by hand on tiny
tournaments; one repetition gives no interval."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdbench.core.tournament_metrics import MatchTable, leaderboard, repetition_scores


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
