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
    if low:
        tokens_in, tokens_out = estimate_tokens(loaded, replicates)
        lines.append(
            f"estimated tokens: ~{tokens_in} input, at most {tokens_out} output (before parse retries)"
        )
    return "\n".join(lines)


def estimate_tokens(loaded: LoadedExperiment, replicates: int | None) -> tuple[int, int]:
    """(input tokens, output tokens) a run would use at most once, ~4 characters a token.

    Input counts the system prompt and a round prompt with a full history window for every call;
    output counts max_tokens per call (an upper bound). Parse retries come on top.
    """
    from pdbench.agents.llm import render_round, render_system
    from pdbench.core.transcript import Transcript
    from pdbench.core.types import Action

    cfg = loaded.config
    matrix = cfg.game.matrix()
    tokens_in = tokens_out = 0
    for plan in plan_games(loaded, replicates):
        for key in ("agent_a", "agent_b"):
            agent = getattr(plan.condition, key)
            if not isinstance(agent, LLMAgentConfig):
                continue
            templates = loaded.templates[(plan.condition.name, key)]
            system = render_system(templates, matrix, agent.output_format)
            transcript = Transcript(matrix)
            window = agent.history_window if agent.history_window is not None else plan.n_rounds
            for _ in range(min(window, plan.n_rounds)):
                transcript.record(Action.C, Action.D)
            obs = transcript.observation(
                0,
                history_window=agent.history_window,
                include_totals=agent.include_totals,
                horizon_type="fixed",
            )
            per_call = (
                len(system)
                + len(render_round(templates.round, obs, agent.history_window, agent.output_format))
            ) // 4
            tokens_in += per_call * plan.n_rounds
            tokens_out += agent.max_tokens * plan.n_rounds
    return tokens_in, tokens_out
