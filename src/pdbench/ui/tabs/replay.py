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

from dataclasses import dataclass

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
OPENED = "rp_opened"  # the replay on the page: Opened


@dataclass(frozen=True)
class Opened:
    """The replay drawn: its game, its page (opened on the kept place), the iframe's height
    and why the replies could not be read, if so."""

    game: tuple[str, str, int]
    page: str
    height: int
    problem: data.RunLoadError | None


def render(ctx: AppContext) -> None:
    """Draw the tab."""
    game = pick_game(PREFIX, ctx)
    if game is None:
        return
    matchup(game)
    opened = _opened(game)
    if opened.problem is not None:  # the replay still runs, without the replies
        show_error(opened.problem)
    st.iframe(opened.page, height=opened.height)
    st.caption(
        "Rounds are numbered from 1. Space plays or pauses, ← and → step (click the replay "
        "first). Click a round in the timeline to jump there; drag on the whole-game strip to "
        "choose the window of rounds shown."
    )


def _opened(game: Game) -> Opened:
    """The replay of `game`, opened on the kept place (`url_state`) when it is drawn anew
    (another tab or game before, a new session). While it stays on the page, the same page:
    the browser does not reload it when it reports its place (which reruns the script), and a
    long game's page (megabytes) is not built again."""
    key = (game.run.path, game.condition, game.replicate)
    opened = st.session_state.get(OPENED)
    if st.session_state.get(LAST_TAB) == LABEL and opened is not None and opened.game == key:
        return opened
    problem = None
    try:
        replies = game_replies(game)
    except data.RunLoadError as exc:
        problem, replies = exc, None
    place = url_state.opening_place(key, len(game.table))
    page = animation.replay_page(
        game.table, game.labels, SPEED_MS, replies, url_state.replay_options(place, key)
    )
    height = (
        animation.REPLAY_HEIGHT
        + (animation.REPLY_HEIGHT if replies else 0)
        + (animation.TALK_HEIGHT if animation.has_talk(game.table) else 0)
    )
    opened = st.session_state[OPENED] = Opened(key, page, height, problem)
    return opened
