"""`pdbench compare RUN_DIR` of a public goods (pgg) or commons run: every condition against a
baseline condition, for each condition metric of aggregates.parquet (or the one `--metric`
names), with the method of `core/compare.py` (difference of means over games, the game as the
unit: the hull of a bootstrap over games and MOVER as the 95% interval, a permutation p-value),
Holm-adjusted over the contrasts of each metric (one family a metric, as `pdbench compare` of
one metric adjusts over its contrasts). Written to comparisons.parquet (the columns of an
experiment's comparisons).

The per-game values are those aggregates.parquet summarizes (`storage.resource_aggregate.
resource_game_values`, from rounds.jsonl). A pooled ratio (free riding, retaliation, antisocial
punishment, overuse) is compared as the mean of its per-game rates (acts over chances in each
game; a game without a chance is left out), so its means here can differ from the pooled value
of aggregates.parquet; the method column says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pdbench.core.commons import CommonsRules
from pdbench.core.commons_conditions import COMMONS_METRIC_COLUMNS, commons_metric_specs
from pdbench.core.compare import contrast
from pdbench.core.pgg import PGGRules
from pdbench.core.pgg_conditions import PGG_METRIC_COLUMNS, GameValue, pgg_metric_specs
from pdbench.core.rng import derive_seed
from pdbench.core.stats import KIND_POOLED_RATIO, Bounds
from pdbench.errors import RunError
from pdbench.storage.resource_aggregate import resource_game_values, rules_from_manifest
from pdbench.storage.run_dir import read_manifest
from pdbench.storage.strategy_fit import write_table

RESOURCE_KINDS = ("pgg", "commons")
POOLED_NOTE = "mean of per-game rates (aggregates.parquet pools acts over chances)"


def resource_metrics(kind: str) -> tuple[str, ...]:
    """The comparable metrics of a resource run of this kind, in the aggregates' order."""
    return PGG_METRIC_COLUMNS if kind == "pgg" else COMMONS_METRIC_COLUMNS


def game_number(value: GameValue) -> float | None:
    """A game's value as one number: a pooled ratio's (acts, chances) as acts / chances (None
    without a chance)."""
    if isinstance(value, tuple):
        acts, chances = value
        return float(acts) / float(chances) if chances else None
    return None if value is None else float(value)


def _specs(rules: PGGRules | CommonsRules) -> dict[str, tuple[str, Bounds | None]]:
    """Each metric's kind and feasible range under `rules` (None: unbounded)."""
    specs = pgg_metric_specs(rules) if isinstance(rules, PGGRules) else commons_metric_specs(rules)
    out: dict[str, tuple[str, Bounds | None]] = {}
    for spec in specs:
        bounds = spec.bounds
        if bounds is not None and not all(np.isfinite(bounds)):
            bounds = None
        out[spec.column] = (spec.kind, bounds)
    return out


def compare_resource_run(
    run_dir: Path, metric: str | None = None, baseline: str | None = None
) -> list[dict[str, Any]]:
    """Compare the conditions of a pgg or commons run on each metric (or on `metric`) against
    `baseline` (default: the first condition); write comparisons.parquet; return its rows."""
    from pdbench.runners.science.compare import (
        COLUMNS,
        COMPARISONS_FILE,
        contrast_row,
        with_holm,
    )
    from pdbench.storage.run_dir import run_kind

    run_dir = Path(run_dir)
    kind = run_kind(run_dir)
    if kind not in RESOURCE_KINDS:
        raise RunError(f"{run_dir}: a {kind} run, not a public goods or commons run")
    manifest = read_manifest(run_dir, kind)
    metrics = resource_metrics(kind)
    if metric is not None and metric not in metrics:
        raise RunError(f"unknown {kind} metric {metric!r} (valid: {', '.join(metrics)})")
    chosen = (metric,) if metric else metrics
    values = resource_game_values(run_dir, manifest)
    conditions = list(values)
    baseline = baseline or conditions[0]
    if baseline not in values:
        raise RunError(f"unknown baseline condition {baseline!r} (valid: {', '.join(conditions)})")
    entries = {str(c["name"]): c for c in manifest["conditions"]}
    specs = {c: _specs(rules_from_manifest(kind, entries[c])) for c in conditions}
    exact = {c: bool(entries[c].get("exact")) for c in conditions}
    seed = int(manifest.get("seed") or 0)
    out: list[dict[str, Any]] = []
    for name in chosen:
        family = []
        for condition in conditions:
            if condition == baseline:
                continue
            rng = np.random.default_rng(derive_seed(seed, "compare", name, baseline, condition))
            result = contrast(
                [game_number(g[name]) for g in values[baseline]],
                [game_number(g[name]) for g in values[condition]],
                rng,
                bounds=(specs[baseline][name][1], specs[condition][name][1]),
                exact=(exact[baseline], exact[condition]),
            )
            row = contrast_row(name, baseline, condition, result)
            if specs[baseline][name][0] == KIND_POOLED_RATIO:
                row["method"] = f"{row['method']}; {POOLED_NOTE}"
            family.append(row)
        out.extend(with_holm(family))
    write_table(run_dir / COMPARISONS_FILE, out, COLUMNS)
    return out


def resource_comparison_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The terminal tables of `compare_resource_run`'s rows, one block a metric."""
    from pdbench.runners.science.compare import comparison_table

    if not rows:
        return ["(only one condition: nothing to compare)"]
    lines: list[str] = []
    for name in dict.fromkeys(r["metric"] for r in rows):
        lines.append(comparison_table([r for r in rows if r["metric"] == name]))
        lines.append("")
    lines.append(
        "p (Holm): adjusted over the contrasts of each metric. Pooled ratios are compared as "
        f"the {POOLED_NOTE}."
    )
    return lines
