"""Tables of metrics for the pages. Values come from aggregates.parquet (computed by
`pdbench.core.metrics`); only the spread over replicates (min, max, std) is computed here.
Tournament and evolution tables reshape leaderboard.parquet and generations.parquet for display."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pdbench.ui.data import condition_row, replicate_row
from pdbench.ui.games_data import Player
from pdbench.ui.style import medal

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


def leaderboard_table(board: pd.DataFrame, players: Sequence[Player]) -> pd.DataFrame:
    """leaderboard.parquet for display: medal, player label, then the library's columns."""
    by_name = {p.name: p for p in players}
    return pd.DataFrame(
        {
            "rank": [medal(r) for r in board["rank"]],
            "player": [by_name[str(n)].label for n in board["player"]],
            "score_per_round": board["mean_score_per_round"].to_numpy(),
            "ci95": [
                "—" if pd.isna(lo) or pd.isna(hi) else f"{lo:.2f} – {hi:.2f}"
                for lo, hi in zip(board["ci95_low"], board["ci95_high"], strict=True)
            ],
            "wins": board["wins"].to_numpy(),
            "draws": board["draws"].to_numpy(),
            "losses": board["losses"].to_numpy(),
            "matches": board["matches"].to_numpy(),
            "cooperation_rate": board["cooperation_rate"].to_numpy(),
            "name": board["player"].astype(str).to_numpy(),
        }
    )


def final_shares_table(
    first: pd.DataFrame, last: pd.DataFrame, players: Sequence[Player]
) -> pd.DataFrame:
    """Per strategy (rows of generations.parquet): initial and final count, final share and mean
    fitness, largest final share first."""
    by_name = {p.name: p for p in players}
    start = dict(zip(first["strategy"].astype(str), first["count"], strict=True))
    table = pd.DataFrame(
        {
            "strategy": [by_name[str(n)].label for n in last["strategy"]],
            "start": [int(start.get(str(n), 0)) for n in last["strategy"]],
            "count": last["count"].astype(int).to_numpy(),
            "share": last["share"].to_numpy(),
            "mean_fitness": last["mean_fitness"].to_numpy(),
            "name": last["strategy"].astype(str).to_numpy(),
        }
    )
    return table.sort_values(["count", "start"], ascending=False, kind="stable").reset_index(
        drop=True
    )
