"""A condition's group metrics with intervals, the game as the unit (pure: the generator is
passed in), and the columns of the group tables they fill (written by
`pdbench.storage.group_aggregate`).

`group_condition_rows` turns a condition's games (`core.group_metrics.GroupGameMetrics`) into
rows: each game's values, then the condition's, which hold each metric's mean over the games
with a value (time to collapse: over the games that collapsed) and its 95% interval by the
method of its kind in core/stats.py: collapsed_fraction a share of games (Wilson), P(C | k) a
ratio pooled over games, every other metric a mean of per-game values clipped to its feasible
range (`group_feasible_range`; `clipped_intervals` names the metrics whose interval was clipped);
one matrix of resampling weights serves the group and seat metrics, the per-round band has its
own (as `core.metrics.add_intervals` draws them). A condition deterministic by construction
(core/exact.py) whose games were all identical gets `exact` true and each interval equal to its
value; a condition whose games were identical but could have differed gets `identical_games`
true and the wide interval core/stats.py gives a constant value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from pdbench.core.exact import EXACT_COLUMN, IDENTICAL_COLUMN
from pdbench.core.group_metrics import (
    GROUP_METRIC_COLUMNS,
    GROUP_SEAT_COLUMNS,
    GROUP_SHARE_COLUMNS,
    P_COOP_GIVEN_K,
    GroupGameMetrics,
    group_feasible_range,
    group_interval_kind,
)
from pdbench.core.group_talk_rows import SEAT_TALK_COLUMNS, SEAT_TALK_INTERVAL_COLUMNS
from pdbench.core.metrics import (
    BAND_RESAMPLES,
    CLIPPED_COLUMN,
    CONDITION_FLAGS,
    MetricDesign,
    is_sum_over_rounds,
)
from pdbench.core.stats import (
    KIND_MEAN,
    IntervalSettings,
    clipped_mean_intervals,
    mean_intervals,
    ratio_interval,
    resample_weights,
    share_interval,
)

# The rows' identities (strings, then integers), in column order.
GROUP_IDENTITY_COLUMNS: tuple[str, ...] = (
    "run_id",
    "condition",
    "scope",
    "replicate",
    "n_replicates",
    "n_players",
    "game_label",
    "seat_names",  # a JSON list of the seats' agent names, in seat order
)
SEAT_IDENTITY_COLUMNS: tuple[str, ...] = (
    "run_id",
    "condition",
    "scope",
    "replicate",
    "n_replicates",
    "seat",
    "name",
)


def _ends(columns: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"{c}_ci_{end}" for c in columns for end in ("low", "high"))


# The tables' columns, in order (storage.group_aggregate writes them).
GROUP_AGGREGATE_COLUMNS: tuple[str, ...] = (
    *GROUP_IDENTITY_COLUMNS,
    *GROUP_METRIC_COLUMNS,
    *_ends(GROUP_METRIC_COLUMNS),
    *CONDITION_FLAGS,
)
GROUP_SEAT_TABLE_COLUMNS: tuple[str, ...] = (
    *SEAT_IDENTITY_COLUMNS,
    *GROUP_SEAT_COLUMNS,
    *_ends(GROUP_SEAT_COLUMNS),
    CLIPPED_COLUMN,
    *SEAT_TALK_COLUMNS,  # say-do metrics of games with talk (core/group_talk_rows.py)
    *SEAT_TALK_INTERVAL_COLUMNS,
)
GROUP_ROUND_COLUMNS: tuple[str, ...] = (
    "run_id",
    "condition",
    "round",  # 0-based round index
    "games",  # the games that reached the round
    "cooperation",
    "cooperation_ci_low",
    "cooperation_ci_high",
)
GROUP_CONDITIONAL_COLUMNS: tuple[str, ...] = (
    "run_id",
    "condition",
    "scope",
    "replicate",
    "k",  # co-players who cooperated in the previous round
    "others_share",  # k / (N - 1)
    "cases",
    "cooperations",
    P_COOP_GIVEN_K,
    f"{P_COOP_GIVEN_K}_ci_low",
    f"{P_COOP_GIVEN_K}_ci_high",
)


@dataclass(frozen=True, slots=True)
class GroupConditionRows:
    """A condition's rows of each group artifact: `aggregates` (its games', then the
    condition's), `seats` (each game's seats, then the condition's), `rounds` (the curve of
    cooperation over rounds with its band) and `conditional` (P(C | k), each game's then the
    condition's)."""

    aggregates: list[dict[str, Any]]
    seats: list[dict[str, Any]]
    rounds: list[dict[str, Any]]
    conditional: list[dict[str, Any]]


def _mean(values: Sequence[Any]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def seat_holders(
    games: Sequence[GroupGameMetrics],
) -> list[tuple[int | None, str, list[int | None]]]:
    """The rows of a condition's seat summary: (seat, name, the seat it held in each game).
    With the same agent in each seat in every game (fixed groups): one row per seat. With groups
    drawn anew for each game (random matching): one row per agent, in order of first
    appearance, with seat None and, for each game, the seat it held there (None: not in it)."""
    first = games[0]
    if all(g.names == first.names for g in games):
        return [(i, name, [i] * len(games)) for i, name in enumerate(first.names)]
    agents: list[str] = []
    for g in games:
        agents.extend(name for name in g.names if name not in agents)
    return [
        (None, name, [g.names.index(name) if name in g.names else None for g in games])
        for name in agents
    ]


def group_games_identical(games: Sequence[GroupGameMetrics]) -> bool:
    """Whether every game gave the same metrics, seat metrics, curve and conditional counts."""
    first = games[0]
    return all(
        g.values == first.values
        and g.seats == first.seats
        and g.cases == first.cases
        and g.cooperations == first.cooperations
        and np.array_equal(g.over_rounds, first.over_rounds)
        for g in games[1:]
    )


def group_condition_rows(
    games: Sequence[GroupGameMetrics],
    settings: IntervalSettings,
    rng: np.random.Generator,
    design: MetricDesign | None = None,
    exact: bool = False,
    run_id: str = "",
) -> GroupConditionRows:
    """The rows of one condition's games (one game size, one game): per-game rows and the
    condition's means with 95% intervals over games (see the module docstring). `rng`: the
    condition's generator (seeded from the run seed and the condition's name); `design`: the
    rounds its horizon allows; `exact`: the condition is deterministic by construction."""
    if not games:
        raise ValueError("group_condition_rows: a condition needs at least one game")
    games = sorted(games, key=lambda g: g.replicate)
    first = games[0]
    n, count = first.game.n_players, len(games)
    if any(g.game != first.game or g.condition != first.condition for g in games):
        raise ValueError(f"condition {first.condition!r}: its games differ in game or condition")
    base = {"run_id": run_id, "condition": first.condition}
    one = {"scope": "replicate", "n_replicates": 1}
    every = {"scope": "condition", "replicate": None, "n_replicates": count}
    head = {
        **base,
        "n_players": n,
        "game_label": first.game.describe(),
        "seat_names": orjson.dumps(list(first.names)).decode(),
    }
    summary = {
        **head,
        **every,
        **{c: _mean([g.values[c] for g in games]) for c in GROUP_METRIC_COLUMNS},
    }
    aggregates = [{**head, **one, "replicate": g.replicate, **g.values} for g in games]
    aggregates.append(summary)
    seats = [
        {**base, **one, "replicate": g.replicate, "seat": i, "name": g.names[i], **g.seats[i]}
        for g in games
        for i in range(n)
    ]
    sitters = seat_holders(games)
    seat_summary = [
        {
            **base,
            **every,
            "seat": seat,
            "name": name,
            **{
                c: _mean(
                    [g.seats[i][c] for g, i in zip(games, where, strict=True) if i is not None]
                )
                for c in GROUP_SEAT_COLUMNS
            },
        }
        for seat, name, where in sitters
    ]
    seats += seat_summary
    cases = np.array([g.cases for g in games], dtype=np.int64)  # (G, N)
    coops = np.array([g.cooperations for g in games], dtype=np.int64)
    conditional = [
        {
            **base,
            "scope": "replicate",
            "replicate": g.replicate,
            **_given(k, n, g.cases, g.cooperations),
        }
        for g in games
        for k in range(n)
    ]
    totals = (cases.sum(axis=0).tolist(), coops.sum(axis=0).tolist())
    cond_summary = [
        {**base, "scope": "condition", "replicate": None, **_given(k, n, *totals)} for k in range(n)
    ]
    conditional += cond_summary
    curve = np.full((count, max(g.over_rounds.size for g in games)), np.nan)
    for i, g in enumerate(games):
        curve[i, : g.over_rounds.size] = g.over_rounds
    reached = (~np.isnan(curve)).sum(axis=0)
    rounds = [
        {
            **base,
            "round": r,
            "games": int(reached[r]),
            "cooperation": float(np.nansum(curve[:, r]) / reached[r]),
        }
        for r in range(curve.shape[1])
    ]
    same = group_games_identical(games)
    summary[IDENTICAL_COLUMN] = same and count >= 2
    summary[EXACT_COLUMN] = bool(same and exact)
    summary[CLIPPED_COLUMN] = None
    if summary[EXACT_COLUMN]:  # each interval is the value itself (core/exact.py)
        for row, column in [
            *((summary, c) for c in GROUP_METRIC_COLUMNS),
            *((s, c) for s in seat_summary for c in GROUP_SEAT_COLUMNS),
            *((c, P_COOP_GIVEN_K) for c in cond_summary),
            *((r, "cooperation") for r in rounds),
        ]:
            row[f"{column}_ci_low"] = row[f"{column}_ci_high"] = row[column]
        for row in seat_summary:
            row[CLIPPED_COLUMN] = None
        return GroupConditionRows(aggregates, seats, rounds, conditional)
    _add_intervals(games, summary, seat_summary, [w for *_, w in sitters], settings, rng, design)
    for k, row in enumerate(cond_summary):
        low, high = ratio_interval(coops[:, k], cases[:, k], settings.level)
        row[f"{P_COOP_GIVEN_K}_ci_low"], row[f"{P_COOP_GIVEN_K}_ci_high"] = low, high
    band_weights = resample_weights(count, min(BAND_RESAMPLES, settings.resamples), rng)
    bands = mean_intervals(curve, band_weights, settings.level, [(0.0, 1.0)] * curve.shape[1])
    for row, (low, high) in zip(rounds, bands, strict=True):
        row["cooperation_ci_low"], row["cooperation_ci_high"] = low, high
    return GroupConditionRows(aggregates, seats, rounds, conditional)


def _given(k: int, n: int, cases: Sequence[int], cooperations: Sequence[int]) -> dict[str, Any]:
    """The conditional table's values for k co-players who cooperated."""
    return {
        "k": k,
        "others_share": k / (n - 1),
        "cases": int(cases[k]),
        "cooperations": int(cooperations[k]),
        P_COOP_GIVEN_K: cooperations[k] / cases[k] if cases[k] else None,
    }


def _add_intervals(
    games: Sequence[GroupGameMetrics],
    summary: dict[str, Any],
    seat_summary: list[dict[str, Any]],
    seats_in_games: list[list[int | None]],
    settings: IntervalSettings,
    rng: np.random.Generator,
    design: MetricDesign | None,
) -> None:
    """The intervals of a condition's group and seat metrics: one matrix of resampling weights
    for all of them; shares by Wilson, means by core.stats (clipped to feasible ranges)."""
    game = games[0].game
    weights = resample_weights(len(games), settings.resamples, rng)
    plain = [c for c in GROUP_METRIC_COLUMNS if group_interval_kind(c) == KIND_MEAN]
    targets: list[tuple[dict[str, Any], str]] = [(summary, c) for c in plain]
    columns = [[_number(g.values[c]) for g in games] for c in plain]
    for row, where in zip(seat_summary, seats_in_games, strict=True):
        for c in GROUP_SEAT_COLUMNS:
            targets.append((row, c))
            columns.append(
                [
                    math.nan if i is None else _number(g.seats[i][c])
                    for g, i in zip(games, where, strict=True)
                ]
            )
    matrix = np.ascontiguousarray(np.array(columns, dtype=np.float64).T)
    found = clipped_mean_intervals(
        matrix.reshape(len(games), len(targets)),
        weights,
        settings.level,
        [group_feasible_range(c, game, design) for _, c in targets],
        [is_sum_over_rounds(c) for _, c in targets],
    )
    clipped: dict[int, list[str]] = {}
    for (row, column), (low, high, was) in zip(targets, found, strict=True):
        row[f"{column}_ci_low"], row[f"{column}_ci_high"] = low, high
        if was:
            clipped.setdefault(id(row), []).append(column)
    for column in GROUP_SHARE_COLUMNS:
        low, high = share_interval([_number(g.values[column]) for g in games], settings.level)
        summary[f"{column}_ci_low"], summary[f"{column}_ci_high"] = low, high
    for row in [summary, *seat_summary]:
        names = clipped.get(id(row))
        row[CLIPPED_COLUMN] = ",".join(names) if names else None
