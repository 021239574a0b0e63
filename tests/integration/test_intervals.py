"""Confidence intervals with the game as the unit.

- Coverage: RANDOM(p) against ALLC over 240 independent conditions (8 values of p, 10 games of
  20 rounds each), played and aggregated by a real `pdbench run`: the 95% interval of A's
  cooperation rate covers the true p in 90-99% of the conditions.
- The small-sample rule (2-4 games): the Student-t interval, computed here by hand; 5 or more
  games: the hull of Student-t, bootstrap-t and Hall's interval, each computed here directly.
- Seeds: an interval depends on the run seed and its condition's name only (adding a condition
  changes no other condition's interval); `pdbench aggregate` recomputes the same intervals.
- The manifest records each metric's kind and each kind's method.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from tests.support.configs import experiment, policy, write_config

from pdbench.core.metrics import GameOutcome, aggregate_rows
from pdbench.core.stats import (
    IntervalSettings,
    expanded_tail,
    mean_intervals,
    resample_weights,
    t_interval,
)
from pdbench.runners.config.loader import load_config
from pdbench.runners.science.experiment import RunOptions, run_experiment
from pdbench.storage.aggregate import aggregate_run_dir
from pdbench.storage.intervals import with_intervals

P_VALUES = (0.05, 0.2, 0.35, 0.5, 0.6, 0.75, 0.9, 0.97)
CONDITIONS_PER_P = 30


def condition_rows(run_dir: Path) -> list[dict]:
    rows = pq.read_table(run_dir / "aggregates.parquet").to_pylist()
    return [r for r in rows if r["scope"] == "condition"]


@pytest.mark.slow
def test_intervals_cover_the_true_cooperation_probability(tmp_path: Path) -> None:
    conditions = [
        (f"p{p}_{i}", policy("RANDOM", params={"coop_prob": p}), policy("ALLC"))
        for p in P_VALUES
        for i in range(CONDITIONS_PER_P)
    ]
    data = experiment(conditions, replicates=10, horizon={"type": "fixed", "n_rounds": 20})
    data["run"]["output_dir"] = str(tmp_path / "run")
    loaded = load_config(write_config(data, tmp_path))
    run_experiment(loaded, RunOptions())
    rows = condition_rows(tmp_path / "run")
    assert len(rows) == len(P_VALUES) * CONDITIONS_PER_P
    covered = 0
    for row in rows:
        p = float(row["condition"][1:].split("_")[0])
        low, high = row["agent_a_cooperation_rate_ci_low"], row["agent_a_cooperation_rate_ci_high"]
        assert 0.0 <= low <= row["agent_a_cooperation_rate"] <= high <= 1.0
        covered += low <= p <= high
    coverage = covered / len(rows)
    print(f"coverage of the 95% interval over {len(rows)} conditions: {coverage:.3f}")
    assert 0.90 <= coverage <= 0.99


def test_pooled_moves_would_not_be_honest_but_games_are() -> None:
    """With strongly dependent moves (each game all C or all D), the game-level interval is
    wide, as it must be: 10 games, 5 all-C, 5 all-D, 100 rounds each. A pooled-move binomial
    interval would be about 0.5 +/- 0.03; the bootstrap over games is about 0.5 +/- 0.3."""
    outcomes = [
        GameOutcome(
            "c",
            i,
            "A",
            "B",
            np.full(100, i < 5),
            np.ones(100, dtype=bool),
            np.zeros(100),
            np.zeros(100),
        )
        for i in range(10)
    ]
    row = with_intervals(aggregate_rows("r", outcomes, ["c"]), IntervalSettings(seed=1))[-1]
    assert row["agent_a_cooperation_rate"] == pytest.approx(0.5)
    width = row["agent_a_cooperation_rate_ci_high"] - row["agent_a_cooperation_rate_ci_low"]
    assert width > 0.4


def test_the_small_sample_rule_is_student_t_clipped_to_the_range() -> None:
    # 3 values 0.2, 0.4, 0.9: mean 0.5, sd = sqrt(((-.3)^2 + (-.1)^2 + .4^2) / 2) = sqrt(0.13),
    # t(0.975, 2) = 4.3027: half width 4.3027 * sqrt(0.13) / sqrt(3) = 0.8957.
    low, high = t_interval([0.2, 0.4, 0.9], (0.0, 1.0))
    assert low == 0.0 and high == 1.0  # clipped
    low, high = t_interval([0.2, 0.4, 0.9])
    half = 4.302652729749464 * math.sqrt(0.13) / math.sqrt(3)
    assert low == pytest.approx(0.5 - half) and high == pytest.approx(0.5 + half)
    assert t_interval([0.7]) == (None, None)
    assert t_interval([0.3, 0.3]) == (0.3, 0.3)


def test_a_mean_interval_is_the_hull_of_t_bootstrap_t_and_hall_computed_directly() -> None:
    """For 10 games with a value, the interval is the hull of intervals each computed here on
    its own: Student-t (scipy's quantile), the bootstrap-t from the same multinomial draws
    turned back into lists of game indexes, and, for a sum over rounds, Hall's (1992)
    transformation from its formula."""
    from scipy import stats

    rng = np.random.default_rng(3)
    values = rng.exponential(1.0, 12)  # skewed, as payoff totals under a geometric horizon
    values[[2, 7]] = np.nan  # undefined in two games
    weights = resample_weights(12, 500, np.random.default_rng(9))
    ((low, high),) = mean_intervals(values, weights, sums=[True])  # a sum over rounds
    ((rate_low, rate_high),) = mean_intervals(values, weights)  # any other mean: no Hall
    kept = values[~np.isnan(values)]
    n, mean, sd = kept.size, kept.mean(), kept.std(ddof=1)
    se = sd / math.sqrt(n)
    q = stats.t.ppf(0.975, n - 1)
    student = (mean - q * se, mean + q * se)
    t_stats = []
    for draw in weights.astype(int):
        picked = values[np.repeat(np.arange(12), draw)]
        picked = picked[~np.isnan(picked)]
        t_stats.append((picked.mean() - mean) / (picked.std(ddof=1) / math.sqrt(picked.size)))
    t_low, t_high = np.quantile(t_stats, [0.025, 0.975])
    boot_t = (mean - t_high * se, mean - t_low * se)
    gamma = np.mean((kept - mean) ** 3) / np.mean((kept - mean) ** 2) ** 1.5
    a, c = gamma / (3 * math.sqrt(n)), gamma / (6 * math.sqrt(n))

    def g_inverse(y: float) -> float:  # g(T) = T + a T^2 + a^2 T^3 / 3 + c, inverted
        return (np.cbrt(1 + 3 * a * (y - c)) - 1) / a

    hall = (mean - se * g_inverse(q), mean - se * g_inverse(-q))
    assert hall[1] - mean > mean - hall[0]  # right skew: the interval leans right
    assert low == pytest.approx(min(student[0], boot_t[0], hall[0]), abs=2e-3)
    assert high == pytest.approx(max(student[1], boot_t[1], hall[1]), abs=2e-3)
    assert rate_low == pytest.approx(min(student[0], boot_t[0]), abs=2e-3)
    assert rate_high == pytest.approx(max(student[1], boot_t[1]), abs=2e-3)
    assert expanded_tail(10) == pytest.approx(0.008550, abs=2e-5)  # still used by tournaments


def _outcomes(condition: str, seed: int, n: int = 8) -> list[GameOutcome]:
    rng = np.random.default_rng(seed)
    return [
        GameOutcome(
            condition,
            i,
            "A",
            "B",
            rng.random(30) < 0.6,
            rng.random(30) < 0.4,
            np.zeros(30),
            np.zeros(30),
        )
        for i in range(n)
    ]


def test_adding_a_condition_changes_no_other_interval() -> None:
    settings = IntervalSettings(seed=77)
    alone = with_intervals(aggregate_rows("r", _outcomes("x", 1), ["x"]), settings)
    both = with_intervals(
        aggregate_rows("r", _outcomes("w", 2) + _outcomes("x", 1), ["w", "x"]), settings
    )
    x_alone = alone[-1]
    x_both = next(r for r in both if r["scope"] == "condition" and r["condition"] == "x")
    for column in ("agent_a_cooperation_rate", "agent_b_fontana_nice", "agent_a_p_coop_after_cd"):
        assert x_both[f"{column}_ci_low"] == x_alone[f"{column}_ci_low"]
        assert x_both[f"{column}_ci_high"] == x_alone[f"{column}_ci_high"]
    other = with_intervals(aggregate_rows("r", _outcomes("x", 1), ["x"]), IntervalSettings(seed=78))
    assert (
        other[-1]["agent_a_cooperation_rate_ci_low"] != x_alone["agent_a_cooperation_rate_ci_low"]
    )


def test_aggregate_recomputes_the_same_intervals_and_the_manifest_records_them(
    tmp_path: Path,
) -> None:
    data = experiment(
        [
            ("rand", policy("RANDOM"), policy("TFT")),
            ("gtft", policy("GTFT"), policy("RANDOM")),
        ],
        replicates=6,
    )
    data["run"]["output_dir"] = str(tmp_path / "run")
    run_experiment(load_config(write_config(data, tmp_path)), RunOptions())
    first = condition_rows(tmp_path / "run")
    manifest = json.loads((tmp_path / "run" / "run_manifest.json").read_text())
    kinds = manifest["intervals"]["metrics"]
    assert kinds["agent_a_first_move_cooperation"] == "share"
    assert kinds["collapsed_fraction"] == "share"
    assert kinds["agent_a_p_coop_after_cd"] == "pooled_ratio"
    assert kinds["agent_a_total_payoff"] == "mean"
    assert set(manifest["intervals"]["methods"]) == {"share", "pooled_ratio", "mean"}
    assert manifest["intervals"]["resamples"] == 2000
    assert manifest["intervals"]["seed"] == data["run"]["seed"]
    aggregate_run_dir(tmp_path / "run")
    again = condition_rows(tmp_path / "run")
    assert again == first
    row = first[0]
    assert row["collapsed_fraction_ci_low"] is not None
    bands = json.loads(row["cooperation_rate_over_time_ci_low"])
    assert len(bands) == 20 and all(0.0 <= b <= 1.0 for b in bands)
