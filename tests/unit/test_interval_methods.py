"""An interval method per kind of metric (issue 19): shares of games get the Wilson interval with
continuity correction, ratios pooled over games a cluster-aware Wilson interval, means the hull
of three intervals; no interval is zero width from 2 or more games, and every interval lies in
the metric's feasible range, with clipping named.

Expected values come from published tables (Newcombe 1998) or from formulas written out here,
never from the code under test."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from pdbench.core.metrics import (
    GameOutcome,
    MetricDesign,
    aggregate_rows,
    feasible_range,
    interval_kind,
)
from pdbench.core.stats import (
    IntervalSettings,
    constant_interval,
    mean_intervals,
    ratio_interval,
    resample_weights,
    share_interval,
    wilson_cc_interval,
    wilson_interval,
)
from pdbench.runners.config.loader import load_config
from pdbench.runners.science.experiment import RunOptions, run_experiment
from pdbench.storage.intervals import with_intervals

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("k", "n", "plain", "corrected"),
    [
        # Newcombe (1998), Statistics in Medicine 17:857-872, Table I, methods 3 and 4.
        (81, 263, (0.2553, 0.3662), (0.2535, 0.3682)),
        (15, 148, (0.0624, 0.1605), (0.0598, 0.1644)),
        (0, 20, (0.0000, 0.1611), (0.0000, 0.2005)),
        (1, 29, (0.0061, 0.1718), (0.0018, 0.1963)),
    ],
)
def test_wilson_intervals_match_newcombes_table(
    k: int, n: int, plain: tuple[float, float], corrected: tuple[float, float]
) -> None:
    assert wilson_interval(k, n) == pytest.approx(plain, abs=1e-4)
    assert wilson_cc_interval(k, n) == pytest.approx(corrected, abs=1e-4)


def test_a_share_of_games_is_never_zero_width_from_two_games() -> None:
    # 6 of 6 games cooperate first: the corrected Wilson lower end is
    # (2np + z^2 - 1 - z sqrt(z^2 - 2 - 1/n + 4p(n(1-p) + 1))) / (2(n + z^2)) at p = 1, n = 6:
    # (12 + 3.8415 - 1 - 1.96 sqrt(3.8415 - 2 - 0.1667 + 4)) / (2 * 9.8415)
    # = (14.8415 - 1.96 * 2.3822) / 19.683 = 0.5168.
    low, high = share_interval([1, 1, 1, 1, 1, 1])
    assert low == pytest.approx(0.5168, abs=1e-3) and high == 1.0
    low, high = share_interval([0, 0])
    assert low == 0.0 and high > 0.5
    assert share_interval([1]) == (None, None)
    assert share_interval([1, np.nan]) == (None, None)  # one game with a value


def _ratio_by_hand(
    pairs: list[tuple[int, int]], df: int
) -> tuple[float, float]:  # written out apart from core.stats
    from scipy import stats

    coops = np.array([c for c, _ in pairs], dtype=float)
    visits = np.array([v for _, v in pairs], dtype=float)
    g = len(pairs)
    ratio = coops.sum() / visits.sum()
    residuals = coops - ratio * visits
    variance = g / (g - 1) * np.sum(residuals**2) / visits.sum() ** 2
    n_eff = min(visits.sum(), max(g, ratio * (1 - ratio) / variance))
    z = stats.t.ppf(0.975, df)
    centre = (ratio + z * z / (2 * n_eff)) / (1 + z * z / n_eff)
    half = z / (1 + z * z / n_eff) * math.sqrt(ratio * (1 - ratio) / n_eff + z * z / (4 * n_eff**2))
    return centre - half, centre + half


def test_a_pooled_ratio_counts_games_as_clusters() -> None:
    pairs = [(8, 10), (5, 10), (9, 10), (2, 5), (30, 40)]  # (cooperations, visits) per game
    low, high = ratio_interval(np.array([c for c, _ in pairs]), np.array([v for _, v in pairs]))
    expected = _ratio_by_hand(pairs, df=2 * (len(pairs) - 1))
    assert (low, high) == pytest.approx(expected, abs=1e-3)
    # Every game at 1 (100 visits each): no variance between games to see, so each game counts
    # once: the plain Wilson interval of 5 of 5 (lower end 5 / (5 + 1.96^2) = 0.5655).
    low, high = ratio_interval(np.full(5, 100), np.full(5, 100))
    assert low == pytest.approx(5 / (5 + 1.959964**2), abs=1e-4) and high == 1.0
    # Games without a visit do not count; one game with visits gives no interval.
    assert ratio_interval(np.array([3, 0]), np.array([4, 0])) == (None, None)


def test_a_mean_of_equal_games_gets_the_share_interval_of_its_range() -> None:
    # 3 games at 0.02 on [0, 1]: as 0.06 "successes" of 3.
    assert constant_interval(0.02, 3, (0.0, 1.0)) == pytest.approx(wilson_interval(0.06, 3))
    # 4 games with payoff 49 on [0, 250]: the share 0.196 of the range, scaled back.
    low, high = wilson_interval(49 / 250 * 4, 4)
    assert constant_interval(49.0, 4, (0.0, 250.0)) == pytest.approx((250 * low, 250 * high))
    assert constant_interval(50.0, 3, (50.0, 50.0)) == (50.0, 50.0)  # a fixed horizon's rounds
    assert constant_interval(7.0, 3, (0.0, math.inf)) == (None, None)  # nothing bounds it
    ((low, high),) = mean_intervals(np.array([[0.4], [0.4], [0.4]]), None, bounds=[(0.0, 1.0)])
    assert high - low > 0.5


def _outcome(condition: str, replicate: int, a: list[bool], b: list[bool]) -> GameOutcome:
    a_arr, b_arr = np.array(a), np.array(b)
    table = {(True, True): (3, 3), (True, False): (0, 5), (False, True): (5, 0)}
    pays = np.array([table.get((x, y), (1, 1)) for x, y in zip(a, b, strict=True)], float)
    return GameOutcome(condition, replicate, "A", "B", a_arr, b_arr, pays[:, 0], pays[:, 1])


def test_no_interval_is_zero_width_from_two_or_more_games() -> None:
    """Random conditions of 2-7 games, many of them with every game alike (deterministic
    players, short games): every interval from 2 or more games has positive width unless the
    metric's feasible range is a single point."""
    rng = np.random.default_rng(19)
    design = MetricDesign(0.0, 5.0, 12, 12)
    outcomes, names = [], []
    for index in range(60):
        n_games = int(rng.integers(2, 8))
        alike = index % 2 == 0
        p = float(rng.choice([0.0, 0.05, 0.5, 0.95, 1.0]))
        first = rng.random(12) < p
        for replicate in range(n_games):
            a = first if alike else rng.random(12) < p
            outcomes.append(_outcome(f"c{index}", replicate, list(a), list(~a)))
        names.append(f"c{index}")
    rows = with_intervals(
        aggregate_rows("r", outcomes, names), IntervalSettings(resamples=300, seed=3),
        {name: design for name in names},
    )  # fmt: skip
    checked = 0
    for row in (r for r in rows if r["scope"] == "condition"):
        for column in (c[: -len("_ci_low")] for c in row if c.endswith("_ci_low")):
            low, high = row[f"{column}_ci_low"], row[f"{column}_ci_high"]
            if column == "cooperation_rate_over_time" or low is None:
                continue
            bounds = feasible_range(column, design)
            if bounds is not None and bounds[0] == bounds[1]:
                assert low == high == bounds[0]
                continue
            assert high > low, (row["condition"], column, low, high)
            checked += 1
    assert checked > 1000


def test_metric_kinds() -> None:
    assert interval_kind("agent_b_first_move_cooperation") == "share"
    assert interval_kind("agent_a_fontana_nice") == "share"
    assert interval_kind("collapsed_fraction") == "share"
    assert interval_kind("agent_b_p_coop_after_dc") == "pooled_ratio"
    assert interval_kind("agent_a_fontana_forgiving") == "mean"
    assert interval_kind("agent_a_payoff_per_round") == "mean"


def test_feasible_ranges_by_hand() -> None:
    fixed = MetricDesign(-1.0, 5.0, 50, 50)
    assert feasible_range("agent_a_total_payoff", fixed) == (-50.0, 250.0)
    assert feasible_range("agent_a_payoff_per_round", fixed) == (-1.0, 5.0)
    assert feasible_range("agent_b_exploitability_payoff_gap", fixed) == (-300.0, 300.0)
    assert feasible_range("n_rounds", fixed) == (50.0, 50.0)
    assert feasible_range("time_to_collapse", fixed) == (0.0, 49.0)
    geometric = MetricDesign(0.0, 5.0, 1, None)
    assert feasible_range("agent_a_total_payoff", geometric) == (0.0, math.inf)
    assert feasible_range("agent_a_cooperation_rate", geometric) == (0.0, 1.0)
    assert feasible_range("agent_a_input_tokens", None) == (0.0, math.inf)


def test_every_interval_of_the_default_experiment_lies_in_its_feasible_range(
    tmp_path: Path,
) -> None:
    """configs/experiment.yaml: payoffs 0..5; 50 fixed rounds, or geometric up to 200 rounds
    (ranges written out here from the config, not from feasible_range)."""
    loaded = load_config(ROOT / "configs" / "experiment.yaml")
    run_experiment(loaded, RunOptions(output_dir=tmp_path / "run"))
    rows = pq.read_table(tmp_path / "run" / "aggregates.parquet").to_pylist()
    geometric = "LLMtft_vs_LLMgtft_geometric"
    seen_clipped = False
    for row in (r for r in rows if r["scope"] == "condition"):
        most = 200 if row["condition"] == geometric else 50
        fewest = 1 if row["condition"] == geometric else 50
        by_hand = {
            "agent_a_total_payoff": (0, 5 * most),
            "agent_b_total_payoff": (0, 5 * most),
            "agent_a_payoff_per_round": (0, 5),
            "agent_a_exploitability_payoff_gap": (-5 * most, 5 * most),
            "n_rounds": (fewest, most),
        }
        for column in (c[: -len("_ci_low")] for c in row if c.endswith("_ci_low")):
            low, high = row[f"{column}_ci_low"], row[f"{column}_ci_high"]
            if low is None or column == "cooperation_rate_over_time":
                continue
            lo, hi = by_hand.get(column, (0.0, 1.0) if "rate" in column else (-math.inf, math.inf))
            assert lo <= low <= row[column] + 1e-9 and row[column] - 1e-9 <= high <= hi, column
            if column.endswith(("llm_calls", "tokens", "cost_usd")):
                assert low >= 0.0
        seen_clipped |= "agent_a_total_payoff" in (row["clipped_intervals"] or "")
    # 3 geometric games (3, 24 and 9 rounds): the t-interval of A's total would reach below 0.
    assert seen_clipped


@pytest.mark.parametrize(
    ("values", "smallest"),
    [([0.8] * 9 + [0.6], 0.6), ([3.0] * 19 + [2.0], 2.0), ([1000.0] * 9 + [999.0], 999.0)],
)
def test_resamples_of_one_repeated_value_do_not_stretch_the_interval(
    values: list[float], smallest: float
) -> None:
    # Most games equal, one lower: resamples that drew only the equal games have no standard
    # error. Kept with the rounding left in their variance they gave t ~ 1e7 and a lower end
    # at the bound (nine 0.8s and one 0.6: [0, 0.83]). By hand, the t interval of the first
    # is 0.78 -+ 2.262 x 0.02 = [0.7348, 0.8252]; no sound interval reaches below the smallest
    # value of the games.
    column = np.array([values]).T
    weights = resample_weights(len(values), 2000, np.random.default_rng(5))
    ((low, high),) = mean_intervals(column, weights, 0.95, [(0.0, 1e9)])
    assert low is not None and high is not None
    assert smallest <= low < np.mean(values) < high
    if values[0] == 0.8:
        assert low == pytest.approx(0.7348, abs=1e-3) and high == pytest.approx(0.8252, abs=1e-3)
