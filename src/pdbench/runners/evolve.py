"""Evolving populations of strategy types (Moran, Wright-Fisher, eliminate-clone).

Fitness (see `pdbench.core.evolution`) is the average payoff per round against the rest of the
population, in one of two modes (`evolution.fitness`):

- expected (default for moran and wright_fisher): the pairwise payoff matrix between types is
  estimated once from `repetitions` matches per unordered pair of types (each against itself
  too), seeds `derive_seed(run.seed, "evolution", type_i, type_j, repetition)`; with noise, the
  matrix is a mean over those repetitions.
- sampled (default for eliminate_clone): every generation every pair of individuals plays one
  match (seeds drawn from the process's generator), as in The Evolution of Trust. Pairs involving
  a non-policy member (LLM agent, Axelrod strategy) do not replay: their outcome is drawn
  uniformly from the pool of `repetitions` matches played once for that pair of types.

The process's randomness is `numpy.random.Generator(Philox(derive_seed(run.seed, "evolution")))`.
It stops at fixation (one type left, mutation 0) or after `generations` steps (one Moran step is
one birth-death event). Artifacts: generations.parquet (generation, strategy, count, share,
mean_fitness; generation 0 is the initial population) and evolution_manifest.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from pdbench.core import evolution as dyn
from pdbench.core.batch import play_batch
from pdbench.core.rng import derive_seed
from pdbench.runners.games_config import LoadedGames, load_evolution
from pdbench.runners.matches import (
    ProgressFn,
    batch_policies,
    play_matches,
    write_parquet,
)
from pdbench.runners.run_files import manifest_header, prepare_output_dir
from pdbench.storage.files import environment_info, write_json_atomic

MANIFEST_FILE = "evolution_manifest.json"
GENERATIONS_FILE = "generations.parquet"
ARTIFACTS = (MANIFEST_FILE, GENERATIONS_FILE)


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


def play_pair_pool(
    loaded: LoadedGames, repetitions: int, noise: float, progress: ProgressFn | None = None
) -> PairPool:
    """`repetitions` matches for every unordered pair of types (i <= j, i plays side A)."""
    names = loaded.names
    k = len(names)
    horizon = loaded.config.horizon.build()
    pa, pb, seeds = [], [], []
    for i in range(k):
        for j in range(i, k):
            for rep in range(repetitions):
                pa.append(i)
                pb.append(j)
                seeds.append(
                    derive_seed(loaded.config.run.seed, "evolution", names[i], names[j], rep)
                )
    seed_arr = np.array(seeds, dtype=np.uint64)
    lengths = horizon.lengths(seed_arr)
    result, _ = play_matches(
        loaded,
        np.array(pa),
        np.array(pb),
        seed_arr,
        lengths,
        horizon=horizon,
        noise=noise,
        progress=progress,
    )
    score_a, score_b = result.totals()
    first = np.zeros((k, k, repetitions))
    second = np.zeros((k, k, repetitions))
    reps = np.arange(len(pa)) % repetitions
    first[pa, pb, reps] = score_a / lengths
    second[pa, pb, reps] = score_b / lengths
    return PairPool(first, second)


class _SampledFitness:
    """Per generation: every pair of individuals plays (batched) or draws from the pool."""

    def __init__(self, loaded: LoadedGames, noise: float, pool: PairPool | None) -> None:
        self.flags, self.specs = batch_policies(loaded)
        self.matrix = loaded.config.game.matrix()
        self.horizon = loaded.config.horizon.build()
        self.noise = noise
        self.pool = pool

    def __call__(self, population: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        first, second = dyn.all_pairs(population.size)
        ta, tb = population[first], population[second]
        score_first = np.zeros(first.size)
        score_second = np.zeros(first.size)
        fast = np.flatnonzero(self.flags[ta] & self.flags[tb])
        seeds = rng.integers(0, 2**63, size=fast.size, dtype=np.uint64)
        lengths = self.horizon.lengths(seeds)
        result = play_batch(self.specs, ta[fast], tb[fast], seeds, lengths, self.matrix, self.noise)
        totals = result.totals()
        score_first[fast] = totals[0] / lengths
        score_second[fast] = totals[1] / lengths
        slow = np.flatnonzero(~(self.flags[ta] & self.flags[tb]))
        if slow.size:
            assert self.pool is not None
            lo, hi = np.minimum(ta[slow], tb[slow]), np.maximum(ta[slow], tb[slow])
            pick = rng.integers(self.pool.first.shape[2], size=slow.size)
            s_lo, s_hi = self.pool.first[lo, hi, pick], self.pool.second[lo, hi, pick]
            swapped = ta[slow] > tb[slow]
            score_first[slow] = np.where(swapped, s_hi, s_lo)
            score_second[slow] = np.where(swapped, s_lo, s_hi)
        return dyn.fitness_from_matches(population.size, first, second, score_first, score_second)


def simulate_evolution(
    loaded: LoadedGames,
    *,
    progress: ProgressFn | None = None,
    noise: float | None = None,
    generations: int | None = None,
    seed: int | None = None,
) -> EvolutionResult:
    """Run the configured process in memory (no files written); see the module docstring."""
    cfg = loaded.config
    section = cfg.evolution
    noise = cfg.game.noise if noise is None else noise
    steps = section.generations if generations is None else generations
    run_seed = cfg.run.seed if seed is None else seed
    if seed is not None:
        cfg = cfg.model_copy(update={"run": cfg.run.model_copy(update={"seed": seed})})
        loaded = replace(loaded, config=cfg)
    names = loaded.names
    k = len(names)
    mode = section.fitness_mode()
    flags, _ = batch_policies(loaded)
    counts = [m.count for m in section.population]
    needs_pool = mode == "expected" or not bool(flags[np.asarray(counts) > 0].all())
    pool = play_pair_pool(loaded, section.repetitions, noise) if needs_pool else None
    payoff = pool.expected_matrix() if pool is not None else None
    sampled = _SampledFitness(loaded, noise, pool) if mode == "sampled" else None
    rng = dyn.make_generator(derive_seed(run_seed, "evolution"))
    population = dyn.population_from_counts(counts)
    rows: list[dict[str, Any]] = []
    fixated: str | None = None
    generation = 0
    while True:
        if sampled is not None:
            fitness = sampled(population, rng)
        else:
            fitness = dyn.expected_fitness(population, payoff)
        rows.extend(dyn.generation_rows(generation, population, fitness, names))
        if progress is not None:
            progress(generation, steps)
        if dyn.is_fixed(population) and section.mutation_rate == 0:
            fixated = names[int(population[0])]
            break
        if generation >= steps:
            break
        population = _step(section, population, fitness, rng, k)
        generation += 1
    final = dyn.type_counts(population, k)
    return EvolutionResult(
        names,
        rows,
        {name: int(c) for name, c in zip(names, final, strict=True)},
        generation,
        fixated,
        payoff,
        {
            "process": section.process,
            "fitness": mode,
            "noise": noise,
            "seed": run_seed,
            "generations_requested": steps,
            "generations_run": generation,
            "mutation_rate": section.mutation_rate,
            "eliminate": section.eliminate if section.process == "eliminate_clone" else None,
            "repetitions": section.repetitions,
            "initial_counts": dict(zip(names, counts, strict=True)),
            "final_counts": {name: int(c) for name, c in zip(names, final, strict=True)},
            "fixated": fixated,
            "payoff_matrix": None if payoff is None else payoff.tolist(),
        },
    )


def _step(
    section: Any, population: np.ndarray, fitness: np.ndarray, rng: np.random.Generator, k: int
) -> np.ndarray:
    if section.process == "moran":
        return dyn.moran_step(population, fitness, rng, section.mutation_rate, k)
    if section.process == "wright_fisher":
        return dyn.wright_fisher_step(population, fitness, rng, section.mutation_rate, k)
    return dyn.eliminate_clone_step(
        population, fitness, section.eliminate, rng, section.mutation_rate, k
    )


def run_evolution(
    config: str | Path | LoadedGames,
    output_dir: Path | None = None,
    overwrite: bool = False,
    progress: ProgressFn | None = None,
    *,
    noise: float | None = None,
    generations: int | None = None,
    seed: int | None = None,
) -> EvolutionResult:
    """Load (if given a path), run and write an evolution; overrides replace config values."""
    loaded = config if isinstance(config, LoadedGames) else load_evolution(config)
    cfg = loaded.config
    out = Path(output_dir or cfg.run.output_dir)
    prepare_output_dir(out, overwrite, ARTIFACTS)
    started = datetime.now(UTC).isoformat()
    result = simulate_evolution(
        loaded, progress=progress, noise=noise, generations=generations, seed=seed
    )
    write_parquet(
        out / GENERATIONS_FILE,
        {key: [row[key] for row in result.rows] for key in result.rows[0]},
    )
    result.manifest = {
        **manifest_header(loaded, started),
        "strategies": result.strategies,
        **result.manifest,
        "artifacts": list(ARTIFACTS),
        "environment": environment_info(loaded.root),
    }
    write_json_atomic(out / MANIFEST_FILE, result.manifest)
    result.output_dir = out
    return result


def format_shares(result: EvolutionResult) -> str:
    """Initial and final counts and shares per strategy, as a text table."""
    first = {r["strategy"]: r["count"] for r in result.rows if r["generation"] == 0}
    total = sum(first.values()) or 1
    width = max([8] + [len(s) for s in result.strategies])
    lines = [f"{'strategy':<{width}} {'start':>6} {'end':>6} {'share':>6}"]
    lines.append("-" * len(lines[0]))
    for name in sorted(result.strategies, key=lambda s: -result.final_counts[s]):
        end = result.final_counts[name]
        lines.append(f"{name:<{width}} {first[name]:>6} {end:>6} {end / total:>6.2f}")
    status = f"fixated on {result.fixated}" if result.fixated else "no fixation"
    lines.append(f"{result.generations_run} generations; {status}")
    return "\n".join(lines)
