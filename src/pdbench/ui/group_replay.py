"""The replay of one group game (the 🫂 Groups tab's Replay view): a round slider and step
buttons (rounds numbered from 1), the seats drawn around the group for that round (each seat's
letter, agent name, move as a token with its letter and word, payoff this round and running
total), the messages written before that round's moves beside the ring, then every seat's
moves (rows seats, columns rounds) and the group's cooperation over rounds.

The round is kept in the URL as the pairwise replay keeps its place (`url_state.PLACE`), so a
link opens on it. Numbers are the record's (`ui.group_data`); the condition's mean curve and
band are from group_rounds.parquet when the run has it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from pdbench.core.rounds_display import NUMBERING_NOTE
from pdbench.storage.group_aggregate import GROUP_ROUNDS_FILE
from pdbench.ui import data, group_charts, group_data, group_look, url_state
from pdbench.ui.components import show_error
from pdbench.ui.group_data import GroupCondition, GroupGameRounds
from pdbench.ui.style import LEGEND, UNKNOWN_STYLE, agent_profile

ROUND = "grp_round"  # the slider's value (a 1-based round)
KEPT = "grp_round_kept"  # (game, round): the round kept while another tab is open
HTML_TIMELINE_MAX = 200  # longer games get the timeline as a chart


def render(
    path: str, manifest: Mapping[str, Any], condition: GroupCondition, replicate: int
) -> None:
    """Draw the replay of one game of a groups run."""
    try:
        game = group_data.load_game(path, manifest, condition.name, replicate)
    except data.RunLoadError as exc:
        show_error(exc)
        return
    st.caption(
        f"**{condition.name}** · replicate {replicate} · {group_data.describe(condition)} · "
        f"{game.n_rounds} rounds played"
    )
    key = (path, condition.name, int(replicate))
    t = round_control(game, key) - 1
    height = group_look.ring_size(game.n_seats)[0]
    ring, talk = st.columns([3, 2], gap="medium")
    ring.html(group_look.ring_html(game, t, seat_emojis(manifest, condition, game.names)))
    talk.html(group_look.messages_html(game, t, condition.talks or game.talks, height))
    st.markdown("**🧭 Every seat's moves**")
    if game.n_rounds <= HTML_TIMELINE_MAX:
        st.html(group_look.timeline_html(game, t))
        st.html(LEGEND)
    else:
        st.altair_chart(group_charts.seat_timeline_chart(game, t), width="stretch")
    st.caption(f"{NUMBERING_NOTE} The ringed cell is the round shown above.")
    st.markdown("**🤝 The group's cooperation over rounds**")
    mean, band = condition_curve(path, condition.name)
    st.altair_chart(group_charts.game_cooperation_chart(game, t, mean, band), width="stretch")
    if mean:
        st.caption(
            "Dashed: the condition's mean over its games, grey band its 95% interval per round "
            "(games as the unit), from group_rounds.parquet."
        )


def _step(n_rounds: int, by: int) -> None:
    """A step button's callback: move the slider by `by` rounds, within the game."""
    now = int(st.session_state.get(ROUND, 1))
    st.session_state[ROUND] = min(max(1, now + by), n_rounds)


def round_control(game: GroupGameRounds, key: tuple[str, str, int]) -> int:
    """The round slider and ⏮ ◀ ▶ ⏭ buttons; returns the round shown (1-based). A game shown
    anew opens on the round a link asked for (`url_state.opening_place`), else round 1; the
    round comes back after a tab switch."""
    n = game.n_rounds
    kept = st.session_state.get(KEPT)
    if kept is None or kept[0] != key:
        place = url_state.opening_place(key, n)
        st.session_state[ROUND] = place.round if place and place.round else 1
    elif ROUND not in st.session_state:  # the slider was not drawn on the last run
        st.session_state[ROUND] = kept[1]
    st.session_state[ROUND] = min(max(1, int(st.session_state[ROUND])), n)
    if n > 1:
        first, back, slider, step, last = st.columns([1, 1, 8, 1, 1], vertical_alignment="bottom")
        first.button("⏮", key="grp_first", help="Round 1", on_click=_step, args=(n, -n))
        back.button("◀", key="grp_back", help="Previous round", on_click=_step, args=(n, -1))
        step.button("▶", key="grp_next", help="Next round", on_click=_step, args=(n, 1))
        last.button("⏭", key="grp_last", help=f"Round {n}", on_click=_step, args=(n, n))
        slider.slider(f"Round (1–{n})", min_value=1, max_value=n, key=ROUND)
    shown = int(st.session_state[ROUND])
    st.session_state[KEPT] = (key, shown)
    st.session_state[url_state.PLACE] = url_state.Place(key, shown)
    return shown


def seat_emojis(
    manifest: Mapping[str, Any], condition: GroupCondition, names: Sequence[str]
) -> list[str]:
    """Each seat's face (`names`: the game's agents in seat order) from its agent's look
    (`style.agent_profile`: a policy's emoji, 💬 for an LLM agent), '' for an agent the app
    has no look for. The config is the seat's in a fixed group, else the name alone says."""
    configs = _seat_configs(manifest, condition.name) if condition.matching == "fixed" else []
    out = []
    for seat, name in enumerate(names):
        cfg = configs[seat] if seat < len(configs) else None
        emoji = agent_profile(cfg if isinstance(cfg, dict) else None, name).emoji
        out.append("" if emoji == UNKNOWN_STYLE[0] else emoji)
    return out


def _seat_configs(manifest: Mapping[str, Any], name: str) -> Sequence[Any]:
    """The seats' configs of a condition in the manifest's config snapshot ([] if none)."""
    groups = (manifest.get("config") or {}).get("groups") or {}
    for cond in groups.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("name") == name:
            return cond.get("seats") or []
    return []


def condition_curve(
    path: str, condition: str
) -> tuple[list[float], tuple[list[float], list[float]] | None]:
    """The condition's mean share of seats cooperating per round and its 95% band, from
    group_rounds.parquet ([] and None when the run has no such table or it cannot be read)."""
    try:
        table = group_data.load_table(path, GROUP_ROUNDS_FILE)
    except data.RunLoadError:
        return [], None
    if table is None or "cooperation" not in table.columns:
        return [], None
    rows = table[table["condition"] == condition].sort_values("round")
    mean = [float(v) for v in rows["cooperation"]]
    if "cooperation_ci_low" not in rows.columns or rows["cooperation_ci_low"].isna().all():
        return mean, None
    low = [float(v) if pd.notna(v) else float("nan") for v in rows["cooperation_ci_low"]]
    high = [float(v) if pd.notna(v) else float("nan") for v in rows["cooperation_ci_high"]]
    return mean, (low, high)
