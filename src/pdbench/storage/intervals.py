"""The intervals of a run's aggregates: the settings its manifest records, each condition's
generator (seeded from the run seed and the condition's name) and each condition's feasible
ranges (its MetricDesign, from the payoff matrix and the horizon)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pdbench.core.metrics import MetricDesign, add_intervals
from pdbench.core.rng import derive_seed
from pdbench.core.stats import DEFAULT_RESAMPLES, LEVEL, IntervalSettings


def interval_settings(manifest: dict[str, Any]) -> IntervalSettings:
    """The interval settings a run's manifest records (the run seed when it records none)."""
    recorded = manifest.get("intervals") or {}
    return IntervalSettings(
        resamples=int(recorded.get("resamples", DEFAULT_RESAMPLES)),
        level=float(recorded.get("level", LEVEL)),
        seed=int(recorded.get("seed", manifest.get("seed") or 0)),
    )


def interval_generators(settings: IntervalSettings) -> Callable[[str], np.random.Generator]:
    """The generator of each condition's intervals: seeded from the run seed and the
    condition's name (`derive_seed(seed, "intervals", condition)`)."""

    def generator_for(condition: str) -> np.random.Generator:
        return np.random.default_rng(derive_seed(settings.seed, "intervals", condition))

    return generator_for


def with_intervals(
    rows: list[dict[str, Any]],
    settings: IntervalSettings,
    designs: dict[str, MetricDesign] | None = None,
) -> list[dict[str, Any]]:
    """`rows` with the interval columns of every condition row (core.metrics.add_intervals),
    clipped to each condition's feasible ranges (`designs`, by condition name)."""
    found = designs or {}
    return add_intervals(rows, settings, interval_generators(settings), found.get)


def metric_designs(manifest: dict[str, Any]) -> dict[str, MetricDesign]:
    """Per condition of an experiment manifest: the payoff range of the matrix and the rounds
    its horizon allows (the bounds of its metrics); {} when the manifest does not say."""
    config = manifest.get("config") or {}
    matrix = (config.get("game") or {}).get("payoff_matrix") if isinstance(config, dict) else None
    try:
        payoffs = [float(v) for row in matrix.values() for pair in row.values() for v in pair]
    except (AttributeError, TypeError, ValueError):
        return {}
    if not payoffs:
        return {}
    out: dict[str, MetricDesign] = {}
    for condition in manifest.get("conditions") or []:
        try:
            out[str(condition["name"])] = design_of(
                min(payoffs), max(payoffs), condition.get("horizon") or {}
            )
        except (KeyError, TypeError, ValueError):
            continue
    return out


def design_of(payoff_min: float, payoff_max: float, horizon: dict[str, Any]) -> MetricDesign:
    """The MetricDesign of a condition from its payoff range and its horizon's settings."""
    if horizon.get("type") == "fixed":
        n = int(horizon["n_rounds"])
        return MetricDesign(payoff_min, payoff_max, n, n)
    most = horizon.get("max_rounds")
    return MetricDesign(payoff_min, payoff_max, 1, None if most is None else int(most))
