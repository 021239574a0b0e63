"""Altair charts: of one game (cooperation over time, cumulative payoffs; the zoomable timeline
of moves is `animation.timeline_page`), of a tournament (leaderboard with 95% CIs, pairwise payoff heatmap) and of an evolving
population (shares over generations, mean fitness).

Charts only draw numbers they are given: per-round actions and payoffs from rounds.jsonl, and
metric series computed by `pdbench.core.metrics` (stored in aggregates.parquet). Rolling means are
display smoothing; long games are binned or thinned so the browser draws at most a few thousand
marks, and a line's points that lie on the straight segment between their neighbours are left
out (the same line is drawn: `_drop_straight`).
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from pdbench.core.rounds_display import FIRST_ROUND
from pdbench.storage.record.fields import side_field
from pdbench.ui.style import AGENT_COLORS, Player, medal

MAX_POINTS = 2000  # points per line series


def _thin(df: pd.DataFrame, max_points: int = MAX_POINTS) -> pd.DataFrame:
    """Every k-th row (and the last) so a series has at most about `max_points` points."""
    if len(df) <= max_points:
        return df
    step = math.ceil(len(df) / max_points)
    keep = np.zeros(len(df), dtype=bool)
    keep[::step] = True
    keep[-1] = True
    return df.loc[keep]


def _drop_straight(df: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """`df` (a line's points, `x` increasing) without the points that lie on the straight
    segment between their two neighbours: the polyline through the rest is the same line, so
    the chart draws the same picture from fewer points (a constant or evenly growing run keeps
    only its two ends). A point next to a missing value is kept. Vega shows a line's tooltip
    for its first point, which is always kept.

    A run of such points lies on one line (neighbouring triples share a segment), so dropping
    all of them is exact; "on the segment" allows a rounding error of 1e-9 of the values'
    scale (rolling means are sums of floats), far below a pixel."""
    if len(df) < 3:
        return df
    xs = df[x].to_numpy(dtype=float)
    ys = df[y].to_numpy(dtype=float)
    dx1, dx2 = xs[1:-1] - xs[:-2], xs[2:] - xs[1:-1]
    dy1, dy2 = ys[1:-1] - ys[:-2], ys[2:] - ys[1:-1]
    finite = np.isfinite(ys)
    scale = float(np.abs(ys[finite]).max()) + 1.0 if finite.any() else 1.0
    with np.errstate(invalid="ignore"):
        straight = np.abs(dy1 * dx2 - dy2 * dx1) <= 1e-9 * scale * (dx1 + dx2)
    keep = np.ones(len(df), dtype=bool)
    keep[1:-1] = ~straight  # a NaN neighbour makes the test False: the point stays
    return df.loc[keep] if not keep.all() else df


def _round_axis(n: int) -> alt.X:
    """x = round, 1-based, in whole rounds from 1 to `n` (no padding past the last round)."""
    return alt.X(
        "round:Q",
        title="round",
        scale=alt.Scale(domain=[1, max(2, n)], nice=False),
        axis=alt.Axis(format=",d", tickMinStep=1),
    )


WINDOWS = (1, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)  # smoothing windows offered
AUTO_POINTS = 50  # the automatic window: about this many windows across the game


def auto_window(n_rounds: int) -> int:
    """The smoothing window that suits a game of `n_rounds`: the smallest offered window of at
    least n/50 rounds (1 for games up to 50 rounds, 20 for 1,000, 500 for 20,000), so the
    line shows the game's course rather than every flip."""
    want = n_rounds / AUTO_POINTS
    return next((w for w in WINDOWS if w >= want), WINDOWS[-1])


def cooperation_chart(
    game: pd.DataFrame,
    labels: Sequence[str],
    window: int,
    joint: Sequence[float],
    condition_mean: Sequence[float],
    band: tuple[Sequence[float], Sequence[float]] | None = None,
) -> alt.Chart | alt.LayerChart:
    """Cooperation over time: each agent's rolling share of C (window `window`), the per-round
    joint rate of this game (`joint`, from the metrics; drawn for games up to 400 rounds) and the
    condition mean over replicates (rolling too), with `band` (the condition mean's per-round
    95% interval over games, from the metrics) drawn behind it, averaged over the same window."""
    series: list[tuple[str, str, list[int] | None, pd.DataFrame]] = []
    if joint and len(joint) <= 400:
        frame = pd.DataFrame({"round": FIRST_ROUND + np.arange(len(joint)), "rate": joint})
        series.append(("both agents, per round", "#b8c2cc", None, frame))
    for side, label, color in zip(("a", "b"), labels, AGENT_COLORS.values(), strict=True):
        coop = game[side_field(side, "action")].eq("C").astype(float)
        frame = pd.DataFrame(
            {"round": game["round"], "rate": coop.rolling(window, min_periods=1).mean()}
        )
        series.append((f"{label}, rolling {window}", color, None, frame))
    if condition_mean:
        mean = pd.Series(condition_mean).rolling(window, min_periods=1).mean()
        frame = pd.DataFrame({"round": FIRST_ROUND + np.arange(len(mean)), "rate": mean})
        series.append((f"condition mean, rolling {window}", "#3e4c59", [5, 3], frame))
    data = pd.concat(
        [
            _drop_straight(_thin(frame), "round", "rate").assign(series=name)
            for name, _, _, frame in series
        ],
        ignore_index=True,
    )
    names = [name for name, _, _, _ in series]
    dashed = [name for name, _, dash, _ in series if dash]
    n = max(len(game), len(joint or []), len(condition_mean or []))
    lines = (
        alt.Chart(data)
        .mark_line(strokeWidth=2.2, interpolate="linear")
        .encode(
            x=_round_axis(n),
            y=alt.Y(
                "rate:Q",
                title="cooperation rate",
                scale=alt.Scale(domain=[0, 1.02]),
                axis=alt.Axis(format="%"),
            ),
            color=alt.Color(
                "series:N",
                sort=names,
                scale=alt.Scale(domain=names, range=[color for _, color, _, _ in series]),
                legend=wrapping_legend(names),
            ),
            strokeDash=alt.condition(
                alt.FieldOneOfPredicate(field="series", oneOf=dashed or ["-"]),
                alt.value([5, 3]),
                alt.value([1, 0]),
            ),
            tooltip=[
                alt.Tooltip("series:N"),
                alt.Tooltip("round:Q"),
                alt.Tooltip("rate:Q", format=".1%"),
            ],
        )
        .properties(height=300)
    )
    if not band or not band[0] or len(band[0]) != len(band[1]):
        return lines
    low = pd.Series(band[0], dtype=float).rolling(window, min_periods=1).mean()
    high = pd.Series(band[1], dtype=float).rolling(window, min_periods=1).mean()
    frame = pd.DataFrame({"round": FIRST_ROUND + np.arange(len(low)), "low": low, "high": high})
    area = (
        alt.Chart(_thin(frame))
        .mark_area(opacity=0.16, color="#3e4c59")
        .encode(x=_round_axis(n), y=alt.Y("low:Q"), y2=alt.Y2("high:Q"))
    )
    return alt.layer(area, lines).properties(height=300)


LEGEND_LINE = 46  # characters per legend line (under 300 px at Vega's 11 px labels)


def legend_lines(label: str, width: int = LEGEND_LINE) -> list[str]:
    """A legend label as the lines it is drawn on: one line when short, else broken at spaces
    and hyphens (a model name such as 'llama-3.1-70b-instruct' may break after a hyphen)."""
    return textwrap.wrap(label, width) or [label]


def wrapping_legend(labels: Sequence[str], orient: str = "bottom") -> alt.Legend:
    """A legend with one entry per line whose long labels wrap onto several lines: Vega cuts a
    label at its `labelLimit` with an ellipsis and cannot wrap one by itself, so the lines are
    made here and handed over as an array (Vega draws an array as lines of text)."""
    cases = "".join(
        f"datum.label === {json.dumps(label, ensure_ascii=False)} ? "
        f"{json.dumps(legend_lines(label), ensure_ascii=False)} : "
        for label in labels
        if len(legend_lines(label)) > 1
    )
    return alt.Legend(
        title=None, orient=orient, columns=1, labelLimit=0, labelExpr=f"{cases}datum.label"
    )


def payoff_chart(game: pd.DataFrame, labels: Sequence[str]) -> alt.Chart:
    """Cumulative payoff of both agents by round."""
    frames = [
        pd.DataFrame(
            {
                "round": game["round"],
                "payoff": game[side_field(side, "cum_payoff")],
                "agent": label,
            }
        )
        for side, label in zip(("a", "b"), labels, strict=True)
    ]
    data = pd.concat(
        [_drop_straight(_thin(f), "round", "payoff") for f in frames], ignore_index=True
    )
    # A is a wide solid line and B a narrower dashed one drawn over it, so where the two
    # totals are equal (mutual cooperation from round 1, self-play) both stay visible.
    domain = list(labels)
    return (
        alt.Chart(data)
        .mark_line()
        .encode(
            x=_round_axis(len(game)),
            y=alt.Y("payoff:Q", title="cumulative payoff"),
            color=alt.Color(
                "agent:N",
                scale=alt.Scale(domain=domain, range=[AGENT_COLORS["A"], AGENT_COLORS["B"]]),
                legend=wrapping_legend(domain),
            ),
            strokeDash=alt.StrokeDash(
                "agent:N", scale=alt.Scale(domain=domain, range=[[1, 0], [7, 4]]), legend=None
            ),
            strokeWidth=alt.StrokeWidth(
                "agent:N", scale=alt.Scale(domain=domain, range=[4.5, 2.2]), legend=None
            ),
            tooltip=["agent:N", "round:Q", alt.Tooltip("payoff:Q", format=",.1f")],
        )
        .properties(height=300)
    )


# --------------------------------------------------------------------------------------------
# Tournaments and evolving populations (numbers from the library's artifacts, see data)


def _color_scale(players: Sequence[Player]) -> alt.Scale:
    return alt.Scale(domain=[p.label for p in players], range=[p.color for p in players])


def leaderboard_chart(
    board: pd.DataFrame, players: Sequence[Player], medals: Mapping[str, str] | None = None
) -> alt.LayerChart:
    """Mean score per round of each player (bars, best on top) with its 95% CI (error bars);
    `board` is leaderboard.parquet; `medals`: the podium's medal of its players
    (`tables.podium_medals`; players on a shared step share one)."""
    by_name = {p.name: p for p in players}
    medals = medals or {}
    data = board.assign(
        label=[by_name[str(n)].label for n in board["player"]],
        medal=[
            medals.get(str(n), medal(r))
            for n, r in zip(board["player"], board["rank"], strict=True)
        ],
    )
    data["ci95_low"] = data["ci95_low"].fillna(data["mean_score_per_round"])
    data["ci95_high"] = data["ci95_high"].fillna(data["mean_score_per_round"])
    order = list(data.sort_values("rank")["label"])
    y = alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=400, labelFontSize=13))
    tooltip = [
        alt.Tooltip("medal:N", title="rank"),
        alt.Tooltip("label:N", title="player"),
        alt.Tooltip("mean_score_per_round:Q", title="score / round", format=".3f"),
        alt.Tooltip("ci95_low:Q", title="95% CI low", format=".3f"),
        alt.Tooltip("ci95_high:Q", title="95% CI high", format=".3f"),
        alt.Tooltip("wins:Q"),
        alt.Tooltip("cooperation_rate:Q", title="cooperation", format=".0%"),
    ]
    base = alt.Chart(data)
    bars = base.mark_bar(cornerRadiusEnd=4, height={"band": 0.7}).encode(
        x=alt.X(
            "mean_score_per_round:Q",
            title="mean score per round (95% CI)",
            axis=alt.Axis(tickMinStep=0.5),
        ),
        y=y,
        color=alt.Color("label:N", scale=_color_scale(players), legend=None),
        tooltip=tooltip,
    )
    errors = base.mark_errorbar(ticks=True, thickness=2, color="#1f2933").encode(
        x=alt.X("ci95_low:Q", title="mean score per round (95% CI)"), x2="ci95_high:Q", y=y
    )
    text = base.mark_text(align="left", dx=6, fontSize=12, color="#1f2933").encode(
        x="ci95_high:Q", y=y, text=alt.Text("mean_score_per_round:Q", format=".2f")
    )
    return alt.layer(bars, errors, text).properties(height=max(160, 36 * len(order)))


def payoff_heatmap(
    pairwise: pd.DataFrame, players: Sequence[Player], low: float, mid: float, high: float
) -> alt.LayerChart:
    """The row player's mean score per round against the column player (payoff_matrix.parquet),
    annotated, on a diverging scale centred on `mid` (red below, green above)."""
    by_name = {p.name: p for p in players}
    data = pairwise.assign(
        row=[by_name[str(n)].label for n in pairwise["player"]],
        col=[by_name[str(n)].label for n in pairwise["opponent"]],
    )
    order = [p.label for p in players]
    base = alt.Chart(data).encode(
        x=alt.X(
            "col:N",
            sort=order,
            title="against (column player)",
            axis=alt.Axis(
                labelAngle=-35, labelLimit=400, orient="top", labelFontSize=12, labelOverlap=False
            ),
        ),
        y=alt.Y(
            "row:N",
            sort=order,
            title="player (row)",
            axis=alt.Axis(labelLimit=400, labelFontSize=12),
        ),
    )
    cells = base.mark_rect(stroke="white", strokeWidth=2).encode(
        color=alt.Color(
            "mean_score_per_round:Q",
            title="score / round",
            scale=alt.Scale(scheme="redyellowgreen", domain=[low, high], domainMid=mid),
            legend=alt.Legend(orient="right", gradientLength=220),
        ),
        tooltip=[
            alt.Tooltip("row:N", title="player"),
            alt.Tooltip("col:N", title="against"),
            alt.Tooltip("mean_score_per_round:Q", title="score / round", format=".3f"),
            alt.Tooltip("matches:Q"),
        ],
    )
    span = max(high - low, 1e-9)
    dark = f"datum.mean_score_per_round < {low + 0.22 * span} || datum.mean_score_per_round > {high - 0.15 * span}"
    text = base.mark_text(fontSize=13, fontWeight="bold").encode(
        text=alt.Text("mean_score_per_round:Q", format=".2f"),
        color=alt.condition(dark, alt.value("white"), alt.value("#1f2933")),
    )
    return alt.layer(cells, text).properties(
        width=alt.Step(66), height=alt.Step(40), autosize=alt.AutoSizeParams(type="pad")
    )


def population_chart(generations: pd.DataFrame, players: Sequence[Player]) -> alt.Chart:
    """Population over time: each strategy's share of the population per generation, stacked
    (generations.parquet)."""
    by_name = {p.name: p for p in players}
    order = {p.label: i for i, p in enumerate(players)}
    data = generations.assign(label=[by_name[str(n)].label for n in generations["strategy"]])
    data["order"] = data["label"].map(order)
    return (
        alt.Chart(data)
        .mark_area(interpolate="linear", opacity=0.92, line={"strokeWidth": 0.3})
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
                "label:N",
                scale=_color_scale(players),
                sort=[p.label for p in players],
                legend=alt.Legend(title=None, orient="right", labelLimit=260, labelFontSize=12),
            ),
            order=alt.Order("order:Q"),
            tooltip=[
                alt.Tooltip("generation:Q"),
                alt.Tooltip("label:N", title="strategy"),
                alt.Tooltip("count:Q"),
                alt.Tooltip("share:Q", format=".0%"),
                alt.Tooltip("mean_fitness:Q", title="mean fitness", format=".3f"),
            ],
        )
        .properties(height=340)
    )


def fitness_chart(generations: pd.DataFrame, players: Sequence[Player]) -> alt.Chart:
    """Mean fitness (payoff per round) of each strategy still present, per generation."""
    by_name = {p.name: p for p in players}
    data = generations.dropna(subset=["mean_fitness"])
    data = data.assign(label=[by_name[str(n)].label for n in data["strategy"]])
    return (
        alt.Chart(data)
        .mark_line(strokeWidth=2.2, point=alt.OverlayMarkDef(size=18))
        .encode(
            x=alt.X("generation:Q", title="generation", axis=alt.Axis(format="d", tickMinStep=1)),
            y=alt.Y("mean_fitness:Q", title="mean fitness (payoff per round)"),
            color=alt.Color("label:N", scale=_color_scale(players), legend=None),
            tooltip=[
                alt.Tooltip("generation:Q"),
                alt.Tooltip("label:N", title="strategy"),
                alt.Tooltip("count:Q"),
                alt.Tooltip("mean_fitness:Q", title="mean fitness", format=".3f"),
            ],
        )
        .properties(height=260)
    )
