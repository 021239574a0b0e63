"""The replay of one resource game (the 🫂 Groups tab's Replay view for a "pgg" or "commons"
run): the game over rounds per seat (contributions and punishments; the stock over seasons with
the collapse line and each seat's catch), then a round slider and, for the round shown, every
seat's decisions (parse failures, fallbacks and clamped answers marked) beside the messages
said in that round (and, in a commons, the reflections).

Numbers are the record's (`ui.resource_data`): one game's lines of rounds.jsonl.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

import pandas as pd
import streamlit as st

from pdbench.ui import data, resource_charts, resource_data
from pdbench.ui.components import show_error
from pdbench.ui.group_look import seat_color
from pdbench.ui.resource_data import ResourceCondition, ResourceGame

ROUND = "res_round"  # the slider's value (a 1-based round)
KEPT = "res_round_kept"  # (game key, round)
MSG_CSS = """<style>
.pdb-rmsgs { display: flex; flex-direction: column; gap: 6px; }
.pdb-rmsg { border-left: 4px solid var(--seat); padding: 4px 8px; background: #f6f7f9;
  border-radius: 4px; font-size: 0.92rem; line-height: 1.35; }
.pdb-rmsg-who { font-weight: 700; color: var(--seat); margin-right: 6px; }
.pdb-rmsg-none { color: #6b7280; font-style: italic; }
.pdb-rlegend { display: flex; flex-wrap: wrap; gap: 6px 16px; margin: 2px 0 6px 0; }
.pdb-rchip { display: inline-flex; align-items: center; gap: 6px; font-size: 0.92rem;
  font-weight: 600; color: #31333f; }
.pdb-rchip::before { content: ""; width: 22px; height: 4px; border-radius: 2px;
  background: var(--seat); box-shadow: 0 0 0 1px var(--seat); }
.pdb-rtable { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
.pdb-rtable th { text-align: left; color: #4b5563; font-weight: 600; padding: 4px 8px;
  border-bottom: 2px solid #d1d5db; }
.pdb-rtable td { padding: 4px 8px; border-bottom: 1px solid #eceef1; }
.pdb-rtable td.pdb-rseat { font-weight: 700; color: var(--seat); white-space: nowrap; }
.pdb-rtable tr.pdb-rbad td { background: #fff4e5; }
</style>"""


def render(
    path: str, manifest: Mapping[str, Any], condition: ResourceCondition, replicate: int
) -> None:
    """Draw the replay of one game of a resource run."""
    del manifest  # the conditions hold what the replay needs
    try:
        game = resource_data.load_game(path, condition.kind, condition.name, replicate)
    except data.RunLoadError as exc:
        show_error(exc)
        return
    unit = "season" if game.kind == "commons" else "round"
    unit += "" if game.n_rounds == 1 else "s"
    st.caption(
        f"**{condition.name}** · replicate {replicate} · {resource_data.describe(condition)} · "
        f"{game.n_rounds} {unit} played"
    )
    key = (path, condition.name, int(replicate))
    if game.kind == "commons":
        _collapse_line(game, condition)
    t = round_control(game, key, "Season" if game.kind == "commons" else "Round")
    st.html(MSG_CSS)
    st.html(seat_legend_html(game.labels))
    if game.kind == "pgg":
        _pgg_game(game, t)
    else:
        _commons_game(game, condition, t)
    left, right = st.columns([3, 2], gap="medium")
    with left:
        st.markdown(f"**🧾 Decisions in {'season' if game.kind == 'commons' else 'round'} {t}**")
        st.html(table_html(decision_table(game, t - 1), t))
        st.caption(
            "⚠️ marks a seat whose reply could not be read (parse failures: retries; fallback: "
            "the rule's default used instead) or whose answer was clamped to what the rules allow."
        )
    with right:
        said = "after this season's harvest" if game.kind == "commons" else "before the moves"
        st.markdown(f"**💬 Messages** ({said})")
        st.html(messages_html(game.messages(t - 1), game.labels, "pdb-rmsg-talk"))
        if game.kind == "commons":
            st.markdown("**🪞 Reflections**")
            st.html(messages_html(game.reflections(t - 1), game.labels, "pdb-rmsg-reflect"))


def _pgg_game(game: ResourceGame, current: int) -> None:
    frame = resource_data.pgg_seat_rounds(game)
    labels = game.labels
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**🪙 Each seat's contribution**")
        st.altair_chart(
            resource_charts.seat_lines(
                frame, "contribution", "contributed (tokens)", labels, current
            ),
            width="stretch",
        )
    with right:
        st.markdown("**🔨 Punishment spent, by punisher**")
        st.altair_chart(
            resource_charts.seat_bars(
                frame, "punish_spent", "punishment spent (tokens)", labels, current
            ),
            width="stretch",
        )
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**💰 Each seat's balance after the round**")
        st.altair_chart(
            resource_charts.seat_lines(frame, "balance", "balance (tokens)", labels, current),
            width="stretch",
        )
    with right:
        st.markdown("**🎯 Who punished whom**")
        acts = resource_data.pgg_punishments(game)
        if acts.empty:
            st.caption("No punishment in this game.")
        else:
            st.dataframe(
                acts.rename(columns={"from": "punisher", "to": "target"}),
                hide_index=True,
                width="stretch",
                height=min(320, 38 + 35 * len(acts)),
            )


def _collapse_line(game: ResourceGame, condition: ResourceCondition) -> None:
    threshold = float(condition.rules.get("collapse_below", 5))
    planned = int(condition.rules.get("n_seasons") or game.n_rounds)
    season = game.collapse_season
    if season is not None:
        st.markdown(
            f'<div class="pdb-rcollapse" data-season="{season}" style="color:#b42318;'
            f'font-weight:700;font-size:1.1rem">💥 The lake collapsed in season {season} '
            f"of {planned}: fewer than {threshold:g} tons were left after the harvest.</div>",
            unsafe_allow_html=True,
        )
    else:
        st.markdown(f"**🐟 The lake lasted all {game.n_rounds} seasons.**")


def _commons_game(game: ResourceGame, condition: ResourceCondition, current: int) -> None:
    threshold = float(condition.rules.get("collapse_below", 5))
    capacity = float(condition.rules.get("capacity", 100))
    planned = int(condition.rules.get("n_seasons") or game.n_rounds)
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**🐟 Fish in the lake**")
        st.altair_chart(
            resource_charts.game_stock_chart(
                resource_data.commons_seasons(game),
                threshold,
                capacity,
                planned,
                current=current,
                collapse_season=game.collapse_season,
            ),
            width="stretch",
        )
    with right:
        st.markdown("**🎣 Each seat's catch**")
        st.altair_chart(
            resource_charts.seat_bars(
                resource_data.commons_catches(game),
                "caught",
                "caught (tons)",
                game.labels,
                current,
                x_field="season",
                x_title="season",
                n=planned,
            ),
            width="stretch",
        )


def _step(n_rounds: int, by: int) -> None:
    now = int(st.session_state.get(ROUND, 1))
    st.session_state[ROUND] = min(max(1, now + by), n_rounds)


def round_control(game: ResourceGame, key: tuple[str, str, int], word: str) -> int:
    """A slider and ◀ ▶ buttons over the game's rounds; returns the round shown (1-based). A
    game shown anew opens on round 1; the round comes back after a tab switch."""
    n = game.n_rounds
    kept = st.session_state.get(KEPT)
    if kept is None or kept[0] != key:
        st.session_state[ROUND] = 1
    elif ROUND not in st.session_state:
        st.session_state[ROUND] = kept[1]
    st.session_state[ROUND] = min(max(1, int(st.session_state[ROUND])), n)
    if n > 1:
        back, slider, step = st.columns([1, 10, 1], vertical_alignment="bottom")
        back.button(
            "◀", key="res_back", help=f"Previous {word.lower()}", on_click=_step, args=(n, -1)
        )
        step.button("▶", key="res_next", help=f"Next {word.lower()}", on_click=_step, args=(n, 1))
        slider.slider(f"{word} (1–{n})", min_value=1, max_value=n, key=ROUND)
    shown = int(st.session_state[ROUND])
    st.session_state[KEPT] = (key, shown)
    return shown


def _flags(decision: Mapping[str, Any]) -> str:
    out = []
    failures = int(decision.get("parse_failures") or 0)
    if failures:
        out.append(f"⚠️ {failures} parse failure{'s' if failures > 1 else ''}")
    if decision.get("fallback"):
        out.append("⚠️ fallback")
    if decision.get("clamped"):
        out.append("⚠️ clamped")
    return " · ".join(out)


def decision_table(game: ResourceGame, t: int) -> pd.DataFrame:
    """A row per seat for round t (0-based): what it decided (the record's numbers) and the
    reading problems of its decisions."""
    record, labels = game.records[t], game.labels
    by_seat: dict[int, list[Mapping[str, Any]]] = {}
    for d in game.decisions(t):
        by_seat.setdefault(int(d.get("seat", -1)), []).append(d)
    rows = []
    for i, label in enumerate(labels):
        flags = " · ".join(f for f in (_flags(d) for d in by_seat.get(i, [])) if f)
        if game.kind == "pgg":
            row = {
                "seat": label,
                "contributed": _num(record.get("contributions"), i),
                "of": _num(record.get("limits"), i),
                "punished": _targets(record.get("punish_tokens"), i, labels),
                "spent": _num(record.get("punish_spent"), i),
                "received": _num(record.get("punish_received"), i),
                "balance": _num(record.get("balances"), i),
            }
        else:
            present = record.get("present") or []
            here = bool(present[i]) if i < len(present) else True
            row = {
                "seat": label,
                "asked (tons)": _num(record.get("requested"), i) if here else "not yet here",
                "caught (tons)": _num(record.get("caught"), i) if here else "",
            }
        row["reading"] = flags or "✓"
        rows.append(row)
    return pd.DataFrame(rows)


def _num(values: Sequence[Any] | None, i: int) -> str:
    if not values or i >= len(values) or values[i] is None:
        return "—"
    v = float(values[i])
    return f"{v:g}"


def _targets(entries: Sequence[Sequence[Any]] | None, i: int, labels: Sequence[str]) -> str:
    acts = [
        f"{labels[int(j)].split(' · ')[0]}: {float(v):g}"
        for a, j, v in entries or []
        if int(a) == i
    ]
    return ", ".join(acts) or "—"


def seat_legend_html(labels: Sequence[str]) -> str:
    """The seats' colours, one chip each, shown once above the charts drawn in them."""
    chips = "".join(
        f'<span class="pdb-rchip" style="--seat:{seat_color(i)}">{escape(label)}</span>'
        for i, label in enumerate(labels)
    )
    return f'<div class="pdb-rlegend"><b>Seats:</b>{chips}</div>'


def table_html(table: pd.DataFrame, round_no: int) -> str:
    """The decision table as HTML: a row per seat, its label in its colour, rows with a
    reading problem shaded."""
    head = "".join(f"<th>{escape(str(c))}</th>" for c in table.columns)
    rows = []
    for i, (_, row) in enumerate(table.iterrows()):
        bad = str(row.get("reading", "✓")) != "✓"
        cells = "".join(
            f'<td class="pdb-rseat">{escape(str(v))}</td>'
            if c == "seat"
            else f'<td class="pdb-r-{escape(str(c).split(" ")[0])}">{escape(str(v))}</td>'
            for c, v in row.items()
        )
        rows.append(
            f'<tr class="pdb-rrow{" pdb-rbad" if bad else ""}" data-seat="{i}" '
            f'style="--seat:{seat_color(i)}">{cells}</tr>'
        )
    return (
        f'<table class="pdb-rtable" data-round="{round_no}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def messages_html(said: Sequence[tuple[int | None, str]], labels: Sequence[str], kind: str) -> str:
    """The messages (seat, text) as coloured lines, the seat's label in its colour."""
    if not said:
        return '<div class="pdb-rmsgs"><span class="pdb-rmsg-none">none this round</span></div>'
    items = []
    for seat, text in said:
        who = labels[seat] if seat is not None and 0 <= seat < len(labels) else "—"
        color = seat_color(seat) if seat is not None else "#6b7280"
        items.append(
            f'<div class="pdb-rmsg {kind}" style="--seat:{color}">'
            f'<span class="pdb-rmsg-who">{escape(who)}</span>'
            f'<span class="pdb-rmsg-text">{escape(text)}</span></div>'
        )
    return f'<div class="pdb-rmsgs">{"".join(items)}</div>'
