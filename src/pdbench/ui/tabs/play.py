"""🎮 Play: play the iterated game yourself against any policy or LLM agent, as in Nicky Case's
The Evolution of Trust, seeing what the agent sees.

After each click the game so far is replayed by the engine a run uses (`play_launcher.replay_play`),
so the opponent moves exactly as it will in the saved run. When the last round is played the
game is saved as an ordinary experiment run (a new `ui_<timestamp>/` under the runs folder, the
person as a `type: human` agent whose config holds their moves), with the same artifacts and
metrics as any run, and the tab offers to open it in View Results.

The game lives in session state under `pl_game` (a plain key), so switching tabs keeps it; the
setup form's values are kept with `components.save_widgets`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from pdbench.errors import PdbenchError
from pdbench.storage.record.fields import ROUND_INDEX, side_field, side_fields
from pdbench.ui import data, launcher, play_launcher, tables
from pdbench.ui.components import (
    SEL_CONDITION,
    SEL_REPLICATE,
    SEL_RUN,
    AppContext,
    config_dir_or_error,
    restore_widgets,
    run_prepared,
    save_widgets,
)
from pdbench.ui.style import (
    ACTION_EMOJI,
    COOP_COLOR,
    DEFECT_COLOR,
    card_html,
    human_profile,
    move_html,
    trail_html,
)
from pdbench.ui.tabs import view_results
from pdbench.ui.tabs.run_experiment import PENDING_TAB

LABEL = "🎮 Play"
KEY = "play"  # the tab's name in the session state (e.g. a pending tab switch)
POSITION = 6  # its place among the tabs, left to right
GAME = "pl_game"  # the game in progress: a plain session key (survives tab switches)
STORE = "pl_form"  # the setup form's saved values
FORM_KEYS = ("pl_opponent", "pl_name", "pl_rounds", "pl_seed")
DEFAULT_OPPONENT = "policy:TFT"
MOVE_WORD = {"C": "Cooperate", "D": "Cheat"}  # The Evolution of Trust's words
TRAIL = 20  # rounds shown in the history trail
OUTCOMES = {
    "CC": "you both cooperate 🤝",
    "DD": "you both cheat 🗡️",
    "CD": "you were cheated",
    "DC": "you cheated them",
}
BUTTON_CSS = f"""<style>
.st-key-pl_move_C button, .st-key-pl_move_D button {{ min-height: 84px; border: 0;
  color: white; font-size: 26px; font-weight: 800; border-radius: 16px; }}
.st-key-pl_move_C button p, .st-key-pl_move_D button p {{ font-size: 26px; font-weight: 800; }}
.st-key-pl_move_C button {{ background: linear-gradient(135deg, #3fb866, {COOP_COLOR}); }}
.st-key-pl_move_D button {{ background: linear-gradient(135deg, #e86363, {DEFECT_COLOR}); }}
.st-key-pl_move_C button:disabled, .st-key-pl_move_D button:disabled {{ opacity: .35; }}
</style>"""


def render(ctx: AppContext) -> None:
    """Draw the tab: the setup form, or the game in progress, or the finished game."""
    config_dir = config_dir_or_error()
    if config_dir is None:
        return
    game = st.session_state.get(GAME)
    if game is None:
        _setup(config_dir)
    else:
        _board(ctx, game, config_dir)


# --------------------------------------------------------------------------------------------
# Setup


def _setup(config_dir: Path) -> None:
    """Pick the opponent and the game; Start writes the live config and opens the board."""
    restore_widgets(STORE)
    options = {o.key: o for o in launcher.agent_options(config_dir)}
    if st.session_state.get("pl_opponent") not in options:
        st.session_state["pl_opponent"] = (
            DEFAULT_OPPONENT if DEFAULT_OPPONENT in options else next(iter(options))
        )
    st.markdown(
        "Play the iterated Prisoner's Dilemma yourself, as in "
        "[The Evolution of Trust](https://ncase.me/trust/): each round you and your opponent "
        "choose at the same time to **cooperate** 🤝 or **cheat** 🗡️. Your game is saved as a "
        "run (agent type `human`) with the same artifacts and metrics as any other, so human "
        "baselines sit next to model results."
    )
    left, right = st.columns(2)
    with left:
        st.text_input("Your name (in the records)", key="pl_name", max_chars=40)
        choice = st.selectbox(
            "Opponent", list(options), key="pl_opponent", format_func=lambda k: options[k].label
        )
        opponent = options[choice]
        c1, c2 = st.columns(2)
        n_rounds = c1.slider("Rounds", 1, 50, 10, key="pl_rounds")
        seed = c2.number_input("Seed", 0, 2**31 - 1, 1337, key="pl_seed")
    with right:
        st.html(card_html(opponent.profile, "B"))
    save_widgets(STORE, FORM_KEYS)
    st.markdown("#### 💰 Payoffs")
    st.caption(
        "pdbench's default payoffs: both cooperate 3 each, both cheat 1 each, a cheater gets 5 "
        "and the cheated 0 (The Evolution of Trust uses other numbers). Each cell: your "
        "payoff, the opponent's."
    )
    edited = st.data_editor(launcher.payoff_frame(), key="pl_payoffs", num_rows="fixed")
    try:
        matrix = launcher.parse_payoff_frame(edited)
    except launcher.PayoffInputError as exc:
        for problem in exc.problems:
            st.error(problem, icon="🚫")
        return
    if opponent.kind != "policy":
        st.info(
            "An LLM opponent answers through its configured provider (the offline mock needs no "
            "key); its replies are cached, so the saved run replays exactly what you saw.",
            icon="💬",
        )
    if not st.button("▶️ Start the game", type="primary", key="pl_start"):
        return
    request = play_launcher.PlayRequest(
        opponent=opponent,
        name=str(st.session_state.get("pl_name") or ""),
        n_rounds=int(n_rounds),
        seed=int(seed),
        matrix=matrix,
    )
    config_path = play_launcher.prepare_play(request, config_dir, Path())
    try:
        with st.spinner("Setting the table…"):
            live = play_launcher.replay_play(config_path, [])
    except (PdbenchError, OSError, ValueError) as exc:
        play_launcher.discard_live(config_path)
        _show_error(exc)
        return
    st.session_state[GAME] = {
        "request": request,
        "config": str(config_path),
        "moves": [],
        "live": live,
        "error": None,
        "saved": None,
    }
    st.rerun()


def _show_error(exc: Exception) -> None:
    lines = exc.lines() if isinstance(exc, PdbenchError) else [str(exc)]
    for line in lines:
        st.error(line.splitlines()[0] if line.strip() else "failed", icon="🚫")


# --------------------------------------------------------------------------------------------
# The game


def _move(action: str) -> None:
    """A move button's callback: replay the game with one more move."""
    game = st.session_state.get(GAME)
    if game is None or game["live"].finished:
        return
    moves = [*game["moves"], action]
    try:
        live = play_launcher.replay_play(Path(game["config"]), moves)
    except (PdbenchError, OSError, ValueError, RuntimeError) as exc:
        game["error"] = data.first_line(exc)
        return
    game.update(moves=moves, live=live, error=None)


def _quit() -> None:
    """Leave the game (a finished one stays saved) and go back to the setup form."""
    game = st.session_state.pop(GAME, None)
    if game is not None:
        play_launcher.discard_live(Path(game["config"]))


def _history(records: list[dict[str, Any]]) -> pd.DataFrame:
    """The rounds played as the trail wants them (a 1-based `round` column)."""
    frame = pd.DataFrame(records)
    frame["round"] = frame[ROUND_INDEX] + 1
    return frame


def _board(ctx: AppContext, game: dict[str, Any], config_dir: Path) -> None:
    """Cards, scores, the last round, the move buttons, the trail and the agent's view."""
    request: play_launcher.PlayRequest = game["request"]
    live = game["live"]
    records: list[dict[str, Any]] = live.records
    n, played = live.n_rounds, len(records)
    you = human_profile(request.human_name)
    them = request.opponent.profile

    left, mid, right = st.columns([5, 1, 5], vertical_alignment="center")
    left.html(card_html(you, "A"))
    mid.html('<div class="pdb-vs">⚔️</div>')
    right.html(card_html(them, "B"))

    last = records[-1] if records else None
    score_you, status, score_them = st.columns([5, 2, 5], vertical_alignment="center")
    for col, side, label in ((score_you, "a", f"{you.emoji} You"), (score_them, "b", them.short)):
        total = float(last[side_field(side, "cum_payoff")]) if last else 0.0
        gained = float(last[side_field(side, "payoff")]) if last else 0.0
        col.metric(
            f"{label} · score",
            f"{total:g}",
            delta=f"{gained:+g} last round" if last else None,
            delta_color="normal" if gained > 0 else "off",
            border=True,
        )
    heading = "Game over" if live.finished else f"Round {played + 1} of {n}"
    moves = "".join(last[name] for name in side_fields("action")) if last else ""
    outcome = OUTCOMES.get(moves, "")
    status.html(
        f'<div class="pdb-round">{heading}<div style="font-size:13px;font-weight:400">'
        f"{outcome}</div></div>"
    )
    if game["error"]:
        st.error(game["error"], icon="🚫")
    st.html(BUTTON_CSS)
    c, d = st.columns(2)
    for col, action in ((c, "C"), (d, "D")):
        col.button(
            f"{ACTION_EMOJI[action]} {MOVE_WORD[action]}",
            key=f"pl_move_{action}",
            on_click=_move,
            args=(action,),
            disabled=live.finished,
            width="stretch",
        )
    if last:
        st.caption(f"Round {played}: you played (left) and {them.short} played (right)")
        a, b = st.columns(2)
        for col, side in ((a, "a"), (b, "b")):
            col.html(
                move_html(
                    str(last[side_field(side, "action")]),
                    str(last[side_field(side, "intended_action")]),
                    float(last[side_field(side, "payoff")]),
                    bool(last[side_field(side, "parse_failure")]),
                )
            )
    if records:
        history = _history(records)
        lo = max(0, played - TRAIL)
        labels = (f"{you.emoji} You", them.short)
        st.html(trail_html(history.iloc[lo:played], labels, played))

    _agent_view(request, live)
    if live.finished:
        _finish(ctx, game, config_dir)
    st.button("🏳️ New game" if live.finished else "🏳️ Give up", key="pl_quit", on_click=_quit)


def _agent_view(request: play_launcher.PlayRequest, live: Any) -> None:
    """What the opponent sees: an LLM's prompts, or a policy's rule."""
    with st.expander("👁️ What the agent sees", expanded=True):
        if live.system_prompt is None:
            profile = request.opponent.profile
            st.markdown(
                f"**{profile.short}** ({profile.subtitle}) is a scripted policy: it sees every "
                f"move so far and follows its rule. {profile.description}"
            )
            return
        if live.next_prompt is not None:
            st.caption(f"Its prompt for round {len(live.records) + 1}, as it will be asked:")
            st.code(live.next_prompt, language=None, wrap_lines=True)
        elif live.records:
            prompts = (live.records[-1].get("prompts") or {}).get("agent_b") or {}
            st.caption("Its prompt for the last round:")
            st.code(str(prompts.get("round") or ""), language=None, wrap_lines=True)
        st.caption("Its system prompt (the rules and its persona):")
        st.code(live.system_prompt, language=None, wrap_lines=True)


def _finish(ctx: AppContext, game: dict[str, Any], config_dir: Path) -> None:
    """Save the finished game as a run (once), check it, and offer to open it."""
    request: play_launcher.PlayRequest = game["request"]
    records = game["live"].records
    if game["saved"] is None and not game.get("save_failed"):
        config_path = play_launcher.prepare_play(request, config_dir, ctx.runs_root, game["moves"])
        finished = run_prepared(config_path, "experiment", "Saving your game")
        if finished is None:
            game["save_failed"] = True
            return
        game["saved"] = str(finished.run_dir.resolve())
        name = request.condition_name
        saved = tables.game_rounds(data.load_game_rounds(finished.run_dir, name, 0), name, 0)
        game["same"] = all(
            saved[side_field(s, "action")].tolist() == [r[side_field(s, "action")] for r in records]
            for s in "ab"
        )
        play_launcher.discard_live(Path(game["config"]))
    if not game["saved"]:
        return
    mine = sum(r[side_field("a", "action")] == "C" for r in records)
    you, them = (
        records[-1][side_field("a", "cum_payoff")],
        records[-1][side_field("b", "cum_payoff")],
    )
    st.success(
        f"You scored **{you:g}**, {request.opponent.profile.short} **{them:g}**; you cooperated "
        f"in {mine} of {len(records)} rounds. Saved as run `{Path(game['saved']).name}` "
        f"(rounds.jsonl, aggregates.parquet, run_manifest.json) → {game['saved']}",
        icon="✅",
    )
    if not game.get("same", True):
        st.error(
            "The saved run's moves differ from the game you played (an LLM reply was not "
            "served from the cache?).",
            icon="🚫",
        )
    if st.button("📊 Open in View Results", type="primary", key="pl_open"):
        st.session_state[SEL_RUN] = game["saved"]
        st.session_state[SEL_CONDITION] = request.condition_name
        st.session_state[SEL_REPLICATE] = 0
        st.session_state[PENDING_TAB] = view_results.KEY
        st.rerun()
