"""Live play in a resource game (issue 31): a person's seat in a public goods game or a commons,
replayed by the resource engine after every answer.

The app's Play tab keeps the answers a person has given so far: contributions (or harvests) and,
in a public goods game with punishment, punishment tokens. `replay_resource_game(loaded,
amounts, punishments)` takes the game's loaded pgg or commons config (one condition with one
`type: human` seat, one replicate, no talk; loaded with `human_seats`, see
`runners.config.loader.load_mapping`), gives the human seat the answers so far and plays that
many rounds with the engine a run uses (`ResourcePlan.stop_after`), every seat told the game's
full length; an LLM co-player's calls go through a broker with the response cache. It returns
the rounds.jsonl records of those rounds (a commons stops at the season it collapsed in).

Saving the game runs the same config, with every answer, through the resource runner: each
co-player has the same seed and sees the same history, and an LLM co-player's replies come from
the cache, so the saved run's rounds are the rounds the person played.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pdbench.agents.factory import AgentSpec
from pdbench.agents.providers.pool import require_api_key
from pdbench.core.config import BudgetConfig, HumanAgentConfig, LLMAgentConfig
from pdbench.core.resource_config import is_resource
from pdbench.errors import RunError
from pdbench.runners.config.loader import LoadedConfig
from pdbench.runners.engine.broker import Budget, CallBroker
from pdbench.runners.engine.resource_engine import ResourceEngine, ResourcePlan
from pdbench.storage.cache import ResponseCache, default_cache_dir

Tokens = Sequence[Sequence[int]]  # one round's punishment: [target seat, tokens] pairs


@dataclass(frozen=True)
class LiveResourceGame:
    """A person's resource game so far: the kind ("pgg" or "commons"), the planned rounds, the
    person's seat, every seat's name, the rules (as the manifest records them) and the records
    of the rounds played (as rounds.jsonl has them)."""

    kind: str
    n_rounds: int
    human_seat: int
    names: tuple[str, ...]
    rules: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        """Every round played, or the lake collapsed (the record's `last`)."""
        if self.records and self.records[-1].get("last"):
            return True
        return len(self.records) >= self.n_rounds

    @property
    def collapsed(self) -> bool:
        """Whether the last season played collapsed the lake (commons)."""
        return bool(self.records and self.records[-1].get("collapsed"))


def human_resource_plan(loaded: LoadedConfig) -> tuple[ResourcePlan, int]:
    """The one game of a loaded pgg or commons config and its human seat; RunError when the
    config is not one resource game with exactly one person in it."""
    from pdbench.runners.science.resources import plan_resources

    if not is_resource(loaded.config):
        raise RunError(f"{loaded.path}: not a pgg or commons config (got {loaded.kind})")
    plans = plan_resources(loaded)
    if len(plans) != 1:
        raise RunError(f"{loaded.path}: not one resource game (got {len(plans)} games)")
    humans = [i for i, s in enumerate(plans[0].agents) if isinstance(s.config, HumanAgentConfig)]
    if len(humans) != 1:
        raise RunError(f"{loaded.path}: not one person in the game (got {len(humans)})")
    return plans[0], humans[0]


def replay_resource_game(
    loaded: LoadedConfig,
    amounts: Sequence[int],
    punishments: Sequence[Tokens] = (),
    cache_dir: Path | None = None,
    use_cache: bool = True,
) -> LiveResourceGame:
    """Play the first `len(amounts)` rounds of the one resource game of `loaded`, the human
    seat answering `amounts` (and `punishments`; its answers in the config are replaced); see
    the module docstring. RunError for a config that is not one person's resource game, too
    many answers, or a co-player that fails."""
    import asyncio

    from pdbench.agents.providers.pool import ProviderPool
    from pdbench.runners.lifecycle.resource_session import seat_factory

    plan, seat = human_resource_plan(loaded)
    if len(amounts) > plan.n_rounds:
        raise RunError(f"{len(amounts)} answers for a game of {plan.n_rounds} rounds")
    if any(int(a) < 0 for a in amounts):
        raise RunError("an answer is a whole number, 0 or more")
    human = plan.agents[seat].config
    assert isinstance(human, HumanAgentConfig)
    specs = list(plan.agents)
    update = {
        "amounts": [int(a) for a in amounts],
        "punishments": [[[int(j), int(n)] for j, n in one] for one in punishments],
    }
    specs[seat] = AgentSpec(human.model_copy(update=update))
    plan = dataclasses.replace(plan, agents=tuple(specs), stop_after=len(amounts))
    for spec in plan.agents:
        if isinstance(spec.config, LLMAgentConfig):
            require_api_key(spec.config)
    run = loaded.config.run
    cache = (
        ResponseCache(Path(cache_dir or default_cache_dir()))
        if use_cache and plan.has_llm
        else None
    )
    try:
        broker = CallBroker(cache, Budget(BudgetConfig()), None, 1)
        pool = ProviderPool() if plan.has_llm else None
        engine = ResourceEngine(
            run_id=run.run_id,
            seats=seat_factory(True, run.store_raw_responses, broker, pool),
            sink=None,
            on_result=lambda _: None,
            concurrency=1,
            broker=broker,
        )

        async def play() -> Any:
            try:
                return await engine.play_game(plan)
            finally:
                if pool is not None:
                    await pool.aclose()

        result = asyncio.run(play()) if amounts else None
    finally:
        if cache is not None:
            cache.close()
    records = [] if result is None else [orjson.loads(orjson.dumps(r)) for r in result.records]
    rules = dataclasses.asdict(plan.rules)
    return LiveResourceGame(plan.game, plan.n_rounds, seat, plan.names, rules, records)


def resource_policies(kind: str) -> list[tuple[str, str]]:
    """(name, one-line description) of every policy of a resource game ("pgg" or "commons"),
    sorted by name: the co-players the Play tab offers beside the mock LLM personas."""
    if kind == "pgg":
        from pdbench.agents.pgg_policy import PGG_POLICY_REGISTRY

        return [(k, PGG_POLICY_REGISTRY[k].description) for k in sorted(PGG_POLICY_REGISTRY)]
    from pdbench.agents.resource_policy import HARVEST_POLICIES

    return [(k, HARVEST_POLICIES[k].description) for k in sorted(HARVEST_POLICIES)]
