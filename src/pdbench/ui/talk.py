"""A game's messages as the app shows them: beside the move that followed them in the replay,
with each message's intention, and the broken promises (an agent said C, then chose D) marked
on the timeline.

A round record's `messages` (see `pdbench.storage.record.jsonl.RoundsEncoder.message_record`)
holds the messages written before that round's moves: `{"from": "agent_a", "turn": 0,
"text": ..., "intent": "C" | "D" | null, "source": ...}`, an LLM's also `fallback` (no usable
reply: the agent said nothing). An agent's **stated intention** before a move is what its
messages of that exchange *said*, as the partner read them (the next-move reading of the talk
metrics, `core.talk_metrics.talk_tracks`, fallback entries left out, as `storage.record.table`
leaves them out; a conditional promise shows as C); a **broken promise** is a move whose stated
intention was C and whose chosen move (before noise) was D.

`encode` turns a game into the compact form the replay page carries (`assets/replies.js` sets
every text with `textContent`, never as HTML). Nothing here reads files or draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pdbench.core.rounds_display import round_number
from pdbench.core.talk_metrics import BOUND_C, BOUND_COND_C, BOUND_D, TalkSetting, talk_tracks
from pdbench.core.types import Action, Message
from pdbench.ui.replies import clip

SIDES = ("agent_a", "agent_b")
MAX_CHARS = 600  # a longer message is cut here for the page (with its full length)
STATED = {BOUND_C: "C", BOUND_COND_C: "C", BOUND_D: "D"}  # else "-": no stated intention


def _entries(value: Any) -> list[Mapping[str, Any]]:
    """A round's message entries (anything else, e.g. NaN of a missing cell, is none)."""
    return [e for e in value if isinstance(e, Mapping)] if isinstance(value, list) else []


def _intent(value: Any) -> Action | None:
    return Action(value) if value in ("C", "D") else None


def stated_intentions(
    rounds: Sequence[Any], intended_a: str, intended_b: str, setting: TalkSetting | None = None
) -> tuple[str, str]:
    """Each agent's stated intention (what it said) before each move, as a string of C, D and
    - (none), from a game's per-round `messages` and the moves each agent chose (strings of
    C/D); `setting`: how the condition's messages are read (default: labels C and D)."""
    said = [
        Message(
            r,
            int(e.get("turn") or 0),
            SIDES.index(e["from"]),
            str(e.get("text") or ""),
            _intent(e.get("intent")),
            str(e.get("source") or "none"),
        )
        for r, value in enumerate(rounds)
        for e in _entries(value)
        if e.get("from") in SIDES and not e.get("fallback")
    ]
    chose = ([m == "C" for m in intended_a], [m == "C" for m in intended_b])
    setting = setting or TalkSetting()
    tracks = talk_tracks(said, chose[0], chose[1], setting.labels, setting.pregame)
    return (
        "".join(STATED.get(int(x), "-") for x in tracks[0].said),
        "".join(STATED.get(int(x), "-") for x in tracks[1].said),
    )


def broken_promises(stated: str, intended: str) -> list[int]:
    """The rounds (numbered from 1) where an agent stated C and chose D."""
    return [
        round_number(r)
        for r, (s, m) in enumerate(zip(stated, intended, strict=True))
        if s + m == "CD"
    ]


def encode(rounds: Sequence[Any], intended_a: str, intended_b: str) -> dict[str, Any] | None:
    """A game's messages for the replay page, or None when it has none: `{"texts": [[text,
    intent ("C", "D" or ""), source, fallback 0/1], ...], "a": [...], "b": [...], "sa": ...,
    "sb": ...}` where a side's list holds, per round, the indices into `texts` of the messages
    it wrote before that round's move (in turn order), and `sa`/`sb` are the stated
    intentions (`stated_intentions`)."""
    if not any(_entries(value) for value in rounds):
        return None
    table: dict[tuple[str, str, str, int], int] = {}
    sides: dict[str, list[list[int]]] = {"a": [], "b": []}
    for value in rounds:
        mine: dict[str, list[tuple[int, int]]] = {"a": [], "b": []}
        for e in _entries(value):
            if e.get("from") not in SIDES:
                continue
            text = clip(str(e.get("text") or ""), MAX_CHARS) or ""
            intent = e.get("intent") if e.get("intent") in ("C", "D") else ""
            key = (text, str(intent), str(e.get("source") or "none"), int(bool(e.get("fallback"))))
            mine[str(e["from"])[-1]].append(
                (int(e.get("turn") or 0), table.setdefault(key, len(table)))
            )
        for side in "ab":
            sides[side].append([i for _, i in sorted(mine[side], key=lambda t: t[0])])
    sa, sb = stated_intentions(rounds, intended_a, intended_b)
    return {"texts": [list(k) for k in table], **sides, "sa": sa, "sb": sb}
