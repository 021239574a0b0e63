"""`pdbench compare RUN_DIR`: every condition of an experiment against a baseline condition for
one per-game metric, written to comparisons.parquet (method: core/compare.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pdbench.core.compare import contrast, holm
from pdbench.core.exact import flag, is_exact_row
from pdbench.core.metrics import (
    CONDITION_FLAGS,
    COUNT_COLUMNS,
    IDENTITY_COLUMNS,
    MetricDesign,
    comparable_metric,
    feasible_range,
)
from pdbench.core.rng import derive_seed
from pdbench.core.rounds_display import is_round_metric, metric_label, shown_value
from pdbench.core.talk_metrics import (
    DECLARED,
    RETIRED_TALK_METRICS,
    talk_metric_reading,
)
from pdbench.errors import RunError
from pdbench.storage.aggregate import aggregate_run_dir
from pdbench.storage.intervals import metric_designs
from pdbench.storage.parquet import numeric_columns, read_checked_rows
from pdbench.storage.run_dir import read_manifest
from pdbench.storage.schema import AGGREGATES_FILE, aggregates_arrow_schema
from pdbench.storage.strategy_fit import write_table
from pdbench.storage.talk_corpus import reader_accuracy_line

COMPARISONS_FILE = "comparisons.parquet"
DEFAULT_METRIC = "agent_a_cooperation_rate"
COLUMNS: tuple[tuple[str, str], ...] = (
    ("metric", "string"),
    ("baseline", "string"),
    ("condition", "string"),
    ("n_baseline", "int64"),
    ("n_condition", "int64"),
    ("baseline_mean", "float64"),
    ("condition_mean", "float64"),
    ("difference", "float64"),
    ("ci_low", "float64"),
    ("ci_high", "float64"),
    ("p_value", "float64"),
    ("p_holm", "float64"),
    ("method", "string"),
    ("exact", "bool"),
)


def per_game_metrics(rows: list[dict[str, Any]]) -> list[str]:
    """The metrics a comparison can use: numeric per-game columns of the replicate rows."""
    sample = next((r for r in rows if r.get("scope") == "replicate"), {})
    return [
        c
        for c, v in sample.items()
        if c not in IDENTITY_COLUMNS
        and c not in COUNT_COLUMNS
        and not c.endswith(("_ci_low", "_ci_high"))
        and c != "cooperation_rate_over_time"
        and c not in CONDITION_FLAGS
    ]


def comparison_rows(
    rows: list[dict[str, Any]],
    order: list[str],
    seed: int,
    metric: str = DEFAULT_METRIC,
    baseline: str | None = None,
    totals: bool = False,
    designs: dict[str, MetricDesign] | None = None,
) -> list[dict[str, Any]]:
    """One row per condition other than the baseline, Holm-adjusted together. A payoff total
    is compared per round when the conditions' horizons differ, unless `totals`. `designs`:
    each condition's metric bounds (from the manifest), for the intervals of constant games."""
    designs = designs or {}
    metrics = per_game_metrics(rows)
    if metric in RETIRED_TALK_METRICS:
        raise RunError(
            f"{metric!r} was split into what the agent said and what it declared (issue 29): "
            "use a said_ or declared_ metric, e.g. "
            f"{metric.replace(metric[8:], 'said_' + metric[8:])} (README: Talk)"
        )
    if metric not in metrics:
        raise RunError(f"unknown metric {metric!r} (valid: {', '.join(metrics)})")
    if not totals:
        rounds = {
            str(r["condition"]): r.get("n_rounds") for r in rows if r.get("scope") == "condition"
        }
        metric = comparable_metric(metric, rounds)
        if metric not in metrics:  # an aggregate written before payoffs per round existed
            raise RunError(
                f"{metric!r} is missing from the aggregates: run `pdbench aggregate` first"
            )
    games: dict[str, list[Any]] = {}
    for row in rows:
        if row.get("scope") == "replicate":
            games.setdefault(str(row["condition"]), []).append(row.get(metric))
    conditions = [c for c in order if c in games] + sorted(set(games) - set(order))
    baseline = baseline or conditions[0]
    if baseline not in games:
        raise RunError(f"unknown baseline condition {baseline!r} (valid: {', '.join(conditions)})")
    exact = {str(r["condition"]): is_exact_row(r) for r in rows if r.get("scope") == "condition"}
    out = []
    for condition in conditions:
        if condition == baseline:
            continue
        rng = np.random.default_rng(derive_seed(seed, "compare", metric, baseline, condition))
        bounds = (
            feasible_range(metric, designs.get(baseline)),
            feasible_range(metric, designs.get(condition)),
        )
        sides = (exact.get(baseline, False), exact.get(condition, False))
        result = contrast(games[baseline], games[condition], rng, bounds=bounds, exact=sides)
        out.append(contrast_row(metric, baseline, condition, result))
    return with_holm(out)


def contrast_row(metric: str, baseline: str, condition: str, result: Any) -> dict[str, Any]:
    """One row of comparisons.parquet (without p_holm) from a `core.compare.Contrast`."""
    return {
        "metric": metric,
        "baseline": baseline,
        "condition": condition,
        "n_baseline": result.n_baseline,
        "n_condition": result.n_condition,
        "baseline_mean": result.baseline_mean,
        "condition_mean": result.condition_mean,
        "difference": result.difference,
        "ci_low": result.ci_low,
        "ci_high": result.ci_high,
        "p_value": result.p_value,
        "method": result.method,
        "exact": result.exact,
    }


def with_holm(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with their Holm-adjusted p-values (adjusted together)."""
    for row, adjusted in zip(rows, holm([r["p_value"] for r in rows]), strict=True):
        row["p_holm"] = adjusted
    return rows


def read_aggregate_rows(run_dir: Path) -> list[dict[str, Any]]:
    """aggregates.parquet's rows (recomputed from rounds.jsonl when absent or older than the
    interval columns)."""
    path = Path(run_dir) / AGGREGATES_FILE
    rows = read_checked_rows(
        path, numeric_columns(aggregates_arrow_schema()), f"run `pdbench aggregate {run_dir}`"
    )
    if rows and "collapsed_fraction" in rows[0]:
        return rows
    return aggregate_run_dir(run_dir)


def compare_run(
    run_dir: Path, metric: str = DEFAULT_METRIC, baseline: str | None = None, totals: bool = False
) -> list[dict[str, Any]]:
    """Compare the conditions of an experiment run; write comparisons.parquet."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir, "experiment")
    rows = read_aggregate_rows(run_dir)
    order = [c["name"] for c in manifest.get("conditions", [])]
    seed = int(manifest.get("seed") or 0)
    designs = metric_designs(manifest)
    out = comparison_rows(rows, order, seed, metric, baseline, totals, designs)
    write_table(run_dir / COMPARISONS_FILE, out, COLUMNS)
    return out


def identical_games_notes(run_dir: Path, rows: list[dict[str, Any]]) -> list[str]:
    """Why the intervals of compared conditions whose games were all identical, although they
    could have differed, are wide (the run's lines and the report say the same)."""
    from pdbench.core.exact import identical_note, recorded_could_vary

    if not rows:
        return []
    names = {rows[0]["baseline"], *(r["condition"] for r in rows)}
    could_vary = recorded_could_vary(read_manifest(Path(run_dir), "experiment"))
    out = []
    for row in read_aggregate_rows(Path(run_dir)):
        if row.get("scope") == "condition" and row["condition"] in names:
            note = identical_note(row, could_vary.get(str(row["condition"]), ()))
            if note:
                out.append(f"note: {row['condition']}: {note}")
    return out


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:+.{digits}f}"


def _talk_note(metric: str) -> list[str]:
    """The line under a talk metric's heading: which reading it rests on, and the reader."""
    reading = talk_metric_reading(metric)
    if reading is None:
        return []
    if reading == DECLARED:
        return [f"({reading})"]
    return [f"({reading + '; ' if reading else ''}{reader_accuracy_line()})"]


def comparison_table(rows: list[dict[str, Any]]) -> str:
    """The terminal table (the means of a round-valued metric as rounds numbered from 1; a
    difference of rounds is the same either way)."""
    if not rows:
        return "(only one condition: nothing to compare)"
    head = rows[0]
    round_note = (
        [f"(means: the {metric_label(head['metric'])}, rounds numbered from 1)"]
        if is_round_metric(head["metric"])
        else []
    )
    lines = [
        f"{head['metric']}: each condition minus {head['baseline']!r} (games as the unit)",
        *(
            ["(payoffs per round: the conditions' horizons differ; --totals compares totals)"]
            if head["metric"].endswith("_payoff_per_round")
            else []
        ),
        *round_note,
        *_talk_note(head["metric"]),
        f"{'condition':28} {'n':>4} {'mean':>8} {'difference [95% CI]':>30} {'p':>8} {'p (Holm)':>9}",
    ]
    for row in rows:
        ci = "" if row["ci_low"] is None else f" [{_num(row['ci_low'])}, {_num(row['ci_high'])}]"
        difference = _num(row["difference"])
        if flag(row.get("exact")):
            difference, ci = ("0" if row["difference"] == 0 else difference), " (exact)"
        mean_value = shown_value(head["metric"], row["condition_mean"])
        mean = "-" if mean_value is None else f"{mean_value:.3f}"
        p = "-" if row["p_value"] is None else f"{row['p_value']:.4f}"
        ph = "-" if row["p_holm"] is None else f"{row['p_holm']:.4f}"
        lines.append(
            f"{row['condition'][:28]:28} {row['n_condition']:>4} {mean:>8} "
            f"{difference + ci:>30} {p:>8} {ph:>9}"
        )
    if any(flag(row.get("exact")) for row in rows):
        lines.append(
            "(exact: both conditions deterministic by construction, every game the same game; "
            "the difference is exact, with no interval or p-value)"
        )
    return "\n".join(lines)
