"""Confidence intervals with the game as the unit (pure: the random generator is passed in).

Every condition-level metric is computed from per-game values, so its uncertainty comes from the
games, never from pooled moves, which are dependent within a game. Each metric has a kind, and
each kind its method (the manifest records the method of every metric; the report names them):

- `mean`, a mean of per-game values (cooperation rates, payoffs, rounds, ...):
  - 5 or more games with a value: the hull (union) of Student-t and the bootstrap-t interval
    (the studentized bootstrap over games: the 2.5% and 97.5% points of (resampled mean - mean)
    / resampled standard error); for sums over a game's rounds (payoff totals, the payoff gap,
    rounds, counts), whose skew comes from the horizon, also Hall's (1992) skewness-corrected t.
    Chosen by simulation (`benchmarks/coverage.py`): with skewed per-game values at 5-8 games
    (totals and rounds under a geometric horizon with many 1-2 round games) Student-t alone
    covers 87-90%, the expanded percentile bootstrap (Hesterberg 2015) that pdbench used before
    84-91%, the bootstrap-t 86-93%, Hall's 90-93% and the hull of the three 92-94%; on rates
    and other values bounded per round Hall's interval over-covers (98-99.5% with 1-2 round
    games), and the hull of Student-t and the bootstrap-t keeps 94-97%. One matrix of
    resampling weights (how often each game is drawn, `resamples` draws of n games with
    replacement) serves every metric of a condition; the generator is seeded from the run seed
    and the condition's name, so adding a condition changes no other interval.
  - 2 to 4 games: Student-t on the game values (the bootstrap has at most 35 distinct resamples).
  - every game with the same value (2 or more games): the games cannot show how much the value
    varies, so the interval is the one a yes/no outcome with that mean would get (the most
    variable a bounded value can be): the Wilson interval of the value as a share of the
    metric's feasible range (without the continuity correction, which for a fractional count
    can leave the value itself out). None when the range is unbounded (token counts, for instance),
    the value itself when the range is a single point (the rounds of a fixed horizon).
- `share`, the share of games with a yes/no outcome (first-move cooperation, collapsed, Fontana's
  `nice`): the Wilson score interval with continuity correction of k games out of n; never zero
  width from 2 or more games. Chosen by exact computation over true shares from 5% to 95%: at
  5-25 games the plain Wilson and the Jeffreys intervals dip to 87-90% coverage at some shares,
  the corrected Wilson stays at or above 95.7% (it over-covers: 97-99% on average).
- `pooled_ratio`, a ratio pooled over games (P(C | state) of the memory-one profile:
  cooperations after the state / visits of it): the Wilson interval at an effective number of
  observations n_eff = R(1 - R) / Var(R), with Var(R) the cluster (game) variance of the ratio
  estimator, n_eff kept between the number of games and the number of visits (the number of
  games, with the normal quantile, when R is 0 or 1 or every game has the same ratio: then no
  variance between games can be seen), and otherwise the Student-t quantile for 2 (games - 1)
  degrees of freedom instead of the normal one, since the variance comes from few games (with
  games - 1 degrees of freedom the interval over-covered, 99-100% at 5 games; with the normal
  quantile it covered 91.5% where visits per game vary a lot).
- 1 game, or none: no interval (null), whatever the kind.
- NaN in a game's values means undefined there (left out); an infinite value cannot be bounded:
  no interval for that metric (and a NaN or infinite count, or no trial, given to the Wilson
  intervals directly: none either, never an interval clamped into [0, 1]).

Every interval is then clipped to the metric's feasible range (core.metrics.feasible_range);
`clip` says whether it was.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from pdbench.core.bootstrap_t import _bootstrap_t

LEVEL = 0.95
DEFAULT_RESAMPLES = 2000
SMALL_SAMPLE_GAMES = 5  # fewer games with a value: Student-t instead of the bootstrap

KIND_MEAN = "mean"
KIND_SHARE = "share"
KIND_POOLED_RATIO = "pooled_ratio"
METHODS: dict[str, str] = {
    KIND_MEAN: (
        "mean of per-game values: 5+ games, hull of the Student-t and bootstrap-t (studentized "
        "bootstrap over games) intervals, with Hall's skewness-corrected t for sums over "
        "rounds (totals, rounds, counts); 2-4 games, Student-t; "
        "every game equal, the Wilson interval of the value as a share of the metric's range"
    ),
    KIND_SHARE: (
        "share of games (yes/no per game): Wilson score interval with continuity correction "
        "of k of n games"
    ),
    KIND_POOLED_RATIO: (
        "ratio pooled over games: Wilson interval at the effective sample size of the "
        "cluster (game) variance, between the number of games and of visits, t quantile"
    ),
}
METHOD = "per kind of metric (see methods); the game is the unit"
CLIPPING = "every interval is clipped to the metric's feasible range (clipped_intervals names them)"

Bounds = tuple[float, float]

# Two-sided 97.5% quantiles of Student's t for 1 to 3 degrees of freedom (2 to 4 games).
# Student-t 97.5% points for 1-10 degrees of freedom (exact to the digits shown); above 10 the
# Cornish-Fisher expansion of `t_quantile` is within 2e-4 of them (at 4 df it was 7e-3 low).
_T_975 = {
    1: 12.706204736174698,
    2: 4.302652729749464,
    3: 3.182446305284263,
    4: 2.7764451051977934,
    5: 2.5705818356363146,
    6: 2.4469118511449786,
    7: 2.364624251592784,
    8: 2.306004135204166,
    9: 2.262157162798205,
    10: 2.228138851986274,
}


@dataclass(frozen=True, slots=True)
class IntervalSettings:
    """How the intervals of a run are computed (recorded in the manifest)."""

    resamples: int = DEFAULT_RESAMPLES
    level: float = LEVEL
    seed: int = 0

    def describe(self, metric_kinds: dict[str, str] | None = None) -> dict[str, object]:
        """The manifest entry; `metric_kinds` (metric -> kind) names each metric's method."""
        entry: dict[str, object] = {
            "method": METHOD,
            "methods": dict(METHODS),
            "unit": "game (replicate)",
            "level": self.level,
            "resamples": self.resamples,
            "seed": self.seed,
            "seed_per_condition": "derive_seed(seed, 'intervals', condition name)",
            "small_sample": f"fewer than {SMALL_SAMPLE_GAMES} games: Student-t for means; "
            "1 game: null",
            "clipping": CLIPPING,
        }
        if metric_kinds is not None:
            entry["metrics"] = dict(metric_kinds)
        return entry


def resample_weights(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(resamples, n) matrix: how often each of n games is drawn in each bootstrap resample."""
    return rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile: exact for the 97.5% point at 1-10 degrees of freedom (`_T_975`),
    else the Cornish-Fisher expansion around the normal quantile (at the 97.5% point: error
    below 2e-4 from 11 degrees of freedom on)."""
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
    distribution of a mean of n values (Hesterberg 2015); used by the tournament and the
    strategy card."""
    alpha = (1.0 - level) / 2.0
    if n < 2:
        return alpha
    return NormalDist().cdf(-math.sqrt(n / (n - 1)) * t_quantile(1.0 - alpha, n - 1))


def _countable(successes: float, trials: float) -> bool:
    """Whether successes / trials can be bounded: both finite numbers and at least one trial
    (NaN, an infinity or no trial: no interval, never one clamped into [0, 1])."""
    return math.isfinite(successes) and math.isfinite(trials) and trials > 0


def wilson_interval(
    successes: float, trials: float, level: float = LEVEL, quantile: float | None = None
) -> tuple[float | None, float | None]:
    """Wilson score interval of successes / trials (trials may be an effective, non-integer
    number); `quantile` replaces the normal quantile of the level when given. None, None when
    a count is NaN or infinite or there is no trial."""
    if not _countable(successes, trials):
        return None, None
    z = NormalDist().inv_cdf(0.5 + level / 2.0) if quantile is None else quantile
    p = min(1.0, max(0.0, successes / trials))
    z2n = z * z / trials
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / trials + z2n / (4.0 * trials))
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson_cc_interval(
    successes: float, trials: float, level: float = LEVEL
) -> tuple[float | None, float | None]:
    """Wilson score interval with continuity correction (Newcombe 1998, method 4) of
    successes / trials: at 5-25 trials its coverage stays at or above 95.7% for every true share
    from 5% to 95% (computed exactly), where the plain Wilson interval dips to 89.6%. None,
    None when a count is NaN or infinite or there is no trial."""
    if not _countable(successes, trials):
        return None, None
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    n = trials
    p = min(1.0, max(0.0, successes / trials))
    denominator = 2.0 * (n + z * z)
    low = 0.0
    if p > 0.0:
        root = math.sqrt(max(0.0, z * z - 2.0 - 1.0 / n + 4.0 * p * (n * (1.0 - p) + 1.0)))
        low = max(0.0, (2.0 * n * p + z * z - 1.0 - z * root) / denominator)
    high = 1.0
    if p < 1.0:
        root = math.sqrt(max(0.0, z * z + 2.0 - 1.0 / n + 4.0 * p * (n * (1.0 - p) - 1.0)))
        high = min(1.0, (2.0 * n * p + z * z + 1.0 + z * root) / denominator)
    return low, high


def clip(
    low: float | None, high: float | None, bounds: Bounds | None
) -> tuple[float | None, float | None, bool]:
    """(low, high) clipped to bounds, and whether clipping changed either end."""
    if low is None or high is None or bounds is None:
        return low, high, False
    new_low, new_high = max(bounds[0], low), min(bounds[1], high)
    return new_low, new_high, (new_low != low or new_high != high)


def t_interval(
    values: Sequence[float] | np.ndarray, bounds: Bounds | None = None, level: float = LEVEL
) -> tuple[float | None, float | None]:
    """Student-t interval of the mean (None for fewer than 2 values, NaN being undefined and
    left out; None with an infinite value), clipped to bounds."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[~np.isnan(arr)]
    if np.isinf(arr).any():
        return None, None
    k = arr.size
    if k < 2:
        return None, None
    mean = float(arr.mean())
    half = t_quantile(0.5 + level / 2.0, k - 1) * float(arr.std(ddof=1)) / math.sqrt(k)
    low, high, _ = clip(mean - half, mean + half, bounds)
    return low, high


def constant_interval(
    value: float, n: int, bounds: Bounds | None, level: float = LEVEL
) -> tuple[float | None, float | None]:
    """The interval of a mean when all n >= 2 games gave `value`: the Wilson interval of the
    value as a share of the bounded range; the value on a one-point range; None unbounded, and
    None for a NaN or infinite value or no game."""
    if not (math.isfinite(value) and n > 0):
        return None, None
    if bounds is None or not (math.isfinite(bounds[0]) and math.isfinite(bounds[1])):
        return None, None
    low, high = bounds
    if high <= low:
        return value, value
    share_low, share_high = wilson_interval((value - low) / (high - low) * n, n, level)
    if share_low is None or share_high is None:
        return None, None
    return low + share_low * (high - low), low + share_high * (high - low)


def _hall(values: np.ndarray, defined: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Hall's (1992) skewness-removing transformation of the t statistic, per column:
    g(T) = T + a T^2 + a^2 T^3 / 3 + gamma / (6 sqrt(n)) with a = gamma / (3 sqrt(n)), gamma the
    sample skewness; the interval inverts g at the Student-t quantiles."""
    filled = np.where(defined, values, 0.0)
    mask = defined.astype(np.float64)
    k = mask.sum(axis=0)
    mean = filled.sum(axis=0) / k
    centred = (filled - mean) * mask
    m2 = (centred**2).sum(axis=0) / k
    m3 = (centred**3).sum(axis=0) / k
    sd = np.sqrt(m2 * k / (k - 1))
    with np.errstate(all="ignore"):
        gamma = np.where(m2 > 0, m3 / m2**1.5, 0.0)
        a = gamma / (3.0 * np.sqrt(k))
        c = gamma / (6.0 * np.sqrt(k))
        q = np.array([t_quantile(0.5 + level / 2.0, int(n) - 1) for n in k])
        small = np.abs(a) < 1e-9

        def inverse(y: np.ndarray) -> np.ndarray:
            return np.where(small, y - c, (np.cbrt(1.0 + 3.0 * a * (y - c)) - 1.0) / a)

        se = sd / np.sqrt(k)
        return mean - se * inverse(q), mean - se * inverse(-q)


def mean_intervals(
    values: np.ndarray,
    weights: np.ndarray | None,
    level: float = LEVEL,
    bounds: Sequence[Bounds | None] | None = None,
    sums: Sequence[bool] | None = None,
) -> list[tuple[float | None, float | None]]:
    """Per column of `values` (games x metrics, NaN = undefined in that game): the interval of
    the mean over the games where it is defined (kind `mean`, see the module docstring),
    clipped to the column's bounds; `sums` marks the columns that are sums over a game's rounds
    (they also get Hall's interval)."""
    found = clipped_mean_intervals(values, weights, level, bounds, sums)
    return [(low, high) for low, high, _ in found]


def clipped_mean_intervals(
    values: np.ndarray,
    weights: np.ndarray | None,
    level: float = LEVEL,
    bounds: Sequence[Bounds | None] | None = None,
    sums: Sequence[bool] | None = None,
) -> list[tuple[float | None, float | None, bool]]:
    """`mean_intervals`, each with whether clipping to the bounds changed it."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    defined = ~np.isnan(values)
    counts = defined.sum(axis=0)
    n_cols = values.shape[1]
    limits = list(bounds) if bounds is not None else [None] * n_cols
    low_values = np.where(defined, values, np.inf).min(axis=0, initial=np.inf)
    high_values = np.where(defined, values, -np.inf).max(axis=0, initial=-np.inf)
    # a column holding an infinity has no interval (its smallest or largest value is infinite)
    bounded = np.isfinite(low_values) & np.isfinite(high_values)
    constant = (counts >= 2) & (low_values == high_values)
    big = np.flatnonzero((counts >= SMALL_SAMPLE_GAMES) & ~constant & bounded)
    with np.errstate(all="ignore"):
        filled = np.where(defined, values, 0.0)
        mean = filled.sum(axis=0) / counts
        sd = np.sqrt(((filled - mean) ** 2 * defined).sum(axis=0) / (counts - 1))
        quantile = np.full(n_cols, np.nan)
        for k in np.unique(counts[counts >= 2]):
            quantile[counts == k] = t_quantile(0.5 + level / 2.0, int(k) - 1)
        half = quantile * sd / np.sqrt(counts)
    low, high = mean - half, mean + half
    if big.size and weights is not None:
        boot_low, boot_high = _bootstrap_t(values[:, big], defined[:, big], weights, level)
        found = ~(np.isnan(boot_low) | np.isnan(boot_high))
        low[big] = np.where(found, np.minimum(low[big], boot_low), low[big])
        high[big] = np.where(found, np.maximum(high[big], boot_high), high[big])
        if sums is not None:
            summed = np.array([bool(sums[c]) for c in big])
            hall_low, hall_high = _hall(values[:, big], defined[:, big], level)
            low[big] = np.where(summed, np.minimum(low[big], hall_low), low[big])
            high[big] = np.where(summed, np.maximum(high[big], hall_high), high[big])
    floor = np.array([-math.inf if b is None else b[0] for b in limits], dtype=np.float64)
    ceiling = np.array([math.inf if b is None else b[1] for b in limits], dtype=np.float64)
    clipped_low, clipped_high = np.maximum(low, floor), np.minimum(high, ceiling)
    was_clipped = (clipped_low != low) | (clipped_high != high)
    # As Python numbers at once (`tolist`: the same floats, ints and bools, without a NumPy
    # scalar per cell: the bands have a column per round).
    known = np.where(bounded, counts, 0).tolist()  # unbounded: as if no game had a value
    same, lowest = constant.tolist(), low_values.tolist()
    lows, highs, clipped = clipped_low.tolist(), clipped_high.tolist(), was_clipped.tolist()
    out: list[tuple[float | None, float | None, bool]] = []
    # constant columns repeat (the per-round series: a value, a number of games and a range
    # each): each interval computed once, keyed with the value's sign (0.0 == -0.0)
    constants: dict[tuple[float, bool, int, Bounds | None], tuple[float | None, ...]] = {}
    for col in range(n_cols):
        if known[col] < 2:
            out.append((None, None, False))
        elif same[col]:
            limit = limits[col]
            key = (
                lowest[col],
                math.copysign(1.0, lowest[col]) < 0,
                known[col],
                None if limit is None else (limit[0], limit[1]),
            )
            found = constants.get(key)
            if found is None:
                c_low, c_high = constant_interval(lowest[col], known[col], limits[col])
                found = constants[key] = (c_low, c_high, False)
            out.append(found)  # type: ignore[arg-type]
        else:
            out.append((lows[col], highs[col], clipped[col]))
    return out


def share_interval(
    values: Sequence[float] | np.ndarray, level: float = LEVEL
) -> tuple[float | None, float | None]:
    """Kind `share`: Wilson interval of the share of games whose value is 1 (values are 0 or
    1 per game, NaN where undefined); None for fewer than 2 games."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[~np.isnan(arr)]
    if arr.size < 2:
        return None, None
    return wilson_cc_interval(float(arr.sum()), float(arr.size), level)


def ratio_interval(
    numerators: np.ndarray, denominators: np.ndarray, level: float = LEVEL
) -> tuple[float | None, float | None]:
    """Kind `pooled_ratio`: interval of sum(numerators) / sum(denominators) over games (a
    ratio in [0, 1]) with the games as clusters; None for fewer than 2 games with visits, or a
    NaN or infinite count in a game with visits."""
    num = np.asarray(numerators, dtype=np.float64)
    den = np.asarray(denominators, dtype=np.float64)
    has = den > 0
    games = int(has.sum())
    if games < 2:
        return None, None
    num, den = num[has], den[has]
    if not (np.isfinite(num).all() and np.isfinite(den).all()):
        return None, None  # an infinite or NaN count: nothing to bound
    visits = float(den.sum())
    ratio = float(num.sum()) / visits
    variance = games / (games - 1) * float(((num - ratio * den) ** 2).sum()) / visits**2
    if 0.0 < ratio < 1.0 and variance > 0.0:
        effective = min(visits, max(float(games), ratio * (1.0 - ratio) / variance))
        quantile: float | None = t_quantile(0.5 + level / 2.0, 2 * (games - 1))
    else:  # no variance between games to see: each game counts as one observation
        effective, quantile = float(games), None
    return wilson_interval(ratio * effective, effective, level, quantile)
