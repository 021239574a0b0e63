"""What each axis of a sweep does: a metric's mean at each value of each axis (with intervals
over games), and the share of the variance of a game-level metric that each axis explains
versus game-to-game noise (pure: works on aggregate rows, one per game).

The unit is the game (a replicate row of aggregates.parquet). For a game-level value y, the
sums of squares of a factorial analysis of variance:

- total = sum over games of (y - mean)^2;
- axis k: sum over its values v of n_v * (mean_v - mean)^2 (its main effect), df = values - 1;
- the cells are the conditions; between cells = sum over conditions of n_c * (mean_c - mean)^2;
- interactions = between cells - the sum of the main effects, df = cells - 1 - sum of axis dfs
  (in an unbalanced design it also holds what the axes share; left out with a single axis,
  whose values are the cells);
- within = total - between cells: the spread of games within a condition, with mean square
  MS = within / (games - cells).

Noise alone gives a sum of squares df * MS on average, so each share is omega squared,
(SS - df * MS) / (total + MS), read as 0 when below; game-to-game noise is what the axes and
interactions leave of 1 (Olejnik & Algina 2003). The plain ratio SS / total would credit noise
to every axis. Intervals resample games within each condition (the design stays as it was run)
and read the 2.5% and 97.5% percentiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pdbench.core.metrics import feasible_range, is_sum_over_rounds
from pdbench.core.stats import mean_intervals, resample_weights

BASE_AXIS = "condition"  # the hand-written condition an expanded one came from
NOISE = "game-to-game noise"
INTERACTIONS = "interactions"


@dataclass(frozen=True, slots=True)
class AxisValue:
    """A metric's mean over the games at one value of one axis, with its interval."""

    axis: str
    value: Any
    metric: str
    games: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True, slots=True)
class VarianceShare:
    """The share of a game-level metric's variance that one source explains."""

    source: str  # an axis, INTERACTIONS or NOISE
    share: float | None
    ci_low: float | None
    ci_high: float | None


def base_name(condition: str) -> str:
    """The hand-written condition an expanded one came from (`a+x_1+y_2` -> `a`)."""
    return condition.split("+", 1)[0]


def axes_of(rows: Sequence[dict[str, Any]], paths: Sequence[str]) -> list[str]:
    """The axes of a run: every swept path with more than one value among the games, and the
    base condition when there are several."""
    axes = [p for p in paths if len({_key(r.get(p)) for r in rows}) > 1]
    if len({base_name(str(r["condition"])) for r in rows}) > 1:
        axes.insert(0, BASE_AXIS)
    return axes


def _key(value: Any) -> Any:
    return repr(value) if isinstance(value, list | dict) else value


def coordinate(row: dict[str, Any], axis: str) -> Any:
    """The game's value on an axis."""
    if axis == BASE_AXIS:
        return base_name(str(row["condition"]))
    return row.get(axis)


def _value_order(values: list[Any]) -> list[Any]:
    distinct = list(dict.fromkeys(_key(v) for v in values))
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in distinct):
        return sorted(distinct)
    return distinct  # first seen first: the sweep's order


def axis_values(
    games: Sequence[dict[str, Any]],
    axes: Sequence[str],
    metrics: Sequence[str],
    rng: np.random.Generator,
    resamples: int = 1000,
) -> list[AxisValue]:
    """Per axis, value and metric: the mean over the games at that value and its interval
    (the method of a condition's means, core/stats.py)."""
    out: list[AxisValue] = []
    for axis in axes:
        keys = [_key(coordinate(g, axis)) for g in games]
        for value in _value_order(keys):
            chosen = [g for g, k in zip(games, keys, strict=True) if k == value]
            data = np.array(
                [[_number(g.get(m)) for m in metrics] for g in chosen], dtype=np.float64
            ).reshape(len(chosen), len(metrics))
            weights = resample_weights(len(chosen), resamples, rng) if len(chosen) > 1 else None
            intervals = mean_intervals(
                data,
                weights,
                bounds=[feasible_range(m) for m in metrics],
                sums=[is_sum_over_rounds(m) for m in metrics],
            )
            for j, metric in enumerate(metrics):
                column = data[:, j]
                defined = column[~np.isnan(column)]
                low, high = intervals[j]
                out.append(
                    AxisValue(
                        axis,
                        value,
                        metric,
                        int(defined.size),
                        float(defined.mean()) if defined.size else None,
                        low,
                        high,
                    )
                )
    return out


def pooled_mean(
    games: Sequence[dict[str, Any]], metric: str, rng: np.random.Generator, resamples: int = 1000
) -> tuple[int, float | None, float | None, float | None]:
    """(games with a value, mean over them, interval low, interval high) of one metric."""
    values = np.array([_number(g.get(metric)) for g in games], dtype=np.float64)
    defined = values[~np.isnan(values)]
    weights = resample_weights(len(values), resamples, rng) if len(values) > 1 else None
    low, high = mean_intervals(
        values.reshape(-1, 1),
        weights,
        bounds=[feasible_range(metric)],
        sums=[is_sum_over_rounds(metric)],
    )[0]
    mean = float(defined.mean()) if defined.size else None
    return int(defined.size), mean, low, high


def _number(value: Any) -> float:
    return np.nan if value is None else float(value)


def _shares(y: np.ndarray, groups: list[np.ndarray], cells: np.ndarray) -> np.ndarray | None:
    """[omega^2 per axis..., interactions, noise] (see the module docstring); None when every
    game has the same value or no game shares its condition with another."""
    n = y.size
    mean = y.mean()
    total = float(((y - mean) ** 2).sum())
    sizes = np.bincount(cells)
    n_cells = int((sizes > 0).sum())
    cell_means = np.bincount(cells, weights=y) / np.maximum(sizes, 1)
    between = float((sizes * (cell_means - mean) ** 2).sum())
    if total <= 0.0 or n <= n_cells:
        return None
    noise_ms = (total - between) / (n - n_cells)  # what a sum of squares gets per df from noise
    mains, dfs = [], []
    for labels in groups:
        counts = np.bincount(labels)
        means = np.bincount(labels, weights=y) / np.maximum(counts, 1)
        mains.append(float((counts * (means - mean) ** 2).sum()))
        dfs.append(int((counts > 0).sum()) - 1)
    interaction = between - sum(mains)
    interaction_df = (n_cells - 1) - sum(dfs)
    scale = total + noise_ms
    shares = [max(0.0, (ss - df * noise_ms) / scale) for ss, df in zip(mains, dfs, strict=True)]
    shares.append(max(0.0, (interaction - interaction_df * noise_ms) / scale))
    shares.append(max(0.0, 1.0 - sum(shares)))
    return np.array(shares)


def variance_shares(
    games: Sequence[dict[str, Any]],
    axes: Sequence[str],
    metric: str,
    rng: np.random.Generator,
    resamples: int = 1000,
) -> list[VarianceShare]:
    """The share of the variance of `metric` (one value per game) explained by each axis, by
    their interactions, and left to game-to-game noise; see the module docstring. None and NaN
    are undefined in a game (left out); an infinite value leaves nothing to split (None)."""
    kept = [g for g in games if not np.isnan(_number(g.get(metric)))]
    # With one axis the conditions are its values: there is nothing for interactions to hold.
    sources = [*axes, INTERACTIONS, NOISE] if len(axes) > 1 else [*axes, NOISE]
    if len(kept) < 2 or any(np.isinf(_number(g[metric])) for g in kept):
        return [VarianceShare(s, None, None, None) for s in sources]
    y = np.array([float(g[metric]) for g in kept])
    groups = [
        np.unique([str(_key(coordinate(g, a))) for g in kept], return_inverse=True)[1] for a in axes
    ]
    cells = np.unique([str(g["condition"]) for g in kept], return_inverse=True)[1]
    keep = list(range(len(axes))) + ([len(axes)] if len(axes) > 1 else []) + [len(axes) + 1]
    estimate = _shares(y, groups, cells)
    if estimate is None:  # every game has the same value: nothing to explain
        return [VarianceShare(s, None, None, None) for s in sources]
    shares = estimate[keep]
    members = [np.flatnonzero(cells == c) for c in range(int(cells.max()) + 1)]
    boot = np.full((resamples, len(sources)), np.nan)
    for b in range(resamples):
        pick = np.concatenate([rng.choice(m, size=m.size, replace=True) for m in members])
        resampled = _shares(y[pick], [g[pick] for g in groups], cells[pick])
        if resampled is not None:
            boot[b] = resampled[keep]
    with np.errstate(all="ignore"):
        low, high = np.nanpercentile(boot, [2.5, 97.5], axis=0)
    return [
        VarianceShare(s, float(shares[i]), float(low[i]), float(high[i]))
        for i, s in enumerate(sources)
    ]
