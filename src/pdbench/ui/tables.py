"""Tables of metrics for the pages. Values come from aggregates.parquet (computed by
`pdbench.core.metrics`); only the spread over replicates (min, max, std) is computed here."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pdbench.ui.data import condition_row, replicate_row

# Aggregate column -> (label, kind); kind picks the number format.
METRICS: dict[str, tuple[str, str]] = {
    "n_rounds": ("rounds played", "count"),
    "agent_a_cooperation_rate": ("A cooperation rate", "rate"),
    "agent_b_cooperation_rate": ("B cooperation rate", "rate"),
    "overall_cooperation_rate": ("overall cooperation rate", "rate"),
    "agent_a_retaliation_rate": ("A retaliation rate", "rate"),
    "agent_b_retaliation_rate": ("B retaliation rate", "rate"),
    "agent_a_forgiveness_rate": ("A forgiveness rate", "rate"),
    "agent_b_forgiveness_rate": ("B forgiveness rate", "rate"),
    "agent_a_total_payoff": ("A total payoff", "payoff"),
    "agent_b_total_payoff": ("B total payoff", "payoff"),
    "agent_a_exploitability_payoff_gap": ("A exploitability gap (B − A)", "payoff"),
    "agent_b_exploitability_payoff_gap": ("B exploitability gap (A − B)", "payoff"),
    "time_to_collapse": ("time to collapse (0-based round)", "round"),
    "agent_a_parse_failures": ("A parse failures", "count"),
    "agent_b_parse_failures": ("B parse failures", "count"),
}


def format_value(value: Any, kind: str, compact: bool = False) -> str:
    """A metric value as text ('—' when missing); `compact` drops decimals of rates/payoffs."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "—"
    value = float(value)
    if kind == "rate":
        return f"{value:.0%}" if compact else f"{value:.1%}"
    if kind == "payoff":
        return f"{value:,.0f}" if compact else f"{value:,.1f}"
    return f"{value:,.1f}" if value != int(value) else f"{int(value):,}"


def metric_summary(aggregates: pd.DataFrame, condition: str, replicate: int) -> pd.DataFrame:
    """Per metric: this replicate's value, the condition mean (from the condition row) and the
    spread (min, max, std) over the condition's replicate rows; numbers, not text."""
    reps = aggregates[(aggregates["scope"] == "replicate") & (aggregates["condition"] == condition)]
    mine = replicate_row(aggregates, condition, replicate)
    mean_row = condition_row(aggregates, condition)
    records = []
    for column, (label, kind) in METRICS.items():
        if column not in aggregates.columns:
            continue
        values = pd.to_numeric(reps[column], errors="coerce")
        records.append(
            {
                "metric": column,
                "label": label,
                "kind": kind,
                "replicate": None if mine is None else mine[column],
                "condition_mean": None if mean_row is None else mean_row[column],
                "min": values.min(),
                "max": values.max(),
                "std": values.std(ddof=1) if values.notna().sum() > 1 else np.nan,
                "n_replicates": int(values.notna().sum()),
                "n_total": len(values),
            }
        )
    return pd.DataFrame.from_records(records)


def conditions_table(aggregates: pd.DataFrame) -> pd.DataFrame:
    """One row per condition (its mean over replicates), in the file's order."""
    rows = aggregates[aggregates["scope"] == "condition"]
    columns = ["condition", "agent_a_name", "agent_b_name", "n_replicates"] + [
        c for c in METRICS if c in rows.columns
    ]
    return rows[columns].reset_index(drop=True)
