"""Limits that hold across a Ray cluster: the run's call gate (`--concurrency`), every
provider's gate (`max_concurrency`) and the budget, kept by one `LimitsKeeper` actor per run
session; each worker's broker takes its call slots through `RayLimits` (the broker's
`SharedLimits`). Nothing here imports ray: the actor class is made remote by the driver."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from pdbench.runners.engine.broker import Budget, BudgetExhausted, RunHalted


class LimitsKeeper:
    """A Ray actor (async): the run's call gate, every provider's gate and the budget.

    `acquire` waits for a free slot in the run's gate and in the provider's, then counts one
    call against the budget; it answers None (granted) or (kind, message) with kind "budget"
    (a limit reached), "halt" (the run is stopping) or "cancelled" (the caller gave up)."""

    def __init__(self, budget: Budget, run_limit: int) -> None:
        self.budget = budget
        self.run_limit = max(1, run_limit)
        self.in_use: dict[str, int] = {}
        self.halted: str | None = None
        self.granted: dict[str, str] = {}  # ticket -> provider key
        self.dropped: set[str] = set()
        self.peak = 0
        self._cond: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    def _verdict(self, ticket: str) -> tuple[str, str] | None:
        if ticket in self.dropped:
            self.dropped.discard(ticket)
            return ("cancelled", "the caller gave up")
        if self.halted is not None:
            return ("halt", self.halted)
        try:
            self.budget.check()
        except BudgetExhausted as exc:
            return ("budget", str(exc))
        return None

    async def acquire(self, ticket: str, key: str, limit: int) -> tuple[str, str] | None:
        """Take a slot of the run and of provider `key` (of `limit`) and count a call."""
        cond = self._condition()
        async with cond:
            while True:
                verdict = self._verdict(ticket)
                if verdict is not None:
                    return verdict
                run_free = self.in_use.get("", 0) < self.run_limit
                if run_free and self.in_use.get(key, 0) < limit:
                    break
                await cond.wait()
            self.in_use[""] = self.in_use.get("", 0) + 1
            self.in_use[key] = self.in_use.get(key, 0) + 1
            self.peak = max(self.peak, self.in_use[""])
            self.granted[ticket] = key
            self.budget.calls += 1
            return None

    async def release(self, ticket: str) -> None:
        """Give a granted slot back (a ticket not granted yet is dropped when it would be)."""
        cond = self._condition()
        async with cond:
            key = self.granted.pop(ticket, None)
            if key is None:
                self.dropped.add(ticket)
                return
            self.in_use[""] -= 1
            self.in_use[key] -= 1
            cond.notify_all()

    async def spend(self, tokens: int, cost_usd: float | None) -> None:
        """Count a reply's tokens and cost (None: unknown)."""
        self.budget.tokens += tokens
        if cost_usd is None:
            self.budget.unpriced_calls += 1
        else:
            self.budget.cost_usd += cost_usd

    async def halt(self, message: str) -> None:
        """Stop granting slots: the run is stopping with `message`."""
        cond = self._condition()
        async with cond:
            if self.halted is None:
                self.halted = message
            cond.notify_all()

    async def figures(self) -> dict[str, Any]:
        """Calls counted, tokens, slots in use and the most calls ever in flight at once."""
        return {"calls": self.budget.calls, "tokens": self.budget.tokens, "peak": self.peak}


@dataclass
class RayLimits:
    """A worker's view of the `LimitsKeeper` (see `pdbench.runners.engine.broker.SharedLimits`)."""

    keeper: Any  # the actor handle

    @asynccontextmanager
    async def slot(self, key: str, limit: int) -> AsyncIterator[None]:
        """Hold a cluster-wide call slot for provider `key` while the call runs."""
        ticket = uuid.uuid4().hex
        try:
            verdict = await self.keeper.acquire.remote(ticket, key, limit)
        except asyncio.CancelledError:
            self.keeper.release.remote(ticket)  # granted later or not: never held
            raise
        if verdict is not None:
            kind, message = verdict
            if kind == "budget":
                raise BudgetExhausted(message)
            raise RunHalted(f"stopped: {message}")
        try:
            yield
        finally:
            self.keeper.release.remote(ticket)

    def spend(self, tokens: int, cost_usd: float | None) -> None:
        """Count a reply against the cluster's budget (sent; calls from one worker stay in
        order, so the next acquire sees it)."""
        self.keeper.spend.remote(tokens, cost_usd)
