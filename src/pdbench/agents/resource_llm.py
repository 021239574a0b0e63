"""The LLM seat of the resource games (issue 31): the games' own prompts, a provider, careful reading.

A public goods seat (PGG-Bench's design) is asked with PGG-Bench's templates
(`pdbench.agents.pgg_prompts`, seats "P1".."Pn"): a public message (a reply `<stop>` is silence),
a contribution (`<contribution>N</contribution>`, read by `core.parse_integer.
read_pgg_contribution`) and, with punishment on, a punishment (`<punish>NO</punish>` or
`<punish>P3=2</punish>`, `read_pgg_punishment`: the dollars spent, turned into tokens at the
rules' `punish_cost`) and, with the reward stage on (ours: PGG-Bench has none), a reward
(`resource_texts.pgg_reward_prompt`, `<reward>NO</reward>` or `<reward>P2=1, P3=1</reward>`,
`read_pgg_reward`: tokens; the fallback is no reward). The history text is ours
(`pdbench.agents.resource_texts`).

A commons seat (GovSim's fishery, `pdbench.agents.commons_prompts`, names John, Kate, Jack, Emma,
Luke) is asked GovSim's harvest prompt ("Answer: N tons", `read_govsim_integer`), with GovSim's
universalization memory when the condition sets it and the outsider's goals (OUTSIDER_GOALS) for
the outsider seat; its earlier memories are what it heard in the discussions and its own
reflections, dated by month. Its discussion message and its end-of-month reflection are asked
with prompts of ours (`resource_texts.commons_message_prompt`, `commons_reflection_prompt`).

Prompts: GovSim's harvest prompt opens with GovSim's system text, so every prompt here is sent as
the user prompt, and the request's system prompt is the agent's persona text alone (empty when
the agent has no persona, the authors' setting): no system text is sent twice.

Reading, as `pdbench.agents.llm.ProviderAgent.ask_move` reads moves: a reply that cannot be read
(the reader reports a problem) is a parse failure; the conversation goes on with the reply as the
assistant's turn and a correction (the agent's `reprompt`, or ours) as the user's, up to
`max_retries` times. When no reply is readable the fallback is used and stated (`fallback`):
contribution 0, no punishment, harvest 0 (GovSim's own default reading); `on_parse_failure:
error` stops the run instead (`cooperate` and `defect` have no meaning here). A value out of
range (a contribution above the limit, a harvest above max_catch, a punishment above the most
one may spend) is clamped and counted (`clamped`). Messages and reflections are free text, cut
to the run's `max_chars`. Each call's seed is derived from the game seed, the seat, the round,
the stage and the attempt. Each call is recorded (stage, attempt, seed, error, the prompt when
the run stores prompts, the reply when it stores raw replies).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from datetime import date
from typing import Any

from pdbench.agents.commons_prompts import GOVSIM_NAMES, harvest_prompt
from pdbench.agents.pgg_prompts import contribution_prompt, public_message_prompt, punishment_prompt
from pdbench.agents.providers.base import CallTag, CompletionRequest, Provider
from pdbench.agents.resource_policy import Choice, CommonsContext, PGGContext, Said
from pdbench.agents.resource_texts import (
    commons_message_prompt,
    commons_reflection_prompt,
    goals_of,
    heard_memories,
    month_date,
    pgg_history_text,
    pgg_reward_prompt,
    with_reward_rules,
)
from pdbench.core.config import LLMAgentConfig
from pdbench.core.parse_integer import (
    IntegerReading,
    clamp_reading,
    read_govsim_integer,
    read_pgg_contribution,
    read_pgg_punishment,
    read_pgg_reward,
)
from pdbench.core.rng import derive_seed
from pdbench.core.talk import clip_text

# What the correction asks for, per stage (ours; `{limit}` is filled in).
EXPECTED = {
    "contribution": "Write an integer between 0 and {limit} inside `<contribution></contribution>`,"
    " e.g. `<contribution>10</contribution>`.",
    "punishment": "Write `<punish>NO</punish>`, or one line like `<punish>P2=5</punish>` naming"
    " another player and the dollars you spend (at most {limit}).",
    "reward": "Write `<reward>NO</reward>`, or `<reward>P2=1</reward>` naming other players and"
    " the reward tokens you give each (at most {limit} in all), separated by commas.",
    "harvest": 'Put the final answer after "Answer:", example Answer: N tons.',
}
DEFAULT_REPROMPT = "Your reply could not be read ({error}). {expected}"

Reader = Callable[[str], tuple[Any, str | None]]


def pgg_names(n: int) -> tuple[str, ...]:
    """PGG-Bench's seat names: P1..Pn."""
    return tuple(f"P{i + 1}" for i in range(n))


def is_silence(reply: str) -> bool:
    """A public message reply that means silence: `<stop>` (quoted or not), or nothing."""
    return reply.strip().strip("`").strip().lower() in ("<stop>", "")


class ResourceLLMSeat:
    """An LLM seat of a public goods game or a commons (module docstring)."""

    def __init__(
        self,
        config: LLMAgentConfig,
        client: Provider,
        *,
        game: str,
        seat: int,
        game_seed: int,
        n_players: int,
        persona: str = "",
        talk: bool = False,
        max_chars: int = 400,
        store_prompts: bool = False,
        store_raw: bool = False,
    ) -> None:
        self.config = config
        self.client = client
        self.game = game
        self.seat = seat
        self.game_seed = game_seed
        self.talk = talk
        self.max_chars = max_chars
        self.system = persona.strip() + "\n" if persona.strip() else ""
        self.store_prompts = store_prompts
        self.store_raw = store_raw
        if game == "pgg":
            self.names = pgg_names(n_players)
        else:
            self.names = GOVSIM_NAMES[:n_players]
        self._reflections: list[tuple[date, str]] = []
        self._joined: int | None = None  # the first season a commons seat was present

    def shown(self, ctx: Any) -> Any:
        """The context with the names the game's prompts use (P1..Pn, GovSim's) in place of the
        seats' display names."""
        return replace(ctx, names=self.names)

    # -----------------------------------------------------------------------------------------
    # Calls

    def call_seed(self, round_index: int, stage: str, attempt: int) -> int:
        """The seed sent with one call: a pure function of game seed, seat, round, stage, attempt."""
        return derive_seed(self.game_seed, "resource-call", self.seat, round_index, stage, attempt)

    def _record(
        self, stage: str, attempt: int, seed: int, prompt: str, turns: tuple, reply: str
    ) -> dict[str, Any]:
        text = "\x1e".join([self.system, prompt, *(part for turn in turns for part in turn)])
        call: dict[str, Any] = {
            "stage": stage,
            "attempt": attempt,
            "seed": seed,
            "prompt_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "error": None,
        }
        if self.store_prompts:
            if self.system:
                call["system"] = self.system
            call["prompt"] = prompt
        if self.store_raw:
            call["reply"] = reply
        return call

    async def _call(
        self, stage: str, round_index: int, attempt: int, prompt: str, turns: tuple = ()
    ) -> tuple[str, bool, int]:
        cfg = self.config
        seed = self.call_seed(round_index, stage, attempt)
        request = CompletionRequest(
            system=self.system,
            prompt=prompt,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            seed=seed,
            tag=CallTag(round_index, attempt),
            turns=turns,
            output_format="token",  # free text: never a server-side C/D constraint
            mode=cfg.prompt_mode,
            purpose=stage,
            max_chars=self.max_chars,
        )
        completion = await self.client.complete(request)
        return completion.text, completion.truncated, seed

    async def ask(
        self, stage: str, round_index: int, prompt: str, read: Reader, limit: int
    ) -> tuple[Any, int, list[dict[str, Any]]]:
        """Ask until a reply is read: (value or None when none was, parse failures, calls)."""
        cfg = self.config
        turns: tuple[tuple[str, str], ...] = ()
        calls: list[dict[str, Any]] = []
        failures = 0
        for attempt in range(cfg.max_retries + 1):
            reply, truncated, seed = await self._call(stage, round_index, attempt, prompt, turns)
            value, error = read(reply)
            call = self._record(stage, attempt, seed, prompt, turns, reply)
            if error is not None and truncated:
                error += f"; cut off at max_tokens={cfg.max_tokens}"
            call["error"] = error
            calls.append(call)
            if error is None:
                return value, failures, calls
            failures += 1
            expected = EXPECTED[stage].format(limit=limit)
            correction = (cfg.reprompt or DEFAULT_REPROMPT).format(error=error, expected=expected)
            turns = (*turns, (reply, correction))
        if cfg.on_parse_failure == "error":
            from pdbench.agents.llm import ParseFailureAbort

            raise ParseFailureAbort(
                f"{cfg.display_name()}: no readable {stage} in round {round_index + 1} after "
                f"{len(calls)} attempts (on_parse_failure: error)"
            )
        return None, failures, calls

    async def _integer(
        self, stage: str, round_index: int, prompt: str, read: Reader, high: int, what: str
    ) -> Choice:
        value, failures, calls = await self.ask(stage, round_index, prompt, read, high)
        if value is None:
            return Choice(0, parse_failures=failures, fallback=True, calls=tuple(calls))
        reading = clamp_reading(IntegerReading(int(value), None), 0, high, what)
        if reading.problem is not None:
            calls[-1]["clamped"] = reading.problem
        assert reading.value is not None
        return Choice(
            reading.value,
            parse_failures=failures,
            clamped=reading.problem is not None,
            calls=tuple(calls),
        )

    async def _free_text(self, stage: str, round_index: int, prompt: str) -> tuple[str, dict]:
        reply, truncated, seed = await self._call(stage, round_index, 0, prompt)
        call = self._record(stage, 0, seed, prompt, (), reply)
        if truncated:
            call["truncated"] = True
        return reply, call

    # -----------------------------------------------------------------------------------------
    # Public goods

    def _pgg_args(self, ctx: PGGContext, amount: int, this_round: bool = False) -> tuple:
        ctx = self.shown(ctx)
        return (
            ctx.rules,
            self.names[ctx.seat],
            self.names,
            ctx.round_index + 1,
            ctx.n_rounds,
            amount,
            pgg_history_text(ctx, this_round=this_round),
        )

    def contribution_prompt(self, ctx: PGGContext) -> str:
        """PGG-Bench's contribution prompt for this context."""
        prompt = contribution_prompt(*self._pgg_args(ctx, ctx.limit), messages=self.talk)
        return with_reward_rules(prompt, ctx.rules)

    def punishment_prompt(self, ctx: PGGContext) -> str:
        """PGG-Bench's punishment prompt (the balance after the fund, floored)."""
        assert ctx.post_fund is not None
        amount = int(ctx.post_fund + 1e-9)
        prompt = punishment_prompt(*self._pgg_args(ctx, amount, True), messages=self.talk)
        return with_reward_rules(prompt, ctx.rules)

    def reward_prompt(self, ctx: PGGContext) -> str:
        """Our reward prompt (the balance after the fund, floored)."""
        assert ctx.post_fund is not None
        amount = int(ctx.post_fund + 1e-9)
        return pgg_reward_prompt(*self._pgg_args(ctx, amount, True), messages=self.talk)

    def public_message_prompt(self, ctx: PGGContext) -> str:
        """PGG-Bench's public message prompt (the balance floored)."""
        prompt = public_message_prompt(*self._pgg_args(ctx, int(ctx.balance + 1e-9)))
        return with_reward_rules(prompt, ctx.rules)

    async def contribute(self, ctx: PGGContext) -> Choice:
        """The contribution read from the reply (0..limit)."""
        ctx = self.shown(ctx)

        def read(reply: str) -> tuple[int | None, str | None]:
            return tuple(read_pgg_contribution(reply))  # type: ignore[return-value]

        prompt = self.contribution_prompt(ctx)
        return await self._integer(
            "contribution", ctx.round_index, prompt, read, ctx.limit, "contribution"
        )

    async def punish(self, ctx: PGGContext) -> Choice:
        """The punishment read from the reply: tokens on one seat, or none."""
        ctx = self.shown(ctx)
        rules = ctx.rules
        most = rules.punish_max_tokens  # the template's "maximum you can personally spend"

        def read(reply: str) -> tuple[tuple[str | None, int] | None, str | None]:
            got = read_pgg_punishment(reply, self.names)
            if got.problem is not None:
                return None, got.problem
            return (got.target, int(got.amount or 0)), None

        prompt = self.punishment_prompt(ctx)
        value, failures, calls = await self.ask("punishment", ctx.round_index, prompt, read, most)
        if value is None:
            return Choice(parse_failures=failures, fallback=True, calls=tuple(calls))
        target, amount = value
        if target is None or amount == 0:
            return Choice(parse_failures=failures, calls=tuple(calls))
        reading = clamp_reading(IntegerReading(amount, None), 0, most, "punishment spend")
        if reading.problem is not None:
            calls[-1]["clamped"] = reading.problem
        assert reading.value is not None
        tokens = int(reading.value / rules.punish_cost + 1e-9)
        chosen = {self.names.index(target): tokens} if tokens else {}
        return Choice(
            tokens=chosen,
            parse_failures=failures,
            clamped=reading.problem is not None,
            calls=tuple(calls),
        )

    async def reward(self, ctx: PGGContext) -> Choice:
        """The reward read from the reply: tokens by seat (none when unreadable: the fallback).
        Tokens beyond the most one may give are cut by the engine (`fit_reward`, counted)."""
        ctx = self.shown(ctx)
        most = ctx.rules.reward_max_tokens

        def read(reply: str) -> tuple[dict[str, int] | None, str | None]:
            got = read_pgg_reward(reply, self.names)
            return got.tokens, got.problem

        prompt = self.reward_prompt(ctx)
        value, failures, calls = await self.ask("reward", ctx.round_index, prompt, read, most)
        if value is None:
            return Choice(parse_failures=failures, fallback=True, calls=tuple(calls))
        chosen = {self.names.index(seat): t for seat, t in value.items() if t}
        return Choice(tokens=chosen, parse_failures=failures, calls=tuple(calls))

    async def message(self, ctx: PGGContext | CommonsContext) -> Said | None:
        """A public message (PGG-Bench's prompt; `<stop>` is silence) or a discussion message
        (commons, ours)."""
        ctx = self.shown(ctx)
        if isinstance(ctx, PGGContext):
            reply, call = await self._free_text(
                "message", ctx.round_index, self.public_message_prompt(ctx)
            )
            text = "" if is_silence(reply) else clip_text(reply, self.max_chars)
            return Said(text, (call,))
        prompt = self.commons_message_prompt(ctx)
        reply, call = await self._free_text("message", ctx.season, prompt)
        return Said(clip_text(reply, self.max_chars), (call,))

    # -----------------------------------------------------------------------------------------
    # Commons

    def _earlier(self, ctx: CommonsContext, through: int) -> list[tuple[date, str]]:
        """Memories before the month's own: what it heard in seasons before `through`, and its
        reflections."""
        joined = ctx.season if self._joined is None else self._joined
        return [*heard_memories(ctx, joined, through), *self._reflections]

    def harvest_prompt(self, ctx: CommonsContext) -> str:
        """GovSim's harvest prompt for this context."""
        ctx = self.shown(ctx)
        if self._joined is None:
            self._joined = ctx.season
        return harvest_prompt(
            ctx.rules,
            self.names[ctx.seat],
            ctx.stock,
            month_date(ctx.season),
            universalization=ctx.universalization,
            earlier_memories=self._earlier(ctx, ctx.season),
            version=ctx.system_prompt,
            goals=goals_of(ctx),
            sharing=ctx.sharing or None,
        )

    def commons_message_prompt(self, ctx: CommonsContext) -> str:
        """Our discussion prompt after the month's harvest."""
        ctx = self.shown(ctx)
        return commons_message_prompt(ctx, self._earlier(ctx, ctx.season), self.max_chars)

    def reflection_prompt(self, ctx: CommonsContext) -> str:
        """Our reflection prompt at the end of the month (this month's discussion included)."""
        ctx = self.shown(ctx)
        return commons_reflection_prompt(ctx, self._earlier(ctx, ctx.season + 1))

    async def harvest(self, ctx: CommonsContext) -> Choice:
        """The harvest read from the reply (0..max_catch)."""
        ctx = self.shown(ctx)

        def read(reply: str) -> tuple[int | None, str | None]:
            return tuple(read_govsim_integer(reply))  # type: ignore[return-value]

        prompt = self.harvest_prompt(ctx)
        high = ctx.rules.max_catch
        return await self._integer("harvest", ctx.season, prompt, read, high, "harvest")

    async def reflect(self, ctx: CommonsContext) -> Said | None:
        """A short reflection (ours), kept as a memory dated by the month."""
        ctx = self.shown(ctx)
        reply, call = await self._free_text("reflection", ctx.season, self.reflection_prompt(ctx))
        text = clip_text(reply, self.max_chars)
        if text:
            self._reflections.append((month_date(ctx.season), text))
        return Said(text, (call,))


def make_llm_seat(
    spec: Any,
    plan: Any,
    seat: int,
    client: Provider,
    *,
    store_prompts: bool = False,
    store_raw: bool = False,
) -> ResourceLLMSeat:
    """The LLM seat `seat` of a resource plan (`ResourcePlan`), calling `client`."""
    cfg = spec.config
    assert isinstance(cfg, LLMAgentConfig)
    persona = spec.templates.persona if spec.templates is not None else ""
    return ResourceLLMSeat(
        cfg,
        client,
        game=plan.game,
        seat=seat,
        game_seed=plan.seed,
        n_players=plan.n_players,
        persona=persona,
        talk=plan.talk,
        max_chars=plan.max_chars,
        store_prompts=store_prompts,
        store_raw=store_raw,
    )
