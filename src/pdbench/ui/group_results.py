"""The results of a groups run (the 🫂 Groups tab's Results view): every condition's group
cooperation and payoff inequality (Gini) with their 95% intervals, then for the chosen
condition each seat's cooperation and payoff with intervals, the group's cooperation over
rounds with its band, and P(C | k others cooperated in the previous round).

Everything drawn is read from the run's tables (aggregates.parquet, seats.parquet,
group_rounds.parquet, group_conditional.parquet, written by `pdbench.storage.group_aggregate`;
columns from `pdbench.core.group_conditions`): nothing is recomputed. A run without them gets a
one-line note saying how to write them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from pdbench.core import rounds_display
from pdbench.core.exact import EXACT_NOTE, is_exact_row
from pdbench.core.talk_metrics import TALK_LABELS
from pdbench.storage.group_aggregate import (
    AGGREGATES_FILE,
    GROUP_CONDITIONAL_FILE,
    GROUP_ROUNDS_FILE,
    SEATS_FILE,
)
from pdbench.ui import data, group_charts, group_data, science
from pdbench.ui.components import show_error, text_column_width
from pdbench.ui.group_data import GroupCondition, seat_label

# Condition metrics shown (aggregates.parquet column -> label, kind: rate, payoff, ratio, round).
CONDITION_METRICS: dict[str, tuple[str, str]] = {
    "group_cooperation_rate": ("group cooperation", "rate"),
    "group_payoff_per_round": ("payoff per seat and round", "payoff"),
    "efficiency": ("efficiency (payoff / all-C payoff)", "ratio"),
    "payoff_gini": ("payoff inequality (Gini)", "ratio"),
    "collapsed_fraction": ("games that collapsed", "rate"),
    "time_to_collapse": (rounds_display.metric_label("time_to_collapse"), "round"),
}
# Shorter labels for the metric cards (their full label is the card's tooltip).
CARD_LABELS = {
    "group_cooperation_rate": "🤝 group cooperation",
    "group_payoff_per_round": "💰 payoff / seat / round",
    "efficiency": "⚙️ efficiency",
    "payoff_gini": "⚖️ Gini",
    "collapsed_fraction": "📉 collapsed games",
    "time_to_collapse": "📉 collapse at",
}
# Talk per seat (seats.parquet of a talking condition), labelled as pairwise talk metrics are.
TALK_SEAT_METRICS = (
    "messages",
    "said_promise_rate",
    "said_promise_kept_rate",
    "said_deception_rate",
)
SEAT_METRICS: dict[str, tuple[str, str]] = {
    "cooperation_rate": ("cooperation", "rate"),
    "payoff_per_round": ("payoff per round", "payoff"),
    "total_payoff": ("total payoff", "payoff"),
    "partners_payoff_per_round": ("co-players' payoff per round", "payoff"),
}


def fmt(value: Any, kind: str) -> str:
    """A value as shown: rates in percent, round-valued metrics numbered from 1, '—' missing."""
    if value is None or pd.isna(value):
        return "—"
    value = float(value)
    if kind == "rate":
        return f"{100 * value:.1f}%"
    if kind == "round":
        return f"round {value + rounds_display.FIRST_ROUND:.3g}"
    return f"{value:.3g}" if kind == "ratio" else f"{value:.2f}"


def with_interval(row: Mapping[str, Any], column: str, kind: str) -> str:
    """'62.5% [51.0%, 73.2%]': a condition row's value and its 95% interval ('(exact)' for an
    exact condition, no interval when the row has none)."""
    text = fmt(row.get(column), kind)
    low, high = row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high")
    if text == "—" or low is None or high is None or pd.isna(low) or pd.isna(high):
        return text
    if is_exact_row(row):
        return f"{text} ({EXACT_NOTE})"
    return f"{text} [{fmt(low, kind)}, {fmt(high, kind)}]"


def interval_frame(
    rows: pd.DataFrame, column: str, kind: str, labels: Sequence[str]
) -> pd.DataFrame:
    """One row per label (a condition or a seat): the value of `column`, its interval and their
    text, from `rows` (one row per label, in `labels`' order)."""
    shift = rounds_display.FIRST_ROUND if kind == "round" else 0
    out = []
    for label, (_, row) in zip(labels, rows.iterrows(), strict=True):
        value, low, high = (row.get(c) for c in (column, f"{column}_ci_low", f"{column}_ci_high"))
        known = value is not None and pd.notna(value)
        has_ci = known and low is not None and high is not None and pd.notna(low) and pd.notna(high)
        out.append(
            {
                "label": label,
                "value": float(value) + shift if known else None,
                "low": float(low) + shift if has_ci else None,
                "high": float(high) + shift if has_ci else None,
                "games": int(row.get("n_replicates") or 0),
                "text": with_interval(row, column, kind),
            }
        )
    return pd.DataFrame(out, columns=["label", "value", "low", "high", "games", "text"])


def condition_rows(table: pd.DataFrame, conditions: Sequence[str]) -> pd.DataFrame:
    """A table's condition rows (scope "condition"), one per condition in `conditions`' order
    (conditions without a row left out)."""
    rows = table[table["scope"] == "condition"] if "scope" in table.columns else table
    rows = rows.drop_duplicates("condition").set_index("condition", drop=False)
    return rows.loc[[c for c in conditions if c in rows.index]]


def seat_rows(seats: pd.DataFrame, condition: str) -> pd.DataFrame:
    """The condition rows of seats.parquet for one condition, in seat order."""
    rows = seats[(seats["condition"] == condition) & (seats["scope"] == "condition")]
    return rows.sort_values("seat", kind="stable")  # random groups: agents, seat null


def given_k_frame(conditional: pd.DataFrame, condition: str) -> pd.DataFrame:
    """P(C | k) of one condition (its scope "condition" rows): k, value, low, high, rounds."""
    rows = conditional[
        (conditional["condition"] == condition) & (conditional["scope"] == "condition")
    ].sort_values("k")
    return pd.DataFrame(
        {
            "k": rows["k"].astype(int).to_numpy(),
            "value": rows["p_coop_given_k"].to_numpy(dtype=float),
            "low": rows["p_coop_given_k_ci_low"].to_numpy(dtype=float),
            "high": rows["p_coop_given_k_ci_high"].to_numpy(dtype=float),
            "rounds": rows["cases"].astype(int).to_numpy(),
        }
    )


def render(
    path: str,
    manifest: Mapping[str, Any],
    conditions: Sequence[GroupCondition],
    condition: GroupCondition,
) -> None:
    """Draw the results of a groups run, the chosen condition in detail."""
    try:
        tables = {name: group_data.load_table(path, name) for name in group_data.TABLES}
    except data.RunLoadError as exc:
        show_error(exc)
        return
    missing = [name for name, table in tables.items() if table is None]
    if missing:
        st.info(
            f"This run has no {', '.join(missing)} yet: run `pdbench aggregate "
            f"{Path(path)}` to write its metrics, then open it again.",
            icon="📐",
        )
        return
    aggregates, seats = tables[AGGREGATES_FILE], tables[SEATS_FILE]
    names = [c.name for c in conditions]
    _overview(aggregates, conditions)
    _across(aggregates, names)
    st.subheader(f"🔎 {condition.name}")
    st.caption(group_data.describe(condition))
    _headline(aggregates, condition.name)
    _seats(seats, condition)
    left, right = st.columns(2, gap="large")
    with left:
        _over_rounds(tables[GROUP_ROUNDS_FILE], condition.name)
    with right:
        _given_k(tables[GROUP_CONDITIONAL_FILE], condition)
    for note in science.exactness_notes(aggregates, dict(manifest), [condition.name]):
        st.caption(note)


def _overview(aggregates: pd.DataFrame, conditions: Sequence[GroupCondition]) -> None:
    st.subheader("🧮 Conditions")
    rows = condition_rows(aggregates, [c.name for c in conditions])
    by_name = {c.name: c for c in conditions}
    table = pd.DataFrame(
        {
            "condition": rows["condition"],
            "game": [by_name[c].game_label for c in rows["condition"]],
            "games": rows["n_replicates"].astype(int),
            **{
                label: [with_interval(r, column, kind) for _, r in rows.iterrows()]
                for column, (label, kind) in CONDITION_METRICS.items()
                if column in rows.columns
            },
            "seats": [by_name[c].members() for c in rows["condition"]],
        }
    )
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={
            c: st.column_config.TextColumn(c, width=text_column_width([*table[c], c]))
            for c in table.columns
            if c != "games"
        },
    )
    st.caption(
        "Means over each condition's games with 95% intervals, the game as the unit; from "
        "aggregates.parquet."
    )


def _across(aggregates: pd.DataFrame, names: Sequence[str]) -> None:
    rows = condition_rows(aggregates, names)
    left, right = st.columns(2, gap="large")
    for column, box in (("group_cooperation_rate", left), ("payoff_gini", right)):
        if column not in rows.columns:
            continue
        label, kind = CONDITION_METRICS[column]
        frame = interval_frame(rows, column, kind, list(rows["condition"]))
        with box:
            st.altair_chart(
                group_charts.interval_chart(frame, label, kind == "rate", "condition"),
                width="stretch",
            )


def _headline(aggregates: pd.DataFrame, name: str) -> None:
    rows = condition_rows(aggregates, [name])
    if rows.empty:
        st.info(f"aggregates.parquet has no row of {name}.")
        return
    row = rows.iloc[0]
    shown = [c for c in CONDITION_METRICS if c in rows.columns]
    boxes = [box for _ in range(0, len(shown), 3) for box in st.columns(3)]  # rows of three
    for column, box in zip(shown, boxes, strict=False):
        label, kind = CONDITION_METRICS[column]
        text = with_interval(row, column, kind)
        value, _, interval = text.partition(" ")
        if kind == "round":
            value, _, interval = text.partition(" [")
            interval = f"[{interval}" if interval else ""
        box.metric(
            CARD_LABELS.get(column, label),
            value,
            delta=interval or None,
            delta_color="off",
            delta_arrow="off",
            border=True,
            help=f"{label}: the mean over the condition's games and its 95% interval "
            f"(`{column}` of aggregates.parquet)",
        )


def _seats(seats: pd.DataFrame, condition: GroupCondition) -> None:
    rows = seat_rows(seats, condition.name)
    if rows.empty:
        st.info(f"seats.parquet has no row of {condition.name}.")
        return
    labels = [
        str(n) if pd.isna(s) else seat_label(int(s), str(n))
        for s, n in zip(rows["seat"], rows["name"], strict=True)
    ]
    who = "agent (groups drawn at random)" if condition.matching == "random" else "seat"
    st.markdown(f"**🪑 Each {who}, with 95% intervals**")
    left, right = st.columns(2, gap="large")
    for column, box in (("cooperation_rate", left), ("payoff_per_round", right)):
        label, kind = SEAT_METRICS[column]
        frame = interval_frame(rows, column, kind, labels)
        with box:
            st.altair_chart(
                group_charts.interval_chart(frame, label, kind == "rate", who), width="stretch"
            )
    table = pd.DataFrame(
        {
            "seat": labels,
            **{
                label: [with_interval(r, column, kind) for _, r in rows.iterrows()]
                for column, (label, kind) in SEAT_METRICS.items()
                if column in rows.columns
            },
        }
    )
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption(
        "Means over the condition's games, 95% intervals with the game as the unit; from "
        "seats.parquet."
    )
    if condition.talks:
        _talk(rows, labels)


def _talk(rows: pd.DataFrame, labels: Sequence[str]) -> None:
    """Each seat's talk: messages written, and what its words said against what it did."""
    shown = [c for c in TALK_SEAT_METRICS if c in rows.columns and rows[c].notna().any()]
    if not shown:
        return
    st.markdown("**💬 What each seat said and did**")
    table = pd.DataFrame(
        {
            "seat": labels,
            **{
                TALK_LABELS[c][0]: [
                    with_interval(r, c, "rate" if TALK_LABELS[c][1] == "rate" else "ratio")
                    for _, r in rows.iterrows()
                ]
                for c in shown
            },
        }
    )
    st.dataframe(table, hide_index=True, width="stretch")
    from pdbench.storage.talk_corpus import reader_accuracy_line

    st.caption(
        "Messages: all the seat wrote in the condition's games. Rates: pooled over the games "
        "(every promise of the seat together), with 95% intervals that treat the game as the "
        "unit. A promise is a message that says the seat will play C, read from its words "
        f"({reader_accuracy_line()}). From seats.parquet."
    )


def _over_rounds(rounds: pd.DataFrame, name: str) -> None:
    st.markdown("**📈 Group cooperation over rounds**")
    rows = rounds[rounds["condition"] == name].sort_values("round")
    if rows.empty:
        st.info(f"group_rounds.parquet has no row of {name}.")
        return
    st.altair_chart(
        group_charts.band_chart(
            rows["cooperation"].tolist(),
            rows["cooperation_ci_low"].tolist(),
            rows["cooperation_ci_high"].tolist(),
            "share cooperating",
        ),
        width="stretch",
    )
    st.caption(
        "Mean over the games that reached each round, grey band its 95% interval (games as the "
        f"unit); from group_rounds.parquet. {rounds_display.NUMBERING_NOTE}"
    )


def _given_k(conditional: pd.DataFrame, condition: GroupCondition) -> None:
    st.markdown("**🔁 P(cooperate | k others cooperated last round)**")
    frame = given_k_frame(conditional, condition.name)
    if frame.empty:
        st.info(f"group_conditional.parquet has no row of {condition.name}.")
        return
    st.altair_chart(group_charts.given_k_chart(frame, condition.n_players), width="stretch")
    st.caption(
        "Pooled over the condition's seats and games: the share of moves that were C among "
        f"those after k of the seat's {condition.n_players - 1} co-players cooperated; whiskers "
        "are 95% intervals over games (hover for the number of such moves). From "
        "group_conditional.parquet."
    )
