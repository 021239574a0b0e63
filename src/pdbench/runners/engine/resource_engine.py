"""Plays the resource games (issue 31) round by round: a public goods game with contributions,
talk and punishment, and a commons with discussions between seasons.

A public goods round: every seat says a public message (when the group talks; all at once, so a
seat sees the others' messages of earlier rounds only), then contributes; the pot is shared;
then (punishment on) each seat, shown the contributions, spends punishment tokens, and (reward
stage on) gives reward tokens, asked at the same time and shown the same (`pdbench.core.pgg`). A
commons
season: every present seat asks for a harvest, the lake grants the requests and regrows, then
(talk on) the seats discuss in seat order (each sees what was said before it), and each LLM
seat writes a reflection (a logged call, fed into its later prompts). A commons game ends at
the season it collapses in, after that season's discussion, as GovSim's does.

What a seat answers is checked here whatever the seat: a contribution or harvest out of range is
clamped, punishment of oneself, of more seats than allowed, or beyond the tokens allowed or
held is cut (in seat order), and each such repair is recorded (`clamped`). Every round is one
record (`pdbench.storage.record.resource_record`); a game's records reach the log when it ends.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from pdbench.agents.factory import AgentSpec
from pdbench.agents.resource_human import HumanSeat
from pdbench.agents.resource_policy import (
    Choice,
    CommonsContext,
    Message,
    PGGContext,
    PolicySeat,
    Said,
)
from pdbench.core.commons import CommonsRules, SeasonResult, step
from pdbench.core.config import HumanAgentConfig, LLMAgentConfig, PolicyAgentConfig
from pdbench.core.pgg import PGGRules, RoundResult, play_round
from pdbench.core.rng import derive_seed
from pdbench.runners.engine.broker import CallBroker
from pdbench.runners.engine.engine import ProgressFn, utc_now
from pdbench.storage.record.fields import TIMESTAMP
from pdbench.storage.record.resource_record import (
    commons_record,
    encode_game,
    pgg_record,
    round_key,
)


@dataclass(frozen=True)
class ResourcePlan:
    """One planned game: its condition, replicate, seed, seats and rules."""

    index: int
    condition: str
    replicate: int
    seed: int
    n_rounds: int
    agents: tuple[AgentSpec, ...]
    game: str  # "pgg" or "commons"
    rules: PGGRules | CommonsRules
    talk: bool = False
    max_chars: int = 400
    universalization: bool = False
    outsider_arrival: int | None = None
    system_prompt: str = "v3"
    logged: bool = True
    # play only the first this many rounds, every seat still told `n_rounds` (the Play tab's
    # live game so far, `runners.live_resource`); None: the whole game
    stop_after: int | None = None

    @property
    def key(self) -> tuple[str, int]:
        """(condition, replicate)."""
        return (self.condition, self.replicate)

    @property
    def n_players(self) -> int:
        """The number of seats."""
        return len(self.agents)

    @property
    def rounds_to_play(self) -> int:
        """The rounds (seasons) this plan plays: `stop_after` of them when set, else all."""
        return self.n_rounds if self.stop_after is None else min(self.stop_after, self.n_rounds)

    @property
    def has_llm(self) -> bool:
        """A seat calls a provider."""
        return any(spec.is_llm for spec in self.agents)

    @property
    def calls_per_round(self) -> int:
        """An LLM seat's provider calls a round without retries: its decision(s), a message
        when the group talks, and (commons) a reflection."""
        if self.game == "pgg":
            punish = bool(getattr(self.rules, "punishment", False))
            reward = bool(getattr(self.rules, "reward", False))
            return 1 + int(punish) + int(reward) + int(self.talk)
        return 2 + int(self.talk)

    @property
    def names(self) -> tuple[str, ...]:
        """The seats' display names."""
        return tuple(spec.name for spec in self.agents)


@dataclass
class ResourceResult:
    """A finished game: its plan and its records (one a round, in order) as dicts and bytes."""

    plan: ResourcePlan
    records: list[dict[str, Any]]
    lines: bytes = b""


SeatFactory = Callable[[ResourcePlan, int], Any]


def _fit_tokens(
    seat: int, n: int, tokens: dict[int, int], left: int, max_targets: int | None
) -> dict[int, int]:
    """Tokens by target in seat order: not on oneself or a seat that is not there, at most
    `max_targets` targets and `left` tokens in all."""
    out: dict[int, int] = {}
    for j in sorted(tokens):
        t = int(tokens[j])
        if j == seat or not 0 <= j < n or t <= 0:
            continue
        if max_targets is not None and len(out) >= max_targets:
            break
        t = min(t, left)
        if t <= 0:
            break
        out[j] = t
        left -= t
    return out


def fit_punishment(
    rules: PGGRules, seat: int, tokens: dict[int, int], held: float
) -> dict[int, int]:
    """The tokens `seat` may spend: no self-punishment, at most `punish_max_targets` targets and
    `punish_max_tokens` tokens, and no more than it holds after the fund (cut in seat order)."""
    if not rules.punishment:
        return {}
    left = min(rules.punish_max_tokens, math.floor(held / rules.punish_cost + 1e-9))
    return _fit_tokens(seat, rules.n_players, tokens, left, rules.punish_max_targets)


def fit_reward(
    rules: PGGRules, seat: int, tokens: dict[int, int], held: float, committed: float
) -> dict[int, int]:
    """The reward tokens `seat` may give: nobody rewards itself, at most `reward_max_targets`
    targets and `reward_max_tokens` tokens, and no more than it holds after the fund less what it
    `committed` to punishment (cut in seat order)."""
    if not rules.reward:
        return {}
    room = math.floor((held - committed) / rules.reward_cost + 1e-9)
    left = min(rules.reward_max_tokens, max(0, room))
    return _fit_tokens(seat, rules.n_players, tokens, left, rules.reward_max_targets)


def _fitted(choice: Choice, fitted: dict[int, int]) -> Choice:
    cut = fitted != {j: t for j, t in choice.tokens.items() if t}
    return Choice(
        choice.value,
        fitted,
        choice.parse_failures,
        choice.fallback,
        choice.clamped or cut,
        choice.calls,
    )


def _clamp(choice: Choice, low: int, high: int) -> Choice:
    if low <= choice.value <= high:
        return choice
    value = min(high, max(low, choice.value))
    return Choice(value, {}, choice.parse_failures, choice.fallback, True, choice.calls)


def _decision(seat: int, stage: str, choice: Choice, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"seat": seat, "stage": stage}
    if stage in ("punishment", "reward"):
        out["tokens"] = [[j, t] for j, t in sorted(choice.tokens.items())]
    else:
        out["value"] = choice.value
    out.update(
        parse_failures=choice.parse_failures,
        fallback=choice.fallback,
        clamped=choice.clamped,
        **extra,
    )
    if choice.calls:
        out["calls"] = list(choice.calls)
    return out


def _said(seat: int, said: Said | None, round_index: int) -> tuple[Message | None, dict | None]:
    if said is None:
        return None, None
    entry: dict[str, Any] = {"from": seat, "text": said.text}
    if said.calls:
        entry["calls"] = list(said.calls)
    return (Message(round_index, seat, said.text) if said.text else None), entry


@dataclass
class ResourceEngine:
    """Plays resource plans for one run; `sink(index, lines)` gets each game's records,
    `on_result` every finished game, `progress(done, total)` counts rounds."""

    run_id: str
    seats: SeatFactory
    sink: Callable[[int, bytes], None] | None
    on_result: Callable[[ResourceResult], None]
    concurrency: int = 16
    progress: ProgressFn | None = None
    broker: CallBroker | None = None
    _done: int = field(default=0, init=False)
    _total: int = field(default=0, init=False)

    def play(self, plans: Sequence[ResourcePlan], done_before: int = 0, total: int = 0) -> None:
        """Play every plan (concurrently, up to `concurrency` games); raises what stops the run."""
        import asyncio

        self._done = done_before
        self._total = total or done_before + sum(p.n_rounds for p in plans)
        self._tick(0)
        if plans:
            asyncio.run(self._play_all(list(plans)))

    def _tick(self, rounds: int) -> None:
        self._done += rounds
        if self.progress is not None:
            self.progress(self._done, self._total)

    async def _play_all(self, plans: list[ResourcePlan]) -> None:
        import asyncio

        gate = asyncio.Semaphore(max(1, self.concurrency))

        async def one(plan: ResourcePlan) -> None:
            async with gate:
                result = await self.play_game(plan)
                if plan.logged and self.sink is not None:
                    self.sink(plan.index, result.lines)
                self.on_result(result)

        tasks = [asyncio.create_task(one(plan)) for plan in plans]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def play_game(self, plan: ResourcePlan) -> ResourceResult:
        """Play one game and encode its records."""
        seats = [self.seats(plan, i) for i in range(plan.n_players)]
        if plan.game == "pgg":
            records = await self._play_pgg(plan, seats)
        else:
            records = await self._play_commons(plan, seats)
        played = len(records)
        self._tick(played)
        if played < plan.n_rounds:  # a commons that collapsed: its unplayed seasons count too
            self._tick(plan.n_rounds - played)
        return ResourceResult(plan, records, encode_game(records))

    def _base(self, plan: ResourcePlan, r: int) -> dict[str, Any]:
        return round_key(
            self.run_id,
            plan.condition,
            plan.replicate,
            plan.seed,
            plan.game,
            r,
            plan.n_rounds,
            plan.names,
        )

    async def _play_pgg(self, plan: ResourcePlan, seats: list[Any]) -> list[dict[str, Any]]:

        rules = plan.rules
        assert isinstance(rules, PGGRules)
        together = _together(plan.has_llm)
        n = plan.n_players
        balances = rules.initial_balances()
        carry = 0.0
        history: list[RoundResult] = []
        messages: list[Message] = []
        records: list[dict[str, Any]] = []
        for r in range(plan.rounds_to_play):
            limits = [rules.contribution_limit(b) for b in balances]

            ctxs = [
                PGGContext(
                    rules,
                    i,
                    plan.names,
                    r,
                    plan.n_rounds,
                    tuple(history),
                    tuple(messages),
                    balances[i],
                    limits[i],
                )
                for i in range(n)
            ]
            said_entries: list[dict[str, Any]] = []
            if plan.talk:
                said = await together(*(s.message(ctxs[i]) for i, s in enumerate(seats)))
                for i, one in enumerate(said):
                    message, entry = _said(i, one, r)
                    if entry is not None:
                        said_entries.append(entry)
                    if message is not None:
                        messages.append(message)
            shown = [replace(c, messages=tuple(messages)) for c in ctxs]  # this round's talk too
            asked = await together(*(s.contribute(shown[i]) for i, s in enumerate(seats)))
            chosen = [_clamp(c, 0, limits[i]) for i, c in enumerate(asked)]
            decisions = [_decision(i, "contribution", c) for i, c in enumerate(chosen)]
            cs = [c.value for c in chosen]
            first = play_round(rules, balances, cs, carry_in=carry)
            result = first
            revealed = [
                replace(shown[i], contributions=first.contributions, post_fund=first.post_fund[i])
                for i in range(n)
            ]
            tokens: dict[int, dict[int, int]] = {}
            gifts: dict[int, dict[int, int]] = {}
            if rules.punishment:
                asked_p = await together(*(s.punish(revealed[i]) for i, s in enumerate(seats)))
                for i, c in enumerate(asked_p):
                    c = _fitted(c, fit_punishment(rules, i, c.tokens, first.post_fund[i]))
                    decisions.append(_decision(i, "punishment", c))
                    tokens[i] = c.tokens
            if rules.reward:  # asked at the same time as punishment, shown the same
                asked_r = await together(*(s.reward(revealed[i]) for i, s in enumerate(seats)))
                for i, c in enumerate(asked_r):
                    committed = sum(tokens.get(i, {}).values()) * rules.punish_cost
                    held = first.post_fund[i]
                    c = _fitted(c, fit_reward(rules, i, c.tokens, held, committed))
                    decisions.append(_decision(i, "reward", c))
                    gifts[i] = c.tokens
            if any(tokens.values()) or any(gifts.values()):
                result = play_round(rules, balances, cs, tokens, carry_in=carry, rewards=gifts)
            history.append(result)
            record = self._base(plan, r) | pgg_record(result)
            record["messages"] = said_entries
            record["decisions"] = decisions
            record["last"] = r == plan.n_rounds - 1
            record[TIMESTAMP] = utc_now()
            records.append(record)
            balances, carry = result.balances, result.carry_out
            assert n == len(balances)
        return records

    async def _play_commons(self, plan: ResourcePlan, seats: list[Any]) -> list[dict[str, Any]]:

        rules = plan.rules
        assert isinstance(rules, CommonsRules)
        together = _together(plan.has_llm)
        n = plan.n_players
        rng = np.random.default_rng(derive_seed(plan.seed, "allocation"))
        arrival = plan.outsider_arrival
        sharing = n - 1 if arrival is not None else n
        stock = rules.start_stock
        history: list[SeasonResult] = []
        messages: list[Message] = []
        records: list[dict[str, Any]] = []
        for t in range(plan.rounds_to_play):
            present = [not (arrival is not None and i == n - 1 and t < arrival) for i in range(n)]

            ctxs = [
                CommonsContext(
                    rules,
                    i,
                    plan.names,
                    t,
                    plan.n_rounds,
                    tuple(history),
                    tuple(messages),
                    stock,
                    plan.universalization,
                    arrival is not None and i == n - 1,
                    present[i],
                    plan.system_prompt,
                    sharing,
                )
                for i in range(n)
            ]

            asked = await together(*(_harvest(seats[i], ctxs[i]) for i in range(n)))
            chosen = [_clamp(c, 0, rules.max_catch) for c in asked]
            decisions = [_decision(i, "harvest", c) for i, c in enumerate(chosen) if present[i]]
            season = step(rules, stock, [c.value for c in chosen], rng)
            history.append(season)
            said_entries: list[dict[str, Any]] = []
            reflections: list[dict[str, Any]] = []
            if plan.talk:
                for i in range(n):  # a discussion in seat order: each hears who spoke before
                    if not present[i]:
                        continue
                    now = replace(ctxs[i], history=tuple(history), messages=tuple(messages))
                    message, entry = _said(i, await seats[i].message(now), t)
                    if entry is not None:
                        said_entries.append(entry)
                    if message is not None:
                        messages.append(message)
            thoughts = await together(
                *(
                    seats[i].reflect(
                        replace(ctxs[i], history=tuple(history), messages=tuple(messages))
                    )
                    for i in range(n)
                    if present[i]
                )
            )
            for i, said in zip([i for i in range(n) if present[i]], thoughts, strict=True):
                _, entry = _said(i, said, t)
                if entry is not None:
                    reflections.append(entry)
            record = self._base(plan, t) | commons_record(season, present)
            record["messages"] = said_entries
            record["reflections"] = reflections
            record["decisions"] = decisions
            record["last"] = season.collapsed or t == plan.n_rounds - 1
            record[TIMESTAMP] = utc_now()
            records.append(record)
            if season.collapsed:
                break
            stock = season.next_stock
        return records


def _together(concurrent: bool) -> Callable[..., Awaitable[list[Any]]]:
    """How a stage asks its seats: concurrently (LLM seats wait on providers), or one after the
    other (policies never wait: no task per seat, the same answers in the same order)."""
    import asyncio

    async def in_turn(*asks: Awaitable[Any]) -> list[Any]:
        return [await ask for ask in asks]

    async def at_once(*asks: Awaitable[Any]) -> list[Any]:
        return list(await asyncio.gather(*asks))

    return at_once if concurrent else in_turn


async def _harvest(seat: Any, ctx: CommonsContext) -> Choice:
    """A present seat's request; an outsider who has not arrived asks nothing (is not asked)."""
    if not ctx.present:
        return Choice(0)
    return await seat.harvest(ctx)


def policy_seat(plan: ResourcePlan, seat: int) -> PolicySeat | HumanSeat:
    """The scripted seat of a plan's seat: a policy agent, or a person's recorded answers (the
    Play tab's human seat)."""
    spec = plan.agents[seat]
    cfg = spec.config
    if isinstance(cfg, HumanAgentConfig):
        return HumanSeat(spec.name, cfg.amounts, cfg.punishments)
    assert isinstance(cfg, PolicyAgentConfig)
    return PolicySeat(spec.name, cfg.policy)


def is_llm_seat(spec: AgentSpec) -> bool:
    """Whether a seat's agent calls a provider."""
    return isinstance(spec.config, LLMAgentConfig)
