"""A condition's per-game rows as arrays, for its intervals: the values the row by row reading
of `core.metrics` gives (the same floats), read with a few calls for all games at once.

- `value_table`: games x columns of float64, None as NaN, when every value is a plain number
  (float, int) or None; else None (the caller reads the values one by one, as before).
- `series_matrix`: the stored cooperation_rate_over_time lists (JSON text, each value written
  0.0, 0.5 or 1.0) of many games as one games x rounds matrix, NaN after a game's last round.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np

_PLAIN_NUMBERS = frozenset({float, int, type(None)})


def value_table(
    games: Sequence[Mapping[str, Any]], columns: Sequence[str]
) -> tuple[np.ndarray, bool] | None:
    """(games x columns as float64, None as NaN, row-major; whether a NaN there stands for
    None only (no value was a float NaN)), when every game has every column and every value
    is a float, an int or None; else None. `float(v)` of each value, as numpy converts it."""
    if len(columns) < 2 or not games:
        return None
    getter = operator.itemgetter(*columns)
    try:
        values = [getter(game) for game in games]
    except (KeyError, TypeError):
        return None
    if not set(map(type, chain.from_iterable(values))) <= _PLAIN_NUMBERS:
        return None
    table = np.array(values, dtype=np.float64)
    nones = sum(row.count(None) for row in values)
    return table, int(np.count_nonzero(np.isnan(table))) == nones


# How orjson writes 0.0, 0.5 and 1.0, each with the comma after it: a 4-byte word each.
_NONE, _HALF, _WHOLE = np.frombuffer(b"0.0,0.5,1.0,", dtype="<u4")


def series_matrix(texts: Sequence[str], one: Callable[[str], np.ndarray]) -> np.ndarray:
    """Games x rounds (the longest series) of the series `texts`, NaN after a game's last
    round: each row the values `one(text)` reads (`core.metrics.series_values`). Series of one
    length written in the fixed tokens are read at once, as `one` reads each of them; any
    other text is read by `one`."""
    raw = [text.encode() for text in texts]
    rows: list[np.ndarray | None] = [None] * len(raw)
    by_size: dict[int, list[int]] = {}
    for i, data in enumerate(raw):
        by_size.setdefault(len(data), []).append(i)
    for size, members in by_size.items():
        if size % 4 != 1 or size < 5:
            continue
        if not all(raw[i][:1] == b"[" and raw[i][-1:] == b"]" for i in members):
            continue
        body = b"".join(raw[i][1:-1] + b"," for i in members)
        words = np.frombuffer(body, dtype="<u4").reshape(len(members), (size - 1) // 4)
        half, whole = words == _HALF, words == _WHOLE
        known = (words == _NONE) | half | whole
        values = half * 0.5 + whole * 1.0
        for row, i in enumerate(members):
            if known[row].all():
                rows[i] = values[row]
    found = [one(texts[i]) if row is None else row for i, row in enumerate(rows)]
    longest = max((len(values) for values in found), default=0)
    matrix = np.full((len(found), longest), np.nan)
    for i, values in enumerate(found):
        matrix[i, : len(values)] = values
    return matrix
