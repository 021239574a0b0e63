"""Altair charts of the resource games (issue 31): a condition's series over rounds with its 95%
band (contribution rate, punishment spent, stock, share of games going), the commons' stock
with its collapse threshold drawn as a labelled line, and one game's numbers per seat
(contributions, punishments, catches), a distinct labelled colour per seat.

The charts draw the numbers they are given (the run's tables, or a game's record): nothing is
computed here but the layout.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from pdbench.ui.group_look import SEAT_COLORS

MEAN_COLOR = "#3b6fd8"
BAND_COLOR = "#3e4c59"
THRESHOLD_COLOR = "#d64545"
LEFT_COLOR = "#8e6bbf"
HEIGHT = 260


def seat_scale(labels: Sequence[str]) -> alt.Scale:
    """A colour per seat label, in seat order (seats past the tenth reuse the colours)."""
    return alt.Scale(
        domain=list(labels), range=[SEAT_COLORS[i % len(SEAT_COLORS)] for i in range(len(labels))]
    )


def _seat_legend() -> None:
    """No Vega legend for the seats: Streamlit fits a chart with its legend into the chart's
    height, so a legend of many long names squeezes the plot away. The page shows the seats'
    colours once above their charts (`resource_replay.seat_legend_html`)."""
    return None


def _x(field: str, n: int, title: str) -> alt.X:
    return alt.X(
        f"{field}:Q",
        title=title,
        scale=alt.Scale(domain=[1, max(2, n)], nice=False),
        axis=alt.Axis(format=",d", tickMinStep=1),
    )


def _current_rule(field: str, current: int | None, n: int, title: str) -> list[alt.Chart]:
    if current is None:
        return []
    return [
        alt.Chart(pd.DataFrame({field: [current]}))
        .mark_rule(color="#1f2933", strokeDash=[2, 2])
        .encode(x=_x(field, n, title), tooltip=[alt.Tooltip(f"{field}:Q", title="shown")])
    ]


def band_chart(
    rows: pd.DataFrame,
    column: str,
    y_title: str,
    percent: bool = False,
    x_field: str = "round",
    x_title: str = "round",
    y_domain: tuple[float, float] | None = None,
) -> alt.LayerChart:
    """A condition's mean per round (`rows`: a row per round with `x_field`, `column` and its
    `_ci_low`/`_ci_high`) as a line with its 95% band."""
    layers = _band_layers(rows, column, y_title, percent, x_field, x_title, y_domain)
    return alt.layer(*layers).properties(height=HEIGHT)


def _band_layers(
    rows: pd.DataFrame,
    column: str,
    y_title: str,
    percent: bool,
    x_field: str,
    x_title: str,
    y_domain: tuple[float, float] | None,
) -> list[alt.Chart]:
    n = int(rows[x_field].max()) if len(rows) else 1
    frame = pd.DataFrame(
        {
            x_field: rows[x_field].astype(int).to_numpy(),
            "value": rows[column].astype(float).to_numpy(),
            "low": rows[f"{column}_ci_low"].astype(float).to_numpy(),
            "high": rows[f"{column}_ci_high"].astype(float).to_numpy(),
            "games": rows["games"].astype(int).to_numpy() if "games" in rows else 0,
        }
    )
    fmt = ".0%" if percent else ",.3~g"
    scale = alt.Scale(domain=list(y_domain)) if y_domain else alt.Scale(zero=True)
    y_axis = alt.Axis(format="%" if percent else ",.4~g", title=y_title)
    x = _x(x_field, n, x_title)
    band = (
        alt.Chart(frame)
        .mark_area(opacity=0.18, color=BAND_COLOR)
        .encode(x=x, y=alt.Y("low:Q", scale=scale, axis=y_axis), y2="high:Q")
    )
    line = (
        alt.Chart(frame)
        .mark_line(strokeWidth=2.4, color=MEAN_COLOR, point=n <= 60)
        .encode(
            x=x,
            y=alt.Y("value:Q", scale=scale, axis=y_axis),
            tooltip=[
                alt.Tooltip(f"{x_field}:Q", title=x_title),
                alt.Tooltip("value:Q", format=fmt, title=y_title),
                alt.Tooltip("low:Q", format=fmt, title="95% low"),
                alt.Tooltip("high:Q", format=fmt, title="95% high"),
                alt.Tooltip("games:Q", title="games that reached it"),
            ],
        )
    )
    return [band, line]


def threshold_label(threshold: float) -> str:
    """The collapse line's label."""
    return f"collapse: fewer than {threshold:g} tons left after a harvest"


def _threshold_layers(threshold: float, n: int, field: str, scale: alt.Scale) -> list[alt.Chart]:
    at = pd.DataFrame({"y": [float(threshold)], field: [1], "label": [threshold_label(threshold)]})
    rule = (
        alt.Chart(at)
        .mark_rule(color=THRESHOLD_COLOR, strokeDash=[6, 4], strokeWidth=2)
        .encode(y=alt.Y("y:Q", scale=scale), tooltip=[alt.Tooltip("label:N", title="line")])
    )
    text = (
        alt.Chart(at)
        .mark_text(
            align="left",
            baseline="bottom",
            dx=4,
            dy=-4,
            color=THRESHOLD_COLOR,
            fontSize=12,
            fontWeight="bold",
        )
        .encode(x=_x(field, n, "season"), y=alt.Y("y:Q", scale=scale), text="label:N")
    )
    return [rule, text]


def stock_band_chart(rows: pd.DataFrame, threshold: float, capacity: float) -> alt.LayerChart:
    """A condition's mean stock before each season's harvest (over the games that reached it)
    with its 95% band, and the collapse threshold as a labelled red line."""
    n = int(rows["round"].max()) if len(rows) else 1
    scale = alt.Scale(domain=[0, float(capacity)])
    base = _band_layers(
        rows, "stock", "stock before the harvest (tons)", False, "round", "season", (0, capacity)
    )
    layers = [*base, *_threshold_layers(threshold, n, "round", scale)]
    return alt.layer(*layers).properties(height=HEIGHT)


def seat_lines(
    frame: pd.DataFrame,
    column: str,
    y_title: str,
    labels: Sequence[str],
    current: int | None = None,
    x_field: str = "round",
    x_title: str = "round",
) -> alt.LayerChart:
    """One line per seat (`frame`: long, with `x_field`, seat, `column`), a colour each, the
    legend naming them; a dashed rule at the round `current` (1-based)."""
    n = int(frame[x_field].max()) if len(frame) else 1
    lines = (
        alt.Chart(frame)
        .mark_line(strokeWidth=2.2, point=alt.OverlayMarkDef(size=45))
        .encode(
            x=_x(x_field, n, x_title),
            y=alt.Y(f"{column}:Q", title=y_title, scale=alt.Scale(zero=True)),
            color=alt.Color(
                "seat:N",
                scale=seat_scale(labels),
                sort=list(labels),
                legend=_seat_legend(),
            ),
            tooltip=[
                "seat:N",
                alt.Tooltip(f"{x_field}:Q", title=x_title),
                alt.Tooltip(f"{column}:Q", title=y_title),
            ],
        )
    )
    return alt.layer(lines, *_current_rule(x_field, current, n, x_title)).properties(height=HEIGHT)


def seat_bars(
    frame: pd.DataFrame,
    column: str,
    y_title: str,
    labels: Sequence[str],
    current: int | None = None,
    x_field: str = "round",
    x_title: str = "round",
    n: int | None = None,
) -> alt.LayerChart:
    """Stacked bars per round (rounds 1..n, `n` the rounds of `frame` when not given), a segment
    per seat in its colour (e.g. each seat's catch); a dashed rule at the round `current`."""
    n = n or (int(frame[x_field].max()) if len(frame) else 1)
    order = {label: i for i, label in enumerate(labels)}
    shown = frame.assign(order=frame["seat"].map(order))
    x = alt.X(
        f"{x_field}:O",
        title=x_title,
        scale=alt.Scale(domain=list(range(1, n + 1)), paddingInner=0.2),
        axis=alt.Axis(labelAngle=0, labelOverlap=True),
    )
    bars = (
        alt.Chart(shown)
        .mark_bar()
        .encode(
            x=x,
            y=alt.Y(f"{column}:Q", title=y_title, stack="zero"),
            color=alt.Color(
                "seat:N", scale=seat_scale(labels), sort=list(labels), legend=_seat_legend()
            ),
            order=alt.Order("order:Q"),
            tooltip=[
                "seat:N",
                alt.Tooltip(f"{x_field}:O", title=x_title),
                alt.Tooltip(f"{column}:Q", title=y_title),
            ],
        )
    )
    layers = [bars]
    if current is not None:
        layers.append(
            alt.Chart(pd.DataFrame({x_field: [current]}))
            .mark_rule(color="#1f2933", strokeDash=[2, 2])
            .encode(x=x)
        )
    return alt.layer(*layers).properties(height=HEIGHT)


def game_stock_chart(
    seasons: pd.DataFrame,
    threshold: float,
    capacity: float,
    n_seasons: int,
    current: int | None = None,
    collapse_season: int | None = None,
) -> alt.LayerChart:
    """One commons game: the stock before each season's harvest and what was left after it,
    the collapse threshold as a labelled red line, a red ✕ and label at the collapse season."""
    n = max(n_seasons, int(seasons["season"].max()) if len(seasons) else 1)
    scale = alt.Scale(domain=[0, float(capacity)])
    long = pd.concat(
        [
            seasons[["season"]].assign(what="stock before the harvest", tons=seasons["stock"]),
            seasons[["season"]].assign(what="left after the harvest", tons=seasons["left"]),
        ],
        ignore_index=True,
    )
    names = ["stock before the harvest", "left after the harvest"]
    x = _x("season", n, "season")
    lines = (
        alt.Chart(long)
        .mark_line(strokeWidth=2.4, point=alt.OverlayMarkDef(size=50))
        .encode(
            x=x,
            y=alt.Y("tons:Q", scale=scale, title="fish in the lake (tons)"),
            color=alt.Color(
                "what:N",
                sort=names,
                scale=alt.Scale(domain=names, range=[MEAN_COLOR, LEFT_COLOR]),
                legend=alt.Legend(
                    title=None, orient="bottom", symbolType="stroke", symbolStrokeWidth=3
                ),
            ),
            strokeDash=alt.StrokeDash(
                "what:N",
                sort=names,
                scale=alt.Scale(domain=names, range=[[1, 0], [4, 3]]),
                legend=None,
            ),
            tooltip=["what:N", "season:Q", "tons:Q"],
        )
    )
    layers = [*_threshold_layers(threshold, n, "season", scale), lines]
    if collapse_season is not None:
        row = seasons[seasons["season"] == collapse_season]
        label = f"collapsed in season {collapse_season}"
        mark = pd.DataFrame(
            {
                "season": [collapse_season],
                "tons": [float(row["left"].iloc[0]) if len(row) else 0.0],
                "top": [float(capacity)],
                "label": [label],
            }
        )
        right_half = collapse_season > (n + 1) / 2
        layers.append(
            alt.Chart(mark)
            .mark_rule(color=THRESHOLD_COLOR, strokeDash=[2, 3], strokeWidth=1.5)
            .encode(x=x, tooltip=["label:N"])
        )
        layers.append(
            alt.Chart(mark)
            .mark_point(shape="cross", size=260, color=THRESHOLD_COLOR, filled=True, angle=45)
            .encode(x=x, y=alt.Y("tons:Q", scale=scale), tooltip=["label:N"])
        )
        layers.append(
            alt.Chart(mark)
            .mark_text(
                align="right" if right_half else "left",
                baseline="top",
                dx=-6 if right_half else 6,
                dy=2,
                color=THRESHOLD_COLOR,
                fontSize=13,
                fontWeight="bold",
            )
            .encode(x=x, y=alt.Y("top:Q", scale=scale), text="label:N")
        )
    layers += _current_rule("season", current, n, "season")
    return alt.layer(*layers).properties(height=HEIGHT + 40)
