"""Say-do metrics of group games with a message channel, per seat: the metrics of
`pdbench.core.talk_metrics`, with the same definitions and names (`agent_c_messages`,
`agent_c_declared_promise_kept_rate`, ...), for every seat of the group.

What changes with more than two seats, and only there (two seats: exactly `talk_metrics`):

- A seat's statement binding its move (next-move and standing readings, its declared intention)
  is read from all the messages it wrote, to everyone or directed (its last stating message of
  the exchange before the move, in the order written).
- A **conditional promise**'s condition is that everyone it was written to chose C in the same
  round: the addressee of a directed message, every co-player of a message to everyone. Kept
  when the condition held and the writer chose C, broken when it held and the writer chose D,
  void when it did not hold (neither kept nor broken, never deception).
- **Promises received** (trust): the seat's moves where some co-player's statement binding its
  own next move, read from the messages of that co-player the seat could read (to everyone or
  to it), is a promise of C (conditional included); said_trust_rate: the share where the seat
  chose C.

Moves are the chosen ones (before execution noise). Pure: numpy and the rule reader only.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pdbench.core.talk_metrics import (
    _KIND_CODE,
    BOUND_C,
    BOUND_COND_C,
    BOUND_NONE,
    DEFAULT_LABELS,
    TALK_COUNT_COLUMNS,
    TALK_POOLED_COLUMNS,
    Labels,
    TalkTrack,
    _declared,
    _names,
    seat_talk_columns,
)
from pdbench.core.talk_reader import Reading, read_message
from pdbench.core.types import Message

EVERYONE = -1  # the audience code of a message to everyone
_PREFIX = "agent_a_"
# The metric names (after `agent_x_`) that are counts, and each pooled rate's denominator.
COUNT_KEYS: tuple[str, ...] = tuple(
    c[len(_PREFIX) :] for c in TALK_COUNT_COLUMNS if c.startswith(_PREFIX)
)
POOLED_KEYS: dict[str, str] = {
    rate[len(_PREFIX) :]: count[len(_PREFIX) :]
    for rate, count in TALK_POOLED_COLUMNS.items()
    if rate.startswith(_PREFIX)
}


def seat_letter(seat: int) -> str:
    """The record's letter of a seat (0: a, 2: c)."""
    return string.ascii_lowercase[seat]


def group_talk_column_names(n_players: int) -> tuple[str, ...]:
    """Every seat's talk metric columns, seat by seat (`agent_a_messages`, ...)."""
    return tuple(name for s in range(n_players) for name in _names(seat_letter(s)).values())


def group_talk_count_columns(n_players: int) -> tuple[str, ...]:
    """The count columns (summed on a condition row, no interval)."""
    return tuple(_names(seat_letter(s))[k] for s in range(n_players) for k in COUNT_KEYS)


def group_talk_pooled_columns(n_players: int) -> dict[str, str]:
    """Each rate column pooled over games -> the count column that is its denominator."""
    return {
        _names(seat_letter(s))[rate]: _names(seat_letter(s))[count]
        for s in range(n_players)
        for rate, count in POOLED_KEYS.items()
    }


@dataclass(slots=True)
class GroupTalkTrack(TalkTrack):
    """One seat's talk over a group game, per round (0-based): a `talk_metrics.TalkTrack`
    (BOUND_* codes of what binds its move said, standing and declared; counts of its messages,
    unread ones, said and declared promises; whether it chose C), plus whether the condition of
    a conditional promise binding its move held under each reading (everyone the statement was
    written to chose C) and whether a co-player's said promise of C it could read bound that
    co-player's move."""

    said_held: np.ndarray  # bool
    standing_held: np.ndarray  # bool
    received: np.ndarray  # bool


def _binding(
    read: Sequence[tuple[Message, Reading]], n_rounds: int
) -> tuple[np.ndarray, np.ndarray, dict[int, bool]]:
    """The next-move said reading of some messages (in the order written): per round the code
    and audience of the last stating message, and whether that statement was standing."""
    said = np.full(n_rounds, BOUND_NONE, dtype=np.int8)
    audience = np.full(n_rounds, EVERYONE, dtype=np.int64)
    standing_of: dict[int, bool] = {}
    for m, reading in read:
        code = _KIND_CODE.get(reading.kind, BOUND_NONE)
        if code != BOUND_NONE and 0 <= m.round_index < n_rounds:
            said[m.round_index] = code
            audience[m.round_index] = EVERYONE if m.to is None else m.to
            standing_of[m.round_index] = reading.standing
    return said, audience, standing_of


def _standing(
    said: np.ndarray, audience: np.ndarray, standing_of: dict[int, bool]
) -> tuple[np.ndarray, np.ndarray]:
    """The standing reading (`talk_metrics._standing`) with the audience of the statement in
    force."""
    out = np.full(len(said), BOUND_NONE, dtype=np.int8)
    out_audience = np.full(len(said), EVERYONE, dtype=np.int64)
    holds, holds_audience = BOUND_NONE, EVERYONE
    for r, code in enumerate(said.tolist()):
        if code == BOUND_NONE:
            out[r], out_audience[r] = holds, holds_audience
            continue
        out[r], out_audience[r] = code, audience[r]
        if standing_of.get(r):
            holds, holds_audience = code, int(audience[r])
        elif code != holds:
            holds = BOUND_NONE
    return out, out_audience


def _held(audience: np.ndarray, chose: np.ndarray, seat: int) -> np.ndarray:
    """Per round, whether everyone in the audience chose C (EVERYONE: every co-player)."""
    others_c = np.delete(chose, seat, axis=0).all(axis=0)
    idx = np.clip(audience, 0, None)
    addressee_c = chose[idx, np.arange(chose.shape[1])]
    return np.where(audience == EVERYONE, others_c, addressee_c)


def group_talk_tracks(
    messages: Sequence[Message],
    chose: np.ndarray,
    labels: Sequence[Labels] | None = None,
    pregame: bool = False,
) -> tuple[GroupTalkTrack, ...]:
    """Every seat's track from a game's messages (each text read by `talk_reader.read_message`
    in its writer's `labels`) and the moves each seat chose, `chose` of shape (N, T), True for
    C; `pregame`: the channel's one exchange is before round 1 (its statements stand)."""
    chose = np.asarray(chose, dtype=bool)
    n, n_rounds = chose.shape
    labels = list(labels) if labels is not None else [DEFAULT_LABELS] * n
    own: list[list[tuple[Message, Reading]]] = []
    for seat in range(n):
        mine = sorted((m for m in messages if m.side == seat), key=lambda m: m.turn)
        own.append([(m, read_message(m.text, labels[seat])) for m in mine])
    tracks = []
    for seat in range(n):
        count = np.zeros(n_rounds, dtype=np.int32)
        unread = np.zeros(n_rounds, dtype=np.int32)
        said_promises = np.zeros(n_rounds, dtype=np.int32)
        declared = np.full(n_rounds, BOUND_NONE, dtype=np.int8)
        declared_promises = np.zeros(n_rounds, dtype=np.int32)
        for m, reading in own[seat]:
            r = m.round_index
            if not 0 <= r < n_rounds:
                continue
            count[r] += 1
            unread[r] += int(reading.kind == "unread")
            said_promises[r] += int(_KIND_CODE.get(reading.kind) in (BOUND_C, BOUND_COND_C))
            code = _declared(m)
            if code != BOUND_NONE:
                declared[r] = code
                declared_promises[r] += int(code == BOUND_C)
        said, audience, standing_of = _binding(own[seat], n_rounds)
        if pregame:
            standing_of = dict.fromkeys(standing_of, True)
        standing, standing_audience = _standing(said, audience, standing_of)
        received = np.zeros(n_rounds, dtype=bool)
        for other in range(n):
            if other == seat:
                continue
            seen = [(m, rd) for m, rd in own[other] if m.to is None or m.to == seat]
            bound = _binding(seen, n_rounds)[0]
            received |= (bound == BOUND_C) | (bound == BOUND_COND_C)
        tracks.append(
            GroupTalkTrack(
                said,
                standing,
                declared,
                count,
                unread,
                said_promises,
                declared_promises,
                chose[seat].copy(),
                _held(audience, chose, seat),
                _held(standing_audience, chose, seat),
                received,
            )
        )
    return tuple(tracks)


def group_talk_columns(
    tracks: Sequence[GroupTalkTrack] | None, n_players: int
) -> dict[str, float | int | None]:
    """The talk metrics of one group game, every seat (all None without talk); see the module
    docstring and `talk_metrics.talk_columns`."""
    if tracks is None:
        return dict.fromkeys(group_talk_column_names(n_players))
    out: dict[str, float | int | None] = {}
    for seat, mine in enumerate(tracks):
        out.update(
            seat_talk_columns(
                seat_letter(seat), mine, mine.said_held, mine.standing_held, mine.received
            )
        )
    return out
