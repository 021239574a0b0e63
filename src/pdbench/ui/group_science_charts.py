"""Charts of a group tournament and a group evolution: dot and whisker of values with their 95%
intervals (the leaderboard's payoffs, the fixation shares with the exact probabilities beside
them) and the population's shares over generations. They draw the artifacts' numbers
(`ui.group_science_tables` frames), nothing recomputed; a long run's generations are drawn
evenly spaced (the last one kept), every value drawn being the file's."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

DOT_COLOR = "#3b6fd8"
EXACT_COLOR = "#e08a1e"
TEXT_COLOR = "#5f6b7a"
LABEL_COLOR = "#31333f"  # the rows' labels: the page's text colour
ROW_HEIGHT = 34
MAX_GENERATIONS = 3000  # generations drawn per chart (evenly spaced, the last one kept)
PALETTE = (
    "#3b6fd8",
    "#d64545",
    "#2e9e4f",
    "#e08a1e",
    "#8e5bd0",
    "#1f9aa8",
    "#a89a3c",
    "#d6619e",
    "#6b7280",
    "#8c564b",
)


def _middle(frame: pd.DataFrame, percent: bool) -> float:
    """The middle of the x axis: 0.5 for shares, else of the values' range."""
    if percent:
        return 0.5
    columns = [frame[c] for c in ("value", "low", "high") if c in frame.columns]
    values = pd.concat(columns).dropna() if columns else pd.Series(dtype=float)
    return float((values.min() + values.max()) / 2) if len(values) else 0.0


def interval_chart(
    frame: pd.DataFrame, title: str, percent: bool, unit: str, exact: bool = False
) -> alt.LayerChart:
    """Dot and whisker per row of `frame` (label, value, low, high, games, text; rows in its
    order, labels in full), the value and interval written beside the dot on the side with more
    room; with `exact`, the frame's `exact` column drawn as an orange diamond on each row that
    has one. `unit` names the `games` column in the tooltip (games, seeds)."""
    order = list(frame["label"])
    scale = alt.Scale(domain=[0, 1]) if percent else alt.Scale(zero=False, nice=True)
    axis = alt.Axis(format="%" if percent else "~g", title=title, grid=True, tickCount=10)
    y = alt.Y(
        "label:N",
        sort=order,
        title=None,
        axis=alt.Axis(labelLimit=0, labelFontSize=12, labelColor=LABEL_COLOR),
    )
    tooltip = [
        alt.Tooltip("label:N", title="row"),
        alt.Tooltip("text:N", title=title),
        alt.Tooltip("games:Q", title=unit),
    ]
    base = alt.Chart(frame).encode(y=y, tooltip=tooltip)
    whisker = base.mark_rule(strokeWidth=2, color=DOT_COLOR).encode(
        x=alt.X("low:Q", scale=scale, axis=axis), x2="high:Q"
    )
    dot = base.mark_circle(size=80, color=DOT_COLOR, opacity=1).encode(
        x=alt.X("value:Q", scale=scale, axis=axis)
    )
    text = {"x": alt.X("value:Q", scale=scale, axis=axis), "text": "text:N"}
    style = {"dy": -11, "fontSize": 11, "color": TEXT_COLOR}
    room = alt.datum.value <= _middle(frame, percent)
    right = base.mark_text(align="left", dx=8, **style).encode(**text).transform_filter(room)
    left = base.mark_text(align="right", dx=-8, **style).encode(**text).transform_filter(~room)
    layers = [whisker, dot, right, left]
    if exact and "exact" in frame.columns:
        layers.append(
            base.mark_point(shape="diamond", size=110, filled=True, color=EXACT_COLOR, opacity=1)
            .encode(x=alt.X("exact:Q", scale=scale, axis=axis))
            .transform_filter(alt.datum.exact != None)  # noqa: E711 - a Vega expression
        )
    return alt.layer(*layers).properties(height=alt.Step(ROW_HEIGHT), title=title)


def thinned(generations: pd.DataFrame, most: int = MAX_GENERATIONS) -> pd.DataFrame:
    """The rows of at most `most` generations, evenly spaced, the first and last kept (all of
    them when there are no more)."""
    steps = np.sort(generations["generation"].unique())
    if len(steps) <= most:
        return generations
    kept = steps[np.unique(np.linspace(0, len(steps) - 1, most).round().astype(int))]
    return generations[generations["generation"].isin(kept)]


def shares_chart(generations: pd.DataFrame, strategies: Sequence[str]) -> alt.Chart:
    """Each type's share of the population per generation, stacked, types in population order
    (one seed's rows of generations.parquet)."""
    names = list(dict.fromkeys([*strategies, *generations["strategy"].astype(str)]))
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(names))]
    data = thinned(generations).assign(
        order=lambda d: d["strategy"].astype(str).map({n: i for i, n in enumerate(names)})
    )
    return (
        alt.Chart(data)
        .mark_area(interpolate="step-after", opacity=0.9, line={"strokeWidth": 0.3})
        .encode(
            x=alt.X(
                "generation:Q",
                title="generation",
                scale=alt.Scale(nice=False),
                axis=alt.Axis(format="d", tickMinStep=1),
            ),
            y=alt.Y(
                "share:Q",
                stack="zero",
                title="share of the population",
                axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 1]),
            ),
            color=alt.Color(
                "strategy:N",
                scale=alt.Scale(domain=names, range=colors),
                sort=names,
                legend=alt.Legend(title=None, orient="right", labelLimit=0, labelFontSize=12),
            ),
            order=alt.Order("order:Q"),
            tooltip=[
                alt.Tooltip("generation:Q"),
                alt.Tooltip("strategy:N"),
                alt.Tooltip("count:Q"),
                alt.Tooltip("share:Q", format=".1%"),
            ],
        )
        .properties(height=320)
    )
