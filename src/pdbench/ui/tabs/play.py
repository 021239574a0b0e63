"""🎮 Play: play the iterated game yourself against any policy or LLM agent, as in Nicky Case's
The Evolution of Trust, seeing what the agent sees.

After each click the game so far is replayed by the engine a run uses (`play_launcher.replay_play`),
so the opponent moves exactly as it will in the saved run. When the last round is played the
game is saved as an ordinary experiment run (a new `ui_<timestamp>/` under the runs folder, the
person as a `type: human` agent whose config holds their moves), with the same artifacts and
metrics as any run, and the tab offers to open it in View Results.

With "Talk before each move" (against a policy, which speaks by a message rule, or a mock LLM
persona) the person types a message before each move and reads the opponent's: with
simultaneous order only once theirs is sent, otherwise when the opponent writes first. The saved
run records the typed messages (the human agent's `messages`) and the opponent's, as seen.

The game lives in session state under `pl_game` (a plain key), so switching tabs keeps it; the
setup form's values are kept with `components.save_widgets`.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from pdbench.errors import PdbenchError
from pdbench.storage.record.fields import MESSAGES, ROUND_INDEX, side_field, side_fields
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
POSITION = 7  # its place among the tabs, left to right
GAME = "pl_game"  # the game in progress: a plain session key (survives tab switches)
STORE = "pl_form"  # the setup form's saved values
FORM_KEYS = ("pl_opponent", "pl_name", "pl_rounds", "pl_seed", "pl_talk", "pl_order", "pl_rule")
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
.pdb-chat {{ display: flex; flex-direction: column; gap: 6px; margin: 4px 0 8px 0; }}
.pdb-chat-row {{ display: flex; }}
.pdb-chat-row.them {{ justify-content: flex-end; }}
.pdb-chat-msg {{ max-width: 70%; padding: 6px 12px; border-radius: 14px; font-size: 15px;
  line-height: 1.35; white-space: pre-wrap; overflow-wrap: anywhere; background: #eef2ff; }}
.pdb-chat-row.them .pdb-chat-msg {{ background: #fff4e5; }}
.pdb-chat-who {{ display: block; font-size: 12px; font-weight: 700; color: #52606d; }}
.pdb-chat-msg.none {{ font-style: italic; color: #7b8794; }}
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
        talk, order, rule = _talk_options(opponent)
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
        talk=talk,
        order=order,
        rule=rule,
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
        "messages": [],
        "live": live,
        "error": None,
        "saved": None,
    }
    st.rerun()


def _talk_options(opponent: launcher.AgentOption) -> tuple[bool, str, str]:
    """The talk toggle (for an opponent that can talk), the speaking order and a policy's
    message rule: (talk, order, rule)."""
    if not play_launcher.can_talk(opponent):
        return False, "simultaneous", "honest"
    talk = st.toggle(
        "💬 Talk before each move",
        key="pl_talk",
        help="Before each move you send your opponent one message and read theirs; the "
        "saved run records every message, and the report measures whether words predict moves.",
    )
    if not talk:
        return False, "simultaneous", "honest"
    orders = play_launcher.TALK_ORDERS
    if st.session_state.get("pl_order") not in orders:
        st.session_state["pl_order"] = "simultaneous"
    order = st.selectbox("Who writes first", list(orders), key="pl_order", format_func=orders.get)
    rule = "honest"
    if opponent.kind == "policy":
        rules = play_launcher.TALK_RULES
        if st.session_state.get("pl_rule") not in rules:
            st.session_state["pl_rule"] = "honest"
        rule = st.selectbox(
            "What it says",
            list(rules),
            key="pl_rule",
            format_func=lambda k: f"{k}: {rules[k]}",
        )
    return True, str(order), str(rule)


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
    if game["live"].awaiting_message:
        return  # the person writes before moving
    moves = [*game["moves"], action]
    try:
        live = play_launcher.replay_play(Path(game["config"]), moves, game["messages"])
    except (PdbenchError, OSError, ValueError, RuntimeError) as exc:
        game["error"] = data.first_line(exc)
        return
    game.update(moves=moves, live=live, error=None)


def _send() -> None:
    """The Send button's callback: replay the exchange with the person's typed message (an
    empty one: they say nothing this time)."""
    game = st.session_state.get(GAME)
    if game is None or not game["live"].awaiting_message:
        return
    text = str(st.session_state.get("pl_message") or "").strip()[: play_launcher.MAX_CHARS]
    messages = [*game["messages"], text]
    try:
        live = play_launcher.replay_play(Path(game["config"]), game["moves"], messages)
    except (PdbenchError, OSError, ValueError, RuntimeError) as exc:
        game["error"] = data.first_line(exc)
        return
    game.update(messages=messages, live=live, error=None)


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
    if live.talks and not live.finished:
        _talk(live, played, them.short, request.order)
    c, d = st.columns(2)
    for col, action in ((c, "C"), (d, "D")):
        col.button(
            f"{ACTION_EMOJI[action]} {MOVE_WORD[action]}",
            key=f"pl_move_{action}",
            on_click=_move,
            args=(action,),
            disabled=live.finished or live.awaiting_message,
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
    if live.talks and any(r.get(MESSAGES) for r in records):
        with st.expander("💬 The conversation so far", expanded=False):
            for record in records:
                if record.get(MESSAGES):
                    st.caption(f"Before round {record[ROUND_INDEX] + 1}")
                    st.html(chat_html(record[MESSAGES], them.short))

    _agent_view(request, live)
    if live.finished:
        _finish(ctx, game, config_dir)
    st.button("🏳️ New game" if live.finished else "🏳️ Give up", key="pl_quit", on_click=_quit)


def chat_html(entries: list[dict[str, Any]], them: str, kind: str = "") -> str:
    """Message entries (as rounds.jsonl has them) as chat bubbles: the person's on the left,
    the opponent's on the right. Texts are escaped: a message is shown as typed, never as
    HTML. The opponent's declared intention is private and not shown. `kind`: an extra class
    ("pending": the exchange before the next move)."""
    rows = []
    for entry in entries:
        mine = entry.get("from") == "agent_a"
        text = str(entry.get("text") or "")
        who = "You" if mine else them
        body = html.escape(text) if text else "(said nothing)"
        rows.append(
            f'<div class="pdb-chat-row {"you" if mine else "them"}">'
            f'<div class="pdb-chat-msg{"" if text else " none"}">'
            f'<span class="pdb-chat-who">{html.escape(who)}</span>{body}</div></div>'
        )
    return f'<div class="{f"pdb-chat {kind}".strip()}">{"".join(rows)}</div>'


def _talk(live: Any, played: int, them: str, order: str) -> None:
    """The exchange before the next move: the messages the person may read now, and the box
    to write theirs (before they can move)."""
    st.markdown(f"**💬 Messages before round {played + 1}**")
    if live.pending:
        st.html(chat_html(live.pending, them, "pending"))
    if not live.awaiting_message:
        if not live.pending:
            st.caption("Nobody said anything. Now choose your move.")
        else:
            st.caption("Now choose your move.")
        return
    if not live.pending:
        st.caption(
            f"Write to {them} first: "
            + (
                "you both write at the same time, so their message shows once you have sent yours."
                if order == "simultaneous"
                else "they read your message before answering."
            )
        )
    with st.form("pl_talk_form", clear_on_submit=True, border=False):
        st.text_input(
            "Your message",
            key="pl_message",
            max_chars=play_launcher.MAX_CHARS,
            placeholder="e.g. I will cooperate if you do.",
        )
        st.form_submit_button("📨 Send", type="primary", on_click=_send, key="pl_send")


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
        if live.awaiting_message:
            st.caption(
                f"Its prompt for round {len(live.records) + 1} shows once you have sent your "
                "message (it includes the messages)."
            )
        elif live.next_prompt is not None:
            st.caption(f"Its prompt for round {len(live.records) + 1}, as it will be asked:")
            st.code(live.next_prompt, language=None, wrap_lines=True)
        elif live.records:
            prompts = (live.records[-1].get("prompts") or {}).get("agent_b") or {}
            st.caption("Its prompt for the last round:")
            st.code(str(prompts.get("round") or ""), language=None, wrap_lines=True)
        st.caption("Its system prompt (the rules and its persona):")
        st.code(live.system_prompt, language=None, wrap_lines=True)


def _texts(rounds: list[Any]) -> list[list[tuple[str, str]]]:
    """Each round's messages as (writer, text), rounds without messages left out."""
    out = [[(str(e.get("from")), str(e.get("text"))) for e in r or []] for r in rounds]
    return [r for r in out if r]


def _finish(ctx: AppContext, game: dict[str, Any], config_dir: Path) -> None:
    """Save the finished game as a run (once), check it, and offer to open it."""
    request: play_launcher.PlayRequest = game["request"]
    records = game["live"].records
    if game["saved"] is None and not game.get("save_failed"):
        config_path = play_launcher.prepare_play(
            request, config_dir, ctx.runs_root, game["moves"], game.get("messages", [])
        )
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
        ) and _texts(saved[MESSAGES].tolist() if MESSAGES in saved else []) == _texts(
            [r.get(MESSAGES) for r in records]
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
            "The saved run's moves or messages differ from the game you played (an LLM reply "
            "was not served from the cache?).",
            icon="🚫",
        )
    if st.button("📊 Open in View Results", type="primary", key="pl_open"):
        st.session_state[SEL_RUN] = game["saved"]
        st.session_state[SEL_CONDITION] = request.condition_name
        st.session_state[SEL_REPLICATE] = 0
        st.session_state[PENDING_TAB] = view_results.KEY
        st.rerun()
