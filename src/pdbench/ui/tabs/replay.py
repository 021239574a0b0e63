"""🎬 Animated Replay: watch one game round by round, like The Evolution of Trust.

The replay runs in the browser (`animation.replay_page`): every round is sent once as data, and
Play / Pause / Restart / Back / Step, the speed (20 ms to 2 s per round), the scrub slider, the
jumps to the previous or next defection, noise flip or fallback, and the timeline with its cursor
all work without a server round trip. Under each move, in a game with messages: what the agent
said before it, with its stated intention ("promised C"), and a broken promise marked (also on
the timeline, with a jump to the next one). Under an LLM agent's move: its reply, its earlier
invalid replies and a fallback mark.
"""

from __future__ import annotations

import streamlit as st

from pdbench.ui import animation, data
from pdbench.ui.components import AppContext, game_replies, matchup, pick_game, show_error

LABEL = "🎬 Animated Replay"
KEY = "replay"  # the tab's name in the session state (e.g. a pending tab switch)
POSITION = 2  # its place among the tabs, left to right
PREFIX = "rp"
SPEED_MS = 200  # the default speed (ms per round)


def render(ctx: AppContext) -> None:
    """Draw the tab."""
    game = pick_game(PREFIX, ctx)
    if game is None:
        return
    matchup(game)
    try:
        replies = game_replies(game)
    except data.RunLoadError as exc:  # the replay still runs, without the replies
        show_error(exc)
        replies = None
    st.iframe(
        animation.replay_page(game.table, game.labels, SPEED_MS, replies),
        height=animation.REPLAY_HEIGHT
        + (animation.REPLY_HEIGHT if replies else 0)
        + (animation.TALK_HEIGHT if animation.has_talk(game.table) else 0),
    )
    st.caption(
        "Rounds are numbered from 1. Space plays or pauses, ← and → step (click the replay "
        "first). Click a round in the timeline to jump there; drag on the whole-game strip to "
        "choose the window of rounds shown."
    )
