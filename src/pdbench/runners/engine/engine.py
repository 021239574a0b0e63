"""The one match engine, with three speeds, for every mode.

A `GamePlan` is one game: two configured agents, a seed, a horizon, noise and its length.
`Engine.play` plays a list of plans: games between two batchable policies go through the
vectorized engine (`pdbench.core.batch`) in one batch; games that call no provider (Axelrod
strategies, policies whose history window is too small for their machine) synchronously, one
after the other (`pdbench.runners.engine.direct`); games with an LLM agent round by round with
asyncio, both agents of a round asked at once and every provider call through the run's
`CallBroker`. Every speed gives the same moves (counter-based draws keyed by the game seed), and
a logged game's records go through the one `RoundsEncoder`, so experiments, tournaments and
evolutions share every capability: budgets, the call log, stored prompts, progress and resume.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

from pdbench.agents.base import Agent
from pdbench.agents.factory import AgentSpec, make_agent
from pdbench.agents.policy import sided_machines
from pdbench.agents.providers.pool import ProviderPool
from pdbench.core.batch import BatchResult, SidedMachines, play_batch
from pdbench.core.config import LLMAgentConfig, PolicyAgentConfig
from pdbench.core.horizon import Horizon
from pdbench.core.metrics import GameOutcome
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.rng import Purpose, agent_seed, counter_uniform
from pdbench.core.talk import CommunicationConfig
from pdbench.core.talk_metrics import talk_tracks
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action, Message, Observation, Utterance
from pdbench.runners.engine.broker import BoundClient, CallBroker
from pdbench.runners.engine.direct import play_direct
from pdbench.storage.record.jsonl import RoundsEncoder, game_key
from pdbench.storage.schema import GameKey, RoundValues

ProgressFn = Callable[[int, int], None]
SIDES = ("agent_a", "agent_b")


class GameSink(Protocol):
    """Where logged games go: the rounds log in plan order (`OrderedRoundsWriter`), or a Ray
    worker's collector that sends them to the driver."""

    def add(self, index: int, blob: bytes) -> None:
        """A finished game's rounds.jsonl lines."""

    def add_game(self, index: int, key: GameKey, arrays: dict[str, Any], timestamp: str) -> None:
        """A finished game of the vectorized engine (`RoundsEncoder.write_game`'s arrays)."""


def utc_now() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.now(UTC).isoformat()


@dataclass(slots=True)
class GamePlan:
    """One game to play: its label (condition, replicate), agents, seed, horizon and length.

    `logged`: whether its rounds go to rounds.jsonl.
    """

    index: int
    condition: str
    replicate: int
    agents: tuple[AgentSpec, AgentSpec]
    seed: int
    horizon: Horizon
    noise: float
    n_rounds: int
    logged: bool = True
    communication: CommunicationConfig | None = None  # its message channel, if the agents talk

    @property
    def talks(self) -> bool:
        """The agents exchange messages in this game (played round by round)."""
        return self.communication is not None and self.communication.enabled

    @property
    def key(self) -> tuple[str, int]:
        """(condition, replicate): how records name the game."""
        return self.condition, self.replicate

    @property
    def batchable(self) -> bool:
        """Both agents are policies the vectorized engine plays."""
        return self.agents[0].batchable and self.agents[1].batchable

    @property
    def has_llm(self) -> bool:
        """An agent calls a provider."""
        return self.agents[0].is_llm or self.agents[1].is_llm


@dataclass(slots=True)
class GameResult:
    """A finished game: its plan, what the metrics need, and (round by round, when the game is
    logged) its rounds.jsonl lines."""

    plan: GamePlan
    outcome: GameOutcome
    lines: bytes = b""
    # Live play (`play_prefix` with `talk_next`): the messages written so far in the exchange
    # before the next move, and what each agent is shown before that move.
    pending: list[tuple[Message, Utterance]] = field(default_factory=list)
    pending_obs: tuple[Observation, Observation] | None = None


def outcome_of(
    plan: GamePlan, arrays: dict[str, Any], failures: tuple[int, int] = (0, 0)
) -> GameOutcome:
    """The GameOutcome of a game's arrays (played moves True for C, payoffs; for LLM agents
    also `fallback_a/_b` per round and `p_coop_a/_b`, P(C) per round, None when unknown)."""

    def optional(name: str, dtype: Any) -> np.ndarray | None:
        values = arrays.get(name)
        if values is None:
            return None
        if dtype is np.float64:
            values = [np.nan if v is None else v for v in values]
        return np.asarray(values, dtype=dtype)

    return GameOutcome(
        condition=plan.condition,
        replicate=plan.replicate,
        agent_a_name=plan.agents[0].name,
        agent_b_name=plan.agents[1].name,
        a_coop=np.asarray(arrays["played_a"], dtype=bool),
        b_coop=np.asarray(arrays["played_b"], dtype=bool),
        a_payoffs=np.asarray(arrays["payoffs_a"], dtype=np.float64),
        b_payoffs=np.asarray(arrays["payoffs_b"], dtype=np.float64),
        a_parse_failures=int(failures[0]),
        b_parse_failures=int(failures[1]),
        a_fallback=optional("fallback_a", bool),
        b_fallback=optional("fallback_b", bool),
        a_p_cooperate=optional("p_coop_a", np.float64),
        b_p_cooperate=optional("p_coop_b", np.float64),
    )


class MachineTable:
    """Distinct batchable policies of a run as state machines, and each spec's index."""

    def __init__(self, matrix: PayoffMatrix) -> None:
        self.matrix = matrix
        self.machines: list[SidedMachines] = []
        self._index: dict[str, int] = {}
        self._by_spec: dict[int, int] = {}  # id(spec) -> machine index (specs live all run)

    def index(self, spec: AgentSpec) -> int:
        """The machine index of a batchable policy spec (same policy and parameters: one)."""
        found = self._by_spec.get(id(spec))
        if found is not None:
            return found
        cfg = spec.config
        assert isinstance(cfg, PolicyAgentConfig)
        key = cfg.model_dump_json(include={"policy", "params"}).upper()
        if key not in self._index:
            self._index[key] = len(self.machines)
            self.machines.append(sided_machines(cfg, self.matrix))
        self._by_spec[id(spec)] = self._index[key]
        return self._index[key]

    def play(
        self,
        specs_a: Sequence[AgentSpec],
        specs_b: Sequence[AgentSpec],
        seeds: np.ndarray,
        lengths: np.ndarray,
        noise: float | np.ndarray,
    ) -> BatchResult:
        """Play game i between specs_a[i] and specs_b[i] on the vectorized engine."""
        ids_a = np.array([self.index(s) for s in specs_a], dtype=np.int64)
        ids_b = np.array([self.index(s) for s in specs_b], dtype=np.int64)
        return play_batch(self.machines, ids_a, ids_b, seeds, lengths, self.matrix, noise)


@dataclass
class Engine:
    """Plays plans for one run; see the module docstring.

    `writer` receives the records of logged games (None: nothing is written; `encode` False:
    nothing is even encoded); `on_result` gets every finished game; `progress(done, total)`
    counts rounds.
    """

    run_id: str
    matrix: PayoffMatrix
    broker: CallBroker
    encoder: RoundsEncoder
    writer: GameSink | None
    on_result: Callable[[GameResult], None]
    concurrency: int = 16
    progress: ProgressFn | None = None
    encode: bool = True
    _done: int = field(default=0, init=False)
    _total: int = field(default=0, init=False)

    def play(self, plans: Sequence[GamePlan], done_before: int = 0, total: int = 0) -> None:
        """Play every plan; raises what stops the run (provider failure, budget, parse abort)."""
        self._done = done_before
        self._total = total or done_before + sum(p.n_rounds for p in plans)
        self._tick(0)
        batched: list[GamePlan] = []
        direct: list[GamePlan] = []
        rest: list[GamePlan] = []
        for plan in plans:
            round_by_round = plan.has_llm or plan.talks
            (rest if round_by_round else batched if plan.batchable else direct).append(plan)
        self._play_batched(batched)
        self._play_direct(direct)
        if rest:  # asyncio is imported only here: policies play without it
            import asyncio

            asyncio.run(self._play_round_by_round(rest))

    def _tick(self, rounds: int) -> None:
        self._done += rounds
        if self.progress is not None:
            self.progress(self._done, self._total)

    # ----------------------------------------------------------------------------------------
    # Vectorized speed

    def _play_batched(self, plans: list[GamePlan]) -> None:
        """All policy-only games in one batch; records are encoded a run of games at a time."""
        if not plans:
            return
        table = MachineTable(self.matrix)
        result = table.play(
            [p.agents[0] for p in plans],
            [p.agents[1] for p in plans],
            np.array([p.seed for p in plans], dtype=np.uint64),
            np.array([p.n_rounds for p in plans], dtype=np.int64),
            np.array([p.noise for p in plans], dtype=np.float64),
        )
        timestamp = utc_now()
        totals = list(zip(*(t.tolist() for t in result.totals()), strict=True))
        coops = list(zip(*(c.tolist() for c in result.cooperations()), strict=True))
        # Rows as views, cut only when a game is shorter than the batch's longest.
        longest = result.played_a.shape[1]
        arrays = (result.played_a, result.played_b, result.payoffs_a, result.payoffs_b)
        rows = zip(*arrays, strict=True)
        writer, on_result, tick = self.writer, self.on_result, self._tick
        for i, (plan, row, total, coop) in enumerate(zip(plans, rows, totals, coops, strict=True)):
            n = plan.n_rounds
            if plan.logged and writer is not None:
                self._write_game(plan, result.game(i), timestamp)
            if n < longest:
                row = tuple(r[:n] for r in row)
            outcome = GameOutcome(
                plan.condition,
                plan.replicate,
                plan.agents[0].name,
                plan.agents[1].name,
                *row,
                totals=total,
                cooperations=coop,
            )
            on_result(GameResult(plan, outcome))
            tick(n)

    def _write_game(self, plan: GamePlan, arrays: dict[str, Any], timestamp: str) -> None:
        """A whole game's rounds, to the sink (which writes them in plan order)."""
        assert self.writer is not None
        self.writer.add_game(plan.index, self._key(plan), arrays, timestamp)

    # ----------------------------------------------------------------------------------------
    # Synchronous speed

    def _play_direct(self, plans: list[GamePlan]) -> None:
        """Games without a provider, one after the other, no event loop (see `direct`)."""
        for plan in plans:
            agents = tuple(self._agent(plan, side, None) for side in (0, 1))
            arrays = play_direct(
                (agents[0], agents[1]),  # type: ignore[arg-type]
                [spec.view(plan.horizon, plan.n_rounds) for spec in plan.agents],
                seed=plan.seed,
                n_rounds=plan.n_rounds,
                noise=plan.noise,
                horizon_type=plan.horizon.type,
                matrix=self.matrix,
            )
            if plan.logged and self.writer is not None:
                self._write_game(plan, arrays, utc_now())
            self.on_result(GameResult(plan, outcome_of(plan, arrays)))
            self._tick(plan.n_rounds)

    def _key(self, plan: GamePlan) -> GameKey:
        names = (plan.agents[0].name, plan.agents[1].name)
        return game_key(self.run_id, plan.condition, plan.replicate, plan.seed, names, plan.horizon)

    # ----------------------------------------------------------------------------------------
    # Round-by-round speed

    async def _play_round_by_round(self, plans: list[GamePlan]) -> None:
        import asyncio

        pool = ProviderPool()
        # Games in flight may exceed calls in flight (the broker's limit), so that call slots
        # freed between a game's rounds are taken by other games and the call limit stays
        # saturated. Concurrency 1 is strictly sequential: one game, one call at a time.
        gate = asyncio.Semaphore(1 if self.concurrency <= 1 else self.concurrency * 4)

        async def one(plan: GamePlan) -> None:
            async with gate:
                agents = tuple(self._agent(plan, side, pool) for side in (0, 1))
                result = await self.play_game(plan, (agents[0], agents[1]))
                if plan.logged and self.writer is not None:
                    self.writer.add(plan.index, result.lines)
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

    async def _check_models(self, plans: list[GamePlan], pool: ProviderPool) -> None:
        """Before the first game: every LLM agent's model is one its server serves (where the
        server lists its models); see CallBroker.check_model."""
        for plan in plans:
            for side, spec in enumerate(plan.agents):
                if isinstance(spec.config, LLMAgentConfig):
                    provider = pool.get(spec.config)
                    await self.broker.check_model(provider, spec.config, SIDES[side])

    def _agent(self, plan: GamePlan, side: int, pool: ProviderPool | None) -> Agent:
        def provider_for(cfg: LLMAgentConfig) -> BoundClient:
            assert pool is not None, "a game with an LLM agent is played with a provider pool"
            return self.broker.bind(
                pool.get(cfg),
                cfg,
                condition=plan.condition,
                replicate=plan.replicate,
                agent_key=SIDES[side],
                game_seed=plan.seed,
            )

        return make_agent(
            plan.agents[side],
            side=side,
            matrix=self.matrix,
            noise=plan.noise,
            provider_for=provider_for,
        )

    def play_prefix(
        self, plan: GamePlan, rounds: int, talk_next: int | None = None
    ) -> tuple[GameResult, tuple[Agent, Agent]]:
        """Play only the first `rounds` rounds of one game, round by round (the agents are told
        the plan's full length, as in the whole game); returns the result and the agents. The
        app's Play tab replays a person's game so far with this, so the opponent moves exactly
        as it will in the saved run. `talk_next`: then the first that many speaking groups of
        the exchange before the next move (`GameResult.pending`)."""
        import asyncio

        return asyncio.run(self._play_prefix(plan, rounds, talk_next))

    async def _play_prefix(
        self, plan: GamePlan, rounds: int, talk_next: int | None = None
    ) -> tuple[GameResult, tuple[Agent, Agent]]:
        pool = ProviderPool()
        try:
            await self._check_models([plan], pool)
            agents = (self._agent(plan, 0, pool), self._agent(plan, 1, pool))
            return await self.play_game(plan, agents, rounds, talk_next), agents
        finally:
            await pool.aclose()

    async def play_game(
        self,
        plan: GamePlan,
        agents: tuple[Agent, Agent],
        rounds: int | None = None,
        talk_next: int | None = None,
    ) -> GameResult:
        """Play one game round by round (its records encoded when it is logged); `rounds`: stop
        after that many (default: the whole game). `talk_next` (with `rounds` short of the
        game): after them, let the first that many speaking groups write in the exchange before
        the next move, and keep what they said and what each agent is then shown in the
        result's `pending` and `pending_obs` (the app's live play)."""
        import asyncio

        seeds = (agent_seed(plan.seed, 0), agent_seed(plan.seed, 1))
        for agent, seed in zip(agents, seeds, strict=True):
            agent.reset(seed)
        views = [spec.view(plan.horizon, plan.n_rounds) for spec in plan.agents]
        key = self._key(plan)
        transcript = Transcript(self.matrix)
        lines: list[bytes] = []
        failures = [0, 0]
        fallback: tuple[list[bool], list[bool]] = ([], [])
        p_coop: tuple[list[float | None], list[float | None]] = ([], [])
        chat = None
        if plan.talks:
            from pdbench.runners.engine.chat import Chat  # asyncio and the agents' talk

            chat = Chat(plan.communication, plan.agents)
        chose: tuple[list[bool], list[bool]] = ([], [])
        entries = 0  # message entries recorded (a game with none has no talk metrics)

        def observe() -> list[Observation]:
            return [
                transcript.observation(
                    i,
                    history_window=v.history_window,
                    include_totals=v.include_totals,
                    horizon_type=plan.horizon.type,
                    total_rounds=v.total_rounds,
                    stop_prob=v.stop_prob,
                )
                for i, v in enumerate(views)
            ]

        played = plan.n_rounds if rounds is None else min(rounds, plan.n_rounds)
        for r in range(played):
            obs = observe()
            said: list[tuple[Message, Utterance]] = []
            if chat is not None:
                said = await chat.exchange(r, agents, obs)
                entries += len(said)
                obs = [chat.shown(side, obs[side]) for side in (0, 1)]
            dec_a, dec_b = await asyncio.gather(agents[0].decide(obs[0]), agents[1].decide(obs[1]))
            chose[0].append(dec_a.action is Action.C)
            chose[1].append(dec_b.action is Action.C)
            played_a = _maybe_flip(dec_a.action, seeds[0], r, plan.noise)
            played_b = _maybe_flip(dec_b.action, seeds[1], r, plan.noise)
            pay_a, pay_b = transcript.record(played_a, played_b)
            failures[0] += int(dec_a.parse_failure)
            failures[1] += int(dec_b.parse_failure)
            for side, dec in enumerate((dec_a, dec_b)):
                fallback[side].append(dec.parse_failure)
                p_coop[side].append(dec.p_cooperate)
            if plan.logged and self.encode:
                values = RoundValues(
                    round_index=r,
                    agent_a_action=played_a.value,
                    agent_b_action=played_b.value,
                    agent_a_intended_action=dec_a.action.value,
                    agent_b_intended_action=dec_b.action.value,
                    agent_a_payoff=pay_a,
                    agent_b_payoff=pay_b,
                    agent_a_cum_payoff=transcript.total_a,
                    agent_b_cum_payoff=transcript.total_b,
                    agent_a_parse_failure=dec_a.parse_failure,
                    agent_b_parse_failure=dec_b.parse_failure,
                    agent_a_p_cooperate=dec_a.p_cooperate,
                    agent_b_p_cooperate=dec_b.p_cooperate,
                    timestamp_utc=utc_now(),
                )
                lines.append(self.encoder.round_line(key, values, (dec_a, dec_b), said))
            self._tick(1)
        arrays = {
            "played_a": [a is Action.C for a in transcript.actions_a],
            "played_b": [b is Action.C for b in transcript.actions_b],
            "payoffs_a": transcript.payoffs_a,
            "payoffs_b": transcript.payoffs_b,
        }
        for side, spec in zip("ab", plan.agents, strict=True):
            if spec.config.type == "llm":
                index = "ab".index(side)
                arrays[f"fallback_{side}"] = fallback[index]
                arrays[f"p_coop_{side}"] = p_coop[index]
        outcome = outcome_of(plan, arrays, (failures[0], failures[1]))
        if chat is not None and entries:
            outcome.talk = talk_tracks(
                chat.messages,
                chose[0],
                chose[1],
                (plan.agents[0].message_labels, plan.agents[1].message_labels),
                pregame=plan.communication is not None and plan.communication.mode == "pregame",
            )
        result = GameResult(plan, outcome, b"".join(lines))
        if talk_next is not None and chat is not None and played < plan.n_rounds:
            obs = observe()
            result.pending = await chat.exchange(played, agents, obs, talk_next)
            shown = [chat.shown(side, obs[side]) for side in (0, 1)]
            result.pending_obs = (shown[0], shown[1])
        return result


def _maybe_flip(action: Action, seed: int, round_index: int, noise: float) -> Action:
    if noise > 0.0 and counter_uniform(seed, round_index, Purpose.NOISE) < noise:
        return action.flipped
    return action


def _quiet_on_interrupt(loop: Any, context: dict[str, Any]) -> None:
    """The event loop's handler of exceptions nobody retrieved: a game's task that Ctrl-C or
    SIGTERM (raised as KeyboardInterrupt inside it) stopped is not reported a second time after
    the run's one-line "interrupted" message; everything else as asyncio reports it."""
    if isinstance(context.get("exception"), KeyboardInterrupt | SystemExit):
        return
    loop.default_exception_handler(context)
