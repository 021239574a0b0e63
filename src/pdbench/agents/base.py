"""The agent interface and the record of one decision."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pdbench.core.types import Action, Observation


@dataclass(frozen=True, slots=True)
class Attempt:
    """One provider call made while deciding a move (LLM agents only)."""

    index: int
    prompt_sha256: str
    raw: str | None
    valid: bool
    error: str | None = None

    def as_record(self) -> dict[str, Any]:
        """JSON-ready form for rounds.jsonl."""
        return {
            "attempt": self.index,
            "prompt_sha256": self.prompt_sha256,
            "raw": self.raw,
            "valid": self.valid,
            "error": self.error,
        }


@dataclass(slots=True)
class Decision:
    """A move and how it was reached: `parse_failure` marks a fallback after invalid replies."""

    action: Action
    parse_failure: bool = False
    attempts: list[Attempt] = field(default_factory=list)
    system_prompt: str | None = None
    round_prompt: str | None = None


@runtime_checkable
class Agent(Protocol):
    """What every agent implements (the Phase 1 spec's interface)."""

    name: str

    def reset(self, seed: int | None = None) -> None:
        """Start a new game; `seed` keys the agent's own random stream."""
        ...

    def act(self, obs: Observation) -> str:
        """Return exactly "C" or "D"."""
        ...
