"""A person's game: the human agent plays the moves it was given, one per round.

The app's Play tab records a person's clicks as the `moves` of a `type: human` agent, so a saved
human game is an ordinary experiment whose config replays the person's moves exactly; the
opponent, played by the same engine with the same seed, makes the same moves the person saw.
"""

from __future__ import annotations

from collections.abc import Sequence

from pdbench.agents.base import AgentBase
from pdbench.core.types import Action, Decision, Observation


class HumanMovesExhausted(RuntimeError):
    """The game asked a human agent for a round it has no move for."""


class HumanAgent(AgentBase):
    """Plays `moves[t]` in round t (0-based); see the module docstring."""

    def __init__(self, moves: Sequence[str], name: str = "human") -> None:
        self.moves = tuple(Action(m.upper()) for m in moves)
        self.name = name

    def reset(self, seed: int | None = None) -> None:
        """Start a new game (a person's moves use no random stream)."""
        del seed

    def choose(self, obs: Observation) -> Action:
        """The move the person made in this round (the engine's synchronous path calls this)."""
        if obs.round_index >= len(self.moves):
            raise HumanMovesExhausted(
                f"{self.name}: no move for round {obs.round_number} (the human agent has "
                f"{len(self.moves)} moves)"
            )
        return self.moves[obs.round_index]

    async def decide(self, obs: Observation) -> Decision:
        """The move the person made in this round."""
        return Decision(self.choose(obs))
