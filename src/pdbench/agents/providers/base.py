"""The provider interface: one small async protocol every LLM backend implements, and the
registry adapters join with `@provider("name")`.

A provider gets a `CompletionRequest` and returns a `Completion`; errors are `ProviderError`s
that say whether trying again may help. Adapters import their SDK only when they are built
(`import_optional`), so listing and validating providers never imports an SDK; a missing SDK
names the command that installs it.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from pdbench.core.config import LLMAgentConfig


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
class CompletionRequest:
    """One call: the prompts, decoding settings, a per-call seed and where it belongs."""

    system: str
    prompt: str
    temperature: float
    max_tokens: int
    seed: int | None = None
    tag: CallTag = CallTag(-1, 0)


@dataclass(frozen=True, slots=True)
class Completion:
    """A provider's reply with what it cost (token counts as the provider reports them)."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None


def chat_completion(response: Any, cost_usd: float | None = None) -> Completion:
    """A Completion from an OpenAI-shaped chat response (the openai SDK's, litellm's)."""
    usage = getattr(response, "usage", None)
    return Completion(
        text=response.choices[0].message.content or "",
        input_tokens=getattr(usage, "prompt_tokens", None),
        output_tokens=getattr(usage, "completion_tokens", None),
        cost_usd=cost_usd,
    )


def chat_messages(request: CompletionRequest) -> list[dict[str, str]]:
    """The request as chat messages: the system prompt, then the round prompt as the user's."""
    return [
        {"role": "system", "content": request.system},
        {"role": "user", "content": request.prompt},
    ]


@runtime_checkable
class Provider(Protocol):
    """What the runtime calls on every provider (and on the broker's per-game clients)."""

    name: str
    model: str
    enforces_timeout: bool  # applies the agent's timeout_s to its own calls
    api_key: str | None  # held in memory only, to redact it from error messages

    async def complete(self, request: CompletionRequest) -> Completion:
        """The model's reply to one request; raises ProviderError on failure."""
        ...

    async def aclose(self) -> None:
        """Release connections (called once when the run ends)."""
        ...


class ProviderBase:
    """Shared by the adapters: construction from the agent config, no-op close, no own timeout."""

    name: ClassVar[str] = ""
    # True when the adapter enforces `timeout_s` on its HTTP calls itself; the broker's outer
    # timeout then only catches a hung SDK. False: the broker's timeout is the only one.
    enforces_timeout: ClassVar[bool] = False

    def __init__(self, cfg: LLMAgentConfig, api_key: str | None) -> None:
        self.model = cfg.model
        self.api_key = api_key  # kept in memory only, to redact it from error messages

    async def complete(self, request: CompletionRequest) -> Completion:
        """The model's reply (adapters implement it)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Nothing to release by default."""


@dataclass(frozen=True, slots=True)
class ProviderEntry:
    """A registered provider: its adapter class and the optional SDK it needs."""

    name: str
    factory: Callable[[LLMAgentConfig, str | None], Provider]
    sdk: str | None
    extra: str | None

    def missing_sdk(self) -> str | None:
        """The install hint when the adapter's SDK is not installed, else None."""
        if self.sdk is None or importlib.util.find_spec(self.sdk) is not None:
            return None
        return f"provider {self.name!r} needs its extra: run `uv sync --extra {self.extra}`"


_REGISTRY: dict[str, ProviderEntry] = {}
_DISCOVERED: list[bool] = []


def provider(
    name: str, *, sdk: str | None = None, extra: str | None = None
) -> Callable[[type], type]:
    """Class decorator: register an adapter under `name`; a duplicate name is an error."""

    def register(cls: type) -> type:
        if name in _REGISTRY:
            raise ValueError(f"duplicate provider name {name!r}")
        cls.name = name  # type: ignore[attr-defined]
        _REGISTRY[name] = ProviderEntry(name, cls, sdk, extra or sdk)
        return cls

    return register


def registry() -> dict[str, ProviderEntry]:
    """Every provider, by name: the modules of this package are imported on first use (cheap:
    adapters import their SDK only when built)."""
    if not _DISCOVERED:
        package = importlib.import_module("pdbench.agents.providers")
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{module.name}")
        _DISCOVERED.append(True)
    return _REGISTRY


def provider_entry(name: str) -> ProviderEntry:
    """The registered provider `name`; KeyError lists the valid names."""
    entries = registry()
    if name not in entries:
        raise KeyError(f"unknown provider (valid: {', '.join(sorted(entries))}) (got {name!r})")
    return entries[name]


def import_optional(module: str, extra: str) -> Any:
    """Import an optional SDK, or fail with the command that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ProviderError(
            f"the {extra} provider needs its extra: run `uv sync --extra {extra}`", retryable=False
        ) from None
