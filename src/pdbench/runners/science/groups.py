"""Running a groups config: conditions (groups of N seats) x replicates, each game on its own
counter-based stream.

Each game's seed derives from the run seed, the condition's name and the replicate exactly as an
experiment's does (`game_seed`), so a group of two seats plays the pairwise game of the same
condition name move for move and writes the same rounds.jsonl. The games are played by the group
engine through a `GroupRunSession` (rounds.jsonl in plan order, manifest, call log, resume); the
run then writes aggregates.parquet (per condition) and seats.parquet (per condition and seat),
every metric with its interval, the game as the unit (`pdbench.storage.group_aggregate`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pdbench.core.config import PolicyAgentConfig
from pdbench.core.exact import condition_exactness
from pdbench.core.group_config import GroupsConfig
from pdbench.core.rng import derive_seed, game_seed
from pdbench.runners.config.loader import LoadedConfig
from pdbench.runners.engine.group_engine import GroupPlan
from pdbench.runners.lifecycle.group_session import GroupRunSession
from pdbench.runners.lifecycle.session import RunOptions
from pdbench.runners.science.experiment import RunSummary, shard_owner
from pdbench.storage.run_dir import read_manifest

__all__ = ["RunSummary", "plan_groups", "run_groups"]


def member_specs(loaded: LoadedConfig, index: int) -> tuple[Any, ...]:
    """The AgentSpecs of condition `index`'s seats (a fixed group) or pool, in config order."""
    cfg: GroupsConfig = loaded.config
    cond = cfg.groups.conditions[index]
    key = cond.members_key
    return tuple(
        loaded.agents[("groups", "conditions", index, key, j)] for j in range(len(cond.members))
    )


def drawn_group(run_seed: int, condition: str, replicate: int, pool: int, size: int) -> list[int]:
    """The pool members (indexes, in seat order) of one game of a random-matching condition:
    `size` of `pool` without replacement, from a generator keyed by the run seed, the
    condition's name and the replicate (so no other condition or game changes it)."""
    rng = np.random.default_rng(derive_seed(run_seed, "regroup", condition, replicate))
    return [int(i) for i in rng.choice(pool, size=size, replace=False)]


def seat_could_vary(spec: Any) -> str | None:
    """What could make a seat's moves differ from game to game (None: nothing): a group policy
    that draws, or what `AgentSpec.could_vary` says of other agents."""
    cfg = spec.config
    if isinstance(cfg, PolicyAgentConfig):
        from pdbench.agents.group_policy import group_policy_class

        drawn = not group_policy_class(cfg.policy).deterministic
        return f"{spec.name}, a policy that draws at random" if drawn else None
    return spec.could_vary


def plan_groups(loaded: LoadedConfig) -> list[GroupPlan]:
    """Every (condition, replicate) group game in deterministic order, seeds and lengths; of a
    shard i/K (`run.shard`), the games whose index in the full plan is i-1 modulo K (indexes
    stay those of the full plan, as for experiments)."""
    cfg: GroupsConfig = loaded.config
    plans: list[GroupPlan] = []
    for i, cond in enumerate(cfg.groups.conditions):
        horizon = (cond.horizon or cfg.horizon).build()
        noise = cfg.game.noise if cond.noise is None else cond.noise
        channel = cfg.communication_of(cond)
        game = cfg.game_of(cond)
        members = member_specs(loaded, i)
        seeds = [game_seed(cfg.run.seed, cond.name, rep) for rep in range(cfg.groups.replicates)]
        lengths = horizon.lengths(np.array(seeds, dtype=np.uint64)).tolist()
        for rep, (seed, n_rounds) in enumerate(zip(seeds, lengths, strict=True)):
            specs = members
            if cond.matching == "random":
                drawn = drawn_group(cfg.run.seed, cond.name, rep, len(members), cond.n_players)
                specs = tuple(members[j] for j in drawn)
            plans.append(
                GroupPlan(
                    len(plans),
                    cond.name,
                    rep,
                    specs,
                    game,
                    seed,
                    horizon,
                    noise,
                    int(n_rounds),
                    communication=channel if channel.enabled else None,
                )
            )
    shard = cfg.run.shard_of()
    if shard is not None:
        i, k = shard
        plans = [p for p in plans if shard_owner(p.index, k) == i]
    return plans


def manifest_conditions(loaded: LoadedConfig, plans: list[GroupPlan]) -> list[dict[str, Any]]:
    """The manifest's per-condition entries: seats, game, horizon, noise, talk, games."""
    cfg: GroupsConfig = loaded.config
    out = []
    for i, cond in enumerate(cfg.groups.conditions):
        games = [p for p in plans if p.condition == cond.name]
        specs = member_specs(loaded, i)
        game = cfg.game_of(cond)
        horizon = cond.horizon or cfg.horizon
        noise = cond.noise if cond.noise is not None else cfg.game.noise
        varying = [seat_could_vary(s) for s in specs]
        if cond.matching == "random":
            varying.append("its groups, drawn at random from the pool for each game")
        exactness = condition_exactness(varying, horizon.type, noise)
        channel = cfg.communication_of(cond)
        out.append(
            {
                "name": cond.name,
                "n_players": cond.n_players,
                "matching": cond.matching,
                "seats": [s.name for s in specs] if cond.matching == "fixed" else None,
                **({"pool": [s.name for s in specs]} if cond.matching == "random" else {}),
                "game": {
                    "kind": game.kind,
                    "n_players": game.n_players,
                    "pay_c": list(game.pay_c),
                    "pay_d": list(game.pay_d),
                    "params": [list(pair) for pair in game.params],  # in the game's order
                    "label": game.describe(),
                },
                "horizon": horizon.model_dump(mode="json"),
                "noise": noise,
                "replicates": cfg.groups.replicates,
                "talks": channel.enabled,
                "exact": exactness.exact,
                "could_vary": list(exactness.could_vary),
                **(
                    {
                        "communication": channel.model_dump(mode="json"),
                        "message_labels": {s.name: list(s.message_labels) for s in specs},
                    }
                    if channel.enabled
                    else {}
                ),
                "games": [
                    {
                        "replicate": p.replicate,
                        "seed": p.seed,
                        "n_rounds": p.n_rounds,
                        **(
                            {"seats": [s.name for s in p.agents]}
                            if cond.matching == "random"
                            else {}
                        ),
                    }
                    for p in games
                ],
            }
        )
    return out


def run_groups(loaded: LoadedConfig, options: RunOptions | None = None) -> RunSummary:
    """Run (or resume) every group condition x replicate and write the artifacts."""
    from pdbench.core.stats import IntervalSettings
    from pdbench.storage.group_aggregate import write_group_aggregates

    options = options or RunOptions()
    cfg: GroupsConfig = loaded.config
    plans = plan_groups(loaded)
    intervals = IntervalSettings(seed=cfg.run.seed)
    extra = {
        "kind": "groups",
        "replicates": cfg.groups.replicates,
        "collapse": {"k": cfg.metrics.collapse.k, "threshold": cfg.metrics.collapse.threshold},
        "intervals": intervals.describe(),
        "conditions": manifest_conditions(loaded, plans),
        "totals": {"games": len(plans), "rounds": sum(p.n_rounds for p in plans)},
    }
    rows: list[dict[str, Any]] = []

    def finish(outcomes: dict[int, Any], run_dir: Path) -> dict[str, Any]:
        manifest = read_manifest(run_dir, "groups")
        ordered = [outcomes[p.index] for p in plans]
        write_group_aggregates(run_dir, ordered, manifest, intervals, condition_rows=rows)
        return {}

    result = GroupRunSession(loaded, plans, options, extra).run(finish)  # type: ignore[arg-type]
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
