"""The talk metrics of group games as rows of seats.parquet: per game and seat, and per
condition and seat (or agent, when groups are drawn anew for each game).

Per game, a seat's values are `group_talk_metrics.group_talk_columns` without the seat prefix.
On a condition row, counts are summed over the games and each say-do rate is pooled (its
numerator and its denominator summed over games) with a ratio interval that treats the game as
the unit, as the pairwise condition rows have them (`core/metrics.py`, POOLED_COLUMNS).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pdbench.core.group_talk_metrics import (
    COUNT_KEYS,
    POOLED_KEYS,
    group_talk_columns,
    seat_letter,
)
from pdbench.core.stats import ratio_interval

SEAT_TALK_COLUMNS: tuple[str, ...] = (*COUNT_KEYS, *POOLED_KEYS)
SEAT_TALK_INTERVAL_COLUMNS: tuple[str, ...] = tuple(
    f"{key}_ci_{end}" for key in POOLED_KEYS for end in ("low", "high")
)


def seat_talk_values(tracks: Any, n_players: int) -> list[dict[str, Any]]:
    """Each seat's talk metrics of one game (every value None when the game had no talk)."""
    columns = group_talk_columns(tracks, n_players)
    out = []
    for seat in range(n_players):
        prefix = f"agent_{seat_letter(seat)}_"
        out.append({key: columns.get(prefix + key) for key in SEAT_TALK_COLUMNS})
    return out


def pooled_talk_values(per_game: Sequence[dict[str, Any] | None], level: float) -> dict[str, Any]:
    """One seat's (or agent's) talk values over a condition's games: counts summed, rates
    pooled with their intervals (games where it had no talk, or did not sit: None, skipped).
    Every value None when no game had talk."""
    games = [g for g in per_game if g is not None and g.get(COUNT_KEYS[0]) is not None]
    out: dict[str, Any] = dict.fromkeys((*SEAT_TALK_COLUMNS, *SEAT_TALK_INTERVAL_COLUMNS))
    if not games:
        return out
    for key in COUNT_KEYS:
        out[key] = int(sum(int(g[key] or 0) for g in games))
    for rate, count in POOLED_KEYS.items():
        denominators = np.array([float(g[count] or 0) for g in games])
        numerators = np.array(
            [0.0 if g[rate] is None else float(g[rate]) * float(g[count] or 0) for g in games]
        )
        total = float(denominators.sum())
        if total <= 0:
            continue
        out[rate] = float(numerators.sum()) / total
        out[f"{rate}_ci_low"], out[f"{rate}_ci_high"] = ratio_interval(
            numerators, denominators, level
        )
    return out


def add_talk_to_seat_rows(
    seat_rows: list[dict[str, Any]], games: Sequence[Any], level: float
) -> None:
    """Put the talk metrics into one condition's seat rows (`group_condition_rows`' seats): a
    game row gets its seat's values; a condition row of a seat, the pooled values over the
    games; a condition row of an agent (seat None: groups drawn anew), over the games it sat in.
    `games`: the condition's outcomes (`GroupOutcome`, with `talk` tracks or None)."""
    per_game = {g.replicate: seat_talk_values(g.talk, len(g.names)) for g in games}
    names = {g.replicate: g.names for g in games}
    for row in seat_rows:
        if row.get("scope") == "replicate":
            row.update(per_game[row["replicate"]][int(row["seat"])])
            continue
        seat = row.get("seat")
        if seat is not None:
            picked = [per_game[r][int(seat)] for r in per_game]
        else:
            name = row.get("name")
            picked = [
                per_game[r][names[r].index(name)] if name in names[r] else None for r in per_game
            ]
        row.update(pooled_talk_values(picked, level))
