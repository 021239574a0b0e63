"""The group engine: games of N seats, with two speeds, as the pairwise engine has them.

A `GroupPlan` is one game of a group: its seats' agents, the stage game (`GroupGame`), a seed,
a horizon, noise and its length. `GroupEngine.play` plays a list of plans: games whose seats are
all group policies and that have no message channel go through the vectorized engine
(`pdbench.core.group_batch`), one batch per stage game; the others round by round with asyncio,
every seat of a round asked at once and every provider call through the run's `CallBroker`
(cache, budget, call log). Seat i's draws are keyed by `agent_seed(game seed, i)`, so both speeds
give the same moves, and a group of two seats the same moves as the pairwise engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pdbench.agents.factory import AgentSpec
from pdbench.agents.providers.pool import ProviderPool
from pdbench.core.config import LLMAgentConfig, PolicyAgentConfig
from pdbench.core.group_game import GroupGame, GroupObservation, GroupRound
from pdbench.core.group_metrics import GroupOutcome
from pdbench.core.horizon import Horizon
from pdbench.core.rng import Purpose, agent_seed, counter_uniform
from pdbench.core.talk import CommunicationConfig
from pdbench.core.types import Action, Decision, Message, Utterance
from pdbench.runners.engine.broker import BoundClient, CallBroker
from pdbench.runners.engine.engine import ProgressFn, _quiet_on_interrupt, utc_now
from pdbench.storage.record.group_fields import group_key, round_values, seat_name
from pdbench.storage.record.group_jsonl import GroupRoundsEncoder


@dataclass(slots=True)
class GroupPlan:
    """One group game to play: its label (condition, replicate), seats, game, seed and length."""

    index: int
    condition: str
    replicate: int
    agents: tuple[AgentSpec, ...]
    game: GroupGame
    seed: int
    horizon: Horizon
    noise: float
    n_rounds: int
    communication: CommunicationConfig | None = None
    logged: bool = True

    @property
    def key(self) -> tuple[str, int]:
        """(condition, replicate): how records name the game."""
        return self.condition, self.replicate

    @property
    def n_players(self) -> int:
        """Seats of the group."""
        return len(self.agents)

    @property
    def talks(self) -> bool:
        """The seats exchange messages (played round by round)."""
        return self.communication is not None and self.communication.enabled

    @property
    def batchable(self) -> bool:
        """Every seat is a group policy and nobody talks: the vectorized engine plays it."""
        from pdbench.agents.group_policy import is_group_batchable

        return not self.talks and all(
            isinstance(spec.config, PolicyAgentConfig) and is_group_batchable(spec.config)
            for spec in self.agents
        )

    @property
    def has_llm(self) -> bool:
        """A seat calls a provider."""
        return any(spec.is_llm for spec in self.agents)


@dataclass(slots=True)
class GroupResult:
    """A finished game: its plan, its outcome and (when logged) its rounds.jsonl lines."""

    plan: GroupPlan
    outcome: GroupOutcome
    lines: bytes = b""


def _policy_of(spec: AgentSpec) -> Any:
    from pdbench.agents.group_policy import make_group_policy

    cfg = spec.config
    assert isinstance(cfg, PolicyAgentConfig)
    return make_group_policy(cfg.policy, cfg.params)


@dataclass
class GroupEngine:
    """Plays group plans for one run; `sink(index, lines)` gets each logged game's records,
    `on_result` every finished game, `progress(done, total)` counts rounds."""

    run_id: str
    broker: CallBroker | None
    encoder: GroupRoundsEncoder
    sink: Callable[[int, bytes], None] | None
    on_result: Callable[[GroupResult], None]
    concurrency: int = 16
    progress: ProgressFn | None = None
    _done: int = field(default=0, init=False)
    _total: int = field(default=0, init=False)

    def play(self, plans: Sequence[GroupPlan], done_before: int = 0, total: int = 0) -> None:
        """Play every plan; raises what stops the run (provider failure, budget, parse abort)."""
        self._done = done_before
        self._total = total or done_before + sum(p.n_rounds for p in plans)
        self._tick(0)
        batched = [p for p in plans if p.batchable]
        rest = [p for p in plans if not p.batchable]
        self._play_batched(batched)
        if rest:
            import asyncio

            asyncio.run(self._play_round_by_round(rest))

    def _tick(self, rounds: int) -> None:
        self._done += rounds
        if self.progress is not None:
            self.progress(self._done, self._total)

    def _key(self, plan: GroupPlan) -> dict[str, Any]:
        return group_key(
            self.run_id,
            plan.condition,
            plan.replicate,
            plan.seed,
            [spec.name for spec in plan.agents],
            plan.horizon.type,
            getattr(plan.horizon, "n_rounds", None),
            getattr(plan.horizon, "stop_prob", None),
        )

    # ----------------------------------------------------------------------------------------
    # Vectorized speed

    def _play_batched(self, plans: list[GroupPlan]) -> None:
        """Policy groups, one batch per stage game (a batch shares N and the payoffs)."""
        from pdbench.core.group_batch import play_group_batch

        by_game: dict[GroupGame, list[GroupPlan]] = {}
        for plan in plans:
            by_game.setdefault(plan.game, []).append(plan)
        for game, group in by_game.items():
            machines: list[Any] = []
            index: dict[str, int] = {}
            ids = np.empty((len(group), game.n_players), dtype=np.int64)
            for g, plan in enumerate(group):
                for seat, spec in enumerate(plan.agents):
                    cfg = spec.config
                    assert isinstance(cfg, PolicyAgentConfig)
                    key = cfg.model_dump_json(include={"policy", "params"}).upper()
                    if key not in index:
                        index[key] = len(machines)
                        machines.append(_policy_of(spec).machine(game.n_players, game))
                    ids[g, seat] = index[key]
            result = play_group_batch(
                machines,
                ids,
                np.array([p.seed for p in group], dtype=np.uint64),
                np.array([p.n_rounds for p in group], dtype=np.int64),
                game,
                np.array([p.noise for p in group], dtype=np.float64),
            )
            timestamp = utc_now()
            # Each game's records go to the sink as soon as they are encoded (the sink keeps
            # plan order), so a batch's records are never all in memory at once.
            for g, plan in enumerate(group):
                arrays = result.game(g)  # this game's (N, length) arrays only
                played, intended, payoffs = arrays["played"], arrays["intended"], arrays["payoffs"]
                if plan.logged and self.sink is not None:
                    lines = self.encoder.game_bytes(
                        self._key(plan), played, intended, payoffs, timestamp
                    )
                    self.sink(plan.index, lines)
                outcome = GroupOutcome(  # payoffs: derived from the moves when needed
                    plan.condition,
                    plan.replicate,
                    tuple(s.name for s in plan.agents),
                    game,
                    played,
                    None,
                    None,  # intended moves are in the record; the metrics of policies need none
                    tuple(0 for _ in plan.agents),
                    None,
                )
                self.on_result(GroupResult(plan, outcome))
                self._tick(plan.n_rounds)

    # ----------------------------------------------------------------------------------------
    # Round-by-round speed

    async def _play_round_by_round(self, plans: list[GroupPlan]) -> None:
        import asyncio

        pool = ProviderPool()
        gate = asyncio.Semaphore(1 if self.concurrency <= 1 else self.concurrency * 4)

        async def one(plan: GroupPlan) -> None:
            async with gate:
                result = await self.play_game(plan, pool)
                if plan.logged and self.sink is not None:
                    self.sink(plan.index, result.lines)
                    result.lines = b""
                self.on_result(result)

        asyncio.get_running_loop().set_exception_handler(_quiet_on_interrupt)
        tasks: list[asyncio.Task[None]] = []
        try:
            await self._check_models(plans, pool)
            tasks = [asyncio.create_task(one(plan)) for plan in plans]
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await pool.aclose()

    async def _check_models(self, plans: list[GroupPlan], pool: ProviderPool) -> None:
        if self.broker is None:
            return
        checked: set[int] = set()
        for plan in plans:
            for seat, spec in enumerate(plan.agents):
                if isinstance(spec.config, LLMAgentConfig) and id(spec) not in checked:
                    checked.add(id(spec))
                    provider = pool.get(spec.config)
                    await self.broker.check_model(provider, spec.config, seat_name(seat))

    def _agents(self, plan: GroupPlan, pool: ProviderPool | None) -> list[Any]:
        from pdbench.agents.group_llm import make_group_agent

        def provider_for(seat: int) -> Callable[[LLMAgentConfig], BoundClient]:
            def bind(cfg: LLMAgentConfig) -> BoundClient:
                assert pool is not None and self.broker is not None
                return self.broker.bind(
                    pool.get(cfg),
                    cfg,
                    condition=plan.condition,
                    replicate=plan.replicate,
                    agent_key=seat_name(seat),
                    game_seed=plan.seed,
                )

            return bind

        return [
            make_group_agent(spec, seat, plan.n_players, plan.game, provider_for(seat))
            for seat, spec in enumerate(plan.agents)
        ]

    def play_prefix(self, plan: GroupPlan, rounds: int) -> GroupResult:
        """Play only the first `rounds` rounds of one group game, round by round (the seats are
        told the plan's full length, as in the whole game); its models checked first, as a run
        checks them. The app's Play tab replays a person's group game so far with this, so the
        co-players move exactly as they will in the saved run (`pdbench.runners.live_group`)."""
        import asyncio

        return asyncio.run(self._play_prefix(plan, rounds))

    async def _play_prefix(self, plan: GroupPlan, rounds: int) -> GroupResult:
        pool = ProviderPool()
        try:
            await self._check_models([plan], pool)
            return await self.play_game(plan, pool, rounds)
        finally:
            await pool.aclose()

    async def play_game(
        self, plan: GroupPlan, pool: ProviderPool | None = None, rounds: int | None = None
    ) -> GroupResult:
        """Play one group game round by round (its records encoded when it is logged);
        `rounds`: stop after that many (default: the whole game)."""
        import asyncio

        n = plan.n_players
        agents = self._agents(plan, pool)
        seeds = [agent_seed(plan.seed, seat) for seat in range(n)]
        for agent, seed in zip(agents, seeds, strict=True):
            agent.reset(seed)
        views = [spec.view(plan.horizon, plan.n_rounds) for spec in plan.agents]
        key = self._key(plan)
        history: list[GroupRound] = []
        totals = [0.0] * n
        lines: list[bytes] = []
        failures = [0] * n
        played_all: list[list[bool]] = [[] for _ in range(n)]
        intended_all: list[list[bool]] = [[] for _ in range(n)]
        payoffs_all: list[list[float]] = [[] for _ in range(n)]
        chat = None
        if plan.talks:
            from pdbench.runners.engine.group_chat import GroupChat

            chat = GroupChat(plan.communication, plan.agents, n)
        messages_said = 0

        def observe(r: int) -> list[GroupObservation]:
            out = []
            for seat, view in enumerate(views):
                window = view.history_window
                shown = history if window is None else history[len(history) - window :]
                if window == 0:
                    shown = []
                out.append(
                    GroupObservation(
                        seat=seat,
                        n_players=n,
                        round_index=r,
                        history=tuple(shown),
                        game=plan.game,
                        horizon_type=plan.horizon.type,
                        names=tuple(s.name for s in plan.agents),
                        total_rounds=view.total_rounds,
                        stop_prob=view.stop_prob,
                        my_cumulative_payoff=totals[seat] if view.include_totals else None,
                        cumulative_payoffs=tuple(totals) if view.include_totals else None,
                    )
                )
            return out

        played_rounds = plan.n_rounds if rounds is None else min(rounds, plan.n_rounds)
        for r in range(played_rounds):
            obs = observe(r)
            said: list[tuple[Message, Utterance]] = []
            if chat is not None:
                said = await chat.exchange(r, agents, obs)
                messages_said += len(said)
                obs = [chat.shown(seat, obs[seat]) for seat in range(n)]
            decisions: list[Decision] = list(
                await asyncio.gather(
                    *(agent.decide(o) for agent, o in zip(agents, obs, strict=True))
                )
            )
            moves = [
                _maybe_flip(d.action, seeds[seat], r, plan.noise)
                for seat, d in enumerate(decisions)
            ]
            coop = [m is Action.C for m in moves]
            pays = plan.game.payoffs(coop)
            for seat in range(n):
                totals[seat] += pays[seat]
                failures[seat] += int(decisions[seat].parse_failure)
                played_all[seat].append(coop[seat])
                intended_all[seat].append(decisions[seat].action is Action.C)
                payoffs_all[seat].append(pays[seat])
            history.append(GroupRound(tuple(moves), pays))
            if plan.logged:
                values = round_values(
                    r,
                    {
                        "action": [m.value for m in moves],
                        "intended_action": [d.action.value for d in decisions],
                        "payoff": list(pays),
                        "cum_payoff": list(totals),
                        "parse_failure": [d.parse_failure for d in decisions],
                        "p_cooperate": [d.p_cooperate for d in decisions],
                    },
                    utc_now(),
                )
                lines.append(self.encoder.round_line(key, values, decisions, said))
            self._tick(1)
        talk = None
        if chat is not None and messages_said:
            from pdbench.core.group_talk_metrics import group_talk_tracks

            talk = group_talk_tracks(
                chat.messages,
                np.array(intended_all, dtype=bool).reshape(n, -1),
                [spec.message_labels for spec in plan.agents],
                pregame=plan.communication is not None and plan.communication.mode == "pregame",
            )
        outcome = GroupOutcome(
            plan.condition,
            plan.replicate,
            tuple(s.name for s in plan.agents),
            plan.game,
            np.array(played_all, dtype=bool).reshape(n, -1),
            np.array(payoffs_all, dtype=np.float64).reshape(n, -1),
            np.array(intended_all, dtype=bool).reshape(n, -1),
            tuple(failures),
            talk,
        )
        return GroupResult(plan, outcome, b"".join(lines))


def _maybe_flip(action: Action, seed: int, round_index: int, noise: float) -> Action:
    if noise > 0.0 and counter_uniform(seed, round_index, Purpose.NOISE) < noise:
        return action.flipped
    return action
