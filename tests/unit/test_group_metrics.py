"""Unit tests of pdbench.core.group_metrics and core.group_conditions: hand-worked games of three
seats and four rounds, the Gini by hand, conditional cooperation counted by hand, collapse by
hand, N = 2 against the pairwise metrics (an independent implementation), and the condition
rows' intervals (covering the mean; zero width only for an exact condition's identical games)."""

from __future__ import annotations

import numpy as np
import pytest

from pdbench.core.exact import EXACT_COLUMN, IDENTICAL_COLUMN
from pdbench.core.group_conditions import (
    GROUP_AGGREGATE_COLUMNS,
    GROUP_CONDITIONAL_COLUMNS,
    GROUP_ROUND_COLUMNS,
    GROUP_SEAT_TABLE_COLUMNS,
    group_condition_rows,
)
from pdbench.core.group_game import GroupGame
from pdbench.core.group_metrics import (
    GROUP_METRIC_COLUMNS,
    GROUP_SEAT_COLUMNS,
    GroupOutcome,
    gini,
    group_feasible_range,
    group_game_metrics,
    group_games_metrics,
)
from pdbench.core.metrics import CollapseParams, MetricDesign, game_metrics
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.stats import IntervalSettings

PD3 = GroupGame.linear_pd(3)  # pay_c = (0, 1.5, 3), pay_d = (1, 3, 5)
SETTINGS = IntervalSettings(resamples=400)


def moves(*rows: str) -> np.ndarray:
    """('CCD', 'DDC') -> a (seats, rounds) bool array, True for C."""
    return np.array([[m == "C" for m in row] for row in rows], dtype=bool)


def outcome(
    rows: tuple[str, ...], game: GroupGame = PD3, replicate: int = 0, condition: str = "trio"
) -> GroupOutcome:
    """A game whose payoffs are the game's for each round's moves."""
    played = moves(*rows)
    payoffs = np.array([game.payoffs(list(played[:, t])) for t in range(played.shape[1])]).T
    names = tuple(f"p{i}" for i in range(len(rows)))
    return GroupOutcome(condition, replicate, names, game, played, payoffs)


# Example: seat 0 C C D D, seat 1 C D D C, seat 2 D C D D (linear PD, N = 3).
# Round 0: C C D -> seats 0, 1 C with 1 co-player C: 1.5 each; seat 2 D with 2: 5.
# Round 1: C D C -> seat 0 C (1 other C): 1.5; seat 1 D (2): 5; seat 2 C (1): 1.5.
# Round 2: D D D -> 1 each.  Round 3: D C D -> seat 0 D (1): 3; seat 1 C (0): 0; seat 2 D (1): 3.
# Totals: 7, 7.5, 10.5 (sum 25).
EXAMPLE = ("CCDD", "CDDC", "DCDD")


@pytest.mark.parametrize(
    ("column", "expected"),
    [
        ("n_rounds", 4),
        ("group_cooperation_rate", 5 / 12),  # C: 2 + 2 + 0 + 1 of 12 moves
        ("group_payoff_per_round", 25 / 12),
        ("efficiency", 25 / 36),  # (25 / 12) / all-cooperate payoff 3
        # |7 - 7.5| + |7 - 10.5| + |7.5 - 10.5| = 7, twice over ordered pairs: 14;
        # 2 N^2 mean = 2 * 9 * 25 / 3 = 150
        ("payoff_gini", 14 / 150),
        ("fallback_rate", 0.0),
    ],
)
def test_a_hand_worked_game_of_three(column: str, expected: float) -> None:
    values = group_game_metrics(outcome(EXAMPLE)).values
    assert values[column] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("seat", "cooperation", "total", "partners_per_round"),
    [
        (0, 2 / 4, 7.0, (7.5 + 10.5) / 2 / 4),
        (1, 2 / 4, 7.5, (7.0 + 10.5) / 2 / 4),
        (2, 1 / 4, 10.5, (7.0 + 7.5) / 2 / 4),
    ],
)
def test_each_seat_of_the_hand_worked_game(
    seat: int, cooperation: float, total: float, partners_per_round: float
) -> None:
    got = group_game_metrics(outcome(EXAMPLE)).seats[seat]
    assert got["cooperation_rate"] == pytest.approx(cooperation)
    assert got["total_payoff"] == pytest.approx(total)
    assert got["payoff_per_round"] == pytest.approx(total / 4)
    assert got["partners_payoff_per_round"] == pytest.approx(partners_per_round)
    assert got["parse_failures"] == 0


def test_cooperation_over_rounds_is_the_share_of_seats_that_cooperated() -> None:
    got = group_game_metrics(outcome(EXAMPLE)).over_rounds
    assert got.tolist() == pytest.approx([2 / 3, 2 / 3, 0.0, 1 / 3])


def test_conditional_cooperation_counted_by_hand() -> None:
    # Round 1 after C C D: seat 0 saw 1 C and played C; seat 1 saw 1, played D; seat 2 saw 2, C.
    # Round 2 after C D C: seat 0 saw 1, D; seat 1 saw 2, D; seat 2 saw 1, D.
    # Round 3 after D D D: every seat saw 0; seat 1 played C, seats 0 and 2 D.
    # k = 0: 3 cases, 1 C; k = 1: 4 cases, 1 C; k = 2: 2 cases, 1 C.
    got = group_game_metrics(outcome(EXAMPLE))
    assert got.cases == (3, 4, 2)
    assert got.cooperations == (1, 1, 1)
    assert got.p_coop_given_k() == pytest.approx((1 / 3, 1 / 4, 1 / 2))


def test_conditional_cooperation_is_undefined_where_no_case() -> None:
    got = group_game_metrics(outcome(("CCC", "CCC", "CCC")))
    assert got.cases == (0, 0, 6)
    assert got.p_coop_given_k() == (None, None, 1.0)


@pytest.mark.parametrize(
    ("k", "threshold", "expected"),
    [
        # C per round: 2, 2, 0, 1 of 3 moves.  Windows of 2: 4/6, 2/6, 1/6.
        (2, 0.2, 2),  # 1/6 <= 0.2 first at round 2
        (2, 1 / 3, 1),  # 2/6 is at the threshold: at or below counts (as pairwise)
        (2, 0.1, None),
        (1, 0.0, 2),  # round 2 alone has no C
        (4, 5 / 12, 0),  # the whole game: 5/12
        (5, 1.0, None),  # a window longer than the game
    ],
)
def test_time_to_collapse_by_hand(k: int, threshold: float, expected: int | None) -> None:
    values = group_game_metrics(outcome(EXAMPLE), CollapseParams(k, threshold)).values
    assert values["time_to_collapse"] == expected
    assert values["collapsed_fraction"] == float(expected is not None)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ((0, 0, 0, 1), 0.75),  # sum |xi - xj| = 6, 2 n^2 mean = 2 * 16 * 0.25 = 8
        ((1, 3), 0.25),  # 2 * 2 / (2 * 4 * 2)
        ((5, 5, 5), 0.0),
        ((0, 0, 0), 0.0),  # everyone got the same (nothing)
        ((1, 2, 3, 4), 0.25),  # 20 / (2 * 16 * 2.5)
        ((-1, 2), None),
        ((), None),
    ],
)
def test_gini_by_hand(values: tuple[float, ...], expected: float | None) -> None:
    assert gini(values) == (None if expected is None else pytest.approx(expected))


def test_gini_of_a_game_with_negative_payoffs_measures_from_its_lowest_payoff() -> None:
    # Public goods N = 3, r = 1.5, c = 1: pay_c = (-0.5, 0, 0.5), pay_d = (0, 0.5, 1).
    # Seat 0 C twice, seats 1, 2 D: seat 0 gets -0.5, the others 0.5 per round.
    # Totals (-1, 1, 1), measured from 2 rounds x -0.5: (0, 2, 2); Gini = 8 / (2 * 9 * 4/3).
    game = GroupGame.public_goods(3, 1.5)
    values = group_game_metrics(outcome(("CC", "DD", "DD"), game)).values
    assert values["payoff_gini"] == pytest.approx(1 / 3)
    assert values["efficiency"] == pytest.approx((1 / 6) / 0.5)  # mean 1/6 over all-C 0.5


def test_efficiency_is_above_one_in_the_volunteers_dilemma_and_undefined_without_gain() -> None:
    # One volunteer of three (b = 2, c = 1): 1 + 2 + 2 per round, mean 5/3; all-C gives 1.
    volunteer = group_game_metrics(outcome(("CC", "DD", "DD"), GroupGame.volunteer(3))).values
    assert volunteer["efficiency"] == pytest.approx(5 / 3)
    nothing = group_game_metrics(outcome(("CC", "DD"), GroupGame.volunteer(2, b=1.0))).values
    assert nothing["efficiency"] is None  # all cooperating pays b - c = 0


def test_parse_failures_are_counted_per_seat() -> None:
    base = outcome(EXAMPLE)
    game = GroupOutcome("trio", 0, base.names, PD3, base.played, base.payoffs, None, (1, 0, 3))
    got = group_game_metrics(game)
    assert [s["parse_failures"] for s in got.seats] == [1, 0, 3]
    assert [s["fallback_rate"] for s in got.seats] == [0.25, 0.0, 0.75]
    assert got.values["fallback_rate"] == pytest.approx(4 / 12)


def test_an_outcome_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="3 players"):
        GroupOutcome("x", 0, ("a", "b"), PD3, moves("CC", "DD"), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="differ in shape"):
        GroupOutcome("x", 0, ("a", "b", "c"), PD3, moves("CC", "DD", "CD"), np.zeros((3, 3)))


def test_games_of_several_lengths_measured_together_as_one_by_one() -> None:
    rng = np.random.default_rng(3)
    games = [
        outcome(tuple("".join(rng.choice(["C", "D"], size=t)) for _ in range(3)), replicate=i)
        for i, t in enumerate([4, 7, 4, 1, 7, 9])
    ]
    together = group_games_metrics(games, CollapseParams(2, 0.4))
    alone = [group_game_metrics(g, CollapseParams(2, 0.4)) for g in games]
    for a, b in zip(together, alone, strict=True):
        assert a.replicate == b.replicate
        assert a.values == b.values and a.seats == b.seats
        assert a.cases == b.cases and a.cooperations == b.cooperations


# --- N = 2 against the pairwise metrics (core.metrics, an independent implementation) -------


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_two_seats_equal_the_pairwise_metrics(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = "".join(rng.choice(["C", "D"], size=12, p=[0.6, 0.4]))
    b = "".join(rng.choice(["C", "D"], size=12, p=[0.5, 0.5]))
    game = GroupGame.from_matrix(PayoffMatrix())
    group = group_game_metrics(outcome((a, b), game), CollapseParams(3, 0.34))
    played = moves(a, b)
    pay = np.array([game.payoffs(list(played[:, t])) for t in range(12)]).T
    pair = game_metrics(played[0], played[1], pay[0], pay[1], collapse=CollapseParams(3, 0.34))
    assert group.values["group_cooperation_rate"] == pair["overall_cooperation_rate"]
    assert group.values["time_to_collapse"] == pair["time_to_collapse"]
    assert group.values["collapsed_fraction"] == pair["collapsed_fraction"]
    for seat, side in enumerate("ab"):
        other = "ba"[seat]
        got = group.seats[seat]
        assert got["cooperation_rate"] == pair[f"agent_{side}_cooperation_rate"]
        assert got["total_payoff"] == pair[f"agent_{side}_total_payoff"]
        assert got["payoff_per_round"] == pair[f"agent_{side}_payoff_per_round"]
        assert got["partners_payoff_per_round"] == pair[f"agent_{other}_payoff_per_round"]
    # P(C | k): k = 1 is after the partner's C (memory-one states cc and dc of both seats),
    # k = 0 after its D (cd and dd); the counts pooled over the two seats.
    for k, states in ((1, ("cc", "dc")), (0, ("cd", "dd"))):
        visits = sum(pair[f"agent_{s}_n_{st}"] for s in "ab" for st in states)
        coops = sum(
            round(pair[f"agent_{s}_n_{st}"] * (pair[f"agent_{s}_p_coop_after_{st}"] or 0.0))
            for s in "ab"
            for st in states
        )
        assert group.cases[k] == visits
        assert group.cooperations[k] == coops


# --- conditions ----------------------------------------------------------------------------


def condition(games: list[GroupOutcome], exact: bool = False, design=None, seed: int = 5):
    metrics = group_games_metrics(games, CollapseParams(2, 0.2))
    return group_condition_rows(
        metrics, SETTINGS, np.random.default_rng(seed), design, exact, run_id="r"
    )


def varied_games(count: int = 6, rounds: int = 6) -> list[GroupOutcome]:
    rng = np.random.default_rng(11)
    return [
        outcome(tuple("".join(rng.choice(["C", "D"], size=rounds)) for _ in range(3)), replicate=i)
        for i in range(count)
    ]


def test_condition_means_pooled_counts_and_rows_by_hand() -> None:
    # Game 0: the example (collapses at round 2 with k = 2, threshold 0.2); game 1: all C
    # (never collapses).  Group cooperation: (5/12 + 1) / 2; collapse round: 2 (collapsed game
    # only); collapsed share 1/2; P(C | 2): (1 + 6) / (2 + 6) pooled over games.
    rows = condition([outcome(EXAMPLE, replicate=0), outcome(("CCCC",) * 3, replicate=1)])
    summary = rows.aggregates[-1]
    assert [r["scope"] for r in rows.aggregates] == ["replicate", "replicate", "condition"]
    assert summary["n_replicates"] == 2 and summary["n_players"] == 3
    assert summary["seat_names"] == '["p0","p1","p2"]'
    assert summary["game_label"] == PD3.describe()
    assert summary["group_cooperation_rate"] == pytest.approx((5 / 12 + 1) / 2)
    assert summary["time_to_collapse"] == 2
    assert summary["collapsed_fraction"] == 0.5
    given = {r["k"]: r for r in rows.conditional if r["scope"] == "condition"}
    assert (given[2]["cases"], given[2]["cooperations"]) == (2 + 9, 1 + 9)
    assert given[2]["p_coop_given_k"] == pytest.approx(10 / 11)
    assert given[0]["cases"] == 3 and given[0]["p_coop_given_k"] == pytest.approx(1 / 3)
    seat_rows = [r for r in rows.seats if r["scope"] == "condition"]
    assert [r["seat"] for r in seat_rows] == [0, 1, 2]
    assert seat_rows[2]["cooperation_rate"] == pytest.approx((1 / 4 + 1) / 2)
    assert [r["cooperation"] for r in rows.rounds] == pytest.approx([5 / 6, 5 / 6, 1 / 2, 2 / 3])
    for table, columns in (
        (rows.aggregates, GROUP_AGGREGATE_COLUMNS),
        (rows.seats, GROUP_SEAT_TABLE_COLUMNS),
        (rows.rounds, GROUP_ROUND_COLUMNS),
        (rows.conditional, GROUP_CONDITIONAL_COLUMNS),
    ):
        assert {c for row in table for c in row} <= set(columns)


def test_rounds_of_unequal_games_are_averaged_over_the_games_that_reached_them() -> None:
    rows = condition([outcome(("CCC",) * 3, replicate=0), outcome(("D",) * 3, replicate=1)])
    assert [(r["round"], r["games"], r["cooperation"]) for r in rows.rounds] == [
        (0, 2, 0.5),
        (1, 1, 1.0),
        (2, 1, 1.0),
    ]


def test_every_interval_of_varied_games_covers_its_mean_with_width() -> None:
    rows = condition(varied_games())
    summary = rows.aggregates[-1]
    assert summary[EXACT_COLUMN] is False and summary[IDENTICAL_COLUMN] is False
    checked = 0
    for row, columns in [(summary, GROUP_METRIC_COLUMNS)] + [
        (s, GROUP_SEAT_COLUMNS) for s in rows.seats if s["scope"] == "condition"
    ]:
        for column in columns:
            low, high, value = row[f"{column}_ci_low"], row[f"{column}_ci_high"], row[column]
            if value is None or low is None:
                continue
            checked += 1
            assert low <= value <= high, column
            assert high > low, column  # games differ, or a constant's range-wide interval
    assert checked >= 20
    for r in rows.rounds:
        assert r["cooperation_ci_low"] <= r["cooperation"] <= r["cooperation_ci_high"]
    for g in rows.conditional:
        if g["scope"] == "condition" and g["cases"]:
            assert g["p_coop_given_k_ci_low"] <= g["p_coop_given_k"] <= g["p_coop_given_k_ci_high"]


def identical_games(count: int = 5) -> list[GroupOutcome]:
    return [outcome(EXAMPLE, replicate=i) for i in range(count)]


def test_an_exact_condition_of_identical_games_gets_its_values_as_intervals() -> None:
    rows = condition(identical_games(), exact=True)
    summary = rows.aggregates[-1]
    assert summary[EXACT_COLUMN] is True and summary[IDENTICAL_COLUMN] is True
    for column in GROUP_METRIC_COLUMNS:
        assert summary[f"{column}_ci_low"] == summary[f"{column}_ci_high"] == summary[column]
    for seat in (s for s in rows.seats if s["scope"] == "condition"):
        for column in GROUP_SEAT_COLUMNS:
            assert seat[f"{column}_ci_low"] == seat[f"{column}_ci_high"] == seat[column]
    for r in rows.rounds:
        assert r["cooperation_ci_low"] == r["cooperation_ci_high"] == r["cooperation"]


def test_identical_games_that_could_have_differed_keep_a_wide_interval() -> None:
    rows = condition(identical_games(), exact=False)
    summary = rows.aggregates[-1]
    assert summary[EXACT_COLUMN] is False and summary[IDENTICAL_COLUMN] is True
    low, high = summary["group_cooperation_rate_ci_low"], summary["group_cooperation_rate_ci_high"]
    assert low < 5 / 12 < high


def test_a_deterministic_condition_whose_games_differ_is_not_exact() -> None:
    rows = condition(varied_games(), exact=True)
    summary = rows.aggregates[-1]
    assert summary[EXACT_COLUMN] is False
    assert summary["group_cooperation_rate_ci_high"] > summary["group_cooperation_rate_ci_low"]


def test_intervals_are_clipped_to_the_feasible_range_and_say_so() -> None:
    # Two games, mostly cooperative: Student-t over two values reaches above 100%.
    rows = condition([outcome(("CCCC",) * 3, replicate=0), outcome(EXAMPLE, replicate=1)])
    summary = rows.aggregates[-1]
    assert summary["group_cooperation_rate_ci_high"] == 1.0
    assert "group_cooperation_rate" in (summary["clipped_intervals"] or "")


def test_the_same_generator_seed_gives_the_same_rows() -> None:
    assert condition(varied_games(), seed=9) == condition(varied_games(), seed=9)


@pytest.mark.parametrize(
    ("column", "bounds"),
    [
        ("group_cooperation_rate", (0.0, 1.0)),
        ("payoff_per_round", (0.0, 5.0)),
        ("efficiency", (0.0, 5 / 3)),
        ("payoff_gini", (0.0, 2 / 3)),
        ("n_rounds", (4.0, 4.0)),
        ("time_to_collapse", (0.0, 3.0)),
        ("total_payoff", (0.0, 20.0)),
    ],
)
def test_feasible_ranges_of_a_fixed_four_round_pd(column: str, bounds: tuple) -> None:
    assert group_feasible_range(column, PD3, MetricDesign(0.0, 5.0, 4, 4)) == bounds
