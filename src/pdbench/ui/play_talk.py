"""The talking parts of the 🎮 Play tab (`tabs/play.py`, with "Talk before each move"): the
setup's talk options, the exchange before each move (the messages the person may read now and
the box to write theirs) and messages as chat bubbles."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import streamlit as st

from pdbench.ui import launcher, play_launcher


def talk_options(opponent: launcher.AgentOption) -> tuple[bool, str, str]:
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


def talk_box(live: Any, played: int, them: str, order: str, on_send: Callable[[], None]) -> None:
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
        st.form_submit_button("📨 Send", type="primary", on_click=on_send, key="pl_send")
