"""The bootstrap-t of `core.stats` (kind `mean`, 5 or more games): the studentized bootstrap
over games of many columns at once (games x metrics, or games x rounds for the bands of
cooperation_rate_over_time), and numpy's nanquantile of its t statistics column by column,
each computed so that its floats are those of the plain whole-array formulas (pure)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_MIN_VALID_RESAMPLES = 0.5  # bootstrap-t needs a standard error in at least half the resamples


def _bootstrap_t(
    values: np.ndarray, defined: np.ndarray, weights: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap-t intervals of the column means (games x metrics), NaN where too few
    resamples have a standard error."""
    filled = np.where(defined, values, 0.0)
    mask = defined.astype(np.float64)
    k = mask.sum(axis=0)
    mean = filled.sum(axis=0) / k
    sd = np.sqrt(np.maximum(((filled - mean) ** 2 * mask).sum(axis=0) / (k - 1), 0.0))
    # Whole weights (counts of draws): the games drawn are the same in every column where every
    # value is known (the weights' row sums, exact, as the product with the mask).
    whole = bool(np.array_equal(weights, np.floor(weights)))
    exact = whole and _exact_products(weights, filled)
    # With exact products, a column's bootstrap depends on its own values alone (each step
    # after the products is per column): equal columns are resampled once.
    first, inverse = _distinct_columns(values, defined) if exact else (None, None)
    with np.errstate(all="ignore"):
        if first is None:
            t_low, t_high, enough = _bootstrap_t_quantiles(
                filled, mask, mean, weights, whole, exact, level
            )
        else:
            found = _bootstrap_t_quantiles(
                filled[:, first], mask[:, first], mean[first], weights, whole, exact, level
            )
            t_low, t_high, enough = (part[inverse] for part in found)
    se = sd / np.sqrt(k)
    low = np.where(enough, mean - t_high * se, np.nan)
    high = np.where(enough, mean - t_low * se, np.nan)
    return low, high


def _distinct_columns(
    values: np.ndarray, defined: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(the first column of each distinct column, in column order; each column's distinct
    column) when some columns repeat another (the same values where the same games are
    known), else (None, None). Columns are compared as bytes: the quarters of the values as
    int8 where they fit (the per-round series) and no value is -0.0, else the floats
    themselves (NaN where unknown)."""
    rows, columns = values.shape
    if columns < 2 or rows == 0:
        return None, None
    quarters = np.where(defined, values, 0.0) * 4.0
    signed_zero = bool((np.signbit(quarters) & (quarters == 0.0)).any())
    if float(np.abs(quarters).max()) <= 127.0 and not signed_zero:
        codes = np.where(defined, quarters, -128.0).astype(np.int8)
    else:
        codes = np.where(defined, values, np.nan)
    keys = np.ascontiguousarray(codes.T)
    keys = keys.view(np.dtype((np.void, keys.itemsize * rows))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if len(first) == columns:
        return None, None
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[inverse.ravel()]


def _bootstrap_t_quantiles(
    filled: np.ndarray,
    mask: np.ndarray,
    mean: np.ndarray,
    weights: np.ndarray,
    whole: bool,
    exact: bool,
    level: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column: the two quantiles of the bootstrap t statistic, and whether enough
    resamples have a standard error."""
    drawn = weights.sum(axis=1, keepdims=True) if whole and bool(mask.all()) else None
    # In place, the same operations in the same order as
    # b_var = ((weights @ filled**2) / drawn - b_mean**2) * drawn / (drawn - 1),
    # b_se = sqrt(max(b_var, 0) / drawn), t = (b_mean - mean) / b_se where valid.
    b_mean, b_se = _weighted_sums(weights, filled, exact)
    if drawn is None:
        drawn = weights @ mask
    b_mean /= drawn
    b_se /= drawn
    b_se -= b_mean**2
    b_se *= drawn
    b_se /= drawn - 1
    np.maximum(b_se, 0.0, out=b_se)
    b_se /= drawn
    np.sqrt(b_se, out=b_se)
    # A resample that drew one value only has no standard error, but rounding leaves its b_se
    # near sqrt(machine epsilon) x |mean| (the variance is a difference of near-equal sums):
    # such a resample, kept, gives t ~ 1e7 and an interval stretched to its bound (a mean of
    # nine 0.8s and one 0.6 got [0, 0.83]). Every genuine standard error of a resample is far
    # above 1e-7 of the values' scale.
    scale = np.maximum(np.abs(mean), 1.0) * 1e-7
    valid = (b_se > scale) & (drawn >= 2)
    t_stats = b_mean
    t_stats -= mean
    if valid.all():  # the usual case: the same divisions, nothing to mark
        t_stats /= b_se
    else:
        t_stats /= np.where(valid, b_se, 1.0)
        t_stats[~valid] = np.nan
    alpha = (1.0 - level) / 2.0
    t_low, t_high = column_nanquantiles(t_stats, [alpha, 1.0 - alpha])
    return t_low, t_high, valid.mean(axis=0) >= _MIN_VALID_RESAMPLES


_FLOAT32_EXACT = 2**24  # integers up to this are exact in float32


def _exact_products(weights: np.ndarray, filled: np.ndarray) -> bool:
    """Whether, with whole weights, every product and partial sum of `weights @ filled` and
    `weights @ filled**2` is exact in float32: non-negative weights, values on a grid of
    quarters whose squares' sums stay below 2**24 sixteenths (like the per-round values 0, 0.5
    and 1 of cooperation_rate_over_time). Then any order of the sums gives the same floats."""
    if not (filled.size and weights.size and float(weights.min()) >= 0.0):
        return False
    quarters = filled * 4.0
    bound = 16.0 * float((filled * filled).max()) * float(weights.sum(axis=1).max())
    return bound < _FLOAT32_EXACT and bool(np.array_equal(quarters, np.floor(quarters)))


def _weighted_sums(
    weights: np.ndarray, filled: np.ndarray, exact: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(weights @ filled, weights @ filled**2), the same floats as float64 products; `exact`
    (`_exact_products`): both computed as float32 products, exact there, hence equal to the
    exact float64 ones whatever the order of the sums."""
    squares = filled * filled
    if exact:
        counts = weights.astype(np.float32)
        sums = counts @ filled.astype(np.float32)
        sums_of_squares = counts @ squares.astype(np.float32)
        return sums.astype(np.float64), sums_of_squares.astype(np.float64)
    return weights @ filled, weights @ squares


def column_nanquantiles(values: np.ndarray, q: Sequence[float]) -> np.ndarray:
    """`np.nanquantile(values, q, axis=0)` (the default, linear method), with identical results:
    the quantiles of each column's known values, NaN for a column with none (and no warning).

    numpy computes nanquantile column by column in Python, and `np.quantile` partitions each
    column. Here the columns are sorted once (NaN last: the first k rows of a column that
    knows k values are exactly those values, in order), and each quantile is numpy's: the
    same order statistics, interpolated by numpy's formula (`_lerp`). A column holding -0.0
    goes to `np.quantile` itself, as before: sorting and partitioning may order 0.0 and -0.0
    differently."""
    values = np.asarray(values, dtype=np.float64)
    rows = values.shape[0]
    out = np.full((len(q), values.shape[1]), np.nan)
    if rows == 0:
        return out
    known = rows - np.isnan(values).sum(axis=0)
    zero = values == 0.0
    signed_zero = np.zeros(values.shape[1], dtype=bool)
    if zero.any():
        signed_zero = (np.signbit(values) & zero).any(axis=0)
    quantiles = np.asarray(q, dtype=np.float64)
    sortable = np.flatnonzero((known > 0) & ~signed_zero)
    if sortable.size:
        ordered = np.sort(values[:, sortable], axis=0)
        for k in np.unique(known[sortable]).tolist():
            which = np.flatnonzero(known[sortable] == k)
            out[:, sortable[which]] = _sorted_quantiles(ordered[:k, which], quantiles)
    for column in np.flatnonzero((known > 0) & signed_zero).tolist():
        column_values = values[:, column]
        out[:, column] = np.quantile(column_values[~np.isnan(column_values)], quantiles)
    return out


def _sorted_quantiles(ordered: np.ndarray, quantiles: np.ndarray) -> np.ndarray:
    """`np.quantile(ordered, quantiles, axis=0)` of columns already sorted, without NaN: numpy's
    indexes (`_get_indexes`), weights (`_get_gamma`) and interpolation (`_lerp`)."""
    count = ordered.shape[0]
    virtual = (count - 1) * quantiles
    previous = np.floor(virtual)
    following = previous + 1
    above = virtual >= count - 1
    previous[above] = -1
    following[above] = -1
    below = virtual < 0
    previous[below] = 0
    following[below] = 0
    previous_at, following_at = previous.astype(np.intp), following.astype(np.intp)
    gamma = (virtual - previous_at)[:, None]
    low, high = ordered[previous_at], ordered[following_at]
    diff = high - low
    result = np.add(low, diff * gamma)
    np.subtract(high, diff * (1 - gamma), out=result, where=gamma >= 0.5)
    return result
