"""🎬 Animated Replay: watch one game round by round, like The Evolution of Trust.

The replay runs in the browser (`animation.replay_page`): every round is sent once as data, and
Play / Pause / Restart / Back / Step, the speed (20 ms to 2 s per round), the scrub slider, the
jumps to the previous or next defection, noise flip or fallback, and the timeline with its cursor
all work without a server round trip. Under each move, in a game with messages: what the agent
said before it, with its stated intention ("promised C"), and a broken promise marked (also on
the timeline, with a jump to the next one). Under an LLM agent's move: its reply, its earlier
invalid replies and a fallback mark.

The replay keeps its place (round and zoom window) in the URL (`url_state`): it opens there
after a tab switch, a refresh or from a link.
"""

from __future__ import annotations

import streamlit as st

from pdbench.ui import animation, data, url_state
from pdbench.ui.components import (
    LAST_TAB,
    AppContext,
    Game,
    game_replies,
    matchup,
    pick_game,
    show_error,
)

LABEL = "🎬 Animated Replay"
KEY = "replay"  # the tab's name in the session state (e.g. a pending tab switch)
POSITION = 2  # its place among the tabs, left to right
PREFIX = "rp"
SPEED_MS = 200  # the default speed (ms per round)
OPENED = "rp_opened"  # (game, place) the replay on the page was opened on


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
    key = (game.run.path, game.condition, game.replicate)
    st.iframe(
        animation.replay_page(
            game.table, game.labels, SPEED_MS, replies, url_state.replay_options(_place(game), key)
        ),
        height=animation.REPLAY_HEIGHT
        + (animation.REPLY_HEIGHT if replies else 0)
        + (animation.TALK_HEIGHT if animation.has_talk(game.table) else 0),
    )
    st.caption(
        "Rounds are numbered from 1. Space plays or pauses, ← and → step (click the replay "
        "first). Click a round in the timeline to jump there; drag on the whole-game strip to "
        "choose the window of rounds shown."
    )


def _place(game: Game) -> url_state.Place | None:
    """The place the replay opens on: the kept one (`url_state`) when it is drawn anew (another
    tab or game before, a new session); while it stays on the page, the one it was opened on,
    so its page does not change and the browser does not reload it when it reports its place
    (which reruns the script)."""
    key = (game.run.path, game.condition, game.replicate)
    opened = st.session_state.get(OPENED)
    if st.session_state.get(LAST_TAB) == LABEL and opened is not None and opened[0] == key:
        return opened[1]
    place = url_state.opening_place(key, len(game.table))
    st.session_state[OPENED] = (key, place)
    return place
