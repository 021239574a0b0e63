"""Charts of a run's intervals: conditions side by side per metric (dot and whisker), and the
memory-one profile of each agent. They draw the numbers of aggregates.parquet (means over games
and their 95% intervals, computed by `pdbench.core.metrics`), nothing recomputed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import pandas as pd

from pdbench.core import rounds_display
from pdbench.core.exact import EXACT_NOTE, exactness_lines, is_exact_row, recorded_could_vary
from pdbench.ui.charts import wrapping_legend
from pdbench.ui.style import AGENT_COLORS
from pdbench.ui.tables import METRICS, format_value

STATES = (("cc", "after CC"), ("cd", "after CD"), ("dc", "after DC"), ("dd", "after DD"))
ROW_HEIGHT = 30


def comparison_frame(
    aggregates: pd.DataFrame, metric: str, conditions: Sequence[str]
) -> pd.DataFrame:
    """One row per condition: the metric's mean, its interval and a text of both (a
    round-valued metric as rounds numbered from 1; an exact condition's value marked exact,
    its interval the value itself)."""
    rows = aggregates[aggregates["scope"] == "condition"].set_index("condition")
    kind = METRICS.get(metric, (metric, "number"))[1]
    out = []
    for condition in conditions:
        if condition not in rows.index:
            continue
        row = rows.loc[condition]
        value = rounds_display.shown_value(metric, row.get(metric))
        low = rounds_display.shown_value(metric, row.get(f"{metric}_ci_low"))
        high = rounds_display.shown_value(metric, row.get(f"{metric}_ci_high"))
        known = value is not None and not pd.isna(value)
        has_ci = known and low is not None and high is not None and not pd.isna(low)
        text = "no value"
        if known:
            text = format_value(value, kind)
            if is_exact_row(row) and has_ci:
                text += f" ({EXACT_NOTE})"
            elif has_ci:
                text += f" [{format_value(low, kind)}, {format_value(high, kind)}]"
        out.append(
            {
                "condition": condition,
                "value": float(value) if known else None,
                "low": float(low) if has_ci else None,
                "high": float(high) if has_ci else None,
                "games": int(row.get("n_replicates") or 0),
                "text": text,
            }
        )
    return pd.DataFrame(out, columns=["condition", "value", "low", "high", "games", "text"])


def exactness_notes(
    aggregates: pd.DataFrame, manifest: dict[str, Any], conditions: Sequence[str]
) -> list[str]:
    """What the app says about these conditions' intervals (`core.exact.exactness_lines`):
    which are exact, and why a condition whose games were all identical has a wide interval;
    from aggregates.parquet's `exact` and `identical_games` and the manifest's `could_vary`."""
    rows = aggregates[aggregates["scope"] == "condition"]
    records = rows.astype(object).where(rows.notna(), None).to_dict("records")
    wanted = [r for r in records if r.get("condition") in set(conditions)]
    return exactness_lines(wanted, recorded_could_vary(manifest))


def interval_chart(
    frame: pd.DataFrame, title: str, percent: bool, unit: str = "games"
) -> alt.LayerChart:
    """Dot and whisker per condition (rows in the given order), with the value written beside;
    `unit` names the `games` column in the tooltip (the independent units, e.g. seeds)."""
    order = list(frame["condition"])
    scale = alt.Scale(domain=[0, 1]) if percent else alt.Scale(zero=False, nice=True)
    axis = alt.Axis(format="%" if percent else "~s", title=title, grid=True, tickCount=10)
    y = alt.Y("condition:N", sort=order, title=None, axis=alt.Axis(labelLimit=320))
    base = alt.Chart(frame).encode(y=y)
    tooltip = [
        alt.Tooltip("condition:N"),
        alt.Tooltip("text:N", title=title),
        alt.Tooltip("games:Q", title=unit),
    ]
    whisker = base.mark_rule(strokeWidth=2, color="#3b6fd8").encode(
        x=alt.X("low:Q", scale=scale, axis=axis), x2="high:Q", tooltip=tooltip
    )
    dot = base.mark_circle(size=80, color="#3b6fd8", opacity=1).encode(
        x=alt.X("value:Q", scale=scale, axis=axis), tooltip=tooltip
    )
    # The value is written on the side of the dot with more room: right of a dot in the left
    # half of the axis, left of one in the right half (a text at 100% would run off the chart).
    text = {"x": alt.X("value:Q", scale=scale, axis=axis), "text": "text:N"}
    style = {"dy": -9, "fontSize": 11, "color": "#5f6b7a"}
    room = alt.datum.value <= _middle(frame, percent)
    label = base.mark_text(align="left", dx=8, **style).encode(**text).transform_filter(room)
    left = base.mark_text(align="right", dx=-8, **style).encode(**text)
    label += left.transform_filter(~room)
    # The height includes the title and the x axis (Streamlit fits the chart to it).
    return (whisker + dot + label).properties(height=alt.Step(ROW_HEIGHT), title=title)


def _middle(frame: pd.DataFrame, percent: bool) -> float:
    """The middle of an interval chart's x axis: 0.5 for shares, else of the values' range."""
    if percent:
        return 0.5
    values = pd.concat([frame["value"], frame["low"], frame["high"]]).dropna()
    return float((values.min() + values.max()) / 2) if len(values) else 0.0


def memory_one_frame(aggregates: pd.DataFrame, condition: str) -> pd.DataFrame:
    """P(C) after each outcome of the previous round, per agent of a condition, with intervals
    and the number of such rounds (long form for the chart)."""
    rows = aggregates[(aggregates["scope"] == "condition") & (aggregates["condition"] == condition)]
    out = []
    if len(rows):
        row = rows.iloc[0]
        for side in ("a", "b"):
            for state, label in STATES:
                column = f"agent_{side}_p_coop_after_{state}"
                value = row.get(column)
                if value is None or pd.isna(value):
                    continue
                low, high = row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high")
                out.append(
                    {
                        "agent": f"agent {side.upper()}",
                        "state": label,
                        "value": float(value),
                        "low": None if low is None or pd.isna(low) else float(low),
                        "high": None if high is None or pd.isna(high) else float(high),
                        "rounds": row.get(f"agent_{side}_n_{state}"),
                    }
                )
    return pd.DataFrame(out, columns=["agent", "state", "value", "low", "high", "rounds"])


def memory_one_chart(frame: pd.DataFrame, labels: Sequence[str]) -> alt.LayerChart:
    """P(C) after CC, CD, DC, DD for both agents: dots with 95% whiskers, A and B side by side."""
    names = {"agent A": labels[0], "agent B": labels[1]}
    data = frame.assign(who=[names[a] for a in frame["agent"]])
    color = alt.Color(
        "who:N",
        scale=alt.Scale(domain=list(labels), range=[AGENT_COLORS["A"], AGENT_COLORS["B"]]),
        legend=wrapping_legend(labels, orient="top"),
    )
    x = alt.X(
        "state:N",
        sort=[s for _, s in STATES],
        title="previous round (this agent's move, the other's)",
        axis=alt.Axis(labelAngle=0),
        scale=alt.Scale(domain=[s for _, s in STATES]),
    )
    offset = alt.XOffset("who:N", sort=list(labels))
    scale = alt.Scale(domain=[0, 1])
    tooltip = ["who:N", "state:N", alt.Tooltip("value:Q", format=".0%"), "rounds:Q"]
    base = alt.Chart(data).encode(x=x, xOffset=offset, color=color, tooltip=tooltip)
    whisker = base.mark_rule(strokeWidth=2).encode(
        y=alt.Y("low:Q", scale=scale, axis=alt.Axis(format="%", title="P(cooperate)")),
        y2="high:Q",
    )
    dot = base.mark_circle(size=90, opacity=1).encode(y=alt.Y("value:Q", scale=scale))
    return (whisker + dot).properties(height=320)  # with the legend and the x axis
