"""The commons (GovSim's fishery): regrowth and cap, allocation, closed-form outcomes, metrics.

Expected values are hand calculations (traces in the comments), not the code's output.
"""

from __future__ import annotations

import numpy as np
import pytest

from pdbench.core.commons import (
    CommonsRules,
    fixed_collapse_season,
    fixed_policy,
    greedy_policy,
    outsider_policy,
    run_commons,
    step,
    sustainable_catch,
    sustainable_policy,
    sustainable_total,
)
from pdbench.core.commons_metrics import commons_metrics

GOVSIM = CommonsRules()
PROP = CommonsRules(allocation="proportional")


@pytest.mark.parametrize(
    ("stock", "harvests", "left", "next_stock", "collapsed"),
    [
        (100, [10] * 5, 50, 100, False),  # 50 left doubles to exactly capacity
        (100, [6] * 5, 70, 100, False),  # 70 doubles to 140, capped at 100
        (90, [6] * 5, 60, 100, False),  # GovSim's prompt: 90, catch 30, 60 left, 100 after
        (60, [5] * 5, 35, 70, False),
        (40, [4] * 5, 20, 40, False),  # GovSim v1 prompt: 20 remaining -> 40
        (10, [1, 1, 1, 1, 2], 4, 8, True),  # 4 < 5: collapse
        (10, [1] * 5, 5, 10, False),  # exactly 5 left is not a collapse
        (0, [0] * 5, 0, 0, True),
    ],
)
def test_step_regrowth_and_cap(stock, harvests, left, next_stock, collapsed):
    r = step(GOVSIM, stock, harvests)
    assert r.caught == tuple(harvests)
    assert (r.left, r.next_stock, r.collapsed) == (left, next_stock, collapsed)


def test_proportional_over_subscription_by_hand():
    # stock 10, requests 10, 5, 5 (total 20): exact 5, 2.5, 2.5; floors 5, 2, 2; the one ton
    # left goes to the larger remainder, a tie between seats 1 and 2: the lower seat
    r = step(PROP, 10, [10, 5, 5, 0, 0])
    assert r.caught == (5, 3, 2, 0, 0)
    assert (r.left, r.next_stock, r.collapsed) == (0, 0, True)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_stochastic_over_subscription_empties_the_lake(seed):
    requested = [30, 0, 25, 40, 10]
    r = step(GOVSIM, 60, requested, np.random.default_rng(seed))
    assert sum(r.caught) == 60 and r.left == 0 and r.collapsed
    assert all(0 <= c <= q for c, q in zip(r.caught, requested, strict=True))
    assert r.caught[1] == 0


def test_stochastic_needs_no_rng_when_requests_fit():
    assert step(GOVSIM, 50, [5, 5, 5, 5, 5]).caught == (5,) * 5


@pytest.mark.parametrize(("n", "share"), [(5, 10), (4, 12), (3, 16), (7, 7), (1, 50)])
def test_sustainable_harvest_forever(n, share):
    rules = CommonsRules(n_agents=n)
    seasons = run_commons(rules, sustainable_policy(), 100)
    assert len(seasons) == 100
    assert all(s.stock == 100 and s.caught == (share,) * n for s in seasons)
    m = commons_metrics(rules, seasons, 100)
    assert m.survived and m.time_to_collapse is None and m.survival_months == 100
    assert m.total_caught == (100 * share,) * n
    assert m.sustainability_gap == (0,) * n and m.catch_gini == 0.0
    # the group takes n * share of the 50 a full lake allows, each season
    assert m.group_sustainability_gap == 100 * (n * share - 50)
    assert m.harvest_ratio == pytest.approx(n * share / 50) and m.overuse_rate == 0.0


# (n agents, each asks, capacity, collapse below, expected 0-based collapse season), by hand:
FIXED_CASES = [
    # left after each season: 40; 80 -> 20; 40 -> 0 (asks 60 of 40)
    (5, 12, 100, 5, 2),
    # left: 45; 90 -> 35; 70 -> 15; 30 -> 0
    (5, 11, 100, 5, 3),
    # left: 5 (not < 5); 10 -> 0
    (5, 19, 100, 5, 1),
    (5, 20, 100, 5, 0),  # takes all 100
    (5, 10, 100, 5, None),  # 50 left doubles back to 100
    # left: 48; 96 -> 44; 88 -> 36; 72 -> 20; 40 -> 0
    (4, 13, 100, 5, 4),
    # left: 49; 98 -> 47; 94 -> 43; 86 -> 35; 70 -> 19; 38 -> 0
    (1, 51, 100, 5, 5),
    # left: 45; 35; 15 < 20
    (5, 11, 100, 20, 2),
    # capacity 50: left 23; 46 -> 19; 38 -> 11; 22 -> 0
    (3, 9, 50, 5, 3),
    # capacity 8, collapse below 5: 4 left at once, though 4 doubles back to 8
    (1, 4, 8, 5, 0),
]


@pytest.mark.parametrize(("n", "h", "cap", "theta", "expected"), FIXED_CASES)
def test_fixed_over_harvest_collapses_in_the_closed_form_season(n, h, cap, theta, expected):
    assert fixed_collapse_season(n, h, cap, theta) == expected
    rules = CommonsRules(n_agents=n, capacity=cap, collapse_below=theta, allocation="proportional")
    m = commons_metrics(rules, run_commons(rules, fixed_policy(h), 30), 30)
    assert m.time_to_collapse == expected
    assert m.survived == (expected is None)


@pytest.mark.parametrize(
    ("n", "max_catch", "expected"),
    [(5, 100, 0), (2, 100, 0), (5, 11, 3), (2, 26, 4), (4, 13, 4)],  # as the fixed rows above
)
def test_greedy_collapses_in_the_closed_form_season(n, max_catch, expected):
    rules = CommonsRules(n_agents=n, max_catch=max_catch)
    seasons = run_commons(rules, greedy_policy(), 30, np.random.default_rng(7))
    assert len(seasons) - 1 == expected == fixed_collapse_season(n, max_catch)
    assert seasons[-1].collapsed and not any(s.collapsed for s in seasons[:-1])


def test_greedy_outsider_empties_the_lake_on_arrival():
    rules = CommonsRules(n_agents=5, n_seasons=15, allocation="proportional")
    seasons = run_commons(rules, outsider_policy(arrival=3))
    # seasons 0-2: four incumbents ask (100 // 2) // 4 = 12, 52 left -> 100; season 3: 148 asked
    assert [s.requested for s in seasons[:3]] == [(12, 12, 12, 12, 0)] * 3
    assert seasons[3].requested == (12, 12, 12, 12, 100)
    # 100 * 12 / 148 = 8.1 (floor 8, remainder 16/148), 100 * 100 / 148 = 67.6 (67, 84/148):
    # the ton left goes to the outsider
    assert seasons[3].caught == (8, 8, 8, 8, 68)
    m = commons_metrics(rules, seasons)
    assert (m.time_to_collapse, m.survival_months, m.seasons_played) == (3, 4, 4)
    assert m.total_caught == (44, 44, 44, 44, 68)
    # threshold for 5 agents at 100: 10 a season, 40 over the four
    assert m.sustainability_gap == (4, 4, 4, 4, 28)
    assert m.group_sustainability_gap == 3 * (48 - 50) + (100 - 50)
    assert m.overuse_rate == pytest.approx(17 / 20)  # 16 incumbents' 12s and the outsider's 100
    # Gini: 4 x 24 differences, both orders, over 2 * 25 * 48.8
    assert m.catch_gini == pytest.approx(192 / 2440)
    assert m.harvest_ratio == pytest.approx(244 / 750) and m.efficiency == m.harvest_ratio


def test_moderate_outsider_collapses_later():
    # outsider asks 10 from season 3; incumbents (S // 2) // 4 each:
    # S 100: 48 + 10 -> 42 left -> 84; 84: 4 x 10 + 10 -> 34 -> 68; 68: 32 + 10 -> 26 -> 52;
    # 52: 24 + 10 -> 18 -> 36; 36: 16 + 10 -> 10 -> 20; 20: 8 + 10 -> 2 < 5 (season 8)
    rules = CommonsRules(n_seasons=15)
    seasons = run_commons(rules, outsider_policy(3, 10))
    assert [s.stock for s in seasons[3:]] == [100, 84, 68, 52, 36, 20]
    assert commons_metrics(rules, seasons).time_to_collapse == 8


def test_outsider_within_the_sustainable_total_survives():
    rules = CommonsRules(n_seasons=15)  # 4 x 12 + 2 = 50: the lake refills every season
    m = commons_metrics(rules, run_commons(rules, outsider_policy(3, 2)))
    assert m.survived and m.seasons_played == 15 and m.total_caught[-1] == 12 * 2


@pytest.mark.parametrize(
    ("stock", "n", "catch", "total"),
    [(100, 5, 10, 50), (100, 4, 12, 50), (99, 5, 9, 49), (7, 5, 0, 3), (0, 3, 0, 0)],
)
def test_sustainable_reference(stock, n, catch, total):
    assert sustainable_catch(stock, n) == catch and sustainable_total(stock) == total


def test_sustainable_total_other_growth():
    assert sustainable_total(90, growth=3) == 60  # 30 left triples to 90


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: step(GOVSIM, 101, [0] * 5), "stock must be 0..capacity 100"),
        (lambda: step(GOVSIM, -1, [0] * 5), "stock must be 0..capacity 100"),
        (lambda: step(GOVSIM, 50, [0] * 4), "5 harvests needed"),
        (lambda: step(GOVSIM, 50, [0, 0, 0, 0, -1]), "max_catch 100"),
        (lambda: step(GOVSIM, 50, [0, 0, 0, 0, 101]), "max_catch 100"),
        (lambda: step(GOVSIM, 50, [0, 0, 0, 0, 2.5]), "must be an integer"),
        (lambda: step(GOVSIM, 50, [0, 0, 0, 0, True]), "must be an integer"),
        (lambda: step(GOVSIM, 50, [20] * 5), "need an rng"),
        (lambda: CommonsRules(n_agents=0), "n_agents must be at least 1"),
        (lambda: CommonsRules(collapse_below=101), "collapse_below must be 0..capacity"),
        (lambda: CommonsRules(initial_stock=120), "initial_stock must be 0..capacity"),
        (lambda: CommonsRules(allocation="random"), "choose one of stochastic, proportional"),
        (lambda: fixed_policy(-1), "at least 0"),
        (lambda: outsider_policy(-1), "season index >= 0"),
        (lambda: run_commons(GOVSIM, sustainable_policy(), 0), "n_seasons must be at least 1"),
        (lambda: run_commons(CommonsRules(n_agents=1), outsider_policy()), "at least 2 agents"),
        (lambda: commons_metrics(GOVSIM, []), "at least one season"),
    ],
)
def test_input_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
