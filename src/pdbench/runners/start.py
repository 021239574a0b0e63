"""The three kinds of run behind one entry point: the games a config of any kind plays, running
it, and the lines that report the outcome (what the CLI prints after a run)."""

from __future__ import annotations

from typing import Any

from pdbench.runners.config.loader import LoadedConfig
from pdbench.runners.engine.engine import GamePlan
from pdbench.runners.lifecycle.session import RunOptions
from pdbench.runners.plan import (
    fallback_warnings,
    leaderboard_table,
    shares_table,
    summary_table,
)
from pdbench.runners.science.evolve import plan_pool, run_evolution
from pdbench.runners.science.experiment import plan_games, run_experiment
from pdbench.runners.science.tournament import plan_matches, run_tournament

PLANNERS = {"experiment": plan_games, "tournament": plan_matches, "evolution": plan_pool}
RUNNERS = {"experiment": run_experiment, "tournament": run_tournament, "evolution": run_evolution}


def plans_for(loaded: LoadedConfig) -> list[GamePlan]:
    """The games a run of this config plays (an evolution: its pool of matches)."""
    return PLANNERS[loaded.kind](loaded)


def run_loaded(loaded: LoadedConfig, options: RunOptions | None = None) -> Any:
    """Run (or resume) a loaded config of any kind into its output dir; the mode's result."""
    return RUNNERS[loaded.kind](loaded, options or RunOptions())


def report(loaded: LoadedConfig, result: Any, resumed: bool = False) -> list[str]:
    """What a finished run prints: where it went, what it spent, its table."""
    run_id = loaded.config.run.run_id
    manifest = result.manifest
    if loaded.kind == "experiment":
        kept = f" ({result.games_resumed} kept from before)" if resumed else ""
        head = (
            f"run {run_id}: {result.n_games} games{kept}, {result.n_rounds} rounds "
            f"-> {result.run_dir}"
        )
        tail = [summary_table(result.rows), *fallback_warnings(result.rows)]
    elif loaded.kind == "tournament":
        totals = manifest["totals"]
        head = (
            f"tournament {run_id}: {len(result.players)} players, {totals['matches']} matches, "
            f"{totals['rounds']} rounds -> {result.output_dir}"
        )
        tail = [leaderboard_table(result.leaderboard)]
    else:
        head = (
            f"evolution {run_id}: {manifest['process']} (fitness {manifest['fitness']}, "
            f"noise {manifest['noise']:g}) -> {result.output_dir}"
        )
        status = f"fixated on {result.fixated}" if result.fixated else "no fixation"
        tail = [
            shares_table(result.rows, result.strategies, result.final_counts),
            f"{result.generations_run} generations; {status}",
        ]
        if result.fixation:
            n = result.fixation[0]["seeds"]
            tail.append(f"fixation over {n} seeds of the process (Wilson 95% interval):")
            tail += [
                f"  {r['strategy']:<16} {r['fixations']:>5}/{n}  {100 * r['probability']:5.1f}% "
                f"[{100 * r['ci_low']:.1f}%, {100 * r['ci_high']:.1f}%]"
                for r in result.fixation
            ]
    return [head, *usage_lines(manifest), *tail]


def usage_lines(manifest: dict[str, Any]) -> list[str]:
    """The LLM replies the games used, and what the run spent, when it made any calls."""
    usage = manifest.get("usage") or {}
    used = usage.get("total") or {}
    spent = usage.get("spent_all_sessions") or {}
    if not used and not spent.get("provider_calls"):
        return []
    return [
        f"LLM replies used: {used.get('llm_calls', 0)} (tokens in/out "
        f"{used.get('input_tokens', 0)}/{used.get('output_tokens', 0)}); spent: "
        f"{spent.get('provider_calls', 0)} provider calls, {spent.get('cached_calls', 0)} "
        f"from cache, {usd(spent.get('cost_usd', 0.0))}"
    ]


def usd(value: float | None) -> str:
    """A cost in USD, or "cost unknown" (never $0 for a price nobody knows)."""
    return "cost unknown" if value is None else f"${value:.4f}"
