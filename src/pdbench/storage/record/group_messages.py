"""The messages of a group game read back from its records (`exchange` entries), as the
engine's chat kept them, so talk metrics computed from a run directory (`pdbench aggregate`, a
resume's kept games) equal those of the games as they were played."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pdbench.core.types import Action, Message
from pdbench.storage.record.fields import MESSAGES
from pdbench.storage.record.group_fields import SEAT_LETTERS, TO


def _seat(name: Any) -> int:
    """The seat of a record's seat name ("agent_c" -> 2); ValueError for another value."""
    text = str(name)
    if not text.startswith("agent_") or len(text) != 7 or text[-1] not in SEAT_LETTERS:
        raise ValueError(f"not a seat name (got {name!r})")
    return SEAT_LETTERS.index(text[-1])


def round_messages(record: Mapping[str, Any], round_index: int) -> list[Message]:
    """The messages one round's record holds that the chat kept (those with a text), in the
    order they were written; ValueError (one line) for an entry that is not one."""
    out: list[Message] = []
    for entry in record.get(MESSAGES) or ():
        if not isinstance(entry, Mapping):
            raise ValueError("a message entry is not an object")
        text = entry.get("text")
        if not text:
            continue  # a fallback (nothing said): not in the chat
        intent = entry.get("intent")
        to = entry.get(TO)
        out.append(
            Message(
                round_index,
                int(entry.get("turn", 0)),
                _seat(entry.get("from")),
                str(text),
                None if intent is None else Action(intent),
                str(entry.get("source") or "none"),
                None if to is None else _seat(to),
            )
        )
    return out


def game_talk(
    messages: Sequence[Message],
    chose: Any,
    labels: Sequence[tuple[str, str]] | None,
    pregame: bool,
) -> Any:
    """The talk tracks of a game with messages (None without any), as the engine computes them."""
    if not messages:
        return None
    from pdbench.core.group_talk_metrics import group_talk_tracks

    return group_talk_tracks(messages, chose, labels, pregame=pregame)
