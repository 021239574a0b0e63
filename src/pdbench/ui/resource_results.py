"""The results of a resource run (the 🫂 Groups tab's Results view for a "pgg" or "commons"
run): every condition's metrics with 95% intervals (the game as the unit), then for the chosen
condition its series over rounds with their bands (contribution rate and punishment spent; the
stock over seasons with the collapse threshold and the share of games still going) and each
seat's metrics.

Everything drawn is read from the run's tables (aggregates.parquet, resource_rounds.parquet,
resource_seats.parquet, written by `pdbench.storage.resource_aggregate`): nothing is recomputed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from pdbench.core.exact import EXACT_NOTE, identical_note, is_exact_row
from pdbench.storage.integer_replies import integer_reader_line
from pdbench.storage.schema import AGGREGATES_FILE, RESOURCE_ROUNDS_FILE, RESOURCE_SEATS_FILE
from pdbench.ui import data, group_charts, resource_charts, resource_data
from pdbench.ui.components import show_error, text_column_width
from pdbench.ui.group_data import seat_label
from pdbench.ui.resource_data import ResourceCondition

# aggregates.parquet column -> (label, kind); kinds: rate (%), ratio, tokens, tons, season, count.
CONDITION_METRICS: dict[str, dict[str, tuple[str, str]]] = {
    "pgg": {
        "contribution_rate": ("contribution rate", "rate"),
        "efficiency": ("efficiency (final balances / full cooperation)", "ratio"),
        "gini_final": ("final balance inequality (Gini)", "ratio"),
        "punish_spent": ("punishment spent per game", "tokens"),
        "punish_spent_fraction": ("share of balance spent punishing", "rate"),
        "free_riding_rate": ("free riding", "rate"),
        "retaliation_rate": ("retaliation", "rate"),
        "antisocial_rate": ("antisocial punishment", "rate"),
        "reward_given": ("rewards given per game", "tokens"),  # with the reward stage only
        "reward_given_fraction": ("share of balance spent rewarding", "rate"),
    },
    "commons": {
        "survival": ("games that survived", "rate"),
        "time_to_collapse": ("collapse season", "season"),
        "survival_months": ("seasons lasted", "count"),
        "efficiency": ("efficiency (catch / sustainable maximum)", "ratio"),
        "catch_gini": ("catch inequality (Gini)", "ratio"),
        "group_sustainability_gap": ("over-harvest beyond the sustainable catch", "tons"),
        "overuse_rate": ("requests over the sustainable share", "rate"),
    },
}
CARDS = {
    "pgg": ("contribution_rate", "efficiency", "punish_spent"),
    "commons": ("survival", "time_to_collapse", "survival_months"),
}
SEAT_METRICS: dict[str, dict[str, tuple[str, str]]] = {
    "pgg": {
        "contribution_rate": ("contribution rate", "rate"),
        "punish_spent": ("punishment spent", "tokens"),
        "punish_received": ("punishment received", "tokens"),
        "final_balance": ("final balance", "tokens"),
    },
    "commons": {
        "total_caught": ("total catch", "tons"),
        "overuse_rate": ("requests over the sustainable share", "rate"),
    },
}
ACROSS = {"pgg": ("contribution_rate", "efficiency"), "commons": ("survival", "survival_months")}
SEAT_CHARTS = {"pgg": ("contribution_rate", "punish_spent"), "commons": ("total_caught",)}
UNIT_NOTE = (
    "Means over each condition's games with 95% intervals, the game as the unit (a game is one "
    "observation, however many rounds it lasted)"
)


def fmt(value: Any, kind: str) -> str:
    """A value as shown: rates in percent, seasons numbered from 1, units named, '—' missing."""
    if value is None or pd.isna(value):
        return "—"
    value = float(value)
    if kind == "rate":
        return f"{100 * value:.1f}%"
    if kind == "season":
        return f"season {value + 1:.3g}"
    if kind == "tokens":
        return f"{value:.3g} tokens"
    if kind == "tons":
        return f"{value:.3g} tons"
    return f"{value:.3g}"


def with_interval(row: Mapping[str, Any], column: str, kind: str) -> str:
    """'62.5% [51.0%, 73.2%]': the value and its 95% interval ('(exact)' for an exact
    condition, the value alone when there is no interval)."""
    text = fmt(row.get(column), kind)
    low, high = row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high")
    if text == "—" or low is None or high is None or pd.isna(low) or pd.isna(high):
        return text
    if is_exact_row(row):
        return f"{text} ({EXACT_NOTE})"
    if kind == "season":  # 'season 9 [4.5, 11.3]': the interval in season numbers
        return f"{text} [{float(low) + 1:.3g}, {float(high) + 1:.3g}]"
    bare = "count" if kind in ("tokens", "tons") else kind
    return f"{text} [{fmt(low, bare)}, {fmt(high, bare)}]"


def interval_frame(
    rows: pd.DataFrame, column: str, kind: str, labels: Sequence[str]
) -> pd.DataFrame:
    """Rows for `group_charts.interval_chart`: label, value, low, high, games, text."""
    shift = 1 if kind == "season" else 0
    out = []
    for label, (_, row) in zip(labels, rows.iterrows(), strict=True):
        value, low, high = (row.get(c) for c in (column, f"{column}_ci_low", f"{column}_ci_high"))
        known = value is not None and pd.notna(value)
        has_ci = known and low is not None and high is not None and pd.notna(low)
        has_ci = has_ci and pd.notna(high)
        out.append(
            {
                "label": label,
                "value": float(value) + shift if known else None,
                "low": float(low) + shift if has_ci else None,
                "high": float(high) + shift if has_ci else None,
                "games": int(row.get("n_games") or 0),
                "text": with_interval(row, column, kind),
            }
        )
    return pd.DataFrame(out, columns=["label", "value", "low", "high", "games", "text"])


def render(
    path: str,
    manifest: Mapping[str, Any],
    conditions: Sequence[ResourceCondition],
    condition: ResourceCondition,
) -> None:
    """Draw the results of a resource run, the chosen condition in detail."""
    try:
        tables = {name: resource_data.load_table(path, name) for name in resource_data.TABLES}
    except data.RunLoadError as exc:
        show_error(exc)
        return
    missing = [name for name, table in tables.items() if table is None]
    if missing:
        st.info(
            f"This run has no {', '.join(missing)} yet: run `pdbench aggregate {Path(path)}` "
            "to write its metrics, then open it again.",
            icon="📐",
        )
        return
    kind = condition.kind
    aggregates = tables[AGGREGATES_FILE]
    _overview(aggregates, conditions)
    st.subheader(f"🔎 {condition.name}")
    st.caption(resource_data.describe(condition))
    row = _row(aggregates, condition.name)
    if row is None:
        st.info(f"aggregates.parquet has no row of {condition.name}.")
        return
    _cards(row, kind)
    note = identical_note(row)
    if note:
        st.caption(note)
    rounds = tables[RESOURCE_ROUNDS_FILE]
    rounds = rounds[rounds["condition"] == condition.name].sort_values("round")
    if kind == "pgg":
        _pgg_rounds(rounds)
    else:
        _commons_rounds(rounds, row, condition)
    _seats(tables[RESOURCE_SEATS_FILE], condition)


def _row(aggregates: pd.DataFrame, name: str) -> pd.Series | None:
    rows = aggregates[aggregates["condition"] == name]
    return None if rows.empty else rows.iloc[0]


def _overview(aggregates: pd.DataFrame, conditions: Sequence[ResourceCondition]) -> None:
    kind = conditions[0].kind
    st.subheader("🧮 Conditions")
    by_name = {c.name: c for c in conditions}
    rows = aggregates.set_index("condition", drop=False)
    rows = rows.loc[[c.name for c in conditions if c.name in rows.index]]
    metrics = {c: v for c, v in CONDITION_METRICS[kind].items() if c in aggregates.columns}
    table = pd.DataFrame(
        {
            "condition": rows["condition"],
            "games": rows["n_games"].astype(int),
            **(
                {
                    "collapsed": [
                        f"{int(c)} of {int(n)}"
                        for c, n in zip(rows["collapsed_games"], rows["n_games"], strict=True)
                    ]
                }
                if kind == "commons" and "collapsed_games" in rows
                else {}
            ),
            **{
                label: [with_interval(r, column, k) for _, r in rows.iterrows()]
                for column, (label, k) in metrics.items()
                if column in rows.columns
            },
            "reading of replies": [_reading(r) for _, r in rows.iterrows()],
            "seats": [", ".join(by_name[c].seats) for c in rows["condition"]],
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
        f"{UNIT_NOTE}; from aggregates.parquet. Reading of replies: re-asked parse failures, "
        f"stated fallbacks, clamped answers; the readers' measured accuracy: "
        f"{integer_reader_line(kind)}."
    )
    boxes = st.columns(len(ACROSS[kind]), gap="large")
    for column, box in zip(ACROSS[kind], boxes, strict=True):
        if column not in rows.columns:
            continue
        label, k = metrics[column]
        frame = interval_frame(rows, column, k, list(rows["condition"]))
        with box:
            st.altair_chart(
                group_charts.interval_chart(frame, _titled(label, k), k == "rate", "condition"),
                width="stretch",
            )


def _titled(label: str, kind: str) -> str:
    unit = {"tokens": " (tokens)", "tons": " (tons)", "count": " (seasons)"}.get(kind, "")
    return label + ("" if label.endswith(unit) else unit)


def _reading(row: Mapping[str, Any]) -> str:
    decisions = int(row.get("decisions") or 0)
    failures, fallbacks = int(row.get("parse_failures") or 0), int(row.get("fallbacks") or 0)
    clamped = int(row.get("clamped") or 0)
    return f"{failures} parse failures · {fallbacks} fallbacks · {clamped} clamped / {decisions}"


def _cards(row: pd.Series, kind: str) -> None:
    metrics = CONDITION_METRICS[kind]
    for column, box in zip(CARDS[kind], st.columns(len(CARDS[kind])), strict=True):
        label, k = metrics[column]
        text = with_interval(row, column, k)
        if text.endswith(f"({EXACT_NOTE})"):
            value, delta = text.removesuffix(f" ({EXACT_NOTE})"), EXACT_NOTE
        else:
            value, _, interval = text.partition(" [")
            delta = f"[{interval}" if interval else None
        box.metric(
            label,
            value,
            delta=delta,
            delta_color="off",
            delta_arrow="off",
            border=True,
            help=f"{label}: the mean over the condition's games and its 95% interval, the game "
            f"as the unit (`{column}` of aggregates.parquet)",
        )


def _pgg_rounds(rounds: pd.DataFrame) -> None:
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**📈 Contribution rate over rounds**")
        st.altair_chart(
            resource_charts.band_chart(
                rounds,
                "contribution_rate",
                "share of tokens contributed",
                percent=True,
                y_domain=(0, 1),
            ),
            width="stretch",
        )
    with right:
        st.markdown("**🔨 Punishment spent per round**")
        st.altair_chart(
            resource_charts.band_chart(rounds, "punish_spent", "spent by the group (tokens)"),
            width="stretch",
        )
    st.caption(
        "Mean over the games, blue line; grey band its 95% interval per round (games as the "
        "unit); from resource_rounds.parquet. Rounds numbered from 1."
    )


def _commons_rounds(rounds: pd.DataFrame, row: pd.Series, condition: ResourceCondition) -> None:
    threshold = float(condition.rules.get("collapse_below", 5))
    capacity = float(condition.rules.get("capacity", 100))
    collapsed, games = int(row.get("collapsed_games") or 0), int(row.get("n_games") or 0)
    if collapsed:
        when = with_interval(row, "time_to_collapse", "season")
        st.markdown(
            f"**📉 The lake collapsed in {collapsed} of {games} games** (mean collapse "
            f"{when}, counting only the games that collapsed)."
        )
    else:
        st.markdown(f"**🐟 The lake lasted all its seasons in all {games} games.**")
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**🐟 Stock over seasons**")
        st.altair_chart(
            resource_charts.stock_band_chart(rounds, threshold, capacity), width="stretch"
        )
    with right:
        st.markdown("**⏳ Share of games still going**")
        st.altair_chart(
            resource_charts.band_chart(
                rounds,
                "going",
                "games still going",
                percent=True,
                x_title="season",
                y_domain=(0, 1),
            ),
            width="stretch",
        )
    st.caption(
        f"Stock: the mean before each season's harvest over the games that reached that "
        f"season, grey band its 95% interval (games as the unit). Red dashed line: "
        f"{resource_charts.threshold_label(threshold)} (the game ends in that season). From "
        "resource_rounds.parquet."
    )


def _seats(seats: pd.DataFrame, condition: ResourceCondition) -> None:
    kind = condition.kind
    rows = seats[seats["condition"] == condition.name].sort_values("seat", kind="stable")
    if rows.empty:
        st.info(f"resource_seats.parquet has no row of {condition.name}.")
        return
    labels = [seat_label(int(s), str(n)) for s, n in zip(rows["seat"], rows["name"], strict=True)]
    st.markdown("**🪑 Each seat, with 95% intervals**")
    metrics = SEAT_METRICS[kind]
    boxes = st.columns(len(SEAT_CHARTS[kind]), gap="large")
    for column, box in zip(SEAT_CHARTS[kind], boxes, strict=True):
        label, k = metrics[column]
        frame = interval_frame(rows.assign(n_games=0), column, k, labels)
        with box:
            st.altair_chart(
                group_charts.interval_chart(frame, _titled(label, k), k == "rate", "seat"),
                width="stretch",
            )
    table = pd.DataFrame(
        {
            "seat": labels,
            **{
                label: [with_interval(r, column, k) for _, r in rows.iterrows()]
                for column, (label, k) in metrics.items()
                if column in rows.columns
            },
        }
    )
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption(f"{UNIT_NOTE}; from resource_seats.parquet.")
