"""A readable plan of an experiment: what `validate` and `run --dry-run` print."""

from __future__ import annotations

from pdbench.core.config import LLMAgentConfig
from pdbench.runners.registry import LoadedExperiment
from pdbench.runners.run_experiment import expected_llm_calls, plan_games


def describe_plan(loaded: LoadedExperiment, replicates: int | None) -> str:
    """Conditions, agents, horizons, replicates, games, rounds and expected LLM calls."""
    cfg = loaded.config
    plans = plan_games(loaded, replicates)
    n_rep = replicates if replicates is not None else cfg.experiment.replicates
    lines = [
        f"run_id: {cfg.run.run_id}   seed: {cfg.run.seed}   output_dir: {cfg.run.output_dir}",
        f"replicates: {n_rep}   conditions: {len(cfg.experiment.conditions)}",
    ]
    for cond in cfg.experiment.conditions:
        horizon = cond.horizon or cfg.horizon
        if horizon.type == "fixed":
            h = f"fixed {horizon.n_rounds} rounds"
        else:
            cap = f", max {horizon.max_rounds}" if horizon.max_rounds else ""
            h = f"geometric stop_prob={horizon.stop_prob:g}{cap}"
        noise = cfg.game.noise if cond.noise is None else cond.noise
        rounds = sum(p.n_rounds for p in plans if p.condition.name == cond.name)
        kinds = "".join(
            "L" if isinstance(a, LLMAgentConfig) else "P" for a in (cond.agent_a, cond.agent_b)
        )
        lines.append(
            f"  {cond.name}: {cond.agent_a.display_name()} vs {cond.agent_b.display_name()} "
            f"[{kinds}] {h}{f', noise {noise:g}' if noise else ''}; {rounds} rounds over {n_rep} replicates"
        )
    low, high = expected_llm_calls(plans)
    lines.append(f"games: {len(plans)}   rounds: {sum(p.n_rounds for p in plans)}")
    lines.append(f"expected LLM calls: {low} (up to {high} with parse retries)")
    return "\n".join(lines)
