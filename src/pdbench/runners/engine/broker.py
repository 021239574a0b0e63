"""Every provider call goes through the CallBroker: response cache, concurrency limits, transport
retries with backoff, budgets, and the per-call log (llm_calls.jsonl), in every mode.

Parse retries (invalid C/D replies) are the LLM agent's business; transport retries (timeouts,
connection errors, 429, 5xx) happen here and are invisible to the agent except in the log.

On a cluster (the Ray backend) every worker has its own broker, and `shared` holds the limits
that must hold across the whole cluster: the gates (the run's `--concurrency` and each
provider's `max_concurrency`) and the budget are then kept in one place for all workers (see
`SharedLimits`); the worker's own `budget` only counts what it spent, for its figures.
"""

from __future__ import annotations

import random
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from pdbench.agents.providers.base import Completion, CompletionRequest, Provider, ProviderError
from pdbench.agents.providers.pricing import call_cost
from pdbench.core.config import BudgetConfig, LLMAgentConfig
from pdbench.errors import RunError
from pdbench.redact import redact, redact_url
from pdbench.storage.cache import ResponseCache, cache_key
from pdbench.storage.record.fields import ROUND_INDEX, TIMESTAMP
from pdbench.storage.schema import SCHEMA_VERSION

if TYPE_CHECKING:  # asyncio is imported where games ask LLMs (a policy-only run needs none)
    import asyncio


class ProviderFatalError(RunError):
    """A provider error that retrying cannot fix (or retries ran out); the run stops, resumable."""


class BudgetExhausted(RunError):
    """A budget limit was reached; the run stops cleanly and can be resumed with a larger budget."""


class RunHalted(RunError):
    """Another worker of the run stopped it (its error is the run's); this worker stops too."""


class CallLog(Protocol):
    """Where call records go: llm_calls.jsonl (a JsonlAppender), or a worker's buffer."""

    def write_many(self, records: list[dict[str, Any]]) -> None:
        """Keep the records, in order."""


class SharedLimits(Protocol):
    """Gates and budget kept for a whole cluster (the Ray backend's limits actor)."""

    def slot(self, key: str, limit: int) -> AbstractAsyncContextManager[None]:
        """Hold one of the run's call slots and one of `limit` slots of provider `key`, with one
        call counted against the budget; raises BudgetExhausted when the budget is spent and
        RunHalted when the run is stopping."""
        ...

    def spend(self, tokens: int, cost_usd: float | None) -> None:
        """Count a reply's tokens and cost (None: unknown) against the budget."""


@dataclass
class Budget:
    """Running totals against the configured limits (cached replies cost nothing)."""

    limits: BudgetConfig
    calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0  # replies whose cost is unknown (cost_usd then counts the rest)

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

    @property
    def cost_known(self) -> bool:
        """Whether every reply so far had a known cost."""
        return self.unpriced_calls == 0

    def spend(self, completion: Completion) -> None:
        """Count a reply's tokens and cost (an unknown cost is counted as unknown, not 0)."""
        self.tokens += (completion.input_tokens or 0) + (completion.output_tokens or 0)
        if completion.cost_usd is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += completion.cost_usd


@dataclass
class CallBroker:
    """Shared by all games of a run; see the module docstring."""

    cache: ResponseCache | None
    budget: Budget
    log: CallLog | None
    concurrency: int
    session: int = 0
    shared: SharedLimits | None = None  # cluster-wide gates and budget (Ray backend)
    stopping: bool = False
    cached: int = 0  # replies served from the cache (progress shows them)
    _global: asyncio.Semaphore | None = None
    _per_provider: dict[str, asyncio.Semaphore] = field(default_factory=dict)
    # Per "provider:model": what the server listed (None: it lists nothing) and which model
    # names its replies said answered.
    listed_models: dict[str, list[str] | None] = field(default_factory=dict)
    answered_models: dict[str, set[str]] = field(default_factory=dict)

    def models_report(self) -> dict[str, dict[str, Any]]:
        """For the manifest: per "provider:model", the names listed and the names that answered."""
        keys = sorted(set(self.listed_models) | set(self.answered_models))
        return {
            key: {
                "listed": self.listed_models.get(key),
                "answered": sorted(self.answered_models.get(key, ())),
            }
            for key in keys
        }

    async def check_model(self, provider: Provider, cfg: LLMAgentConfig, who: str) -> None:
        """Stop before the first game when the server lists its models and `cfg.model` is not
        among them (once per provider, model and server)."""
        key = f"{cfg.provider}:{cfg.model}"
        if not cfg.check_model or key in self.listed_models:
            return
        listed = await provider.served_models()
        self.listed_models[key] = listed
        asked = {cfg.model, getattr(provider, "served_name", lambda: cfg.model)()}
        if listed is not None and not asked & set(listed):
            where = f" at {redact_url(cfg.base_url)}" if cfg.base_url else ""
            shown = ", ".join(listed[:10]) + (
                f" and {len(listed) - 10} more" if len(listed) > 10 else ""
            )
            raise ProviderFatalError(
                f"{who} ({cfg.provider}{where}): model {cfg.model!r} is not served (served: "
                f"{shown}); fix `model`, or set check_model: false"
            )

    def gates(self, cfg: LLMAgentConfig) -> tuple[asyncio.Semaphore, asyncio.Semaphore]:
        """The run-wide gate and the gate of this provider, model and server."""
        import asyncio

        if self._global is None:
            self._global = asyncio.Semaphore(max(1, self.concurrency))
        key = self.provider_key(cfg)
        if key not in self._per_provider:
            self._per_provider[key] = asyncio.Semaphore(max(1, cfg.max_concurrency))
        return self._global, self._per_provider[key]

    @staticmethod
    def provider_key(cfg: LLMAgentConfig) -> str:
        """What one provider gate stands for: provider, model and server."""
        parts = (cfg.provider, cfg.model, cfg.base_url, cfg.model_path, cfg.n_ctx)
        return "|".join(str(part) for part in parts)

    @asynccontextmanager
    async def call_slot(self, cfg: LLMAgentConfig) -> AsyncIterator[None]:
        """Hold the gates for one provider call, counted against the budget: this process's
        gates, or the cluster's when `shared` is set. Raises BudgetExhausted when a limit is
        reached, CancelledError (or RunHalted) when the run is stopping."""
        import asyncio

        if self.shared is not None:
            if self.stopping:  # before a slot is taken: the cluster counts the call on grant
                raise asyncio.CancelledError
            async with self.shared.slot(self.provider_key(cfg), max(1, cfg.max_concurrency)):
                self.budget.calls += 1
                yield
            return
        global_gate, provider_gate = self.gates(cfg)
        async with global_gate, provider_gate:
            if self.stopping:
                raise asyncio.CancelledError
            self.budget.check()
            self.budget.calls += 1
            yield

    def spend(self, completion: Completion) -> None:
        """Count a reply's tokens and cost here and, on a cluster, in the shared budget."""
        self.budget.spend(completion)
        if self.shared is not None:
            tokens = (completion.input_tokens or 0) + (completion.output_tokens or 0)
            self.shared.spend(tokens, completion.cost_usd)

    def bind(
        self,
        provider: Provider,
        cfg: LLMAgentConfig,
        *,
        condition: str,
        replicate: int,
        agent_key: str,
        game_seed: int,
    ) -> BoundClient:
        """A client for one agent in one game."""
        return BoundClient(self, provider, cfg, condition, replicate, agent_key, game_seed)


def _now() -> str:
    return datetime.now(UTC).isoformat()


def scrub(completion: Completion) -> Completion:
    """The reply with known secrets removed (a server may echo the key back), before it is
    cached, logged or stored."""
    text = redact(completion.text)
    return completion if text == completion.text else replace(completion, text=text)


@dataclass
class BoundClient:
    """A Provider for one agent in one game, routing every call through the broker."""

    broker: CallBroker
    provider: Provider
    cfg: LLMAgentConfig
    condition: str
    replicate: int
    agent_key: str
    game_seed: int
    enforces_timeout: bool = True  # this client applies timeout_s to every call
    api_key: str | None = None  # never holds a key: the wrapped provider does
    _latency: float = field(default=0.0, init=False)  # seconds taken by the last attempt

    @property
    def name(self) -> str:
        """The provider's name."""
        return self.cfg.provider

    @property
    def model(self) -> str:
        """The model asked."""
        return self.cfg.model

    async def aclose(self) -> None:
        """Nothing to do: the run's provider pool closes the shared clients."""

    def cache_identity(self) -> dict[str, Any] | None:
        """The wrapped provider's extra cache key parts."""
        return self.provider.cache_identity()

    def key_for(self, request: CompletionRequest) -> str:
        """The cache key of a call (see the README's cache section).

        The side and the per-call seed are part of it: both agents of a game often see the same
        prompt (round 1, self-play), and their replies differ when the provider samples.
        """
        cfg = self.cfg
        parts: dict[str, Any] = {
            "provider": cfg.provider,
            "model": cfg.model,
            "base_url": cfg.base_url,
            "system": request.system,
            "prompt": request.prompt,
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
            "game_seed": self.game_seed,
            "agent": self.agent_key,
            "seed": request.seed,
            "attempt": request.tag.attempt,
        }
        # Later fields only when set, so keys of plain calls stay what they were.
        if request.turns:
            parts["turns"] = [list(turn) for turn in request.turns]
        if request.output_format == "choice":
            parts["output_format"] = "choice"
        if request.logprobs:
            parts["logprobs"] = True
        if request.labels != ("C", "D"):
            parts["labels"] = list(request.labels)
        if request.mode != "chat":  # the same texts sent another way get another reply
            parts["prompt_mode"] = request.mode
        if request.purpose != "move":
            parts["purpose"] = request.purpose
            parts["turn"] = request.turn
        if cfg.provider == "mock":
            parts["mock"] = cfg.mock.model_dump()
        identity = self.provider.cache_identity()
        if identity is not None:
            parts["served_by"] = identity
        if cfg.temperature > 0:
            parts["replicate"] = self.replicate
        return cache_key(**parts)

    async def complete(self, request: CompletionRequest) -> Completion:
        """Cached, rate-limited, retried call; raises ProviderFatalError or BudgetExhausted."""
        import asyncio

        key = self.key_for(request)
        cached = self._from_cache(key, request)
        if cached is not None:
            return cached
        transport = self.cfg.transport
        jitter = random.Random(key)
        last_error = "no attempt made"
        for transport_try in range(transport.max_retries + 1):
            self.broker.budget.check()
            try:
                completion = scrub(await self._send(request, transport_try))
                completion = replace(completion, cost_usd=call_cost(self.cfg, completion))
            except ProviderError as error:
                last_error = self._failed(request, transport_try, error)
                if transport_try < transport.max_retries:
                    await asyncio.sleep(self._backoff(transport_try, error, jitter))
                continue
            self._succeeded(key, request, transport_try, completion)
            return completion
        raise ProviderFatalError(
            f"{self._describe()}: gave up after {transport.max_retries + 1} attempts; "
            f"last error: {last_error}"
        )

    def _from_cache(self, key: str, request: CompletionRequest) -> Completion | None:
        """The cached reply (logged as such), or None."""
        cache = self.broker.cache
        hit = cache.get(key) if cache is not None else None
        if hit is None:
            return None
        self.broker.cached += 1
        self._log(
            request,
            transport_try=0,
            cached=True,
            ok=True,
            error=None,
            latency_s=0.0,
            input_tokens=hit["input_tokens"],
            output_tokens=hit["output_tokens"],
            cost_usd=hit["cost_usd"],  # what the reply cost when it was made (not spent again)
            **self._facts(Completion.from_facts(hit["text"], None, None, None, hit["extra"])),
        )
        return Completion.from_facts(
            hit["text"], hit["input_tokens"], hit["output_tokens"], 0.0, hit["extra"]
        )

    async def _send(self, request: CompletionRequest, transport_try: int) -> Completion:
        """One call through the gates, counted against the budget; ProviderError on failure."""
        import asyncio

        async with self.broker.call_slot(self.cfg):
            start = time.monotonic()
            # SDK adapters enforce timeout_s on the HTTP call themselves; the outer limit is a
            # safety net that also absorbs an SDK's one-off import on its first call.
            own = self.provider.enforces_timeout
            limit = self.cfg.timeout_s * 2 + 10 if own else self.cfg.timeout_s
            try:
                return await asyncio.wait_for(self.provider.complete(request), timeout=limit)
            except TimeoutError:
                raise ProviderError(f"timed out after {limit:g} s", retryable=True) from None
            except asyncio.CancelledError:
                # The run is stopping: the request may have reached the provider, so it is
                # logged (and was counted against budgets) before the cancellation goes on.
                self._log(
                    request,
                    transport_try=transport_try,
                    cached=False,
                    ok=False,
                    error="cancelled: the run stopped while this call was in flight",
                    retryable=None,
                    cancelled=True,
                    latency_s=round(time.monotonic() - start, 4),
                )
                raise
            finally:
                self._latency = time.monotonic() - start

    def _succeeded(
        self, key: str, request: CompletionRequest, transport_try: int, completion: Completion
    ) -> None:
        """Count, log and cache a reply."""
        self.broker.spend(completion)
        if completion.served_model:
            name = f"{self.cfg.provider}:{self.cfg.model}"
            self.broker.answered_models.setdefault(name, set()).add(completion.served_model)
        self._log(
            request,
            transport_try=transport_try,
            cached=False,
            ok=True,
            error=None,
            latency_s=round(self._latency, 4),
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            cost_usd=completion.cost_usd,
            **self._facts(completion),
        )
        if self.broker.cache is not None:
            self.broker.cache.put(
                key,
                provider=self.cfg.provider,
                model=self.cfg.model,
                text=completion.text,
                input_tokens=completion.input_tokens,
                output_tokens=completion.output_tokens,
                cost_usd=completion.cost_usd,
                created_utc=_now(),
                extra=completion.facts(),
            )

    def _failed(self, request: CompletionRequest, transport_try: int, error: ProviderError) -> str:
        """Log a failed attempt; raise ProviderFatalError when retrying cannot help."""
        message = redact(str(error))
        self._log(
            request,
            transport_try=transport_try,
            cached=False,
            ok=False,
            error=message,
            retryable=error.retryable,
            latency_s=round(self._latency, 4),
        )
        if not error.retryable:
            self.broker.stopping = True
            raise ProviderFatalError(f"{self._describe()}: {message}")
        return message

    def _backoff(self, transport_try: int, error: ProviderError, jitter: random.Random) -> float:
        """Seconds to wait before the next try: exponential with jitter, at least Retry-After,
        and never more than `transport.backoff_max_s` (a server asking for a day's pause gets
        the cap, and a run that keeps hearing it stops after its retries)."""
        transport = self.cfg.transport
        backoff = min(transport.backoff_max_s, transport.backoff_initial_s * 2**transport_try)
        delay = backoff * (0.5 + jitter.random() / 2)
        if error.retry_after is not None:
            delay = max(delay, error.retry_after)
        return min(delay, transport.backoff_max_s)

    @staticmethod
    def _facts(completion: Completion) -> dict[str, Any]:
        """What the call log records about a reply besides usage."""
        return {
            "finish_reason": completion.finish_reason,
            "truncated": completion.truncated,
            "served_model": completion.served_model,
            "system_fingerprint": completion.system_fingerprint,
        }

    def _log(self, request: CompletionRequest, **fields: Any) -> None:
        if self.broker.log is None:
            return
        record = {
            "schema_version": SCHEMA_VERSION,
            "condition": self.condition,
            "replicate": self.replicate,
            "agent": self.agent_key,
            ROUND_INDEX: request.tag.round_index,  # the call log shares the rounds' names
            "attempt": request.tag.attempt,
            "purpose": request.purpose,
            "provider": self.cfg.provider,
            "model": self.cfg.model,
            "session": self.broker.session,
            TIMESTAMP: _now(),
        }
        record.update(fields)
        self.broker.log.write_many([record])

    def _describe(self) -> str:
        where = f" at {redact_url(self.cfg.base_url)}" if self.cfg.base_url else ""
        return f"{self.agent_key} ({self.cfg.provider} model {self.cfg.model!r}{where})"
