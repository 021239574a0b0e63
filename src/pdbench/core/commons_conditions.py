"""A commons condition's metrics with 95% intervals, the game as the unit (pure: the generator
is passed in), with the engine of `core.pgg_conditions` (`summarize_games`).

From a condition's games (`core.commons_metrics.CommonsMetrics`) `commons_condition_summary`
gives one row (`COMMONS_CONDITION_COLUMNS`):

- survival: the share of games in which no season collapsed (Wilson with continuity
  correction, `share_interval`);
- time_to_collapse: the mean 0-based collapse season over the games that collapsed only
  (`collapsed_games` says how many; None when none did), in [0, horizon - 1];
- survival_months (GovSim's count, in [1, horizon]), efficiency (in [0, 1]), catch_gini (in
  [0, (N - 1) / N]) and group_sustainability_gap (unbounded, a sum over seasons): means of
  per-game values (`clipped_mean_intervals`);
- overuse_rate: requests above the sustainable share over agent-seasons, pooled over games
  (`ratio_interval`).

`exact` and `identical_games` as in `core.pgg_conditions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pdbench.core.commons import CommonsRules
from pdbench.core.commons_metrics import CommonsMetrics
from pdbench.core.exact import EXACT_COLUMN, IDENTICAL_COLUMN
from pdbench.core.metrics import CLIPPED_COLUMN
from pdbench.core.pgg_conditions import GameValue, MetricSpec, interval_ends, summarize_games
from pdbench.core.stats import (
    KIND_MEAN,
    KIND_POOLED_RATIO,
    KIND_SHARE,
    IntervalSettings,
)

COMMONS_METRIC_COLUMNS: tuple[str, ...] = (
    "survival",
    "time_to_collapse",  # over the games that collapsed only
    "survival_months",
    "efficiency",
    "catch_gini",
    "group_sustainability_gap",
    "overuse_rate",
)
COMMONS_CONDITION_COLUMNS: tuple[str, ...] = (
    "n_games",
    "collapsed_games",  # the games time_to_collapse is the mean of
    *COMMONS_METRIC_COLUMNS,
    *interval_ends(COMMONS_METRIC_COLUMNS),
    CLIPPED_COLUMN,
    EXACT_COLUMN,
    IDENTICAL_COLUMN,
)


def commons_metric_specs(
    rules: CommonsRules, n_seasons: int | None = None
) -> tuple[MetricSpec, ...]:
    """The specs of `COMMONS_METRIC_COLUMNS` under `rules` over a horizon of `n_seasons`
    (default `rules.n_seasons`)."""
    horizon = rules.n_seasons if n_seasons is None else n_seasons
    n = rules.n_agents
    return (
        MetricSpec("survival", KIND_SHARE),
        MetricSpec("time_to_collapse", KIND_MEAN, (0.0, float(horizon - 1))),
        MetricSpec("survival_months", KIND_MEAN, (1.0, float(horizon)), summed=True),
        MetricSpec("efficiency", KIND_MEAN),
        MetricSpec("catch_gini", KIND_MEAN, (0.0, (n - 1) / n)),
        MetricSpec("group_sustainability_gap", KIND_MEAN, None, summed=True),
        MetricSpec("overuse_rate", KIND_POOLED_RATIO),
    )


def commons_game_values(rules: CommonsRules, game: CommonsMetrics) -> dict[str, GameValue]:
    """One game's values of `COMMONS_METRIC_COLUMNS` (overuse as (requests over the share,
    agent-seasons))."""
    chances = game.overuse_chances or rules.n_agents * game.seasons_played
    return {
        "survival": 1.0 if game.survived else 0.0,
        "time_to_collapse": None if game.time_to_collapse is None else float(game.time_to_collapse),
        "survival_months": float(game.survival_months),
        "efficiency": game.efficiency,
        "catch_gini": game.catch_gini,
        "group_sustainability_gap": float(game.group_sustainability_gap),
        "overuse_rate": (float(round(game.overuse_rate * chances)), float(chances)),
    }


def commons_condition_summary(
    rules: CommonsRules,
    games: Sequence[CommonsMetrics],
    settings: IntervalSettings,
    rng: np.random.Generator,
    exact: bool = False,
    n_seasons: int | None = None,
) -> dict[str, Any]:
    """The row (`COMMONS_CONDITION_COLUMNS`) of one condition whose games were played under
    `rules` over a planned horizon of `n_seasons` (default `rules.n_seasons`): values and 95%
    intervals over games (see the module docstring). `rng`: the condition's generator; `exact`:
    the condition is deterministic by construction."""
    n = rules.n_agents
    if any(len(g.total_caught) != n for g in games):
        raise ValueError(f"every game needs {n} agents, as the rules say")
    horizon = rules.n_seasons if n_seasons is None else n_seasons
    if any(g.seasons_played > horizon for g in games):
        raise ValueError(f"a game played more seasons than the horizon of {horizon}")
    values = [commons_game_values(rules, g) for g in games]
    row = summarize_games(commons_metric_specs(rules, horizon), values, settings, rng, exact)
    row["collapsed_games"] = sum(not g.survived for g in games)
    return {c: row[c] for c in COMMONS_CONDITION_COLUMNS}
