"""Altair charts of group games: one game's cooperation over rounds (with the condition's mean
and band when the run's aggregates have them), the per-seat timeline of a long game, the
condition's cooperation over rounds with its band, and P(C | k others cooperated).

The charts draw the numbers they are given: a game's moves as recorded, and series and
intervals from the run's aggregates (never recomputed here).
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from pdbench.ui.charts import _drop_straight, _round_axis, _thin, wrapping_legend
from pdbench.ui.group_data import GroupGameRounds, seat_label
from pdbench.ui.style import COOP_COLOR, DEFECT_COLOR

MEAN_COLOR = "#3e4c59"
GAME_COLOR = "#3b6fd8"


def _percent_axis(title: str) -> alt.Y:
    return alt.Y(
        "rate:Q", title=title, scale=alt.Scale(domain=[0, 1.02]), axis=alt.Axis(format="%")
    )


def game_cooperation_chart(
    game: GroupGameRounds,
    current: int | None = None,
    condition_mean: Sequence[float] = (),
    band: tuple[Sequence[float], Sequence[float]] | None = None,
) -> alt.LayerChart:
    """The share of seats that cooperated in each round of `game`, the condition's mean over
    its games (dashed) with its 95% band (grey) when given, and a rule at the round `current`
    (a column, 0-based)."""
    rounds = game.round_index + 1
    share = game.cooperators / game.n_seats
    series = [("this game", GAME_COLOR, pd.DataFrame({"round": rounds, "rate": share}))]
    if len(condition_mean):
        mean = pd.DataFrame(
            {"round": 1 + np.arange(len(condition_mean)), "rate": np.asarray(condition_mean)}
        )
        series.append(("condition mean over games", MEAN_COLOR, mean))
    names = [name for name, _, _ in series]
    frame = pd.concat(
        [_drop_straight(_thin(df), "round", "rate").assign(series=name) for name, _, df in series],
        ignore_index=True,
    )
    n = max(game.n_rounds, len(condition_mean))
    lines = (
        alt.Chart(frame)
        .mark_line(strokeWidth=2.2, point=game.n_rounds <= 60)
        .encode(
            x=_round_axis(n),
            y=_percent_axis("share cooperating"),
            color=alt.Color(
                "series:N",
                sort=names,
                scale=alt.Scale(domain=names, range=[c for _, c, _ in series]),
                legend=wrapping_legend(names),
            ),
            strokeDash=alt.condition(
                alt.datum.series == "condition mean over games",
                alt.value([5, 3]),
                alt.value([1, 0]),
            ),
            tooltip=["series:N", "round:Q", alt.Tooltip("rate:Q", format=".0%")],
        )
    )
    layers: list[alt.Chart] = []
    if band and len(band[0]) and len(band[0]) == len(band[1]):
        area = pd.DataFrame({"round": 1 + np.arange(len(band[0])), "low": band[0], "high": band[1]})
        layers.append(
            alt.Chart(_thin(area))
            .mark_area(opacity=0.16, color=MEAN_COLOR)
            .encode(x=_round_axis(n), y=alt.Y("low:Q"), y2=alt.Y2("high:Q"))
        )
    layers.append(lines)
    if current is not None:
        rule = pd.DataFrame({"round": [current + 1]})
        layers.append(
            alt.Chart(rule)
            .mark_rule(color="#1f2933", strokeDash=[2, 2])
            .encode(x=_round_axis(n), tooltip=[alt.Tooltip("round:Q", title="shown round")])
        )
    return alt.layer(*layers).properties(height=260)


def seat_timeline_chart(game: GroupGameRounds, current: int | None = None) -> alt.LayerChart:
    """The moves of a long game as a heat strip: a row per seat, a column per round, green C
    and red D (the legend names them), a rule at the round `current` (0-based column)."""
    labels = [seat_label(s, name) for s, name in enumerate(game.names)]
    frame = pd.DataFrame(
        {
            "seat": np.repeat(labels, game.n_rounds),
            "round": np.tile(game.round_index + 1, game.n_seats),
            "move": game.moves.reshape(-1),
            "payoff": game.payoffs.reshape(-1),
        }
    )
    cells = (
        alt.Chart(frame)
        .mark_rect()
        .encode(
            x=alt.X("round:O", title="round", axis=alt.Axis(labelOverlap=True, labelAngle=0)),
            y=alt.Y("seat:N", sort=labels, title=None, axis=alt.Axis(labelLimit=0)),
            color=alt.Color(
                "move:N",
                scale=alt.Scale(domain=["C", "D"], range=[COOP_COLOR, DEFECT_COLOR]),
                legend=alt.Legend(
                    title="move", labelExpr="datum.label == 'C' ? 'C cooperate' : 'D defect'"
                ),
            ),
            tooltip=["seat:N", "round:Q", "move:N", "payoff:Q"],
        )
    )
    layers = [cells]
    if current is not None:
        layers.append(
            alt.Chart(pd.DataFrame({"round": [current + 1]}))
            .mark_rule(color="#1f2933", strokeWidth=2)
            .encode(x="round:O")
        )
    return alt.layer(*layers).properties(height=alt.Step(22))


def band_chart(
    mean: Sequence[float], low: Sequence[float], high: Sequence[float], title: str
) -> alt.LayerChart:
    """A condition's per-round series (e.g. group cooperation) with its 95% band over games."""
    n = len(mean)
    frame = pd.DataFrame({"round": 1 + np.arange(n), "rate": np.asarray(mean, dtype=float)})
    line = (
        alt.Chart(_drop_straight(_thin(frame), "round", "rate"))
        .mark_line(strokeWidth=2.2, color=GAME_COLOR, point=n <= 60)
        .encode(
            x=_round_axis(n),
            y=_percent_axis(title),
            tooltip=["round:Q", alt.Tooltip("rate:Q", format=".1%", title=title)],
        )
    )
    if len(low) != n or len(high) != n:
        return alt.layer(line).properties(height=260)
    area = pd.DataFrame({"round": frame["round"], "low": low, "high": high})
    band = (
        alt.Chart(_thin(area))
        .mark_area(opacity=0.18, color=MEAN_COLOR)
        .encode(x=_round_axis(n), y=alt.Y("low:Q"), y2=alt.Y2("high:Q"))
    )
    return alt.layer(band, line).properties(height=260)


def given_k_chart(frame: pd.DataFrame, n_players: int) -> alt.LayerChart:
    """P(C | k others cooperated last round): a bar per k = 0..n_players - 1 with its 95%
    whisker (none where no move followed k); `frame` has columns k, value, low, high, rounds
    (the number of such moves, in the tooltip)."""
    x = alt.X(
        "k:O",
        title="co-players who cooperated in the previous round",
        scale=alt.Scale(domain=list(range(n_players))),
        axis=alt.Axis(labelAngle=0),
    )
    scale = alt.Scale(domain=[0, 1])
    tooltip = [
        alt.Tooltip("k:O", title="others cooperated"),
        alt.Tooltip("value:Q", format=".1%", title="P(C)"),
        alt.Tooltip("low:Q", format=".1%", title="95% low"),
        alt.Tooltip("high:Q", format=".1%", title="95% high"),
        alt.Tooltip("rounds:Q", title="rounds"),
    ]
    base = alt.Chart(frame).encode(x=x, tooltip=tooltip)
    bars = base.mark_bar(color=COOP_COLOR, opacity=0.75, size=26).encode(
        y=alt.Y("value:Q", scale=scale, axis=alt.Axis(format="%", title="P(cooperate)"))
    )
    whiskers = base.mark_rule(strokeWidth=2, color="#1f2933").encode(
        y=alt.Y("low:Q", scale=scale), y2="high:Q"
    )
    return (bars + whiskers).properties(height=260)


ROW_HEIGHT = 30


def interval_chart(
    frame: pd.DataFrame, title: str, percent: bool, row_title: str
) -> alt.LayerChart:
    """Dot and whisker per row of `frame` (label, value, low, high, games, text; rows in its
    order), the value and interval written beside the dot; `row_title` names a row in the
    tooltip (a condition, a seat)."""
    order = list(frame["label"])
    scale = alt.Scale(domain=[0, 1]) if percent else alt.Scale(zero=False, nice=True)
    axis = alt.Axis(format="%" if percent else "~g", title=title, grid=True)
    y = alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=0))
    tooltip = [
        alt.Tooltip("label:N", title=row_title),
        alt.Tooltip("text:N", title=title),
        alt.Tooltip("games:Q", title="games"),
    ]
    base = alt.Chart(frame).encode(y=y, tooltip=tooltip)
    whisker = base.mark_rule(strokeWidth=2, color=GAME_COLOR).encode(
        x=alt.X("low:Q", scale=scale, axis=axis), x2="high:Q"
    )
    dot = base.mark_circle(size=80, color=GAME_COLOR, opacity=1).encode(
        x=alt.X("value:Q", scale=scale, axis=axis)
    )
    return (whisker + dot).properties(height=alt.Step(ROW_HEIGHT), title=title)
