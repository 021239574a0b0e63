"""Comparing conditions with the game as the unit (pure: generators are passed in).

For a metric with one value per game, each condition is compared with a baseline:
- difference = mean(condition) - mean(baseline), over the games where the metric is defined;
- a 95% interval: the hull of the percentile bootstrap (games resampled within each condition
  independently) and Newcombe's MOVER interval built from each condition's own interval of its
  mean (Student-t; when a condition's games all agree, the Wilson interval of that value as a
  share of the metric's feasible range, as for aggregates). The bootstrap alone gives zero width
  when both conditions' games are constant (an ALLD's cooperation, a liar's deception), and too
  little width when one is;
- a two-sided permutation p-value for "the labels do not matter": the games of both conditions
  pooled and relabelled, |difference| at least as large as observed; exact (every relabelling)
  when there are at most EXACT_LIMIT of them, else Monte Carlo with `permutations` draws and the
  +1 correction (p = (hits + 1) / (draws + 1)), so p is never 0;
- Holm's step-down adjustment of the p-values over all contrasts of the call.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pdbench.core.stats import Bounds, constant_interval, t_interval

EXACT_LIMIT = 20_000
DEFAULT_PERMUTATIONS = 9_999
DEFAULT_RESAMPLES = 2_000
PERMUTATION_BLOCK = 1 << 20  # pooled values shuffled at once (8 MB)


@dataclass(frozen=True, slots=True)
class Contrast:
    """One condition against the baseline."""

    n_baseline: int
    n_condition: int
    baseline_mean: float | None
    condition_mean: float | None
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    method: str


def _clean(values: Sequence[float | None]) -> np.ndarray:
    arr = np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)
    return arr[np.isfinite(arr)]  # NaN and infinities are missing, never a result


def permutation_p_value(
    baseline: np.ndarray,
    condition: np.ndarray,
    rng: np.random.Generator,
    permutations: int = DEFAULT_PERMUTATIONS,
) -> tuple[float, str]:
    """Two-sided permutation p-value of the difference of means, and how it was computed."""
    pooled = np.concatenate([baseline, condition])
    n, m = baseline.size, pooled.size
    observed = abs(condition.mean() - baseline.mean())
    tolerance = 1e-12 * max(1.0, observed)
    if math.comb(m, n) <= EXACT_LIMIT:
        total = pooled.sum()
        hits = count = 0
        for chosen in itertools.combinations(range(m), n):
            base_sum = pooled[list(chosen)].sum()
            diff = abs((total - base_sum) / (m - n) - base_sum / n)
            hits += diff >= observed - tolerance
            count += 1
        return hits / count, "exact"
    hits = 0
    # `rng.permuted` shuffles each row as `rng.permutation` shuffles an array, drawing in row
    # order: the rows are the permutations a loop of `rng.permutation(pooled)` gives, in that
    # order; a block of rows at a time, so memory stays bounded.
    block = max(1, PERMUTATION_BLOCK // m)
    for start in range(0, permutations, block):
        rows = min(block, permutations - start)
        shuffled = rng.permuted(np.broadcast_to(pooled, (rows, m)), axis=1)
        diff = np.abs(shuffled[:, n:].mean(axis=1) - shuffled[:, :n].mean(axis=1))
        hits += int(np.count_nonzero(diff >= observed - tolerance))
    return (hits + 1) / (permutations + 1), f"monte carlo ({permutations})"


def bootstrap_difference(
    baseline: np.ndarray,
    condition: np.ndarray,
    rng: np.random.Generator,
    resamples: int = DEFAULT_RESAMPLES,
) -> tuple[float | None, float | None]:
    """95% percentile interval of mean(condition) - mean(baseline), games resampled within
    each condition; None, None when either has no game or a value is NaN or infinite (nothing
    drawn from the generator then)."""
    if not (_finite(baseline) and _finite(condition)):
        return None, None
    b = rng.integers(0, baseline.size, size=(resamples, baseline.size))
    c = rng.integers(0, condition.size, size=(resamples, condition.size))
    diffs = condition[c].mean(axis=1) - baseline[b].mean(axis=1)
    low, high = np.percentile(diffs, [2.5, 97.5])
    return float(low), float(high)


def _finite(values: np.ndarray) -> bool:
    """Whether there is a value and every value is a finite number."""
    return bool(values.size) and bool(np.isfinite(values).all())


def own_interval(values: np.ndarray, bounds: Bounds | None) -> tuple[float | None, float | None]:
    """A condition's interval of its mean: Student-t, or the constant interval when every game
    gave the same value (None, None when that has no bounded range)."""
    if values.size >= 2 and np.all(values == values[0]):
        return constant_interval(float(values[0]), int(values.size), bounds)
    return t_interval(values, bounds)


def mover_difference(
    baseline: np.ndarray,
    condition: np.ndarray,
    bounds: tuple[Bounds | None, Bounds | None] = (None, None),
) -> tuple[float | None, float | None]:
    """Newcombe's (1998) MOVER interval of mean(condition) - mean(baseline) from each
    condition's own interval (`own_interval`); None when either has none, or a value is NaN or
    infinite."""
    if not (_finite(baseline) and _finite(condition)):
        return None, None
    l0, u0 = own_interval(baseline, bounds[0])
    l1, u1 = own_interval(condition, bounds[1])
    if l0 is None or u0 is None or l1 is None or u1 is None:
        return None, None
    m0, m1 = float(baseline.mean()), float(condition.mean())
    d = m1 - m0
    low = d - math.sqrt((m1 - l1) ** 2 + (u0 - m0) ** 2)
    high = d + math.sqrt((u1 - m1) ** 2 + (m0 - l0) ** 2)
    return low, high


def contrast(
    baseline_values: Sequence[float | None],
    condition_values: Sequence[float | None],
    rng: np.random.Generator,
    resamples: int = DEFAULT_RESAMPLES,
    permutations: int = DEFAULT_PERMUTATIONS,
    bounds: tuple[Bounds | None, Bounds | None] = (None, None),
) -> Contrast:
    """One condition against the baseline (None values, undefined in a game, left out);
    `bounds`: the metric's feasible range in the baseline and in the condition."""
    base = _clean(baseline_values)
    cond = _clean(condition_values)
    if base.size == 0 or cond.size == 0:
        return Contrast(base.size, cond.size, None, None, None, None, None, None, "no values")
    diff = float(cond.mean() - base.mean())
    low = high = p = None
    method = "too few games"
    if base.size >= 2 and cond.size >= 2:
        low, high = bootstrap_difference(base, cond, rng, resamples)
        m_low, m_high = mover_difference(base, cond, bounds)
        if None not in (low, high, m_low, m_high):
            low, high = min(low, m_low), max(high, m_high)
        p, how = permutation_p_value(base, cond, rng, permutations)
        method = f"hull of bootstrap over games ({resamples}) and MOVER; permutation p {how}"
    return Contrast(
        base.size, cond.size, float(base.mean()), float(cond.mean()), diff, low, high, p, method
    )


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (None stays None and is not counted)."""
    indexed = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    k = len(indexed)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (k - rank) * p))
        adjusted[i] = running
    return adjusted
