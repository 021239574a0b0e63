"""The Ray backend's limits keeper and chunking, without Ray: `LimitsKeeper` is a plain class
that the driver makes a Ray actor, so its gates and budget are tested here directly."""

from __future__ import annotations

import asyncio

from pdbench.core.config import BudgetConfig
from pdbench.core.horizon import FixedHorizon
from pdbench.runners.engine.broker import Budget
from pdbench.runners.engine.engine import GamePlan
from pdbench.runners.ray.backend import deal
from pdbench.runners.ray.limits import LimitsKeeper


def keeper(run_limit: int = 16, **limits: int) -> LimitsKeeper:
    return LimitsKeeper(Budget(BudgetConfig(**limits)), run_limit)


def test_provider_and_run_gates_bound_calls_in_flight() -> None:
    async def scenario() -> tuple[int, int, list[int]]:
        k = keeper(run_limit=3)
        in_flight, peak, order = 0, 0, []

        async def call(i: int, key: str) -> None:
            nonlocal in_flight, peak
            assert await k.acquire(f"t{i}", key, 2) is None
            in_flight += 1
            peak = max(peak, in_flight)
            order.append(i)
            await asyncio.sleep(0.01)
            in_flight -= 1
            await k.release(f"t{i}")

        await asyncio.gather(*(call(i, "a" if i % 2 else "b") for i in range(12)))
        return peak, k.peak, sorted(order)

    peak, keeper_peak, order = asyncio.run(scenario())
    assert peak == 3 == keeper_peak  # the run's gate (3) binds: two providers of 2 each
    assert order == list(range(12))


def test_budget_counts_every_grant_and_refuses_past_the_limit() -> None:
    async def scenario() -> list[object]:
        k = keeper(max_calls=3)
        verdicts = [await k.acquire(f"t{i}", "p", 8) for i in range(5)]
        for i in range(3):
            await k.release(f"t{i}")
        return verdicts

    verdicts = asyncio.run(scenario())
    assert verdicts[:3] == [None, None, None]
    for verdict in verdicts[3:]:
        assert isinstance(verdict, tuple) and verdict[0] == "budget"
        assert "max_calls=3" in verdict[1]


def test_tokens_spent_anywhere_stop_everyone() -> None:
    async def scenario() -> object:
        k = keeper(max_tokens=100)
        assert await k.acquire("t1", "p", 8) is None
        await k.spend(120, 0.0)
        await k.release("t1")
        return await k.acquire("t2", "p", 8)

    verdict = asyncio.run(scenario())
    assert isinstance(verdict, tuple) and verdict[0] == "budget"


def test_halt_wakes_waiters_and_a_cancelled_ticket_never_holds_a_slot() -> None:
    async def scenario() -> tuple[object, object, tuple[object, int]]:
        k = keeper(run_limit=1)
        assert await k.acquire("held", "p", 1) is None
        await k.release("gone")  # given up before it was granted: dropped when it would be
        waiting = asyncio.create_task(k.acquire("waiter", "p", 1))
        await asyncio.sleep(0.01)
        assert not waiting.done()  # the only slot is held
        await k.release("held")
        granted = await waiting
        dropped = await k.acquire("gone", "p", 1)  # the dropped ticket takes nothing
        late = asyncio.create_task(k.acquire("late", "p", 1))
        await asyncio.sleep(0.01)
        await k.halt("provider failed")
        return granted, dropped, (await late, k.in_use["p"])

    granted, dropped, (late, in_use) = asyncio.run(scenario())
    assert granted is None
    assert dropped == ("cancelled", "the caller gave up")
    assert late == ("halt", "provider failed")
    assert in_use == 1  # only "waiter" holds a slot


def test_deal_spreads_plans_round_robin_in_plan_order() -> None:
    plans = [
        GamePlan(i, "c", i, (None, None), i, FixedHorizon(5), 0.0, 5)  # type: ignore[arg-type]
        for i in range(10)
    ]
    chunks = deal(plans, 4)
    assert [[p.index for p in c] for c in chunks] == [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]
    assert [len(c) for c in deal(plans[:2], 8)] == [1, 1]
    assert deal([], 3) == []
