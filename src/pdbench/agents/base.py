"""The agent interface the engine calls, and the record of one decision.

Every agent (scripted policy, LLM agent, Axelrod strategy) has a `name`, `reset(seed)` at the
start of a game, and `async decide(obs) -> Decision`: the engine awaits `decide` for both agents
of a round at once, so LLM calls overlap. `act(obs) -> "C" | "D"`, the Phase 1 spec's
synchronous form, is `AgentBase.act`, a wrapper for use outside an event loop. A `Decision`
(the move, parse fallback flag, prompts and every provider attempt) is a value type of
`pdbench.core.types`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pdbench.core.types import Decision, Observation


@runtime_checkable
class Agent(Protocol):
    """What the engine calls on every agent."""

    name: str

    def reset(self, seed: int | None = None) -> None:
        """Start a new game; `seed` keys the agent's own random stream."""
        ...

    async def decide(self, obs: Observation) -> Decision:
        """The move for this observation, with how it was reached."""
        ...


class AgentBase:
    """Shared by the built-in agents: the spec's synchronous `act` on top of `decide`."""

    name: str

    async def decide(self, obs: Observation) -> Decision:
        """The move for this observation (subclasses implement it)."""
        raise NotImplementedError

    def act(self, obs: Observation) -> str:
        """Return exactly "C" or "D" (not for use inside a running event loop)."""
        import asyncio

        return asyncio.run(self.decide(obs)).action.value
