"""Live play in a group: a person's seat in a group game, replayed by the group engine after
every move.

The app's Play tab keeps the moves a person has made so far in a group. `replay_group_game(
loaded, moves)` takes the game's loaded groups config (one condition, a fixed group with one
`type: human` seat, one replicate, a fixed horizon; loaded with `human_seats`, see
`runners.config.loader.load_mapping`), gives the human seat the moves made so far, and plays that
many rounds with the group engine (`GroupEngine.play_prefix`), every seat told the game's full
length; an LLM co-player's calls go through a broker with the response cache, in the directory
a run uses. It returns the rounds.jsonl records of those rounds.

Saving the game runs the same config, with every move, through the groups runner: each
co-player has the same seed (the run seed, the condition's name, the replicate) and sees the
same history, and an LLM co-player's replies come from the cache, so the saved run's rounds are
the rounds the person played. The pairwise live play (`runners.live`) is separate and unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pdbench.agents.factory import AgentSpec
from pdbench.agents.providers.pool import require_api_key
from pdbench.core.config import BudgetConfig, HumanAgentConfig, LLMAgentConfig
from pdbench.errors import RunError
from pdbench.runners.config.loader import LoadedConfig
from pdbench.runners.engine.broker import Budget, CallBroker
from pdbench.runners.engine.group_engine import GroupEngine, GroupPlan
from pdbench.storage.cache import ResponseCache, default_cache_dir
from pdbench.storage.record.group_jsonl import GroupRoundsEncoder


@dataclass(frozen=True)
class LiveGroupGame:
    """A person's group game so far: the seats' names, the person's seat and the records of
    the rounds played (as rounds.jsonl has them)."""

    n_rounds: int  # the whole game's length
    human_seat: int
    names: tuple[str, ...]  # every seat's agent name, in seat order
    game_label: str  # e.g. "public_goods N=3 r=2 c=1"
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        """Whether every round has been played."""
        return len(self.records) >= self.n_rounds

    @property
    def n_players(self) -> int:
        """Seats of the group."""
        return len(self.names)


def human_group_plan(loaded: LoadedConfig) -> tuple[GroupPlan, int]:
    """The one game of a loaded groups config and its human seat; RunError when the config is
    not one group game with exactly one person in it."""
    from pdbench.runners.science.groups import plan_groups

    if loaded.kind != "groups":
        raise RunError(f"{loaded.path}: not a groups config (got {loaded.kind})")
    plans = plan_groups(loaded)
    if len(plans) != 1:
        raise RunError(f"{loaded.path}: not one group game (got {len(plans)} games)")
    humans = [i for i, s in enumerate(plans[0].agents) if isinstance(s.config, HumanAgentConfig)]
    if len(humans) != 1:
        raise RunError(f"{loaded.path}: not one person in the group (got {len(humans)})")
    return plans[0], humans[0]


def replay_group_game(
    loaded: LoadedConfig,
    moves: Sequence[str],
    cache_dir: Path | None = None,
    use_cache: bool = True,
) -> LiveGroupGame:
    """Play the first `len(moves)` rounds of the one group game of `loaded`, the human seat
    making `moves` (its moves in the config are replaced); see the module docstring. Raises
    RunError for a config that is not one person's group game, too many moves, or a co-player
    that fails."""
    plan, seat = human_group_plan(loaded)
    if len(moves) > plan.n_rounds:
        raise RunError(f"{len(moves)} moves for a game of {plan.n_rounds} rounds")
    bad = [m for m in moves if m.upper() not in ("C", "D")]
    if bad:
        raise RunError(f"a move is C or D (got {bad[0]!r})")
    human = plan.agents[seat].config
    assert isinstance(human, HumanAgentConfig)
    specs = list(plan.agents)
    specs[seat] = AgentSpec(human.model_copy(update={"moves": [m.upper() for m in moves]}))
    plan.agents = tuple(specs)
    for spec in plan.agents:
        if isinstance(spec.config, LLMAgentConfig):
            require_api_key(spec.config)
    run = loaded.config.run
    cache = (
        ResponseCache(Path(cache_dir or default_cache_dir()))
        if use_cache and plan.has_llm
        else None
    )
    encoder = GroupRoundsEncoder(store_prompts=True, store_raw=run.store_raw_responses)
    try:
        engine = GroupEngine(
            run_id=run.run_id,
            broker=CallBroker(cache, Budget(BudgetConfig()), None, 1),
            encoder=encoder,
            sink=None,
            on_result=lambda _: None,
            concurrency=1,
        )
        result = engine.play_prefix(plan, len(moves))
    finally:
        if cache is not None:
            cache.close()
    records = [orjson.loads(line) for line in result.lines.splitlines() if line.strip()]
    names = tuple(spec.name for spec in plan.agents)
    return LiveGroupGame(plan.n_rounds, seat, names, plan.game.describe(), records)


def group_policies() -> list[tuple[str, str]]:
    """(name, one-line description) of every group policy, sorted by name: the co-players the
    Play tab offers beside the mock LLM personas (the UI reads the group policy registry
    through here)."""
    from pdbench.agents.group_policy import group_policy_class, group_policy_names

    return [(name, group_policy_class(name).description) for name in group_policy_names()]
