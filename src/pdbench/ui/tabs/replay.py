"""🎬 Animated Replay: watch one game round by round, like The Evolution of Trust.

Playback uses `st.fragment(run_every=...)`: while playing, only the stage fragment reruns, once per
tick, and advances the round kept in session state. Play / Pause / Step / Restart are buttons
outside the fragment (their callbacks change the state, and the full rerun re-registers the
fragment with or without a timer); the scrub slider lives inside the fragment.
"""

from __future__ import annotations

import time

import streamlit as st

from pdbench.ui.components import AppContext, Game, describe_condition, pick_game
from pdbench.ui.style import card_html, move_html, trail_html

LABEL = "🎬 Animated Replay"
ROUND = "rp_round"  # the scrub slider's key: the 1-based round on stage
PLAYING = "rp_playing"
LAST_TICK = "rp_last_tick"
GAME_ID = "rp_game_id"
SPEED = "rp_speed"
TRAIL = 20
OUTCOMES = {
    "CC": "both cooperate 🤝",
    "DD": "both defect 🗡️",
    "CD": "B exploits A",
    "DC": "A exploits B",
}


def stop() -> None:
    """Pause playback (also called when the tab is hidden)."""
    st.session_state[PLAYING] = False


def _toggle(n: int) -> None:
    playing = not st.session_state.get(PLAYING, False)
    if playing and int(st.session_state.get(ROUND, 1)) >= n:
        st.session_state[ROUND] = 1
    st.session_state[PLAYING] = playing
    st.session_state[LAST_TICK] = time.monotonic()


def _step(delta: int, n: int) -> None:
    st.session_state[PLAYING] = False
    st.session_state[ROUND] = min(n, max(1, int(st.session_state.get(ROUND, 1)) + delta))


def _restart() -> None:
    st.session_state[PLAYING] = False
    st.session_state[ROUND] = 1


def render(ctx: AppContext) -> None:
    """Draw the tab."""
    game = pick_game("rp", ctx)
    if game is None:
        return
    n = len(game.table)
    game_id = f"{game.run.path}|{game.condition}|{game.replicate}|{n}"
    if st.session_state.get(GAME_ID) != game_id:
        st.session_state[GAME_ID] = game_id
        st.session_state[ROUND] = 1
        st.session_state[PLAYING] = False
    st.session_state[ROUND] = min(n, max(1, int(st.session_state.get(ROUND, 1))))

    left, mid, right = st.columns([5, 1, 5], vertical_alignment="center")
    left.html(card_html(game.profiles[0], "A"))
    mid.html('<div class="pdb-vs">⚔️</div>')
    right.html(card_html(game.profiles[1], "B"))
    st.caption(f"**{game.condition}** · replicate {game.replicate} · {describe_condition(game)}")

    playing = bool(st.session_state.get(PLAYING, False))
    controls = st.columns([1.1, 1, 1, 1, 4], vertical_alignment="bottom")
    controls[0].button(
        "⏸️ Pause" if playing else "▶️ Play",
        key="rp_play",
        on_click=_toggle,
        args=(n,),
        type="primary",
        width="stretch",
    )
    controls[1].button("⏮️ Restart", key="rp_restart", on_click=_restart, width="stretch")
    controls[2].button("◀️ Back", key="rp_back", on_click=_step, args=(-1, n), width="stretch")
    controls[3].button("Step ▶️", key="rp_step", on_click=_step, args=(1, n), width="stretch")
    speed = controls[4].slider("Speed (ms per round)", 50, 2000, 400, step=50, key=SPEED)
    run_every = speed / 1000.0 if playing else None
    st.fragment(run_every=run_every)(_stage)(game, speed)


def _stage(game: Game, speed_ms: int) -> None:
    """The current round: moves, scores, history trail and the scrub slider."""
    n = len(game.table)
    if st.session_state.get(PLAYING):
        now = time.monotonic()
        if now - float(st.session_state.get(LAST_TICK, 0.0)) >= 0.5 * speed_ms / 1000.0:
            st.session_state[LAST_TICK] = now
            st.session_state[ROUND] = min(n, int(st.session_state[ROUND]) + 1)
            if st.session_state[ROUND] >= n:
                st.session_state[PLAYING] = False
                st.rerun(scope="app")  # the last frame is drawn without a timer
    current = int(st.session_state[ROUND])
    row = game.table.iloc[current - 1]

    left, mid, right = st.columns([5, 2, 5], vertical_alignment="center")
    for col, side in ((left, "a"), (right, "b")):
        col.html(
            move_html(
                str(row[f"agent_{side}_action"]),
                str(row[f"agent_{side}_intended_action"]),
                float(row[f"agent_{side}_payoff"]),
                bool(row[f"agent_{side}_parse_failure"]),
            )
        )
    outcome = OUTCOMES.get(f"{row['agent_a_action']}{row['agent_b_action']}", "")
    mid.html(
        f'<div class="pdb-round">Round {current} of {n}'
        f'<div style="font-size:13px;font-weight:400">{outcome}</div></div>'
    )
    score_a, gap, score_b = st.columns([5, 2, 5])
    for col, side, label in ((score_a, "a", game.labels[0]), (score_b, "b", game.labels[1])):
        gained = float(row[f"agent_{side}_payoff"])
        col.metric(
            f"{label} score",
            f"{float(row[f'agent_{side}_cum_payoff']):g}",
            delta=f"{gained:+g} this round",
            delta_color="normal" if gained > 0 else "off",
            delta_arrow="auto" if gained > 0 else "off",
            border=True,
        )
    lead = float(row["agent_a_cum_payoff"] - row["agent_b_cum_payoff"])
    gap.markdown(
        "<div style='text-align:center;padding-top:26px'>"
        + ("⚖️ level" if lead == 0 else f"{'A' if lead > 0 else 'B'} leads by {abs(lead):g}")
        + "</div>",
        unsafe_allow_html=True,
    )
    lo = max(0, current - TRAIL)
    st.html(trail_html(game.table.iloc[lo:current], game.labels, current))
    if n > 1:
        st.slider("Scrub to round", 1, n, key=ROUND)
