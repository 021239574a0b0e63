"""🎬 Animated Replay: watch one game round by round, like The Evolution of Trust.

Play / Pause / Step / Restart and the speed are `components.Playback` controls; the stage (moves,
scores, history trail, scrub slider) is a fragment that reruns once per tick while playing.
"""

from __future__ import annotations

import streamlit as st

from pdbench.ui.components import AppContext, Game, Playback, matchup, pick_game, stop_playback
from pdbench.ui.style import move_html, trail_html

LABEL = "🎬 Animated Replay"
PREFIX = "rp"
ROUND = "rp_round"  # the scrub slider's key: the 1-based round on stage
TRAIL = 20
OUTCOMES = {
    "CC": "both cooperate 🤝",
    "DD": "both defect 🗡️",
    "CD": "B exploits A",
    "DC": "A exploits B",
}


def stop() -> None:
    """Pause playback (also called when the tab is hidden)."""
    stop_playback(PREFIX)


def render(ctx: AppContext) -> None:
    """Draw the tab."""
    game = pick_game(PREFIX, ctx)
    if game is None:
        return
    n = len(game.table)
    playback = Playback(PREFIX, ROUND, 1, n)
    playback.sync(f"{game.run.path}|{game.condition}|{game.replicate}|{n}", start=1)

    matchup(game)
    speed = playback.controls("Speed (ms per round)", 400, 2000)
    playback.stage(_stage, speed, game, playback, speed)


def _stage(game: Game, playback: Playback, speed_ms: int) -> None:
    """The current round: moves, scores, history trail and the scrub slider."""
    n = len(game.table)
    current = playback.advance(speed_ms)
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
