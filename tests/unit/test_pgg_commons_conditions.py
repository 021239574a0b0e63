"""Condition summaries of the public goods game and the commons: means, pooled ratios, Wilson
shares, exactness. Expected values are hand calculations (traces in the comments)."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from pdbench.core.commons import CommonsRules, fixed_policy, run_commons
from pdbench.core.commons_conditions import (
    COMMONS_CONDITION_COLUMNS,
    commons_condition_summary,
)
from pdbench.core.commons_metrics import commons_metrics
from pdbench.core.pgg import PGGRules, play_round
from pdbench.core.pgg_conditions import PGG_CONDITION_COLUMNS, pgg_condition_summary
from pdbench.core.pgg_metrics import pgg_game_metrics
from pdbench.core.stats import IntervalSettings

RULES = PGGRules(n_players=3, endowment=10, multiplier=1.5, punishment=True)
SETTINGS = IntervalSettings(resamples=200)


def _game(moves):
    """A game of RULES from (contributions, punishments) per round, from zero balances."""
    balances, rounds = RULES.initial_balances(), []
    for contributions, punishments in moves:
        rounds.append(play_round(RULES, balances, contributions, punishments))
        balances = rounds[-1].balances
    return pgg_game_metrics(RULES, rounds)


# A: 10, 10, 0; share 20 * 1.5 / 3 = 10; balances 10, 10, 20 (one free rider of 3 seats).
GAME_A = [((10, 10, 0), None)]
# B: round 1 as A, seat 0 punishes seat 2 with 2 tokens: damage 6, cost 2 -> 8, 10, 14;
# round 2 all give 10 (share 15, post 23, 25, 29), seat 2 punishes seat 0 with 1 token
# (a retaliation, and antisocial: c_0 = 10 >= c_2 = 10) -> 20, 25, 28.
GAME_B = [((10, 10, 0), {0: {2: 2}}), ((10, 10, 10), {2: {0: 1}})]
# C: nobody gives: 10, 10, 10.
GAME_C = [((0, 0, 0), None)]
# D: nobody gives, seat 1 punishes seat 0 with 1 token (antisocial: 0 >= 0) -> 7, 9, 10.
GAME_D = [((0, 0, 0), {1: {0: 1}})]


def _pgg(games, exact=False, seed=0):
    metrics = [_game(g) for g in games]
    return pgg_condition_summary(RULES, metrics, SETTINGS, np.random.default_rng(seed), exact)


def test_pgg_means_and_pooled_ratios_by_hand():
    row = _pgg([GAME_A, GAME_B, GAME_C, GAME_D])
    assert tuple(row) == PGG_CONDITION_COLUMNS
    assert row["n_games"] == 4
    # contribution: 20/30, 50/60, 0, 0
    assert row["contribution_rate"] == pytest.approx((2 / 3 + 5 / 6) / 4)
    # efficiency: gains 40, 73, 30, 26 over 45, 90, 45, 45
    assert row["efficiency"] == pytest.approx((40 / 45 + 73 / 90 + 30 / 45 + 26 / 45) / 4)
    # Gini: (10,10,20) 40/240; (20,25,28) 32/438; 0; (7,9,10) 12/156
    assert row["gini_final"] == pytest.approx((40 / 240 + 32 / 438 + 0 + 12 / 156) / 4)
    # tokens paid: 0, 2 + 1, 0, 1; over post-fund balances 40 + 77 in B, 30 in D
    assert row["punish_spent"] == pytest.approx(1.0)
    assert row["punish_spent_fraction"] == pytest.approx((3 / 117 + 1 / 30) / 4)
    # pooled, not the mean of rates: free riding (1 + 1) / (3 + 6 + 3 + 3) (mean would be 1/8)
    assert row["free_riding_rate"] == pytest.approx(2 / 15)
    # antisocial (0 + 1 + 0 + 1) / (0 + 2 + 0 + 1) (mean of defined rates would be 3/4)
    assert row["antisocial_rate"] == pytest.approx(2 / 3)
    # retaliation: 1 of 1 opportunity, in one game only: no interval from one game
    assert row["retaliation_rate"] == 1.0
    assert row["retaliation_rate_ci_low"] is None and row["retaliation_rate_ci_high"] is None
    assert row["exact"] is False and row["identical_games"] is False


def test_pgg_mean_interval_is_student_t_at_four_games():
    row = _pgg([GAME_A, GAME_B, GAME_C, GAME_D])
    values = [2 / 3, 5 / 6, 0.0, 0.0]
    half = 3.182446305284263 * statistics.stdev(values) / 2  # t(0.975, 3) * sd / sqrt(4)
    mean = sum(values) / 4
    assert row["contribution_rate_ci_low"] == pytest.approx(max(0.0, mean - half))
    assert row["contribution_rate_ci_high"] == pytest.approx(min(1.0, mean + half))
    assert "contribution_rate" in row["clipped_intervals"].split(",")  # low end below 0


def test_pgg_intervals_cover_their_means_and_stay_feasible():
    row = _pgg([GAME_A, GAME_B, GAME_C, GAME_D, GAME_A, GAME_D], seed=3)
    for column in ("contribution_rate", "efficiency", "gini_final", "punish_spent_fraction"):
        low, high = row[f"{column}_ci_low"], row[f"{column}_ci_high"]
        assert 0.0 <= low <= row[column] <= high <= 1.0, column
    assert row["gini_final_ci_high"] <= 2 / 3  # (N - 1) / N
    for column in ("free_riding_rate", "antisocial_rate"):
        low, high = row[f"{column}_ci_low"], row[f"{column}_ci_high"]
        assert 0.0 <= low < row[column] < high <= 1.0, column


@pytest.mark.parametrize(
    ("games", "exact", "expect_exact", "expect_identical"),
    [
        ([GAME_B, GAME_B, GAME_B], True, True, True),
        ([GAME_B, GAME_B, GAME_B], False, False, True),  # could have varied: wide interval
        ([GAME_A, GAME_B, GAME_A], True, False, False),  # marked, but the games differ
    ],
)
def test_pgg_exact_only_when_identical_and_deterministic(
    games, exact, expect_exact, expect_identical
):
    row = _pgg(games, exact=exact)
    assert row["exact"] is expect_exact and row["identical_games"] is expect_identical
    width = row["contribution_rate_ci_high"] - row["contribution_rate_ci_low"]
    if expect_exact:
        assert width == 0.0 and row["contribution_rate_ci_low"] == pytest.approx(5 / 6)
        assert row["antisocial_rate_ci_low"] == row["antisocial_rate_ci_high"] == 0.5
    else:
        assert width > 0.0


COMMONS = CommonsRules(n_agents=2, n_seasons=4, allocation="proportional")


def _commons(amounts, exact=False):
    games = [commons_metrics(COMMONS, run_commons(COMMONS, fixed_policy(a))) for a in amounts]
    return commons_condition_summary(COMMONS, games, SETTINGS, np.random.default_rng(0), exact)


def test_commons_by_hand():
    # 2 agents, capacity 100, collapse below 5 left, 4 seasons, each agent asks a fixed amount:
    # 25: 50 left -> 100 each season, survives; caught 200 of 4 * 50 (efficiency 1)
    # 30: 100 -> 40 left -> 80 -> 20 left -> 40 -> 0 left: collapse in season 2; caught 160
    # 48: 4 left: collapse in season 0; caught 96
    # 40: 20 left -> 40 -> 0 left: collapse in season 1; caught 120
    row = _commons([25, 30, 48, 40])
    assert tuple(row) == COMMONS_CONDITION_COLUMNS
    assert row["survival"] == pytest.approx(1 / 4)
    assert row["collapsed_games"] == 3
    assert row["time_to_collapse"] == pytest.approx((2 + 0 + 1) / 3)  # collapsed games only
    assert row["survival_months"] == pytest.approx((4 + 3 + 1 + 2) / 4)
    assert row["efficiency"] == pytest.approx((1.0 + 0.8 + 0.48 + 0.6) / 4)
    assert row["catch_gini"] == 0.0
    # shares (S // 2) // 2: 25 at 100, 20 at 80, 10 at 40; over-asks 0/8, 6/6, 2/2, 4/4 pooled
    assert row["overuse_rate"] == pytest.approx(12 / 20)
    # Wilson with continuity correction (Newcombe's method 4) of 1 of 4, z = 1.959964:
    # low (2 + z^2 - 1 - z sqrt(z^2 - 2 - 1/4 + 4)) / (2 (4 + z^2)) = 0.20688 / 15.68292
    # high (2 + z^2 + 1 + z sqrt(z^2 + 2 - 1/4 + 2)) / (2 (4 + z^2)) = 12.24167 / 15.68292
    assert row["survival_ci_low"] == pytest.approx(0.013191, abs=1e-5)
    assert row["survival_ci_high"] == pytest.approx(0.780572, abs=1e-5)
    for column in ("time_to_collapse", "survival_months", "efficiency", "overuse_rate"):
        assert row[f"{column}_ci_low"] <= row[column] <= row[f"{column}_ci_high"], column
    assert 0.0 <= row["time_to_collapse_ci_low"] and row["time_to_collapse_ci_high"] <= 3.0


def test_commons_all_survive_has_no_collapse_time():
    row = _commons([25, 20])
    assert row["survival"] == 1.0 and row["collapsed_games"] == 0
    assert row["time_to_collapse"] is None and row["time_to_collapse_ci_low"] is None


@pytest.mark.parametrize(("exact", "width_zero"), [(True, True), (False, False)])
def test_commons_exact_needs_deterministic_and_identical(exact, width_zero):
    row = _commons([30, 30, 30], exact=exact)
    assert row["exact"] is width_zero and row["identical_games"] is True
    for column in ("survival", "time_to_collapse", "efficiency", "overuse_rate"):
        width = row[f"{column}_ci_high"] - row[f"{column}_ci_low"]
        assert (width == 0.0) is width_zero, column
    assert row["time_to_collapse"] == 2.0 and not math.isnan(row["efficiency_ci_low"])
