"""Basic value types shared by the whole harness: actions, history entries and observations."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from pdbench.core.payoff import PayoffMatrix


class Action(StrEnum):
    """A move in the Prisoner's Dilemma: C (cooperate) or D (defect)."""

    C = "C"
    D = "D"

    @property
    def flipped(self) -> Action:
        """The other move."""
        return Action.D if self is Action.C else Action.C


class HistoryEntry(NamedTuple):
    """One past round as seen by one agent."""

    my_action: Action
    opp_action: Action
    my_payoff: float
    opp_payoff: float


class SeenMessage(NamedTuple):
    """A message as one agent is shown it: the round whose move it preceded (0-based), its turn
    in that exchange, whether this agent wrote it, and its text; in a group game also the seat
    that wrote it and, for a directed message, the seat it was written to (None: to everyone)."""

    round_index: int
    turn: int
    mine: bool
    text: str
    writer: int | None = None
    to: int | None = None


@dataclass(frozen=True, slots=True)
class Observation:
    """Everything one agent is shown before it moves in one round.

    `round_index` is 0-based; `history` holds at most `history_window` of the most recent rounds,
    oldest first, from this agent's point of view. Cumulative totals are None when the agent is not
    told them. `total_rounds` is the horizon disclosed to the agent (None when not disclosed) and
    `stop_prob` the disclosed continuation risk of a geometric horizon.
    """

    round_index: int
    history: tuple[HistoryEntry, ...]
    payoff_matrix: PayoffMatrix
    horizon_type: str
    total_rounds: int | None = None
    stop_prob: float | None = None
    my_cumulative_payoff: float | None = None
    opponent_cumulative_payoff: float | None = None
    # Cooperations over the whole game so far (None, like the totals, when not told).
    my_cooperations: int | None = None
    opponent_cooperations: int | None = None
    # Messages this agent can see now (games with a message channel; see pdbench.core.talk).
    messages: tuple[SeenMessage, ...] = ()

    @property
    def round_number(self) -> int:
        """The 1-based round number shown to people and LLMs."""
        return self.round_index + 1


@dataclass(frozen=True, slots=True)
class Attempt:
    """One provider call made while deciding a move (LLM agents only)."""

    index: int
    prompt_sha256: str
    raw: str | None
    valid: bool
    error: str | None = None
    exact: bool | None = None  # a valid reply that was exactly the answer form (else found in it)
    truncated: bool = False  # the reply was cut by max_tokens
    p_cooperate: float | None = None  # P(C) over C and D at the answer token, when asked for

    def as_record(self) -> dict[str, Any]:
        """JSON-ready form for rounds.jsonl."""
        return {
            "attempt": self.index,
            "prompt_sha256": self.prompt_sha256,
            "raw": self.raw,
            "valid": self.valid,
            "error": self.error,
            "exact": self.exact,
            "truncated": self.truncated,
            "p_cooperate": self.p_cooperate,
        }


@dataclass(slots=True)
class Decision:
    """A move and how it was reached: `parse_failure` marks a fallback after invalid replies."""

    action: Action
    parse_failure: bool = False
    attempts: list[Attempt] = field(default_factory=list)
    system_prompt: str | None = None
    round_prompt: str | None = None
    p_cooperate: float | None = None  # the model's P(C) for the move it made, when known


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a game: the round whose move it precedes (0-based), its turn in the
    exchange, its writer's seat (0: A, 1: B; in a group game 0..N-1), its text, and its intention
    (the move it says its writer will make next) with where that came from (`declared`,
    `phrases` or `none`); `to`: the seat a directed message of a group game was written to (None:
    to everyone, as every message of a pair)."""

    round_index: int
    turn: int
    side: int
    text: str
    intent: Action | None = None
    source: str = "none"
    to: int | None = None


@dataclass(slots=True)
class Utterance:
    """What an agent wrote in one turn and how: its text, the intention it declared (or None:
    read from the text by the caller), the provider attempts (LLM agents) and the message prompt,
    and `fallback` when no reply was usable (the agent then said nothing)."""

    text: str
    intent: Action | None = None
    source: str = "none"
    attempts: list[Attempt] = field(default_factory=list)
    prompt: str | None = None
    fallback: bool = False
