"""Building configs for tests: a mapping written as YAML beside copies of the repository's agent
and prompt files, then loaded through the library's one loader; and playing one game round by
round through the library's engine."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from pdbench.agents.factory import AgentSpec, make_agent
from pdbench.agents.providers.pool import ProviderPool
from pdbench.core.batch import BatchResult
from pdbench.core.config import BudgetConfig
from pdbench.core.horizon import FixedHorizon
from pdbench.core.payoff import PayoffMatrix
from pdbench.runners.config.loader import LoadedConfig, load_config
from pdbench.runners.engine.broker import Budget, CallBroker
from pdbench.runners.engine.engine import Engine, GamePlan, GameResult, MachineTable
from pdbench.storage.record.jsonl import RoundsEncoder

REPO = Path(__file__).resolve().parents[2]
RUN = {"run_id": "test", "seed": 4242, "output_dir": "unused"}


def write_config(
    data: dict[str, Any], directory: Path | None = None, name: str = "config.yaml"
) -> Path:
    """Write `data` as YAML into `directory` (a new temp dir by default) with copies of
    configs/agents and configs/prompts beside it; returns the config path."""
    directory = Path(directory or tempfile.mkdtemp(prefix="pdbench-test-"))
    directory.mkdir(parents=True, exist_ok=True)
    for sub in ("agents", "prompts"):
        if not (directory / sub).exists():
            shutil.copytree(REPO / "configs" / sub, directory / sub)
    path = directory / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def load(data: dict[str, Any], directory: Path | None = None, **overrides: Any) -> LoadedConfig:
    """Write and load a config (any kind); `overrides` are dotted paths with `__` for dots."""
    dotted = {k.replace("__", "."): v for k, v in overrides.items()}
    return load_config(write_config(data, directory), overrides=dotted)


def policy(key: str, **extra: Any) -> dict[str, Any]:
    """A policy agent mapping (`extra`: name, history_window, params)."""
    return {"type": "policy", "policy": key, **extra}


def llm(persona: str = "tit_for_tat", **overrides: Any) -> dict[str, Any]:
    """A ref to the default (mock) LLM agent with overrides."""
    return {"ref": "agents/llm_default.yaml", "overrides": {"persona": persona, **overrides}}


def experiment(
    conditions: list[tuple[str, Any, Any]],
    *,
    horizon: dict[str, Any] | None = None,
    replicates: int = 1,
    noise: float = 0.0,
    run: dict[str, Any] | None = None,
    **game: Any,
) -> dict[str, Any]:
    """An experiment mapping from (name, agent_a, agent_b) triples."""
    return {
        "run": {**RUN, **(run or {})},
        "game": {"noise": noise, **game},
        "horizon": horizon or {"type": "fixed", "n_rounds": 20},
        "experiment": {
            "replicates": replicates,
            "conditions": [{"name": n, "agent_a": a, "agent_b": b} for n, a, b in conditions],
        },
    }


def in_memory_engine(loaded: LoadedConfig | None = None) -> Engine:
    """An engine with no run directory, cache or budget (records are still encoded); without a
    config, for the default payoffs."""
    matrix = loaded.matrix() if loaded is not None else PayoffMatrix()
    return Engine(
        run_id=loaded.config.run.run_id if loaded is not None else "test",
        matrix=matrix,
        broker=CallBroker(None, Budget(BudgetConfig()), None, 8),
        encoder=RoundsEncoder(matrix),
        writer=None,
        on_result=lambda result: None,
    )


def play_vectorized(loaded: LoadedConfig, plans: list[GamePlan]) -> BatchResult:
    """Every plan (all policy games) played in one batch by the vectorized engine, in order."""
    return MachineTable(loaded.matrix()).play(
        [p.agents[0] for p in plans],
        [p.agents[1] for p in plans],
        np.array([p.seed for p in plans], dtype=np.uint64),
        np.array([p.n_rounds for p in plans]),
        np.array([p.noise for p in plans]),
    )


def play_pair(
    spec_a: AgentSpec, spec_b: AgentSpec, seed: int, n: int = 60, noise: float = 0.1
) -> dict[str, list[Any]]:
    """One fixed-length game round by round; played moves (True for C) and payoffs per side."""
    plan = GamePlan(0, "a_vs_b", 0, (spec_a, spec_b), seed, FixedHorizon(n), noise, n, False)
    (result,) = play_round_by_round(None, [plan])
    game = result.outcome
    return {
        "played_a": game.a_coop.tolist(),
        "played_b": game.b_coop.tolist(),
        "payoffs_a": game.a_payoffs.tolist(),
        "payoffs_b": game.b_payoffs.tolist(),
    }


def play_round_by_round(loaded: LoadedConfig | None, plans: list[GamePlan]) -> list[GameResult]:
    """Every plan played by the round-by-round engine (even policy games), in order."""
    engine = in_memory_engine(loaded)

    async def play_all() -> list[GameResult]:
        pool = ProviderPool()
        out = []
        try:
            for plan in plans:
                agents = tuple(
                    make_agent(
                        spec,
                        side=side,
                        matrix=engine.matrix,
                        noise=plan.noise,
                        provider_for=lambda cfg: pool.get(cfg),
                    )
                    for side, spec in enumerate(plan.agents)
                )
                out.append(await engine.play_game(plan, (agents[0], agents[1])))
        finally:
            await pool.aclose()
        return out

    return asyncio.run(play_all())


def execute(path: Path, **kwargs: Any) -> Any:
    """Load a config file and run it as the CLI would: keyword arguments named like the CLI's
    overrides (replicates, repetitions, log_rounds, generations, seed, noise) set config values,
    the rest are RunOptions (output_dir, overwrite, resume, cache_dir, use_cache, concurrency,
    progress). Returns the mode's result (RunSummary, TournamentResult, EvolutionResult)."""
    from pdbench.cli import OVERRIDES
    from pdbench.runners.start import RunOptions, start

    overrides = {OVERRIDES[k]: kwargs.pop(k) for k in list(kwargs) if k in OVERRIDES}
    loaded = load_config(path, overrides={k: v for k, v in overrides.items() if v is not None})
    return start(loaded, RunOptions(**kwargs))
