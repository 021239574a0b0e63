"""The front door: the three kinds of run (experiment, tournament, evolution) behind one entry
point. `start` runs (or resumes) a loaded config of any kind; the CLI's run commands and
`resume`, and the app's Run, Tournament and Evolution tabs, all start runs here, so a rule about
starting a run (resume and overwrite exclude each other; a resume uses the cache the run used)
holds for both. Also the games a config of any kind plays (`plans_for`, for the plan `validate`
prints) and the lines that report the outcome (what the CLI prints after a run).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pdbench.core.coverage_advice import coverage_warnings
from pdbench.core.exact import exactness_lines, recorded_could_vary
from pdbench.errors import RunError
from pdbench.runners.config.loader import LoadedConfig
from pdbench.runners.engine.engine import GamePlan
from pdbench.runners.lifecycle.session import RunOptions
from pdbench.runners.plan import (
    fallback_warnings,
    leaderboard_table,
    shares_table,
    summary_table,
)
from pdbench.storage.run_dir import read_manifest
from pdbench.storage.schema import MANIFEST_FILES

__all__ = ["RunOptions", "check_options", "plans_for", "report", "resume_cache", "start"]

# Each kind's module (package.module, planner, runner), imported when a run of that kind starts:
# an experiment needs none of the tournament's and evolution's code.
_KINDS = {
    "experiment": ("experiment", "plan_games", "run_experiment"),
    "tournament": ("tournament", "plan_matches", "run_tournament"),
    "evolution": ("evolve", "plan_pool", "run_evolution"),
    "groups": ("groups", "plan_groups", "run_groups"),
    "group_tournament": ("group_tournament", "plan_group_games", "run_group_tournament"),
    "group_evolution": ("group_evolve", "plan_compositions", "run_group_evolve"),
    "pgg": ("resources", "plan_resources", "run_resources"),
    "commons": ("resources", "plan_resources", "run_resources"),
}


def _science(kind: str, which: int) -> Callable[..., Any]:
    """The planner (which=1) or runner (which=2) of a kind, from its science module."""
    module = importlib.import_module(f"pdbench.runners.science.{_KINDS[kind][0]}")
    return getattr(module, _KINDS[kind][which])


def _summary(kind: str, result: Any, resumed: bool) -> list[str]:
    """A group tournament's or evolution's printed summary: its module's `summary_lines`."""
    module = importlib.import_module(f"pdbench.runners.science.{_KINDS[kind][0]}")
    return list(module.summary_lines(result, resumed))


def _lazy(kind: str, which: int) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return _science(kind, which)(*args, **kwargs)

    call.__name__ = _KINDS[kind][which]
    return call


PLANNERS = {kind: _lazy(kind, 1) for kind in _KINDS}
RUNNERS = {kind: _lazy(kind, 2) for kind in _KINDS}


def plans_for(loaded: LoadedConfig) -> list[GamePlan]:
    """The games a run of this config plays (an evolution: its pool of matches)."""
    return PLANNERS[loaded.kind](loaded)


def start(loaded: LoadedConfig, options: RunOptions | None = None) -> Any:
    """Run (or resume) a loaded config of any kind into its output dir (`options.output_dir`,
    else the config's `run.output_dir`); the mode's result (its `manifest` and where it went).

    RunError when `options` asks to resume and to overwrite at once (before anything is read or
    written). A resume that names no cache dir and does not turn the cache off uses the cache
    the run was started with, as its manifest records it (see `resume_cache`).
    """
    options = options or RunOptions()
    check_options(options)
    if options.resume and options.cache_dir is None and options.use_cache:
        run_dir = options.output_dir or Path(loaded.config.run.output_dir)
        cache_dir, use_cache = resume_cache(run_dir, loaded.kind)
        options = dataclasses.replace(options, cache_dir=cache_dir, use_cache=use_cache)
    return RUNNERS[loaded.kind](loaded, options)


def check_options(options: RunOptions) -> None:
    """RunError when the options contradict each other (resume and overwrite)."""
    if options.resume and options.overwrite:
        raise RunError("--resume and --overwrite exclude each other")


def resume_cache(run_dir: Path, kind: str) -> tuple[Path | None, bool]:
    """(cache_dir, use_cache) for resuming the run in `run_dir` when no cache was asked for: the
    cache the run used as its manifest records it (absolute, or null for a run without cache),
    else the default cache (None, True): no run there yet, a manifest that cannot be read (the
    session says what is wrong), or a run from before the cache dir was recorded."""
    if not (run_dir / MANIFEST_FILES[kind]).is_file():
        return None, True
    try:
        manifest = read_manifest(run_dir, kind)
    except RunError:
        return None, True
    if "cache_dir" not in manifest:
        return None, True
    started = manifest["cache_dir"]
    return (Path(started), True) if started else (None, False)


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
        conditions = [r for r in result.rows if r.get("scope") == "condition"]
        tail = [
            summary_table(result.rows),
            *exactness_lines(conditions, recorded_could_vary(manifest)),
            *fallback_warnings(result.rows),
            *(
                f"warning: {name}: {text}"
                for name, text in coverage_warnings(manifest.get("conditions") or [], conditions)
            ),
        ]
    elif loaded.kind == "groups":
        from pdbench.runners.plan import groups_table

        kept = f" ({result.games_resumed} kept from before)" if resumed else ""
        head = (
            f"groups {run_id}: {result.n_games} games{kept}, {result.n_rounds} rounds "
            f"-> {result.run_dir}"
        )
        tail = [groups_table(result.rows)]
    elif loaded.kind in ("group_tournament", "group_evolution", "pgg", "commons"):
        head, *tail = _summary(loaded.kind, result, resumed)
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
    return [head, *replayed_lines(manifest), *usage_lines(manifest), *tail]


def replayed_lines(manifest: dict[str, Any]) -> list[str]:
    """The damaged games the last session (a resume) played again, each with its problem."""
    sessions = manifest.get("sessions") or [{}]
    damaged = (sessions[-1] or {}).get("games_replayed_damaged") or []
    if not damaged:
        return []
    shown = [f"  {line}" for line in damaged[:5]]
    more = (
        [f"  ... and {len(damaged) - 5} more (run manifest: sessions)"] if len(damaged) > 5 else []
    )
    return [f"resume: {len(damaged)} damaged game(s) played again:", *shown, *more]


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
