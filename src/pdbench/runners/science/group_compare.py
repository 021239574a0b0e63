"""`pdbench compare RUN_DIR` of a groups run: every condition against a baseline condition for
one per-game group metric (the method of `core/compare.py`: the difference of means with a
bootstrap interval, games as the unit, and a permutation p-value, Holm-adjusted), written to
comparisons.parquet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pdbench.core.compare import contrast
from pdbench.core.exact import is_exact_row
from pdbench.core.group_conditions import GROUP_AGGREGATE_COLUMNS
from pdbench.core.group_metrics import GROUP_METRIC_COLUMNS, group_feasible_range
from pdbench.core.rng import derive_seed
from pdbench.errors import RunError
from pdbench.storage.group_aggregate import group_game_of, group_schema
from pdbench.storage.parquet import numeric_columns, read_checked_rows
from pdbench.storage.run_dir import read_manifest
from pdbench.storage.schema import AGGREGATES_FILE
from pdbench.storage.strategy_fit import write_table

DEFAULT_GROUP_METRIC = "group_cooperation_rate"
# The per-game metrics a comparison of groups can use (n_rounds is the design, not a result).
GROUP_COMPARABLE = tuple(c for c in GROUP_METRIC_COLUMNS if c != "n_rounds")


def compare_group_run(
    run_dir: Path, metric: str | None = None, baseline: str | None = None
) -> list[dict[str, Any]]:
    """Compare the conditions of a groups run on one metric; write comparisons.parquet (the
    columns of an experiment's comparisons)."""
    from pdbench.runners.science.compare import (
        COLUMNS,
        COMPARISONS_FILE,
        contrast_row,
        with_holm,
    )

    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir, "groups")
    metric = metric or DEFAULT_GROUP_METRIC
    if metric not in GROUP_COMPARABLE:
        raise RunError(f"unknown group metric {metric!r} (valid: {', '.join(GROUP_COMPARABLE)})")
    rows = read_checked_rows(
        run_dir / AGGREGATES_FILE,
        numeric_columns(group_schema(GROUP_AGGREGATE_COLUMNS)),
        f"run `pdbench aggregate {run_dir}`",
    )
    games: dict[str, list[Any]] = {}
    for row in rows:
        if row.get("scope") == "replicate":
            games.setdefault(str(row["condition"]), []).append(row.get(metric))
    entries = {str(c["name"]): c for c in manifest.get("conditions") or []}
    conditions = [c for c in entries if c in games]
    if not conditions:
        raise RunError(f"{run_dir / AGGREGATES_FILE}: no games; run `pdbench aggregate {run_dir}`")
    baseline = baseline or conditions[0]
    if baseline not in games:
        raise RunError(f"unknown baseline condition {baseline!r} (valid: {', '.join(conditions)})")
    exact = {str(r["condition"]): is_exact_row(r) for r in rows if r.get("scope") == "condition"}
    seed = int(manifest.get("seed") or 0)

    def bounds(condition: str) -> Any:
        try:
            return group_feasible_range(metric, group_game_of(entries[condition]))
        except (KeyError, TypeError, ValueError):
            return None

    out = []
    for condition in conditions:
        if condition == baseline:
            continue
        rng = np.random.default_rng(derive_seed(seed, "compare", metric, baseline, condition))
        result = contrast(
            games[baseline],
            games[condition],
            rng,
            bounds=(bounds(baseline), bounds(condition)),
            exact=(exact.get(baseline, False), exact.get(condition, False)),
        )
        out.append(contrast_row(metric, baseline, condition, result))
    with_holm(out)
    write_table(run_dir / COMPARISONS_FILE, out, COLUMNS)
    return out
