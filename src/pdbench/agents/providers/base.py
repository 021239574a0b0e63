"""The provider interface: one small protocol every LLM backend implements."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


class ProviderError(RuntimeError):
    """A provider call failed; `retryable` says whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class CallTag:
    """Which round and parse attempt a call belongs to (used for cache keys and the call log)."""

    round_index: int
    attempt: int


@dataclass(frozen=True, slots=True)
class Completion:
    """A provider's reply with what it cost (token counts as the provider reports them)."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None


@runtime_checkable
class ProviderClient(Protocol):
    """The Phase 1 spec's synchronous interface."""

    def complete(self, *, system: str, prompt: str, temperature: float, max_tokens: int) -> str:
        """Return the model's reply text."""
        ...


@runtime_checkable
class AsyncProviderClient(Protocol):
    """The interface the runner uses: async, with usage, and an optional per-call seed."""

    name: str

    async def acomplete(
        self,
        *,
        system: str,
        prompt: str,
        temperature: float,
        max_tokens: int,
        seed: int | None = None,
        tag: CallTag | None = None,
    ) -> Completion:
        """Return the model's reply and its usage (`tag` is for wrappers; adapters ignore it)."""
        ...
