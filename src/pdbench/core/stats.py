"""Confidence intervals with the game as the unit (pure: the random generator is passed in).

Every condition-level metric is a mean over games (a game's value is computed from its own
moves), so its uncertainty comes from the games, never from pooled moves, which are dependent
within a game. Method:

- 5 or more games with a value: an expanded percentile bootstrap over games (Hesterberg 2015:
  the plain percentile interval is too narrow for small samples, covering about 91% at 10
  games; the expanded one reads the bootstrap distribution at the tail probability
  Phi(-sqrt(n / (n - 1)) * t(0.975, n - 1)) instead of 2.5%, which tends to 2.5% as n grows).
  One matrix of resampling
  weights (how often each game is drawn, `resamples` draws of n games with replacement) serves
  every metric of a condition, so the intervals of one condition are computed together; the
  generator is seeded from the run seed and the condition's name, so adding a condition changes
  no other interval. A metric that is undefined in some games (e.g. retaliation without a
  provocation) is the mean over the games where it is defined, in each resample too.
- 2 to 4 games: the bootstrap is too coarse (at most 35 distinct resamples for 4 games), so a
  Student-t interval on the game values, clipped to the metric's range ([0, 1] for rates).
- 1 game, or none: no interval (null).

Ratios pooled over games (the memory-one profile: cooperations after a state / visits of it)
are resampled the same way, recomputing the pooled ratio in each resample (a cluster bootstrap).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

LEVEL = 0.95
DEFAULT_RESAMPLES = 2000
SMALL_SAMPLE_GAMES = 5  # fewer games with a value: Student-t instead of the bootstrap
METHOD = "expanded percentile bootstrap over games (Hesterberg 2015)"
SMALL_SAMPLE_METHOD = "Student-t on the game values, clipped to the metric's range"

# Two-sided 97.5% quantiles of Student's t for 1 to 3 degrees of freedom (2 to 4 games).
_T_975 = {1: 12.706204736174698, 2: 4.302652729749464, 3: 3.182446305284263}


@dataclass(frozen=True, slots=True)
class IntervalSettings:
    """How the intervals of a run are computed (recorded in the manifest)."""

    resamples: int = DEFAULT_RESAMPLES
    level: float = LEVEL
    seed: int = 0

    def describe(self) -> dict[str, object]:
        """The manifest entry."""
        return {
            "method": METHOD,
            "unit": "game (replicate)",
            "level": self.level,
            "resamples": self.resamples,
            "seed": self.seed,
            "seed_per_condition": "derive_seed(seed, 'intervals', condition name)",
            "small_sample": f"fewer than {SMALL_SAMPLE_GAMES} games: {SMALL_SAMPLE_METHOD}; "
            "1 game: null",
        }


def resample_weights(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(resamples, n) matrix: how often each of n games is drawn in each bootstrap resample."""
    return rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile: exact for the 97.5% point at 1-3 degrees of freedom, else the
    Cornish-Fisher expansion around the normal quantile (error below 1e-3 from 4 on)."""
    if df in _T_975 and abs(p - 0.975) < 1e-12:
        return _T_975[df]
    z = NormalDist().inv_cdf(p)
    nu = float(df)
    return (
        z
        + (z**3 + z) / (4 * nu)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * nu**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * nu**3)
    )


def expanded_tail(n: int, level: float = LEVEL) -> float:
    """The tail probability at which the expanded percentile interval reads the bootstrap
    distribution of a mean of n games (Hesterberg 2015)."""
    alpha = (1.0 - level) / 2.0
    if n < 2:
        return alpha
    return NormalDist().cdf(-math.sqrt(n / (n - 1)) * t_quantile(1.0 - alpha, n - 1))


def _percentiles(stats: np.ndarray, tail: float) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(all="ignore"):
        low, high = np.nanpercentile(stats, [100.0 * tail, 100.0 * (1.0 - tail)], axis=0)
    return low, high


def t_interval(
    values: Sequence[float] | np.ndarray, bounds: tuple[float, float] | None = None
) -> tuple[float | None, float | None]:
    """Student-t 95% interval of the mean of 2-4 values (None for fewer), clipped to bounds."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[~np.isnan(arr)]
    k = arr.size
    if k < 2:
        return None, None
    mean = float(arr.mean())
    quantile = _T_975.get(k - 1, 1.959963984540054)
    half = quantile * float(arr.std(ddof=1)) / math.sqrt(k)
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(bounds[0], low), min(bounds[1], high)
    return low, high


def mean_intervals(
    values: np.ndarray,
    weights: np.ndarray | None,
    level: float = LEVEL,
    bounds: Sequence[tuple[float, float] | None] | None = None,
) -> list[tuple[float | None, float | None]]:
    """Per column of `values` (games x metrics, NaN = undefined in that game): the interval of
    the mean over the games where it is defined. Bootstrap with `weights` when at least
    SMALL_SAMPLE_GAMES games have a value, else Student-t."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    defined = ~np.isnan(values)
    counts = defined.sum(axis=0)
    out: list[tuple[float | None, float | None]] = [(None, None)] * values.shape[1]
    big = np.flatnonzero(counts >= SMALL_SAMPLE_GAMES)
    if big.size and weights is not None:
        filled = np.where(defined[:, big], values[:, big], 0.0)
        with np.errstate(all="ignore"):
            stats = (weights @ filled) / (weights @ defined[:, big].astype(np.float64))
        for k in np.unique(counts[big]):  # the tail depends on the number of games
            same = np.flatnonzero(counts[big] == k)  # positions within `big`
            low, high = _percentiles(stats[:, same], expanded_tail(int(k), level))
            for position, lo, hi in zip(same, low, high, strict=True):
                if not (math.isnan(lo) or math.isnan(hi)):
                    out[int(big[position])] = (float(lo), float(hi))
    bootstrapped = set(big.tolist()) if weights is not None else set()
    for col in range(values.shape[1]):
        if col not in bootstrapped:
            limit = bounds[col] if bounds is not None else None
            out[col] = t_interval(values[:, col], limit)
    return out


def ratio_interval(
    numerators: np.ndarray,
    denominators: np.ndarray,
    weights: np.ndarray | None,
    level: float = LEVEL,
) -> tuple[float | None, float | None]:
    """Interval of sum(numerators) / sum(denominators) over games (a pooled ratio in [0, 1]):
    cluster bootstrap with `weights`, or Student-t on the per-game ratios for fewer than
    SMALL_SAMPLE_GAMES games that have a denominator."""
    num = np.asarray(numerators, dtype=np.float64)
    den = np.asarray(denominators, dtype=np.float64)
    has = den > 0
    if int(has.sum()) < SMALL_SAMPLE_GAMES or weights is None:
        return t_interval(num[has] / den[has], (0.0, 1.0))
    with np.errstate(all="ignore"):
        stats = (weights @ num) / (weights @ den)
    low, high = _percentiles(stats[:, None], expanded_tail(int(has.sum()), level))
    if math.isnan(low[0]) or math.isnan(high[0]):
        return None, None
    return float(low[0]), float(high[0])
