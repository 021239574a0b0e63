"""Evolution of strategies that meet in groups, with fitness from group compositions.

A well-mixed population of Z individuals of s types meets in groups of N. Every composition of N
among the types (`core.group_evolution.compositions`, egttools' order) is a group whose seats
hold its types in population order (`2 ALLC + 1 TFT`: ALLC, ALLC, TFT); it plays `repetitions`
games on the group engine (vectorized for policies, round by round for LLM seats, logged and
resumable as in group tournaments), seeds `derive_seed(run.seed, "group", seat names...,
repetition)`, the group tournament's scheme. A type's entry in the payoff table is its mean
payoff per round in the composition (over its seats and the games). The process
(`core.group_process`: moran, wright_fisher or pairwise_comparison) then runs once per seed k on
the table with `make_generator(derive_seed(run.seed, "group_evolution", k))`: a type's fitness
is its expected payoff in a group whose co-players are drawn from the rest of the population.

Artifacts in the output dir:
- group_evolution_manifest.json: config snapshot, the game, compositions and the payoff table,
  seed schemes, each seed's outcome.
- payoff_table.parquet: one row per (composition, type) (`PAYOFF_COLUMNS`): the composition's
  index and label, the type's count in it and its payoff per round (null when absent).
- generations.parquet: one row per (seed, generation, type) (`GENERATION_COLUMNS`): count, share,
  fitness (null for an absent type); every seed's run while they fit in `GENERATION_ROWS` rows
  (seed 0's always).
- fixation.parquet (seeds > 1 and no mutation): per type the seeds whose run ended with it alone,
  that share with a Wilson 95% interval, and beside it `exact_probability`, the fixation
  probability from the initial counts computed exactly (two types; the pairwise comparison rule,
  or Moran with a selection intensity, whose T-/T+ is the same exp(-beta (f_A - f_B))), so the
  simulated and the exact numbers can be read side by side.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pdbench.core.evolution import make_generator
from pdbench.core.group_evolution import compositions, finite_fitness, payoff_table
from pdbench.core.group_metrics import GroupOutcome
from pdbench.core.group_process import run_group_evolution
from pdbench.core.group_science_config import GroupEvolutionConfig, GroupEvolutionSection
from pdbench.core.rng import derive_seed
from pdbench.runners.config.loader import LoadedConfig
from pdbench.runners.engine.group_engine import GroupPlan
from pdbench.runners.lifecycle.group_session import GroupRunSession
from pdbench.runners.lifecycle.session import RunOptions
from pdbench.runners.science.evolve import wilson_interval
from pdbench.runners.science.group_tournament import (
    SEED_SCHEME,
    game_entry,
    group_label,
    group_seeds,
    seat_rates,
)
from pdbench.storage.parquet import write_columns
from pdbench.storage.schema import FIXATION_FILE, GENERATIONS_FILE, PAYOFF_TABLE_FILE

__all__ = [
    "GroupEvolutionResult",
    "composition_label",
    "exact_fixation",
    "fixation_rows",
    "payoffs_from_games",
    "plan_compositions",
    "run_group_evolve",
    "run_seeds",
]

PAYOFF_COLUMNS = ("composition", "label", "strategy", "count", "payoff_per_round", "games")
GENERATION_COLUMNS = ("seed", "generation", "strategy", "count", "share", "fitness")
FIXATION_COLUMNS = (
    "strategy",
    "fixations",
    "seeds",
    "probability",
    "ci_low",
    "ci_high",
    "exact_probability",
    "mean_generations",
)
GENERATION_ROWS = 1_000_000  # rows of generations.parquet beyond which later seeds are left out
NO_FIXATION = "(no fixation)"
PROCESS_SEED_SCHEME = 'make_generator(derive_seed(run.seed, "group_evolution", seed index))'


@dataclass
class GroupEvolutionResult:
    """What a group evolution produced (also written to `output_dir`)."""

    strategies: list[str]
    table: np.ndarray  # payoffs[type, composition]
    paths: list[np.ndarray]  # per seed: counts per generation (generations + 1, types)
    fixation: list[dict[str, Any]] | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    output_dir: Path | None = None
    n_games: int = 0
    n_rounds: int = 0
    games_played: int = 0
    games_resumed: int = 0


def composition_label(counts: Sequence[int], names: Sequence[str]) -> str:
    """`2 ALLC + 1 TFT`: the types present in a composition, with their counts."""
    return " + ".join(f"{c} {n}" for c, n in zip(counts, names, strict=True) if c)


def plan_compositions(loaded: LoadedConfig) -> list[GroupPlan]:
    """`repetitions` games of every composition of N among the types (egttools' order), seats
    holding the types in population order."""
    cfg: GroupEvolutionConfig = loaded.config
    section = cfg.group_evolution
    types = loaded.players
    game = cfg.stage_game()
    horizon = cfg.horizon.build()
    plans: list[GroupPlan] = []
    for counts in compositions(section.group_size, len(types)).tolist():
        specs = tuple(spec for spec, count in zip(types, counts, strict=True) for _ in range(count))
        names = [spec.name for spec in specs]
        seeds = group_seeds(cfg.run.seed, names, section.repetitions)
        lengths = horizon.lengths(np.array(seeds, dtype=np.uint64)).tolist()
        logged = any(spec.is_llm for spec in specs)
        for rep, (seed, n_rounds) in enumerate(zip(seeds, lengths, strict=True)):
            plans.append(
                GroupPlan(
                    len(plans),
                    group_label(names),
                    rep,
                    specs,
                    game,
                    seed,
                    horizon,
                    cfg.game.noise,
                    int(n_rounds),
                    logged=logged,
                )
            )
    return plans


def payoffs_from_games(
    names: Sequence[str],
    group_size: int,
    plans: Sequence[GroupPlan],
    outcomes: dict[int, GroupOutcome],
) -> np.ndarray:
    """The payoff table [type, composition] (egttools' order): each present type's payoff per
    round, averaged over its seats in a game and then over the composition's games."""
    index = {name: i for i, name in enumerate(names)}
    sums: dict[tuple[int, ...], np.ndarray] = {}
    games: dict[tuple[int, ...], int] = {}
    for plan in plans:
        pay, _ = seat_rates(outcomes[plan.index])
        types = np.array([index[spec.name] for spec in plan.agents])
        counts = np.bincount(types, minlength=len(names))
        per_type = np.bincount(types, weights=pay, minlength=len(names))
        key = tuple(int(c) for c in counts)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(counts > 0, per_type / np.maximum(counts, 1), 0.0)
        sums[key] = sums.get(key, np.zeros(len(names))) + mean
        games[key] = games.get(key, 0) + 1

    def payoff_of(composition: tuple[int, ...]) -> np.ndarray:
        return sums[composition] / games[composition]

    return payoff_table(payoff_of, len(names), group_size)


def run_seeds(section: GroupEvolutionSection, table: np.ndarray, run_seed: int) -> list[np.ndarray]:
    """Counts per generation of each seed's run of the process (`core.group_process`)."""
    counts = [m.count for m in section.population]
    return [
        run_group_evolution(
            counts,
            table,
            section.group_size,
            make_generator(derive_seed(run_seed, "group_evolution", k)),
            section.process,
            section.generations,
            section.mutation_rate,
            section.beta,
        )
        for k in range(section.seeds)
    ]


def exact_fixation(
    invaders: int, table: np.ndarray, group_size: int, population_size: int, beta: float
) -> float:
    """Probability that type 0, `invaders` of Z, takes over a population of two types without
    mutation when T-/T+ = exp(-beta (f_0(j) - f_1(j))) with j of type 0 (the pairwise
    comparison rule; Moran with exponential fitness): sum_{m<k} prod_{j<=m} r_j over the same sum
    to Z-1 (at k = 1, `group_evolution.fixation_probability(0, 1, ...)`)."""
    z = population_size
    if not 0 <= invaders <= z:
        raise ValueError(f"invaders must be 0..{z} (got {invaders})")
    logs = np.empty(z - 1)
    for j in range(1, z):
        fitness = finite_fitness([j, z - j], table, group_size)
        logs[j - 1] = -beta * (fitness[0] - fitness[1])
    terms = np.concatenate([[0.0], np.cumsum(logs)])  # log prod_{j<=m} r_j, m = 0..Z-1
    top = terms.max()
    weights = np.exp(terms - top)
    return float(weights[:invaders].sum() / weights.sum())


def exact_applies(section: GroupEvolutionSection) -> bool:
    """Whether `exact_fixation` is this process's: two types, no mutation, and the Fermi rule
    or Moran with a selection intensity."""
    by_rule = section.process == "pairwise_comparison" or (
        section.process == "moran" and section.beta is not None
    )
    return len(section.population) == 2 and section.mutation_rate == 0 and by_rule


def fixation_rows(
    section: GroupEvolutionSection,
    names: Sequence[str],
    paths: Sequence[np.ndarray],
    table: np.ndarray,
) -> list[dict[str, Any]]:
    """fixation.parquet's rows: per type (then the seeds left mixed) the seeds that ended with
    it alone, their share with a Wilson interval, the exact probability where it applies and
    the mean generations to fixation."""
    n = len(paths)
    ended: list[int | None] = []
    for path in paths:
        alive = np.flatnonzero(path[-1])
        ended.append(int(alive[0]) if alive.size == 1 else None)
    exact: list[float | None] = [None] * len(names)
    if exact_applies(section):
        assert section.beta is not None
        start = section.population[0].count
        p = exact_fixation(start, table, section.group_size, section.population_size, section.beta)
        exact = [p, 1.0 - p]
    rows = []
    for i, name in enumerate([*names, None]):
        which = i if name is not None else None
        hits = [len(path) - 1 for path, e in zip(paths, ended, strict=True) if e == which]
        low, high = wilson_interval(len(hits), n)
        rows.append(
            {
                "strategy": name if name is not None else NO_FIXATION,
                "fixations": len(hits),
                "seeds": n,
                "probability": len(hits) / n,
                "ci_low": low,
                "ci_high": high,
                "exact_probability": exact[i] if name is not None else None,
                "mean_generations": float(np.mean(hits)) if hits and name is not None else None,
            }
        )
    return rows


def generation_columns(
    names: Sequence[str], paths: Sequence[np.ndarray], table: np.ndarray, group_size: int
) -> tuple[dict[str, Any], int]:
    """generations.parquet's columns for the seeds that fit in `GENERATION_ROWS` rows (seed 0
    always), and how many seeds they hold."""
    s = len(names)
    kept, rows = 0, 0
    for path in paths:
        if kept and rows + path.size > GENERATION_ROWS:
            break
        kept, rows = kept + 1, rows + path.size
    known: dict[bytes, np.ndarray] = {}
    parts: dict[str, list[np.ndarray]] = {c: [] for c in GENERATION_COLUMNS if c != "strategy"}
    for k, path in enumerate(paths[:kept]):
        steps = path.shape[0]
        total = path.sum(axis=1, keepdims=True)
        fitness = np.empty(path.shape)
        for g, state in enumerate(path):
            key = state.tobytes()
            if key not in known:
                known[key] = finite_fitness(state, table, group_size)
            fitness[g] = known[key]
        parts["seed"].append(np.full(path.size, k, dtype=np.int64))
        parts["generation"].append(np.repeat(np.arange(steps, dtype=np.int64), s))
        parts["count"].append(path.reshape(-1).astype(np.int64))
        parts["share"].append((path / total).reshape(-1))
        parts["fitness"].append(fitness.reshape(-1))
    columns: dict[str, Any] = {c: np.concatenate(v) for c, v in parts.items()}
    columns["strategy"] = list(names) * (rows // s)
    # an absent type has no fitness: null, not NaN
    columns["fitness"] = [None if v != v else v for v in columns["fitness"].tolist()]
    return {c: columns[c] for c in GENERATION_COLUMNS}, kept


def payoff_columns(
    names: Sequence[str], table: np.ndarray, group_size: int, repetitions: int
) -> dict[str, list[Any]]:
    """payoff_table.parquet's columns: one row per (composition, type)."""
    out: dict[str, list[Any]] = {c: [] for c in PAYOFF_COLUMNS}
    for c, counts in enumerate(compositions(group_size, len(names)).tolist()):
        label = composition_label(counts, names)
        for i, name in enumerate(names):
            out["composition"].append(c)
            out["label"].append(label)
            out["strategy"].append(name)
            out["count"].append(counts[i])
            out["payoff_per_round"].append(float(table[i, c]) if counts[i] else None)
            out["games"].append(repetitions)
    return out


def evolution_manifest(loaded: LoadedConfig, plans: Sequence[GroupPlan]) -> dict[str, Any]:
    """The group evolution's own manifest keys (known before any game is played)."""
    cfg: GroupEvolutionConfig = loaded.config
    section = cfg.group_evolution
    names = loaded.names
    return {
        "kind": "group_evolution",
        "process": section.process,
        "beta": section.beta,
        "group_size": section.group_size,
        "population_size": section.population_size,
        "initial_counts": {n: m.count for n, m in zip(names, section.population, strict=True)},
        "generations_requested": section.generations,
        "mutation_rate": section.mutation_rate,
        "seeds": section.seeds,
        "repetitions": section.repetitions,
        "noise": cfg.game.noise,
        "horizon": cfg.horizon.model_dump(mode="json"),
        "game": game_entry(cfg.stage_game()),
        "strategies": names,
        "compositions": compositions(section.group_size, len(names)).tolist(),
        "seed_scheme": {"games": SEED_SCHEME, "process": PROCESS_SEED_SCHEME},
        "totals": {
            "compositions": section.n_compositions,
            "games": len(plans),
            "rounds": sum(p.n_rounds for p in plans),
            "logged_games": sum(1 for p in plans if p.logged),
        },
    }


def evolve_tables(
    loaded: LoadedConfig, plans: Sequence[GroupPlan], outcomes: dict[int, GroupOutcome]
) -> GroupEvolutionResult:
    """The payoff table from the played games, every seed's run and the fixation rows."""
    cfg: GroupEvolutionConfig = loaded.config
    section = cfg.group_evolution
    names = loaded.names
    table = payoffs_from_games(names, section.group_size, plans, outcomes)
    paths = run_seeds(section, table, cfg.run.seed)
    fixation = None
    if section.seeds > 1 and section.mutation_rate == 0:
        fixation = fixation_rows(section, names, paths, table)
    return GroupEvolutionResult(
        names,
        table,
        paths,
        fixation,
        n_games=len(plans),
        n_rounds=sum(p.n_rounds for p in plans),
    )


def seed_outcomes(names: Sequence[str], paths: Sequence[np.ndarray]) -> list[dict[str, Any]]:
    """Per seed: generations run, final counts and the type it fixated on (None: still mixed)."""
    out = []
    for path in paths:
        alive = np.flatnonzero(path[-1])
        out.append(
            {
                "generations_run": len(path) - 1,
                "final_counts": dict(zip(names, path[-1].tolist(), strict=True)),
                "fixated": names[int(alive[0])] if alive.size == 1 else None,
            }
        )
    return out


def run_group_evolve(
    loaded: LoadedConfig, options: RunOptions | None = None
) -> GroupEvolutionResult:
    """Play (or resume) every composition's games, run the process per seed, write the
    artifacts."""
    options = options or RunOptions()
    started = time.perf_counter()
    cfg: GroupEvolutionConfig = loaded.config
    section = cfg.group_evolution
    plans = plan_compositions(loaded)
    results: list[GroupEvolutionResult] = []

    def finish(outcomes: dict[int, Any], run_dir: Path) -> dict[str, Any]:
        result = evolve_tables(loaded, plans, outcomes)
        names = result.strategies
        write_columns(
            run_dir / PAYOFF_TABLE_FILE,
            payoff_columns(names, result.table, section.group_size, section.repetitions),
        )
        columns, kept = generation_columns(names, result.paths, result.table, section.group_size)
        write_columns(run_dir / GENERATIONS_FILE, columns)
        extra: dict[str, Any] = {
            "payoff_table": result.table.tolist(),
            "runs": seed_outcomes(names, result.paths),
            "generations_file_seeds": kept,
        }
        if result.fixation is not None:
            rows = result.fixation
            write_columns(run_dir / FIXATION_FILE, {c: [r[c] for r in rows] for c in rows[0]})
            extra["fixation"] = {
                "interval": "Wilson score, 95%, the seed as the unit",
                "exact": "exact_probability: from the initial counts, two types under the "
                "pairwise comparison rule or Moran with beta (null otherwise)"
                if exact_applies(section)
                else None,
            }
        elif section.seeds > 1:
            extra["fixation"] = {"skipped": "mutation_rate > 0: no type stays fixed"}
        extra["elapsed_s"] = round(time.perf_counter() - started, 4)
        results.append(result)
        return extra

    session = GroupRunSession(loaded, plans, options, evolution_manifest(loaded, plans))  # type: ignore[arg-type]
    played = session.run(finish)  # type: ignore[arg-type]
    result = results[0]
    result.manifest = played.manifest
    result.output_dir = played.run_dir
    result.games_played = played.games_played
    result.games_resumed = played.games_kept
    return result


def summary_lines(result: GroupEvolutionResult, resumed: bool = False) -> list[str]:
    """What `pdbench evolve` prints after a group evolution: where it went, each type's start
    and end (seed 0; the mean final share over seeds), then fixation over seeds."""
    m = result.manifest
    kept = f" ({result.games_resumed} kept from before)" if resumed else ""
    beta = "fitness-proportional" if m.get("beta") is None else f"beta {m['beta']:g}"
    head = (
        f"group evolution {m.get('run_id')}: {m.get('process')} ({beta}), groups of "
        f"{m.get('group_size')} in a population of {m.get('population_size')}; "
        f"{result.n_games} games{kept} -> {result.output_dir}"
    )
    names = result.strategies
    first = result.paths[0]
    z = int(first[0].sum())
    finals = np.array([p[-1] / z for p in result.paths])
    width = max([8] + [len(n) for n in names])
    lines = [f"{'strategy':<{width}} {'start':>6} {'end':>6} {'share':>6} {'mean share':>11}"]
    lines.append("-" * len(lines[0]))
    for i, name in enumerate(names):
        lines.append(
            f"{name:<{width}} {first[0, i]:>6} {first[-1, i]:>6} {first[-1, i] / z:>6.2f} "
            f"{finals[:, i].mean():>11.2f}"
        )
    runs = m.get("runs") or [{}]
    fixed = runs[0].get("fixated")
    lines.append(
        f"seed 0: {len(first) - 1} generations; "
        + (f"fixated on {fixed}" if fixed else "no fixation")
        + (f"; mean share over {len(result.paths)} seeds" if len(result.paths) > 1 else "")
    )
    if result.fixation:
        n = result.fixation[0]["seeds"]
        width = max(width, len(NO_FIXATION))
        lines.append(f"fixation over {n} seeds (Wilson 95% interval; exact where it applies):")
        for r in result.fixation:
            exact = r["exact_probability"]
            shown = "" if exact is None else f"  exact {100 * exact:5.1f}%"
            lines.append(
                f"  {r['strategy']:<{width}} {r['fixations']:>5}/{n}  {100 * r['probability']:5.1f}% "
                f"[{100 * r['ci_low']:.1f}%, {100 * r['ci_high']:.1f}%]{shown}"
            )
    return [head, *lines]
