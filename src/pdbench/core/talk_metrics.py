"""Say-do metrics of games with a message channel: does an agent promise, keep its promises,
and trust the other's.

Per game and agent X (opponent Y), from X's `TalkTrack` (see `pdbench.core.talk` for how a
message's intention is read, and which move it is compared with):

- messages (count): the messages X wrote; promise_messages (count): those whose intention is C;
- promise_rate: promise_messages / messages, the share of X's messages that promise
  cooperation;
- promises (count): X's moves preceded by a stated intention of C (X's last message of the
  exchange that states an intention says C);
- promise_kept_rate: P(X chose C | X promised C), over those moves;
- deception_rate: P(X chose D | X promised C) (promised C, played D; 1 - promise_kept_rate);
- stated_intentions (count): X's moves preceded by a stated intention (C or D);
  intent_agreement_rate: the share of them where X chose the move it stated;
- trust_rate: P(X chose C | Y promised C), over the moves after Y's promises.

On a condition row, counts are summed and each rate is pooled over games (summed numerators
over summed denominators, as the memory-one probabilities), with an interval that keeps the
game as the unit (kind `pooled_ratio`, core/stats.py). A game without talk has every talk
metric None.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pdbench.core.types import Action, Message

STATED_NONE, STATED_D, STATED_C = -1, 0, 1


@dataclass(slots=True)
class TalkTrack:
    """One agent's talk over a game, per round (0-based): the intention its messages stated
    before the move (`STATED_C`, `STATED_D`, or `STATED_NONE`), how many messages it wrote
    before the move and how many of them promised C, and whether the move it chose (before
    noise) was C."""

    stated: np.ndarray  # int8
    messages: np.ndarray  # int32
    promises: np.ndarray  # int32
    chose_c: np.ndarray  # bool


def talk_tracks(
    messages: Sequence[Message], chose_a: Sequence[bool], chose_b: Sequence[bool]
) -> tuple[TalkTrack, TalkTrack]:
    """Both agents' tracks from a game's messages and the moves each chose (True for C)."""
    n = len(chose_a)
    tracks = []
    for side, chose in ((0, chose_a), (1, chose_b)):
        stated = np.full(n, STATED_NONE, dtype=np.int8)
        count = np.zeros(n, dtype=np.int32)
        promises = np.zeros(n, dtype=np.int32)
        for m in sorted((m for m in messages if m.side == side), key=lambda m: m.turn):
            if not 0 <= m.round_index < n:
                continue
            count[m.round_index] += 1
            if m.intent is Action.C:
                promises[m.round_index] += 1
                stated[m.round_index] = STATED_C
            elif m.intent is Action.D:
                stated[m.round_index] = STATED_D
        tracks.append(TalkTrack(stated, count, promises, np.asarray(chose, dtype=bool)))
    return tracks[0], tracks[1]


def _names(side: str) -> dict[str, str]:
    x = f"agent_{side}"
    return {
        "messages": f"{x}_messages",
        "promise_messages": f"{x}_promise_messages",
        "promise_rate": f"{x}_promise_rate",
        "promises": f"{x}_promises",
        "promise_kept_rate": f"{x}_promise_kept_rate",
        "deception_rate": f"{x}_deception_rate",
        "stated_intentions": f"{x}_stated_intentions",
        "intent_agreement_rate": f"{x}_intent_agreement_rate",
        "trust_rate": f"{x}_trust_rate",
    }


TALK_COLUMNS: tuple[str, ...] = tuple(name for side in "ab" for name in _names(side).values())
# Counts: summed on the condition row, no interval.
TALK_COUNT_COLUMNS: tuple[str, ...] = tuple(
    _names(side)[k]
    for side in "ab"
    for k in ("messages", "promise_messages", "promises", "stated_intentions")
)
# Rates pooled over games -> the count column that is their denominator.
TALK_POOLED_COLUMNS: dict[str, str] = {
    **{
        _names(s)[rate]: _names(s)[count]
        for s in "ab"
        for rate, count in (
            ("promise_rate", "messages"),
            ("promise_kept_rate", "promises"),
            ("deception_rate", "promises"),
            ("intent_agreement_rate", "stated_intentions"),
        )
    },
    _names("a")["trust_rate"]: _names("b")["promises"],
    _names("b")["trust_rate"]: _names("a")["promises"],
}


def _ratio(hits: int, of: int) -> float | None:
    return hits / of if of else None


def talk_columns(tracks: tuple[TalkTrack, TalkTrack] | None) -> dict[str, float | int | None]:
    """The talk metrics of one game (all None without talk); see the module docstring."""
    if tracks is None:
        return dict.fromkeys(TALK_COLUMNS)
    out: dict[str, float | int | None] = {}
    for side, mine, theirs in (("a", tracks[0], tracks[1]), ("b", tracks[1], tracks[0])):
        names = _names(side)
        messages, promise_messages = int(mine.messages.sum()), int(mine.promises.sum())
        promised = mine.stated == STATED_C
        stated = mine.stated != STATED_NONE
        kept = int(np.count_nonzero(promised & mine.chose_c))
        n_promised, n_stated = int(np.count_nonzero(promised)), int(np.count_nonzero(stated))
        agreed = int(np.count_nonzero(stated & ((mine.stated == STATED_C) == mine.chose_c)))
        trusted = theirs.stated == STATED_C
        out[names["messages"]] = messages
        out[names["promise_messages"]] = promise_messages
        out[names["promise_rate"]] = _ratio(promise_messages, messages)
        out[names["promises"]] = n_promised
        out[names["promise_kept_rate"]] = _ratio(kept, n_promised)
        out[names["deception_rate"]] = _ratio(n_promised - kept, n_promised)
        out[names["stated_intentions"]] = n_stated
        out[names["intent_agreement_rate"]] = _ratio(agreed, n_stated)
        out[names["trust_rate"]] = _ratio(
            int(np.count_nonzero(trusted & mine.chose_c)), int(np.count_nonzero(trusted))
        )
    return out
