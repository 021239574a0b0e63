"""Every provider call goes through the CallBroker: response cache, concurrency limits, transport
retries with backoff, budgets, and the per-call log (llm_calls.jsonl).

Parse retries (invalid C/D replies) are the LLM agent's business; transport retries (timeouts,
connection errors, 429, 5xx) happen here and are invisible to the agent except in the log.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pdbench.agents.providers.base import CallTag, Completion, ProviderError
from pdbench.agents.providers.errors import redact
from pdbench.core.config import BudgetConfig, LLMAgentConfig
from pdbench.errors import RunError
from pdbench.storage.cache import ResponseCache, cache_key
from pdbench.storage.files import JsonlAppender


class ProviderFatalError(RunError):
    """A provider error that retrying cannot fix (or retries ran out); the run stops, resumable."""


class BudgetExhausted(RunError):
    """A budget limit was reached; the run stops cleanly and can be resumed with a larger budget."""


@dataclass
class UsageCounter:
    """Calls, tokens, cost and latency of one agent in one game (or a total)."""

    calls: int = 0
    cached_calls: int = 0
    failed_attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "failed_attempts": self.failed_attempts,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 8),
            "latency_s": round(self.latency_s, 4),
        }

    def add(self, other: UsageCounter) -> None:
        """Accumulate another counter."""
        self.calls += other.calls
        self.cached_calls += other.cached_calls
        self.failed_attempts += other.failed_attempts
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost_usd += other.cost_usd
        self.latency_s += other.latency_s


@dataclass
class Budget:
    """Running totals against the configured limits (cached replies cost nothing)."""

    limits: BudgetConfig
    calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0

    def check(self) -> None:
        """Raise BudgetExhausted when a limit has been reached."""
        lim = self.limits
        if lim.max_calls is not None and self.calls >= lim.max_calls:
            raise BudgetExhausted(f"budget reached: max_calls={lim.max_calls} provider calls made")
        if lim.max_tokens is not None and self.tokens >= lim.max_tokens:
            raise BudgetExhausted(
                f"budget reached: max_tokens={lim.max_tokens} ({self.tokens} tokens used)"
            )
        if lim.max_cost_usd is not None and self.cost_usd >= lim.max_cost_usd:
            raise BudgetExhausted(
                f"budget reached: max_cost_usd={lim.max_cost_usd} (${self.cost_usd:.4f} spent)"
            )


@dataclass
class CallBroker:
    """Shared by all games of a run; see the module docstring."""

    cache: ResponseCache | None
    budget: Budget
    log: JsonlAppender | None
    concurrency: int
    session: int = 0
    usage: dict[tuple[str, int, str], UsageCounter] = field(default_factory=dict)
    stopping: bool = False
    _global: asyncio.Semaphore | None = None
    _per_provider: dict[str, asyncio.Semaphore] = field(default_factory=dict)

    def semaphores(
        self, provider_key: str, limit: int
    ) -> tuple[asyncio.Semaphore, asyncio.Semaphore]:
        """The run-wide and the per-provider concurrency gates."""
        if self._global is None:
            self._global = asyncio.Semaphore(max(1, self.concurrency))
        if provider_key not in self._per_provider:
            self._per_provider[provider_key] = asyncio.Semaphore(max(1, limit))
        return self._global, self._per_provider[provider_key]

    def bind(
        self,
        provider: Any,
        cfg: LLMAgentConfig,
        *,
        condition: str,
        replicate: int,
        agent_key: str,
        game_seed: int,
        api_key: str | None = None,
    ) -> BoundClient:
        """A client for one agent in one game."""
        return BoundClient(self, provider, cfg, condition, replicate, agent_key, game_seed, api_key)

    def counter(self, condition: str, replicate: int, agent_key: str) -> UsageCounter:
        """The usage counter of one agent in one game."""
        return self.usage.setdefault((condition, replicate, agent_key), UsageCounter())


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class BoundClient:
    """An AsyncProviderClient for one agent in one game, routing calls through the broker."""

    broker: CallBroker
    provider: Any
    cfg: LLMAgentConfig
    condition: str
    replicate: int
    agent_key: str
    game_seed: int
    api_key: str | None = None

    @property
    def name(self) -> str:
        """The provider's name."""
        return self.cfg.provider

    def key_for(self, system: str, prompt: str, tag: CallTag) -> str:
        """The cache key of a call (see the README's cache section)."""
        cfg = self.cfg
        parts: dict[str, Any] = {
            "provider": cfg.provider,
            "model": cfg.model,
            "base_url": cfg.base_url,
            "system": system,
            "prompt": prompt,
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
            "game_seed": self.game_seed,
            "attempt": tag.attempt,
        }
        if cfg.provider == "mock":
            parts["mock"] = cfg.mock.model_dump()
        if cfg.temperature > 0:
            parts["replicate"] = self.replicate
        return cache_key(**parts)

    def _log(self, tag: CallTag, **fields: Any) -> None:
        if self.broker.log is None:
            return
        record = {
            "condition": self.condition,
            "replicate": self.replicate,
            "agent": self.agent_key,
            "round_index": tag.round_index,
            "attempt": tag.attempt,
            "provider": self.cfg.provider,
            "model": self.cfg.model,
            "session": self.broker.session,
            "timestamp_utc": _now(),
        }
        record.update(fields)
        self.broker.log.write_many([record])

    def _describe(self) -> str:
        where = f" at {self.cfg.base_url}" if self.cfg.base_url else ""
        return f"{self.agent_key} ({self.cfg.provider} model {self.cfg.model!r}{where})"

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
        """Cached, rate-limited, retried call; raises ProviderFatalError or BudgetExhausted."""
        tag = tag or CallTag(-1, 0)
        counter = self.broker.counter(self.condition, self.replicate, self.agent_key)
        key = self.key_for(system, prompt, tag)
        cache = self.broker.cache
        if cache is not None:
            hit = cache.get(key)
            if hit is not None:
                counter.cached_calls += 1
                counter.input_tokens += hit["input_tokens"] or 0
                counter.output_tokens += hit["output_tokens"] or 0
                self._log(
                    tag,
                    transport_try=0,
                    cached=True,
                    ok=True,
                    error=None,
                    latency_s=0.0,
                    input_tokens=hit["input_tokens"],
                    output_tokens=hit["output_tokens"],
                    cost_usd=0.0,
                )
                return Completion(hit["text"], hit["input_tokens"], hit["output_tokens"], 0.0)
        transport = self.cfg.transport
        global_gate, provider_gate = self.broker.semaphores(
            f"{self.cfg.provider}|{self.cfg.model}|{self.cfg.base_url}", self.cfg.max_concurrency
        )
        jitter = random.Random(key)
        last_error = "no attempt made"
        for transport_try in range(transport.max_retries + 1):
            self.broker.budget.check()
            async with global_gate, provider_gate:
                if self.broker.stopping:
                    raise asyncio.CancelledError
                self.broker.budget.check()
                self.broker.budget.calls += 1
                start = time.monotonic()
                # SDK adapters enforce timeout_s on the HTTP call themselves; the outer limit
                # is a safety net that also absorbs an SDK's one-off import on its first call.
                own_timeout = getattr(self.provider, "enforces_timeout", False)
                limit = self.cfg.timeout_s * 2 + 10 if own_timeout else self.cfg.timeout_s
                try:
                    completion = await asyncio.wait_for(
                        self.provider.acomplete(
                            system=system,
                            prompt=prompt,
                            temperature=temperature,
                            max_tokens=max_tokens,
                            seed=seed,
                        ),
                        timeout=limit,
                    )
                    error: ProviderError | None = None
                except TimeoutError:
                    error = ProviderError(f"timed out after {limit:g} s", retryable=True)
                except ProviderError as exc:
                    error = exc
                except asyncio.CancelledError:
                    # The run is stopping: the request may have reached the provider, so it
                    # is logged (and counted against budgets) before the cancellation goes on.
                    self._log(
                        tag,
                        transport_try=transport_try,
                        cached=False,
                        ok=False,
                        error="cancelled: the run stopped while this call was in flight",
                        retryable=None,
                        cancelled=True,
                        latency_s=round(time.monotonic() - start, 4),
                    )
                    raise
                latency = time.monotonic() - start
            counter.latency_s += latency
            if error is None:
                counter.calls += 1
                counter.input_tokens += completion.input_tokens or 0
                counter.output_tokens += completion.output_tokens or 0
                counter.cost_usd += completion.cost_usd or 0.0
                self.broker.budget.tokens += (completion.input_tokens or 0) + (
                    completion.output_tokens or 0
                )
                self.broker.budget.cost_usd += completion.cost_usd or 0.0
                self._log(
                    tag,
                    transport_try=transport_try,
                    cached=False,
                    ok=True,
                    error=None,
                    latency_s=round(latency, 4),
                    input_tokens=completion.input_tokens,
                    output_tokens=completion.output_tokens,
                    cost_usd=completion.cost_usd,
                )
                if cache is not None:
                    cache.put(
                        key,
                        provider=self.cfg.provider,
                        model=self.cfg.model,
                        text=completion.text,
                        input_tokens=completion.input_tokens,
                        output_tokens=completion.output_tokens,
                        cost_usd=completion.cost_usd,
                        created_utc=_now(),
                    )
                return completion
            counter.failed_attempts += 1
            last_error = redact(str(error), self.api_key)
            self._log(
                tag,
                transport_try=transport_try,
                cached=False,
                ok=False,
                error=last_error,
                retryable=error.retryable,
                latency_s=round(latency, 4),
            )
            if not error.retryable:
                self.broker.stopping = True
                raise ProviderFatalError(f"{self._describe()}: {last_error}")
            if transport_try < transport.max_retries:
                backoff = min(
                    transport.backoff_max_s, transport.backoff_initial_s * 2**transport_try
                )
                delay = backoff * (0.5 + jitter.random() / 2)
                if error.retry_after is not None:
                    delay = max(delay, error.retry_after)
                await asyncio.sleep(delay)
        raise ProviderFatalError(
            f"{self._describe()}: gave up after {transport.max_retries + 1} attempts; last error: {last_error}"
        )
