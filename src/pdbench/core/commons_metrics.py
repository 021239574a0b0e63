"""Metrics of one commons game (`core.commons`): survival, collapse, sustainability, inequality.

Of the seasons `run_commons` played (it stops at the collapse season, as GovSim does):

- survived: no season collapsed. time_to_collapse: the 0-based index of the collapse season,
  None when the group survived. survival_months: GovSim's count (`compute_survival_months_stats`
  in its `simulation/analysis/plots.py`): time_to_collapse + 1, or the seasons played.
- sustainability gap: against GovSim's threshold at each season's stock, share_t =
  (S_t // 2) // N. Per agent: sum over seasons of (caught - share_t); for the group: sum over
  seasons of (total caught - floor(S_t / 2)), the most a group can take and find S_t again
  (`sustainable_total`). Positive is over-harvest. overuse_rate: the share of the (agent,
  season) requests above share_t, over the seasons each agent was present (an outsider's
  seasons before it arrives are no chance, nor a share it fell short of), and N is `sharing`: GovSim's threshold counts its configured
  agents, not the outsider (4 of 5).
- catch_gini: the population Gini of the agents' total catches (`group_metrics.gini`; 0 when all
  caught the same, nothing caught included).
- harvest_ratio: the total caught over the maximum sustainable total of the planned horizon,
  n_seasons * floor(C / 2) for doubling (a full lake each season, harvested to half); 1 for the
  sustainable policy over the whole horizon, above 1 possible for a short over-harvest.
  efficiency: it capped at 1.
Pure: no I/O, no randomness.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pdbench.core.commons import CommonsRules, SeasonResult, sustainable_catch, sustainable_total
from pdbench.core.group_metrics import gini


@dataclass(frozen=True, slots=True)
class CommonsMetrics:
    """The metrics of one commons game (see the module docstring)."""

    seasons_played: int
    survived: bool
    time_to_collapse: int | None
    survival_months: int
    total_caught: tuple[int, ...]
    sustainability_gap: tuple[int, ...]
    group_sustainability_gap: int
    overuse_rate: float
    catch_gini: float | None
    harvest_ratio: float | None
    efficiency: float | None
    overuse_chances: int = 0  # the agent-seasons overuse_rate is over (present agents only)


def commons_metrics(
    rules: CommonsRules,
    seasons: Sequence[SeasonResult],
    n_seasons: int | None = None,
    sharing: int | None = None,
    present: Sequence[Sequence[bool]] | None = None,
) -> CommonsMetrics:
    """The metrics of the seasons of one game; `n_seasons` (default `rules.n_seasons`) is the
    planned horizon that harvest_ratio is measured against; `sharing` (default N) the agents
    GovSim's sustainable share divides the stock among; `present` (per season, per agent;
    default all) who was in the lake: an outsider's seasons before it arrives are no chance
    to overuse and no share it fell short of."""
    if not seasons:
        raise ValueError("a commons game needs at least one season")
    if any(len(s.caught) != rules.n_agents for s in seasons):
        raise ValueError(f"every season needs {rules.n_agents} catches, one per agent")
    horizon = rules.n_seasons if n_seasons is None else n_seasons
    if horizon < len(seasons):
        raise ValueError(f"n_seasons must be at least the {len(seasons)} played (got {horizon})")
    collapse = next((t for t, s in enumerate(seasons) if s.collapsed), None)
    n = rules.n_agents
    totals = [sum(s.caught[i] for s in seasons) for i in range(n)]
    shares = [sustainable_catch(s.stock, sharing or n) for s in seasons]
    here = [tuple(p) for p in present] if present is not None else [(True,) * n] * len(seasons)
    if len(here) != len(seasons) or any(len(p) != n for p in here):
        raise ValueError(f"present needs one entry per season, each with {n} agents")
    gap = [
        totals[i] - sum(share for share, p in zip(shares, here, strict=True) if p[i])
        for i in range(n)
    ]
    group_gap = sum(sum(s.caught) - sustainable_total(s.stock, rules.growth) for s in seasons)
    over = sum(
        r > share and p[i]
        for s, share, p in zip(seasons, shares, here, strict=True)
        for i, r in enumerate(s.requested)
    )
    chances = sum(sum(p) for p in here)
    best = horizon * sustainable_total(rules.capacity, rules.growth)
    ratio = sum(totals) / best if best > 0 else None
    return CommonsMetrics(
        seasons_played=len(seasons),
        survived=collapse is None,
        time_to_collapse=collapse,
        survival_months=len(seasons) if collapse is None else collapse + 1,
        total_caught=tuple(totals),
        sustainability_gap=tuple(gap),
        group_sustainability_gap=group_gap,
        overuse_rate=over / chances if chances else 0.0,
        catch_gini=gini(totals),
        harvest_ratio=ratio,
        efficiency=None if ratio is None else min(1.0, ratio),
        overuse_chances=chances,
    )
