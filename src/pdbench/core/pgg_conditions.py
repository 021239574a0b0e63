"""A public goods condition's metrics with 95% intervals, the game as the unit (pure: the
generator is passed in), and the engine the commons conditions share (`MetricSpec`,
`summarize_games`).

From a condition's games (`core.pgg_metrics.PGGGameMetrics`) `pgg_condition_summary` gives one
row (`PGG_CONDITION_COLUMNS`): each metric's value over the games and its interval by the method
of its kind in core/stats.py, as `core.group_conditions` does for the group dilemma:

- means of per-game values (bootstrap-t / Student-t, `clipped_mean_intervals`, clipped to the
  feasible range): contribution_rate and punish_spent_fraction in [0, 1], efficiency in [0, 1]
  (the gain from the zero or E starting balances never exceeds full cooperation's), gini_final
  in [0, (N - 1) / N], punish_spent (tokens paid by the whole group in a game, >= 0, a sum over
  rounds);
- ratios pooled over games (`ratio_interval`, acts over chances summed over the games):
  free_riding_rate (free-riding seat-rounds / seat-rounds), retaliation_rate (retaliations /
  opportunities), antisocial_rate (antisocial acts / punishment acts); None without a chance.

With the reward stage on (`PGGRules.reward`) the row has two more metrics
(`PGG_REWARD_COLUMNS`, after the others, `pgg_condition_columns`): reward_given (paid by the
whole group in a game for its reward tokens, >= 0, summed over rounds) and reward_given_fraction
(in [0, 1]); without it the row is what it was before the stage existed. Rewards worth more than
they cost (`reward_effect > reward_cost`) can lift the group above full cooperation, so
efficiency's ceiling is then lifted too (unbounded above).

A condition deterministic by construction (core/exact.py) whose games were all identical gets
`exact` true and each interval equal to its value; identical games of a condition that could
have varied get `identical_games` true and core/stats.py's wide interval of a constant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pdbench.core.exact import EXACT_COLUMN, IDENTICAL_COLUMN
from pdbench.core.metrics import CLIPPED_COLUMN
from pdbench.core.pgg import PGGRules
from pdbench.core.pgg_metrics import PGGGameMetrics
from pdbench.core.stats import (
    KIND_MEAN,
    KIND_POOLED_RATIO,
    KIND_SHARE,
    Bounds,
    IntervalSettings,
    clipped_mean_intervals,
    ratio_interval,
    resample_weights,
    share_interval,
)

# A game's value of a metric: a number (None: undefined in that game) for means and shares,
# (acts, chances) for pooled ratios.
GameValue = float | None | tuple[float, float]


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One condition metric: its column, its kind (core/stats.py: KIND_MEAN, KIND_SHARE or
    KIND_POOLED_RATIO), its feasible range (None: unbounded) and whether it is a sum over a
    game's rounds (core/stats.py adds Hall's interval for those)."""

    column: str
    kind: str
    bounds: Bounds | None = (0.0, 1.0)
    summed: bool = False


def interval_ends(columns: Sequence[str]) -> tuple[str, ...]:
    """The interval columns of `columns`, `<c>_ci_low` and `<c>_ci_high` each, in order."""
    return tuple(f"{c}_ci_{end}" for c in columns for end in ("low", "high"))


def _point(kind: str, values: list[GameValue]) -> float | None:
    """The condition's value: the mean of the defined values, or the pooled ratio."""
    if kind == KIND_POOLED_RATIO:
        acts = sum(v[0] for v in values)  # type: ignore[index]
        chances = sum(v[1] for v in values)  # type: ignore[index]
        return acts / chances if chances else None
    kept = [float(v) for v in values if v is not None]  # type: ignore[arg-type]
    return sum(kept) / len(kept) if kept else None


def summarize_games(
    specs: Sequence[MetricSpec],
    games: Sequence[Mapping[str, GameValue]],
    settings: IntervalSettings,
    rng: np.random.Generator,
    exact: bool = False,
) -> dict[str, Any]:
    """One condition row from its games' values (each a mapping column -> value): `n_games`,
    each spec's value and `_ci_low` / `_ci_high`, and the flags `clipped_intervals`, `exact`
    (deterministic and every game identical: intervals equal to the values) and
    `identical_games` (2 or more identical games)."""
    if not games:
        raise ValueError("a condition needs at least one game to summarize")
    kinds = (KIND_MEAN, KIND_SHARE, KIND_POOLED_RATIO)
    for spec in specs:
        if spec.kind not in kinds:
            raise ValueError(f"metric {spec.column!r} has kind {spec.kind!r}: one of {kinds}")
    columns = {s.column: [g[s.column] for g in games] for s in specs}
    row: dict[str, Any] = {"n_games": len(games)}
    for spec in specs:
        row[spec.column] = _point(spec.kind, columns[spec.column])
    same = all(g == games[0] for g in games[1:])
    row[IDENTICAL_COLUMN] = same and len(games) >= 2
    row[EXACT_COLUMN] = bool(same and exact)
    row[CLIPPED_COLUMN] = None
    if row[EXACT_COLUMN]:
        for spec in specs:
            row[f"{spec.column}_ci_low"] = row[f"{spec.column}_ci_high"] = row[spec.column]
        return row
    means = [s for s in specs if s.kind == KIND_MEAN]
    weights = resample_weights(len(games), settings.resamples, rng)
    matrix = np.array(
        [[np.nan if v is None else float(v) for v in columns[s.column]] for s in means],  # type: ignore[arg-type]
        dtype=np.float64,
    ).T.reshape(len(games), len(means))
    found = clipped_mean_intervals(
        np.ascontiguousarray(matrix),
        weights,
        settings.level,
        [s.bounds for s in means],
        [s.summed for s in means],
    )
    clipped = []
    for spec, (low, high, was) in zip(means, found, strict=True):
        row[f"{spec.column}_ci_low"], row[f"{spec.column}_ci_high"] = low, high
        if was:
            clipped.append(spec.column)
    for spec in specs:
        values = columns[spec.column]
        if spec.kind == KIND_SHARE:
            shares = [np.nan if v is None else float(v) for v in values]  # type: ignore[arg-type]
            low, high = share_interval(shares, settings.level)
        elif spec.kind == KIND_POOLED_RATIO:
            acts = np.array([v[0] for v in values], dtype=np.float64)  # type: ignore[index]
            chances = np.array([v[1] for v in values], dtype=np.float64)  # type: ignore[index]
            low, high = ratio_interval(acts, chances, settings.level)
        else:
            continue
        row[f"{spec.column}_ci_low"], row[f"{spec.column}_ci_high"] = low, high
    row[CLIPPED_COLUMN] = ",".join(clipped) if clipped else None
    return row


PGG_METRIC_COLUMNS: tuple[str, ...] = (
    "contribution_rate",
    "efficiency",
    "gini_final",
    "punish_spent",
    "punish_spent_fraction",
    "free_riding_rate",
    "retaliation_rate",
    "antisocial_rate",
)
PGG_CONDITION_COLUMNS: tuple[str, ...] = (
    "n_games",
    *PGG_METRIC_COLUMNS,
    *interval_ends(PGG_METRIC_COLUMNS),
    CLIPPED_COLUMN,
    EXACT_COLUMN,
    IDENTICAL_COLUMN,
)

PGG_REWARD_COLUMNS: tuple[str, ...] = ("reward_given", "reward_given_fraction")


def pgg_metric_columns(rules: PGGRules) -> tuple[str, ...]:
    """The metric columns of a condition under `rules`: `PGG_METRIC_COLUMNS`, and
    `PGG_REWARD_COLUMNS` when the reward stage is on."""
    return PGG_METRIC_COLUMNS + (PGG_REWARD_COLUMNS if rules.reward else ())


def pgg_condition_columns(rules: PGGRules) -> tuple[str, ...]:
    """A condition row's columns under `rules` (`PGG_CONDITION_COLUMNS` without rewards)."""
    if not rules.reward:
        return PGG_CONDITION_COLUMNS
    metrics = pgg_metric_columns(rules)
    return ("n_games", *metrics, *interval_ends(metrics), *PGG_CONDITION_COLUMNS[-3:])


def pgg_metric_specs(rules: PGGRules) -> tuple[MetricSpec, ...]:
    """The specs of `pgg_metric_columns(rules)` (the Gini's ceiling is (N - 1) / N; efficiency's
    is lifted when rewards create money)."""
    n = rules.n_players
    # efficiency can pass 1 when rewards create money, or when the pot does not grow (r <= 1:
    # contributing loses, full cooperation is not the best the group can do)
    creates = (rules.reward and rules.reward_effect > rules.reward_cost) or rules.multiplier <= 1
    reward = (
        (
            MetricSpec("reward_given", KIND_MEAN, (0.0, float("inf")), summed=True),
            MetricSpec("reward_given_fraction", KIND_MEAN),
        )
        if rules.reward
        else ()
    )
    return (
        MetricSpec("contribution_rate", KIND_MEAN),
        MetricSpec("efficiency", KIND_MEAN, (0.0, float("inf")) if creates else (0.0, 1.0)),
        MetricSpec("gini_final", KIND_MEAN, (0.0, (n - 1) / n)),
        MetricSpec("punish_spent", KIND_MEAN, (0.0, float("inf")), summed=True),
        MetricSpec("punish_spent_fraction", KIND_MEAN),
        MetricSpec("free_riding_rate", KIND_POOLED_RATIO),
        MetricSpec("retaliation_rate", KIND_POOLED_RATIO),
        MetricSpec("antisocial_rate", KIND_POOLED_RATIO),
        *reward,
    )


def pgg_game_values(rules: PGGRules, game: PGGGameMetrics) -> dict[str, GameValue]:
    """One game's values of `pgg_metric_columns(rules)` (pooled ratios as (acts, chances))."""
    out: dict[str, GameValue] = {
        "contribution_rate": game.contribution_rate,
        "efficiency": game.efficiency,
        "gini_final": game.gini_final,
        "punish_spent": float(sum(game.punish_spent)),
        "punish_spent_fraction": game.punish_spent_fraction,
        "free_riding_rate": (game.free_riding_count, rules.n_players * game.rounds),
        "retaliation_rate": (game.retaliations, game.retaliation_opportunities),
        "antisocial_rate": (game.antisocial_acts, game.punishment_acts),
    }
    if rules.reward:
        out["reward_given"] = float(sum(game.reward_given))
        out["reward_given_fraction"] = game.reward_given_fraction
    return out


def pgg_condition_summary(
    rules: PGGRules,
    games: Sequence[PGGGameMetrics],
    settings: IntervalSettings,
    rng: np.random.Generator,
    exact: bool = False,
) -> dict[str, Any]:
    """The row (`pgg_condition_columns(rules)`) of one condition whose games were played under `rules`:
    values and 95% intervals over games (see the module docstring). `rng`: the condition's
    generator; `exact`: the condition is deterministic by construction."""
    n = rules.n_players
    if any(len(g.contribution_rate_by_seat) != n for g in games):
        raise ValueError(f"every game needs {n} seats, as the rules say")
    values = [pgg_game_values(rules, g) for g in games]
    row = summarize_games(pgg_metric_specs(rules), values, settings, rng, exact)
    return {c: row[c] for c in pgg_condition_columns(rules)}
