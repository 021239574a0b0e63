"""Evolving populations of strategy types (Moran, Wright-Fisher, eliminate-clone).

Fitness (see `pdbench.core.evolution`) is the average payoff per round against the rest of the
population, in one of two modes (`evolution.fitness`):

- expected (default for moran and wright_fisher): the pairwise payoff matrix between types is
  estimated once from `repetitions` matches per unordered pair of types (each against itself
  too), seeds `derive_seed(run.seed, "evolution", type_i, type_j, repetition)`; with noise, the
  matrix is a mean over those repetitions.
- sampled (default for eliminate_clone): every generation every pair of individuals plays one
  match on the vectorized engine (seeds drawn from the process's generator), as in The
  Evolution of Trust. Pairs involving a non-policy member (LLM agent, Axelrod strategy) do not
  replay: their outcome is drawn uniformly from the pool of `repetitions` matches played once
  for that pair of types.

The pool is played by the shared engine through a `RunSession` (condition `<type_i>_vs_<type_j>`,
replicate = repetition; matches with an LLM member are logged, so budgets, llm_calls.jsonl,
stored prompts and resume work as in experiments). The process's randomness is
`numpy.random.Generator(Philox(derive_seed(run.seed, "evolution")))`. It stops at fixation (one
type left, mutation 0) or after `generations` steps (one Moran step is one birth-death event).
Artifacts: generations.parquet (generation, strategy, count, share, mean_fitness; generation 0
is the initial population) and evolution_manifest.json.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pdbench.core import evolution as dyn
from pdbench.core.config import EvolutionConfig, EvolutionSection
from pdbench.core.metrics import GameOutcome
from pdbench.core.rng import derive_seed
from pdbench.runners.config.loader import SEPARATOR, LoadedConfig
from pdbench.runners.engine.engine import GamePlan, MachineTable, ProgressFn
from pdbench.runners.lifecycle.session import RunOptions, RunSession, play_in_memory
from pdbench.storage.parquet import write_columns
from pdbench.storage.schema import FIXATION_FILE, GENERATIONS_FILE


@dataclass
class EvolutionResult:
    """What an evolution run produced (also written to `output_dir` by `run_evolution`)."""

    strategies: list[str]
    rows: list[dict[str, Any]]
    final_counts: dict[str, int]
    generations_run: int
    fixated: str | None
    payoff: np.ndarray | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    output_dir: Path | None = None
    fixation: list[dict[str, Any]] | None = None  # over seeds (evolution.seeds > 1)


@dataclass
class PairPool:
    """Matches played once per unordered pair of types: per-round scores [i, j, rep] of i and j."""

    first: np.ndarray
    second: np.ndarray

    def expected_matrix(self) -> np.ndarray:
        """payoff[i, j]: mean per-round payoff of type i against type j."""
        k = self.first.shape[0]
        matrix = np.zeros((k, k))
        for i in range(k):
            for j in range(i, k):
                if i == j:
                    matrix[i, i] = (self.first[i, i].mean() + self.second[i, i].mean()) / 2
                else:
                    matrix[i, j] = self.first[i, j].mean()
                    matrix[j, i] = self.second[i, j].mean()
        return matrix


def needs_pool(loaded: LoadedConfig) -> bool:
    """Whether the pairwise pool is played: for expected fitness, or when a member that is not
    a batchable policy can take part (present at the start, or brought in by mutation)."""
    section: EvolutionSection = loaded.config.evolution
    members = zip(loaded.players, section.population, strict=True)
    possible = [spec for spec, m in members if m.count or section.mutation_rate > 0]
    return section.fitness_mode() == "expected" or not all(s.batchable for s in possible)


def plan_pool(loaded: LoadedConfig) -> list[GamePlan]:
    """`repetitions` matches for every unordered pair of types (i <= j, i plays side A)."""
    cfg: EvolutionConfig = loaded.config
    if not needs_pool(loaded):
        return []
    players = loaded.players
    horizon = cfg.horizon.build()
    keys = [
        (i, j, rep, derive_seed(cfg.run.seed, "evolution", players[i].name, players[j].name, rep))
        for i in range(len(players))
        for j in range(i, len(players))
        for rep in range(cfg.evolution.repetitions)
    ]
    lengths = horizon.lengths(np.array([k[3] for k in keys], dtype=np.uint64)).tolist()
    plans = []
    for index, ((i, j, rep, seed), n) in enumerate(zip(keys, lengths, strict=True)):
        agents = (players[i], players[j])
        label = f"{players[i].name}{SEPARATOR}{players[j].name}"
        logged = agents[0].is_llm or agents[1].is_llm
        plans.append(GamePlan(index, label, rep, agents, seed, horizon, cfg.game.noise, n, logged))
    return plans


def pair_pool(
    loaded: LoadedConfig, plans: Sequence[GamePlan], outcomes: dict[int, GameOutcome]
) -> PairPool:
    """The pool's per-round scores, from the played pool matches."""
    k = len(loaded.players)
    reps = loaded.config.evolution.repetitions
    index = {name: i for i, name in enumerate(loaded.names)}
    first = np.zeros((k, k, reps))
    second = np.zeros((k, k, reps))
    for plan in plans:
        game = outcomes[plan.index]
        i, j = index[plan.agents[0].name], index[plan.agents[1].name]
        first[i, j, plan.replicate] = game.totals[0] / plan.n_rounds
        second[i, j, plan.replicate] = game.totals[1] / plan.n_rounds
    return PairPool(first, second)


class _SampledFitness:
    """Per generation: every pair of individuals plays (batched) or draws from the pool."""

    def __init__(self, loaded: LoadedConfig, pool: PairPool | None) -> None:
        self.players = loaded.players
        self.flags = np.array([spec.batchable for spec in self.players], dtype=bool)
        self.table = MachineTable(loaded.matrix())
        self.horizon = loaded.config.horizon.build()
        self.noise = loaded.config.game.noise
        self.pool = pool

    def __call__(self, population: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        first, second = dyn.all_pairs(population.size)
        ta, tb = population[first], population[second]
        score_first = np.zeros(first.size)
        score_second = np.zeros(first.size)
        both = self.flags[ta] & self.flags[tb]
        fast = np.flatnonzero(both)
        seeds = rng.integers(0, 2**63, size=fast.size, dtype=np.uint64)
        lengths = self.horizon.lengths(seeds)
        result = self.table.play(
            [self.players[t] for t in ta[fast]],
            [self.players[t] for t in tb[fast]],
            seeds,
            lengths,
            self.noise,
        )
        totals = result.totals()
        score_first[fast] = totals[0] / lengths
        score_second[fast] = totals[1] / lengths
        slow = np.flatnonzero(~both)
        if slow.size:
            assert self.pool is not None
            lo, hi = np.minimum(ta[slow], tb[slow]), np.maximum(ta[slow], tb[slow])
            pick = rng.integers(self.pool.first.shape[2], size=slow.size)
            s_lo, s_hi = self.pool.first[lo, hi, pick], self.pool.second[lo, hi, pick]
            swapped = ta[slow] > tb[slow]
            score_first[slow] = np.where(swapped, s_hi, s_lo)
            score_second[slow] = np.where(swapped, s_lo, s_hi)
        return dyn.fitness_from_matches(population.size, first, second, score_first, score_second)


def evolve(
    loaded: LoadedConfig,
    pool: PairPool | None,
    progress: ProgressFn | None = None,
    process_seed: int | None = None,
) -> EvolutionResult:
    """Run the configured process on a played pool (no files written); `process_seed` seeds
    the process's draws (default: derived from the run seed)."""
    cfg: EvolutionConfig = loaded.config
    section = cfg.evolution
    names = loaded.names
    k = len(names)
    mode = section.fitness_mode()
    payoff = pool.expected_matrix() if pool is not None else None
    sampled = _SampledFitness(loaded, pool) if mode == "sampled" else None
    rng = dyn.make_generator(
        derive_seed(cfg.run.seed, "evolution") if process_seed is None else process_seed
    )
    counts = [m.count for m in section.population]
    population = dyn.population_from_counts(counts)
    rows: list[dict[str, Any]] = []
    fixated: str | None = None
    generation = 0
    while True:
        if sampled is not None:
            fitness = sampled(population, rng)
        else:
            assert payoff is not None
            fitness = dyn.expected_fitness(population, payoff)
        rows.extend(dyn.generation_rows(generation, population, fitness, names))
        if progress is not None:
            progress(generation, section.generations)
        if dyn.is_fixed(population) and section.mutation_rate == 0:
            fixated = names[int(population[0])]
            break
        if generation >= section.generations:
            break
        population = _step(section, population, fitness, rng, k)
        generation += 1
    final = {name: int(c) for name, c in zip(names, dyn.type_counts(population, k), strict=True)}
    return EvolutionResult(
        names,
        rows,
        final,
        generation,
        fixated,
        payoff,
        {
            "process": section.process,
            "fitness": mode,
            "noise": cfg.game.noise,
            "generations_requested": section.generations,
            "generations_run": generation,
            "mutation_rate": section.mutation_rate,
            "eliminate": section.n_eliminated if section.process == "eliminate_clone" else None,
            "repetitions": section.repetitions,
            "initial_counts": dict(zip(names, counts, strict=True)),
            "final_counts": final,
            "fixated": fixated,
            "payoff_matrix": None if payoff is None else payoff.tolist(),
        },
    )


def _step(
    section: EvolutionSection,
    population: np.ndarray,
    fitness: np.ndarray,
    rng: np.random.Generator,
    k: int,
) -> np.ndarray:
    if section.process == "moran":
        return dyn.moran_step(population, fitness, rng, section.mutation_rate, k)
    if section.process == "wright_fisher":
        return dyn.wright_fisher_step(population, fitness, rng, section.mutation_rate, k)
    return dyn.eliminate_clone_step(
        population, fitness, section.n_eliminated, rng, section.mutation_rate, k
    )


def simulate_evolution(loaded: LoadedConfig, concurrency: int = 16) -> EvolutionResult:
    """Play the pool and run the process in memory (no files written)."""
    plans = plan_pool(loaded)
    pool = pair_pool(loaded, plans, play_in_memory(loaded, plans, concurrency)) if plans else None
    return evolve(loaded, pool)


def wilson_interval(
    successes: int, trials: int, z: float = 1.959963984540054
) -> tuple[float | None, float | None]:
    """The Wilson score interval of a binomial proportion (seeds are independent runs); None,
    None without a trial or with a NaN or infinite count (nothing to bound)."""
    if not (math.isfinite(successes) and math.isfinite(trials) and trials > 0):
        return None, None
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact ends, not 1e-17
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return (low, high)


def fixation_over_seeds(
    loaded: LoadedConfig, pool: PairPool | None, first: EvolutionResult
) -> list[dict[str, Any]]:
    """Run the process `evolution.seeds` times on the same pool (the first run is `first`);
    per type: how many seeds it fixated in, that share with a Wilson interval; plus a row for
    the seeds that ended without fixation."""
    cfg: EvolutionConfig = loaded.config
    n = cfg.evolution.seeds
    outcomes = [first.fixated]
    for k in range(1, n):
        outcomes.append(
            evolve(loaded, pool, process_seed=derive_seed(cfg.run.seed, "evolution", k)).fixated
        )
    rows = []
    for name in [*first.strategies, None]:
        hits = sum(1 for o in outcomes if o == name)
        low, high = wilson_interval(hits, n)
        rows.append(
            {
                "strategy": name if name is not None else "(no fixation)",
                "fixations": hits,
                "seeds": n,
                "probability": hits / n,
                "ci_low": low,
                "ci_high": high,
            }
        )
    return rows


def run_evolution(loaded: LoadedConfig, options: RunOptions | None = None) -> EvolutionResult:
    """Play (or resume) the pool into the output dir, run the process, write the artifacts."""
    options = options or RunOptions()
    cfg: EvolutionConfig = loaded.config
    plans = plan_pool(loaded)
    results: list[EvolutionResult] = []

    def finish(outcomes: dict[int, GameOutcome], run_dir: Path) -> dict[str, Any]:
        pool = pair_pool(loaded, plans, outcomes) if plans else None
        result = evolve(loaded, pool, options.progress)
        write_columns(
            run_dir / GENERATIONS_FILE,
            {key: [r[key] for r in result.rows] for key in result.rows[0]},
        )
        results.append(result)
        extra: dict[str, Any] = {}
        if cfg.evolution.seeds > 1:
            rows = fixation_over_seeds(loaded, pool, result)
            write_columns(run_dir / FIXATION_FILE, {k: [r[k] for r in rows] for k in rows[0]})
            result.fixation = rows
            extra["fixation_over_seeds"] = {
                "seeds": cfg.evolution.seeds,
                "seed_scheme": 'seed 0: derive_seed(run.seed, "evolution"); seed k > 0: '
                'derive_seed(run.seed, "evolution", k); the matches are played once',
                "interval": "Wilson score, 95%",
            }
        return {"strategies": result.strategies, **result.manifest, **extra}

    played = RunSession(loaded, plans, options).run(finish)
    result = results[0]
    result.manifest = played.manifest
    result.output_dir = played.run_dir
    return result
