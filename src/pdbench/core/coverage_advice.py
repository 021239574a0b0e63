"""Where the 95% intervals are known to cover less than 95% (pure): the designs
`benchmarks/coverage.py` measured short, said beside a condition of that design (the report's
warnings, the line `pdbench run` prints). The figures are the benchmark's (its README table);
an exact condition (core/exact.py) has no interval to fall short.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pdbench.core.exact import is_exact_row
from pdbench.core.stats import SMALL_SAMPLE_GAMES

# Games per condition from which a geometric horizon's intervals cover 93% or more in every
# measured design, an LLM-like agent's included (fixed horizons: 93% or more from 2 games).
GEOMETRIC_ENOUGH_GAMES = 10
# Measured by `benchmarks/coverage.py` (1,000 conditions a design, Monte Carlo SE about 1
# point): the cooperation rate of the mock's cooperative persona against TFT, stop_prob 0.1.
LLM_LIKE_GEOMETRIC = "88.9% at 6 games, 91.1% at 8, 94.2% at 10"
# ... and at 2-4 games (Student-t): payoff totals and rounds, GTFT against RANDOM, stop 0.3.
FEW_GAMES_GEOMETRIC = "87-91% for payoff totals and rounds at 4 games"


def coverage_warning(games: int, horizon_type: str, exact: bool = False) -> str | None:
    """Where the benchmark measured coverage below 93% for a condition of `games` games on
    this horizon (None otherwise: a fixed horizon, 10 or more games, 1 game, which has no
    interval, or an exact condition, which needs none)."""
    if exact or games < 2 or horizon_type == "fixed" or games >= GEOMETRIC_ENOUGH_GAMES:
        return None
    measured = (
        FEW_GAMES_GEOMETRIC
        if games < SMALL_SAMPLE_GAMES
        else f"{LLM_LIKE_GEOMETRIC} for the cooperation rate of an LLM-like agent (the mock's "
        "cooperative persona against TFT, stop_prob 0.1)"
    )
    return (
        f"{games} games on a geometric horizon: the 95% intervals may cover less than 95% "
        f"(measured {measured}); use {GEOMETRIC_ENOUGH_GAMES} or more games"
    )


def coverage_warnings(
    manifest_conditions: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
) -> list[tuple[str, str]]:
    """(condition, `coverage_warning`) for each condition of a run whose design the benchmark
    measured short: its games (the condition row's `n_replicates`), its horizon (the
    manifest's) and whether it is exact (the row's `exact`)."""
    by_name = {str(r["condition"]): r for r in rows if r.get("scope") == "condition"}
    out = []
    for condition in manifest_conditions:
        if not isinstance(condition, Mapping):
            continue
        row = by_name.get(str(condition.get("name")))
        horizon = condition.get("horizon")
        if row is None or not isinstance(horizon, Mapping):
            continue
        games = int(row.get("n_replicates") or 0)
        warning = coverage_warning(games, str(horizon.get("type")), is_exact_row(row))
        if warning:
            out.append((str(row["condition"]), warning))
    return out
