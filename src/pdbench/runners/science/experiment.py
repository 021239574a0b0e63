"""Running an experiment: conditions x replicates, each game on its own counter-based stream.

Each game's seed derives from the run seed, the condition's *name* and the replicate, so adding a
condition changes no other condition's results. The games are played by the shared engine through
a `RunSession` (rounds.jsonl in (condition, replicate) order, manifest, call log, resume); the
experiment then writes aggregates.parquet: per game and per condition, every metric of
`pdbench.core.metrics` plus the spending columns.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pdbench.core.config import ExperimentConfig
from pdbench.core.horizon import Horizon
from pdbench.core.metrics import AGGREGATE_COLUMNS, GameOutcome, metric_kinds
from pdbench.core.rng import game_seed
from pdbench.core.stats import IntervalSettings
from pdbench.runners.config.loader import LoadedConfig
from pdbench.runners.engine.engine import GamePlan, ProgressFn
from pdbench.runners.lifecycle.session import RunOptions, RunSession
from pdbench.storage.aggregate import aggregate_games
from pdbench.storage.intervals import Predrawn
from pdbench.storage.run_dir import read_manifest
from pdbench.storage.schema import USAGE_COLUMNS

__all__ = ["ProgressFn", "RunSummary", "plan_games", "run_experiment"]


@dataclass
class RunSummary:
    """What a finished run produced."""

    run_dir: Path
    run_id: str
    n_games: int
    n_rounds: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)
    games_played: int = 0
    games_resumed: int = 0


@dataclass(frozen=True)
class ScheduledGame:
    """One game of the full plan (every shard's): its place, seed, horizon, noise and length."""

    index: int
    condition: str
    replicate: int
    seed: int
    horizon: Horizon
    noise: float
    n_rounds: int


def game_schedule(cfg: ExperimentConfig) -> list[ScheduledGame]:
    """Every (condition, replicate) game of the full plan in deterministic order, with seeds and
    lengths: `plan_games` gives each its agents, and `pdbench merge` checks shards against it."""
    out: list[ScheduledGame] = []
    for cond in cfg.experiment.conditions:
        horizon = (cond.horizon or cfg.horizon).build()
        noise = cfg.game.noise if cond.noise is None else cond.noise
        seeds = [
            game_seed(cfg.run.seed, cond.name, rep) for rep in range(cfg.experiment.replicates)
        ]
        lengths = horizon.lengths(np.array(seeds, dtype=np.uint64)).tolist()
        for rep, (seed, n_rounds) in enumerate(zip(seeds, lengths, strict=True)):
            out.append(ScheduledGame(len(out), cond.name, rep, seed, horizon, noise, n_rounds))
    return out


def shard_owner(index: int, k: int) -> int:
    """The shard (1..k) that plays the game with this index of the full plan."""
    return index % k + 1


def plan_games(loaded: LoadedConfig) -> list[GamePlan]:
    """Every (condition, replicate) game in deterministic order, with seeds and lengths."""
    cfg: ExperimentConfig = loaded.config
    agents = {
        cond.name: (
            loaded.agents[("experiment", "conditions", i, "agent_a")],
            loaded.agents[("experiment", "conditions", i, "agent_b")],
        )
        for i, cond in enumerate(cfg.experiment.conditions)
    }
    channels = {
        cond.name: channel
        for cond in cfg.experiment.conditions
        if (channel := cfg.communication_of(cond)).enabled
    }
    plans = [
        GamePlan(
            g.index,
            g.condition,
            g.replicate,
            agents[g.condition],
            g.seed,
            g.horizon,
            g.noise,
            g.n_rounds,
            communication=channels.get(g.condition),
        )
        for g in game_schedule(cfg)
    ]
    shard = cfg.run.shard_of()
    if shard is not None:  # indexes stay those of the full plan
        i, k = shard
        plans = [p for p in plans if shard_owner(p.index, k) == i]
    return plans


def manifest_conditions(loaded: LoadedConfig, plans: list[GamePlan]) -> list[dict[str, Any]]:
    """The manifest's per-condition entries: agents, horizon, disclosure, noise, games."""
    cfg: ExperimentConfig = loaded.config
    out = []
    for cond in cfg.experiment.conditions:
        games = [p for p in plans if p.condition == cond.name]
        horizon = cond.horizon or cfg.horizon
        disclosure = (
            {
                side: spec.horizon_disclosure(games[0].horizon)
                for side, spec in zip(("agent_a", "agent_b"), games[0].agents, strict=True)
                if spec.is_llm
            }
            if games
            else {}
        )
        out.append(
            {
                "name": cond.name,
                "agent_a": cond.agent_a.display_name(),
                "agent_b": cond.agent_b.display_name(),
                "horizon": horizon.model_dump(mode="json"),
                "horizon_disclosure": disclosure,
                "noise": games[0].noise
                if games
                else (cond.noise if cond.noise is not None else cfg.game.noise),
                **(
                    {
                        "communication": cfg.communication_of(cond).model_dump(mode="json"),
                        "message_labels": {
                            side: list(spec.message_labels)
                            for side, spec in zip(
                                ("agent_a", "agent_b"), games[0].agents, strict=True
                            )
                        }
                        if games
                        else {},
                    }
                    if cfg.communication_of(cond).enabled
                    else {}
                ),
                **(
                    {"sweep": loaded.sweep_coordinates[cond.name]}
                    if cond.name in loaded.sweep_coordinates
                    else {}
                ),
                "games": [
                    {"replicate": p.replicate, "seed": p.seed, "n_rounds": p.n_rounds}
                    for p in games
                ],
            }
        )
    return out


def run_experiment(loaded: LoadedConfig, options: RunOptions | None = None) -> RunSummary:
    """Run (or resume) every condition x replicate and write the artifacts."""
    options = options or RunOptions()
    cfg: ExperimentConfig = loaded.config
    plans = plan_games(loaded)
    intervals = IntervalSettings(seed=cfg.run.seed)
    conditions = manifest_conditions(loaded, plans)
    extra = {
        "replicates": cfg.experiment.replicates,
        "collapse": {"k": cfg.metrics.collapse.k, "threshold": cfg.metrics.collapse.threshold},
        "conditions": conditions,
        "totals": {"games": len(plans), "rounds": sum(p.n_rounds for p in plans)},
        "intervals": intervals.describe(metric_kinds(AGGREGATE_COLUMNS + USAGE_COLUMNS)),
        **({"published": loaded.published} if loaded.published is not None else {}),
    }
    rows: list[dict[str, Any]] = []
    # The intervals' resampling weights are drawn while the games play (the same numbers).
    predrawn = Predrawn(intervals, Counter(p.condition for p in plans))

    def finish(outcomes: dict[int, GameOutcome], run_dir: Path) -> dict[str, Any]:
        manifest = read_manifest(run_dir, "experiment")  # as this session wrote it
        by_condition: dict[str, list[GameOutcome]] = {}
        for plan in plans:
            by_condition.setdefault(plan.condition, []).append(outcomes[plan.index])
        rows.extend(aggregate_games(run_dir, manifest, by_condition.items(), predrawn))
        return {}

    result = RunSession(loaded, plans, options, extra).run(finish)
    return RunSummary(
        result.run_dir,
        cfg.run.run_id,
        len(plans),
        sum(p.n_rounds for p in plans),
        rows,
        result.manifest,
        result.games_played,
        result.games_kept,
    )
