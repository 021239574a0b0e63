"""Population dynamics over strategy types: Moran, Wright-Fisher and eliminate-clone.

A population is an array of type ids, one per individual. Fitness is given per individual: the
average payoff per round against the rest of the population, either expected (from a pairwise
payoff matrix, `expected_fitness`) or measured in matches played this generation
(`fitness_from_matches`). Processes:

- `moran_step`: one birth-death event: a parent chosen with probability proportional to fitness,
  an individual chosen uniformly (the parent included, as in Axelrod's MoranProcess) replaced by
  the parent's offspring.
- `wright_fisher_step`: the whole population is replaced by N offspring of parents drawn with
  replacement, proportionally to fitness.
- `eliminate_clone_step` (The Evolution of Trust): the `n` least fit individuals are removed and
  the `n` fittest each add one offspring; ties are broken at random.

Offspring mutate with probability `mutation_rate` into a different type chosen uniformly.
Proportional selection uses fitness shifted to be non-negative (by -min when any is negative);
when all are 0, selection is uniform. Randomness comes only from the Generator passed in
(`make_generator`: Philox seeded from the run seed); no global state is touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

PROCESSES = ("moran", "wright_fisher", "eliminate_clone")


def make_generator(seed: int) -> np.random.Generator:
    """The process's random generator: Philox keyed by the seed."""
    return np.random.Generator(np.random.Philox(int(seed)))


def population_from_counts(counts: Sequence[int] | np.ndarray) -> np.ndarray:
    """Type ids of individuals: counts [2, 1] -> [0, 0, 1]."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.repeat(np.arange(counts.size), counts)


def type_counts(population: np.ndarray, n_types: int) -> np.ndarray:
    """How many individuals of each type."""
    return np.bincount(population, minlength=n_types)


def is_fixed(population: np.ndarray) -> bool:
    """True when a single type is left."""
    return bool(population.size) and bool((population == population[0]).all())


def expected_fitness(population: np.ndarray, payoff: np.ndarray) -> np.ndarray:
    """Per individual: mean per-round payoff against every other individual, from the matrix.

    payoff[i, j] is type i's expected per-round payoff against type j. An individual of type t in
    a population with counts n gets (sum_j n_j payoff[t, j] - payoff[t, t]) / (N - 1).
    """
    counts = type_counts(population, payoff.shape[0]).astype(np.float64)
    total = payoff @ counts - np.diag(payoff)
    size = population.size
    per_type = total / (size - 1) if size > 1 else np.zeros_like(total)
    return per_type[population]


def all_pairs(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Every unordered pair of individuals (i < j), row-major."""
    first, second = np.triu_indices(size, k=1)
    return first.astype(np.int64), second.astype(np.int64)


def fitness_from_matches(
    size: int,
    first: np.ndarray,
    second: np.ndarray,
    score_first: np.ndarray,
    score_second: np.ndarray,
) -> np.ndarray:
    """Per individual: mean of its per-round scores over the matches it played."""
    sums = np.bincount(first, weights=score_first, minlength=size) + np.bincount(
        second, weights=score_second, minlength=size
    )
    played = np.bincount(first, minlength=size) + np.bincount(second, minlength=size)
    return np.divide(sums, played, out=np.zeros(size), where=played > 0)


def selection_weights(fitness: np.ndarray) -> np.ndarray:
    """Probabilities proportional to fitness (shifted to be non-negative; uniform if all zero)."""
    weights = np.asarray(fitness, dtype=np.float64)
    low = weights.min() if weights.size else 0.0
    if low < 0:
        weights = weights - low
    total = weights.sum()
    if total <= 0:
        return np.full(weights.size, 1.0 / weights.size)
    return weights / total


def mutate(
    types: np.ndarray, rng: np.random.Generator, mutation_rate: float, n_types: int
) -> np.ndarray:
    """Each offspring switches with probability `mutation_rate` to another type, uniformly."""
    types = np.array(types, dtype=np.int64, copy=True)
    if mutation_rate <= 0 or n_types < 2 or types.size == 0:
        return types
    hit = rng.random(types.size) < mutation_rate
    shift = rng.integers(1, n_types, size=types.size)
    types[hit] = (types[hit] + shift[hit]) % n_types
    return types


def moran_step(
    population: np.ndarray,
    fitness: np.ndarray,
    rng: np.random.Generator,
    mutation_rate: float = 0.0,
    n_types: int | None = None,
) -> np.ndarray:
    """One birth-death event (see the module docstring); returns the new population."""
    n_types = n_types or int(population.max()) + 1
    cumulative = np.cumsum(selection_weights(fitness))
    parent = min(int(np.searchsorted(cumulative, rng.random(), side="right")), population.size - 1)
    dead = int(rng.integers(population.size))
    child = population[parent]
    if mutation_rate > 0:
        child = mutate(population[parent : parent + 1], rng, mutation_rate, n_types)[0]
    out = population.copy()
    out[dead] = child
    return out


def wright_fisher_step(
    population: np.ndarray,
    fitness: np.ndarray,
    rng: np.random.Generator,
    mutation_rate: float = 0.0,
    n_types: int | None = None,
) -> np.ndarray:
    """A whole new generation of N offspring of fitness-proportionally drawn parents."""
    n_types = n_types or int(population.max()) + 1
    parents = rng.choice(population.size, size=population.size, p=selection_weights(fitness))
    return np.sort(mutate(population[parents], rng, mutation_rate, n_types))


def eliminate_clone_step(
    population: np.ndarray,
    fitness: np.ndarray,
    n_replace: int,
    rng: np.random.Generator,
    mutation_rate: float = 0.0,
    n_types: int | None = None,
) -> np.ndarray:
    """Remove the n least fit, clone the n fittest (random tie-breaks); needs 2n <= N."""
    if 2 * n_replace > population.size:
        raise ValueError(f"cannot replace {n_replace} of {population.size} individuals")
    n_types = n_types or int(population.max()) + 1
    order = np.lexsort((rng.random(population.size), fitness))  # ascending fitness, random ties
    survivors = population[order[n_replace:]]
    clones = mutate(population[order[population.size - n_replace :]], rng, mutation_rate, n_types)
    return np.sort(np.concatenate([survivors, clones]))


def generation_rows(
    generation: int, population: np.ndarray, fitness: np.ndarray, names: Sequence[str]
) -> list[dict[str, Any]]:
    """generations.parquet rows: per type its count, share and mean fitness (None if absent)."""
    counts = type_counts(population, len(names))
    sums = np.bincount(population, weights=fitness, minlength=len(names))
    rows = []
    for t, name in enumerate(names):
        rows.append(
            {
                "generation": generation,
                "strategy": name,
                "count": int(counts[t]),
                "share": float(counts[t] / population.size),
                "mean_fitness": float(sums[t] / counts[t]) if counts[t] else None,
            }
        )
    return rows
