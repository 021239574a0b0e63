"""Playing games round by round: plans (seeds, horizons, lengths) and the per-round engine.

Both agents of a round are asked at once (LLM calls overlap); noise flips a chosen move with the
game's counter-based stream; each game's records are serialized when it ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from pdbench.agents.base import Decision
from pdbench.agents.llm import LLMAgent
from pdbench.agents.policy import PolicyAgent
from pdbench.core.config import ConditionConfig, LLMAgentConfig
from pdbench.core.horizon import Horizon
from pdbench.core.metrics import GameOutcome
from pdbench.core.rng import Purpose, agent_seed, counter_uniform, game_seed
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action, Observation
from pdbench.runners.registry import AGENT_KEYS, LoadedExperiment

ProgressFn = Callable[[int, int], None]


def utc_now() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.now(UTC).isoformat()


@dataclass(frozen=True, slots=True)
class GamePlan:
    """One game to play: which condition and replicate, its seed, horizon, noise and length."""

    index: int
    condition: ConditionConfig
    replicate: int
    seed: int
    horizon: Horizon
    noise: float
    n_rounds: int


@dataclass(slots=True)
class GameResult:
    """A finished game: its rounds.jsonl lines and what the metrics need."""

    plan: GamePlan
    blob: bytes
    outcome: GameOutcome


@dataclass
class RunSummary:
    """What a finished run produced."""

    run_dir: Path
    run_id: str
    n_games: int
    n_rounds: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)


def plan_games(loaded: LoadedExperiment, replicates: int | None = None) -> list[GamePlan]:
    """Every (condition, replicate) game in deterministic order, with seeds and lengths."""
    cfg = loaded.config
    n_rep = replicates if replicates is not None else cfg.experiment.replicates
    plans: list[GamePlan] = []
    for cond in cfg.experiment.conditions:
        horizon = (cond.horizon or cfg.horizon).build()
        noise = cfg.game.noise if cond.noise is None else cond.noise
        for rep in range(n_rep):
            seed = game_seed(cfg.run.seed, cond.name, rep)
            plans.append(
                GamePlan(len(plans), cond, rep, seed, horizon, noise, horizon.length(seed))
            )
    return plans


def expected_llm_calls(plans: list[GamePlan]) -> tuple[int, int]:
    """(minimum, maximum) provider calls: one per LLM agent per round, up to 1 + max_retries each."""
    low = high = 0
    for plan in plans:
        for key in AGENT_KEYS:
            agent = getattr(plan.condition, key)
            if isinstance(agent, LLMAgentConfig):
                low += plan.n_rounds
                high += plan.n_rounds * (1 + agent.max_retries)
    return low, high


def _disclosure(agent_cfg: Any, plan: GamePlan) -> tuple[int | None, float | None]:
    """(total_rounds, stop_prob) told to an agent."""
    mode = getattr(agent_cfg, "horizon_disclosure", None)
    if mode is None:
        mode = "exact" if plan.horizon.type == "fixed" else "stop_prob"
    if mode == "exact":
        return plan.n_rounds, None
    if mode == "stop_prob" and plan.horizon.type == "geometric":
        return None, plan.horizon.stop_prob  # type: ignore[union-attr]
    return None, None


async def _decide(agent: PolicyAgent | LLMAgent, obs: Observation) -> Decision:
    if isinstance(agent, LLMAgent):
        return await agent.adecide(obs)
    return agent.decide(obs)


def _maybe_flip(action: Action, seed: int, round_index: int, noise: float) -> Action:
    if noise > 0.0 and counter_uniform(seed, round_index, Purpose.NOISE) < noise:
        return action.flipped
    return action


async def play_game(
    plan: GamePlan,
    agents: tuple[PolicyAgent | LLMAgent, PolicyAgent | LLMAgent],
    loaded: LoadedExperiment,
    on_round: Callable[[], None] | None = None,
) -> GameResult:
    """Play one game round by round and serialize its records."""
    cfg = loaded.config
    matrix = cfg.game.matrix()
    cond = plan.condition
    seeds = (agent_seed(plan.seed, 0), agent_seed(plan.seed, 1))
    agent_cfgs = (cond.agent_a, cond.agent_b)
    for agent, seed in zip(agents, seeds, strict=True):
        agent.reset(seed)
    views = []
    for agent_cfg in agent_cfgs:
        total, stop = _disclosure(agent_cfg, plan)
        include = agent_cfg.include_totals if isinstance(agent_cfg, LLMAgentConfig) else True
        views.append((agent_cfg.history_window, include, total, stop))
    names = (agents[0].name, agents[1].name)
    horizon = plan.horizon
    base = {
        "run_id": cfg.run.run_id,
        "condition": cond.name,
        "replicate": plan.replicate,
        "seed": plan.seed,
        "agent_a_name": names[0],
        "agent_b_name": names[1],
        "horizon_type": horizon.type,
        "fixed_n": getattr(horizon, "n_rounds", None),
        "stop_prob": getattr(horizon, "stop_prob", None),
    }
    transcript = Transcript(matrix)
    lines: list[bytes] = []
    failures = [0, 0]
    for r in range(plan.n_rounds):
        obs = [
            transcript.observation(
                i,
                history_window=v[0],
                include_totals=v[1],
                horizon_type=horizon.type,
                total_rounds=v[2],
                stop_prob=v[3],
            )
            for i, v in enumerate(views)
        ]
        dec_a, dec_b = await asyncio.gather(_decide(agents[0], obs[0]), _decide(agents[1], obs[1]))
        played_a = _maybe_flip(dec_a.action, seeds[0], r, plan.noise)
        played_b = _maybe_flip(dec_b.action, seeds[1], r, plan.noise)
        pay_a, pay_b = transcript.record(played_a, played_b)
        failures[0] += dec_a.parse_failure
        failures[1] += dec_b.parse_failure
        record = dict(base)
        record.update(
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
            timestamp_utc=utc_now(),
        )
        _add_llm_fields(record, (dec_a, dec_b), cfg.run.store_prompts, cfg.run.store_raw_responses)
        lines.append(orjson.dumps(record))
        if on_round is not None:
            on_round()
    outcome = GameOutcome(
        condition=cond.name,
        replicate=plan.replicate,
        agent_a_name=names[0],
        agent_b_name=names[1],
        a_coop=np.array([a is Action.C for a in transcript.actions_a], dtype=bool),
        b_coop=np.array([b is Action.C for b in transcript.actions_b], dtype=bool),
        a_payoffs=np.array(transcript.payoffs_a, dtype=np.float64),
        b_payoffs=np.array(transcript.payoffs_b, dtype=np.float64),
        a_parse_failures=failures[0],
        b_parse_failures=failures[1],
    )
    return GameResult(plan, b"\n".join(lines) + b"\n", outcome)


def _add_llm_fields(
    record: dict[str, Any], decisions: tuple[Decision, Decision], prompts: bool, raw: bool
) -> None:
    """Prompts (text, or hashes when store_prompts is off) and every attempt of LLM agents."""
    prompt_field: dict[str, Any] = {}
    raw_field: dict[str, Any] = {}
    for key, dec in zip(AGENT_KEYS, decisions, strict=True):
        if not dec.attempts:
            continue
        if prompts:
            prompt_field[key] = {"system": dec.system_prompt, "round": dec.round_prompt}
        attempts = [a.as_record() for a in dec.attempts]
        if not raw:
            for a in attempts:
                a["raw"] = None
        raw_field[key] = attempts
    if prompt_field:
        record["prompts"] = prompt_field
    if raw_field:
        record["raw_responses"] = raw_field
