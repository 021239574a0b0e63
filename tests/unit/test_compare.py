"""Comparisons of conditions: Holm's adjustment and the exact permutation p-value by hand, the
interval of a difference (bootstrap and MOVER hull) by hand, constant conditions, the false-positive rate of the
permutation test under the null, and `pdbench compare` end to end."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from tests.support.cli import run_in_process
from tests.support.configs import experiment, policy, write_config

from pdbench.core.compare import contrast, holm, mover_difference, permutation_p_value
from pdbench.runners.config.loader import load_config
from pdbench.runners.science.experiment import RunOptions, run_experiment


def test_holm_by_hand() -> None:
    # Sorted p: 0.01 (x3 = 0.03), 0.02 (x2 = 0.04), 0.04 (x1 = 0.04); then back in order.
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    # Sorted 0.02 (x3 = 0.06), 0.03 (x2 = 0.06), 0.5 (x1 = 0.5).
    assert holm([0.5, 0.03, 0.02]) == pytest.approx([0.5, 0.06, 0.06])
    # Monotone step-down: 0.01 x3 = 0.03, 0.012 x2 = 0.024 -> raised to 0.03.
    assert holm([0.012, 0.01, 0.3]) == pytest.approx([0.03, 0.03, 0.3])
    assert holm([None, 0.2]) == [None, 0.2]
    assert holm([0.6, 0.9]) == pytest.approx([1.0, 1.0])


def test_exact_permutation_p_value_by_hand() -> None:
    # Baseline {0, 1}, condition {2, 3}: observed |2.5 - 0.5| = 2. Of the C(4,2) = 6 ways to
    # pick the baseline pair, {0,1} and {2,3} give |difference| 2, the other four give 0 or 1.
    p, how = permutation_p_value(
        np.array([0.0, 1.0]), np.array([2.0, 3.0]), np.random.default_rng(0)
    )
    assert how == "exact" and p == pytest.approx(2 / 6)
    # Baseline {0, 0, 1}, condition {1, 1}: observed |1 - 1/3| = 2/3. Baselines of 3 out of
    # {0, 0, 1, 1, 1} (10 ways): {0,0,1} (3 ways) gives 2/3; {0,1,1} (6 ways) gives
    # |1/2 - 2/3| = 1/6; {1,1,1} (1 way) gives |0 - 1| = 1 -> p = 4/10.
    p, _ = permutation_p_value(
        np.array([0.0, 0.0, 1.0]), np.array([1.0, 1.0]), np.random.default_rng(0)
    )
    assert p == pytest.approx(0.4)


def test_the_permutation_test_rejects_about_5_percent_under_the_null() -> None:
    rng = np.random.default_rng(2024)
    rejections = 0
    trials = 300
    for _ in range(trials):
        a, b = rng.normal(size=12), rng.normal(size=12)  # C(24, 12) > limit: Monte Carlo
        p, how = permutation_p_value(a, b, rng, permutations=499)
        rejections += p <= 0.05
    assert how.startswith("monte carlo")
    assert 0.02 <= rejections / trials <= 0.09


def literal_monte_carlo(
    a: np.ndarray, b: np.ndarray, rng: np.random.Generator, permutations: int
) -> float:
    """The Monte Carlo p-value as a loop of one `rng.permutation` per draw."""
    pooled, n = np.concatenate([a, b]), a.size
    observed = abs(b.mean() - a.mean())
    hits = 0
    for _ in range(permutations):
        shuffled = rng.permutation(pooled)
        hits += abs(shuffled[n:].mean() - shuffled[:n].mean()) >= observed - 1e-12 * max(
            1.0, observed
        )
    return (hits + 1) / (permutations + 1)


@pytest.mark.parametrize("block", [1 << 20, 50])
def test_monte_carlo_p_value_equals_one_permutation_a_draw(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The permutations are drawn in blocks of rows; the p-value and the generator's state after
    # it are those of a loop of rng.permutation calls (blocks of a few rows as well).
    monkeypatch.setattr("pdbench.core.compare.PERMUTATION_BLOCK", block)
    data = np.random.default_rng(77)
    for trial in range(12):
        a = data.integers(0, 4, int(data.integers(9, 30))) / 3.0  # ties: equal differences
        b = data.normal(size=int(data.integers(9, 30)))
        draws = int(data.integers(1, 300))
        got_rng, want_rng = np.random.default_rng(trial), np.random.default_rng(trial)
        p, how = permutation_p_value(a, b, got_rng, permutations=draws)
        assert how == f"monte carlo ({draws})"
        assert p == literal_monte_carlo(a, b, want_rng, draws), trial
        assert got_rng.bit_generator.state == want_rng.bit_generator.state


def test_the_difference_and_its_interval() -> None:
    rng = np.random.default_rng(1)
    result = contrast([0.1, 0.2, 0.3, None], [0.5, 0.6, 0.7], rng)
    assert result.difference == pytest.approx(0.4)
    assert result.n_baseline == 3 and result.n_condition == 3
    assert result.ci_low is not None and result.ci_high is not None
    # Resampled means lie within [0.1, 0.3] and [0.5, 0.7]: the bootstrap's difference within
    # [0.2, 0.6]; MOVER from the two Student-t intervals (sd 0.1, 3 games, t(2) = 4.302653) is
    # wider, 0.4 -/+ sqrt(2) * 4.302653 * 0.1 / sqrt(3), and the hull is that.
    half = math.sqrt(2) * 4.302652729911275 * 0.1 / math.sqrt(3)
    assert result.ci_low == pytest.approx(0.4 - half)
    assert result.ci_high == pytest.approx(0.4 + half)


def test_compare_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = experiment(
        [
            ("allc", policy("ALLC"), policy("TFT")),
            ("random", policy("RANDOM"), policy("TFT")),
            ("alld", policy("ALLD"), policy("TFT")),
        ],
        replicates=5,
    )
    data["run"]["output_dir"] = str(tmp_path / "run")
    run_experiment(load_config(write_config(data, tmp_path)), RunOptions())
    code, out, err = run_in_process(["compare", str(tmp_path / "run")], capsys)
    assert code == 0, err
    assert "each condition minus 'allc'" in out
    rows = pq.read_table(tmp_path / "run" / "comparisons.parquet").to_pylist()
    assert [r["condition"] for r in rows] == ["random", "alld"]
    random, alld = rows
    # ALLC cooperates always, ALLD never, both against TFT over a fixed horizon with no noise:
    # two exact conditions, so the difference is exact (its interval itself, no p-value)
    assert (alld["difference"], alld["ci_low"], alld["ci_high"]) == (-1.0, -1.0, -1.0)
    assert alld["exact"] is True and alld["p_value"] is None and alld["p_holm"] is None
    assert random["exact"] is False and random["p_holm"] >= random["p_value"] > 0
    # the same games, not known to be exact: 5 vs 5 games, all values apart, so the exact
    # permutation p is 2 / C(10, 5) = 2 / 252
    sampled = contrast([1.0] * 5, [0.0] * 5, np.random.default_rng(1))
    assert sampled.p_value == pytest.approx(2 / 252)
    code, out, err = run_in_process(
        ["compare", str(tmp_path / "run"), "--baseline", "nope"], capsys
    )
    assert code == 2 and "unknown baseline condition 'nope'" in err and "allc" in err
    code, out, err = run_in_process(["compare", str(tmp_path / "run"), "--metric", "x"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_constant_conditions_get_an_interval_that_can_cover() -> None:
    """Ten games of 1 (a liar's deception) against ten of 0 (an honest agent's), on [0, 1]:
    the bootstrap alone gives [-1, -1]. Each condition's own interval is the Wilson interval of
    10/10 or 0/10: [1 / (1 + z^2/10), 1] and [0, 1 - 1 / (1 + z^2/10)], so MOVER gives
    [-1, -1 + sqrt(2) * (1 - 1 / (1 + z^2/10))] (z = 1.959964)."""
    z = 1.959963984540054
    w = 1.0 - 1.0 / (1.0 + z * z / 10)
    got = contrast([1.0] * 10, [0.0] * 10, np.random.default_rng(1), bounds=((0, 1), (0, 1)))
    assert got.difference == -1.0
    assert got.ci_low == pytest.approx(-1.0)
    assert got.ci_high == pytest.approx(-1.0 + math.sqrt(2) * w)
    # no bounds known: a constant condition has no interval of its own, only the bootstrap's
    unbounded = contrast([1.0] * 10, [0.0] * 10, np.random.default_rng(1))
    assert (unbounded.ci_low, unbounded.ci_high) == (-1.0, -1.0)


def test_mover_by_hand_with_student_t_intervals() -> None:
    """Two varying conditions: MOVER from their Student-t intervals, checked against the
    formula written out here; the reported interval is at least that wide."""
    base = np.array([0.2, 0.4, 0.3, 0.5, 0.1])
    cond = np.array([0.6, 0.9, 0.7, 0.8])
    t4, t3 = 2.7764451051977987, 3.182446305284263  # Student-t 97.5% quantiles, 4 and 3 df

    def half(x: np.ndarray, t: float) -> float:
        return t * float(x.std(ddof=1)) / math.sqrt(x.size)

    d = cond.mean() - base.mean()
    expected = (
        d - math.hypot(half(cond, t3), half(base, t4)),
        d + math.hypot(half(cond, t3), half(base, t4)),
    )
    assert mover_difference(base, cond) == pytest.approx(expected)
    got = contrast(list(base), list(cond), np.random.default_rng(3))
    assert got.ci_low <= expected[0] + 1e-12 and got.ci_high >= expected[1] - 1e-12
