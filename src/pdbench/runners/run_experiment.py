"""Running an experiment: conditions x replicates, each game on its own counter-based stream.

Games run as asyncio tasks (LLM calls overlap; both agents of a round are asked at once), and
their rounds are appended to rounds.jsonl a whole game at a time in the deterministic order
(condition, replicate), whatever order they finish in. The manifest is written at the start and
rewritten atomically at the end (or when the run fails or is interrupted).
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson

import pdbench
from pdbench.agents.base import Decision
from pdbench.agents.llm import LLMAgent, ParseFailureAbort
from pdbench.agents.policy import PolicyAgent
from pdbench.core.config import ConditionConfig, LLMAgentConfig
from pdbench.core.horizon import Horizon
from pdbench.core.metrics import GameOutcome, aggregate_rows
from pdbench.core.rng import Purpose, agent_seed, counter_uniform, game_seed
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action, Observation
from pdbench.errors import RunError
from pdbench.runners.registry import AGENT_KEYS, LoadedExperiment, build_agent
from pdbench.storage.aggregate import write_aggregates
from pdbench.storage.files import JsonlAppender, environment_info, write_json_atomic
from pdbench.storage.schema import AGGREGATES_FILE, ARTIFACTS, MANIFEST_FILE, ROUNDS_FILE

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


def prepare_output_dir(path: Path, overwrite: bool) -> None:
    """Create the output dir; refuse a non-empty one unless `overwrite` (then clear our artifacts)."""
    if path.exists() and not path.is_dir():
        raise RunError(f"{path}: output_dir exists and is not a directory")
    if path.is_dir() and any(path.iterdir()):
        if not overwrite:
            raise RunError(
                f"{path}: output directory is not empty; pass --overwrite or change run.output_dir"
            )
        for name in ARTIFACTS:
            target = path / name
            if target.is_file():
                target.unlink()
        for leftover in path.glob(".*.tmp"):
            leftover.unlink()
        cache = path / "cache"
        if cache.is_dir():
            shutil.rmtree(cache)
    path.mkdir(parents=True, exist_ok=True)


def _manifest(
    loaded: LoadedExperiment, plans: list[GamePlan], replicates: int, started: str
) -> dict[str, Any]:
    cfg = loaded.config
    conditions = []
    for cond in cfg.experiment.conditions:
        games = [p for p in plans if p.condition.name == cond.name]
        conditions.append(
            {
                "name": cond.name,
                "agent_a": cond.agent_a.display_name(),
                "agent_b": cond.agent_b.display_name(),
                "horizon": (cond.horizon or cfg.horizon).model_dump(mode="json"),
                "noise": games[0].noise if games else cfg.game.noise,
                "games": [
                    {"replicate": p.replicate, "seed": p.seed, "n_rounds": p.n_rounds}
                    for p in games
                ],
            }
        )
    return {
        "run_id": cfg.run.run_id,
        "seed": cfg.run.seed,
        "status": "running",
        "started_at_utc": started,
        "finished_at_utc": None,
        "pdbench_version": pdbench.__version__,
        "config_path": str(loaded.path),
        "config_sha256": loaded.config_sha256,
        "config": loaded.snapshot,
        "prompt_files": loaded.prompt_files,
        "replicates": replicates,
        "collapse": {"k": cfg.metrics.collapse.k, "threshold": cfg.metrics.collapse.threshold},
        "conditions": conditions,
        "totals": {"games": len(plans), "rounds": sum(p.n_rounds for p in plans)},
        "warnings": loaded.warnings,
        "environment": environment_info(loaded.root),
        "error": None,
    }


class _OrderedWriter:
    """Writes finished games to rounds.jsonl in plan order; `flush_all` also writes stragglers."""

    def __init__(self, path: Path) -> None:
        self.appender = JsonlAppender(path)
        self.pending: dict[int, GameResult] = {}
        self.next_index = 0
        self.written: list[GameResult] = []

    def add(self, result: GameResult) -> None:
        self.pending[result.plan.index] = result
        while self.next_index in self.pending:
            done = self.pending.pop(self.next_index)
            self.appender.write_bytes(done.blob)
            self.written.append(done)
            self.next_index += 1

    def flush_all(self) -> None:
        for index in sorted(self.pending):
            done = self.pending.pop(index)
            self.appender.write_bytes(done.blob)
            self.written.append(done)
        self.appender.close()


async def _play_all(
    loaded: LoadedExperiment,
    plans: list[GamePlan],
    writer: _OrderedWriter,
    concurrency: int,
    progress: ProgressFn | None,
) -> None:
    total = sum(p.n_rounds for p in plans)
    done = 0
    providers: dict[str, Any] = {}
    gate = asyncio.Semaphore(max(1, concurrency))

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    async def one(plan: GamePlan) -> None:
        async with gate:
            agents = (
                build_agent(loaded, plan.condition.name, "agent_a", providers),
                build_agent(loaded, plan.condition.name, "agent_b", providers),
            )
            writer.add(await play_game(plan, agents, loaded, tick))

    tasks = [asyncio.create_task(one(plan)) for plan in plans]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def run_experiment(
    loaded: LoadedExperiment,
    *,
    replicates: int | None = None,
    overwrite: bool = False,
    progress: ProgressFn | None = None,
    concurrency: int = 16,
    output_dir: Path | None = None,
) -> RunSummary:
    """Run every condition x replicate and write the three artifacts; see the module docstring."""
    cfg = loaded.config
    run_dir = Path(output_dir or cfg.run.output_dir)
    plans = plan_games(loaded, replicates)
    n_rep = replicates if replicates is not None else cfg.experiment.replicates
    prepare_output_dir(run_dir, overwrite)
    manifest = _manifest(loaded, plans, n_rep, utc_now())
    write_json_atomic(run_dir / MANIFEST_FILE, manifest)
    writer = _OrderedWriter(run_dir / ROUNDS_FILE)
    status, error = "completed", None
    try:
        asyncio.run(_play_all(loaded, plans, writer, concurrency, progress))
    except ParseFailureAbort as exc:
        status, error = "failed", str(exc)
    except KeyboardInterrupt:
        status, error = "interrupted", "interrupted by the user"
        raise
    except BaseException as exc:
        status, error = "failed", f"{type(exc).__name__}: {exc}"
        raise
    finally:
        writer.flush_all()
        manifest.update(status=status, error=error, finished_at_utc=utc_now())
        manifest["totals"]["rounds_written"] = sum(r.plan.n_rounds for r in writer.written)
        write_json_atomic(run_dir / MANIFEST_FILE, manifest)
    if status != "completed":
        raise RunError(
            f"run stopped: {error} (rounds of finished games are in {run_dir / ROUNDS_FILE})"
        )
    order = [c.name for c in cfg.experiment.conditions]
    rows = aggregate_rows(
        cfg.run.run_id, [r.outcome for r in writer.written], order, cfg.metrics.collapse_params()
    )
    write_aggregates(rows, run_dir / AGGREGATES_FILE)
    return RunSummary(
        run_dir, cfg.run.run_id, len(plans), sum(p.n_rounds for p in plans), rows, manifest
    )
