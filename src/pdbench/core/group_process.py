"""Stochastic evolution of strategies that meet in groups, over type counts.

The population is well mixed: its state is the count of each strategy (type), and a type's
fitness is the expected payoff of one of its members in a group of N whose co-players are drawn
from the rest of the population (`group_evolution.finite_fitness`, hypergeometric). Processes
(one step each, a numpy Generator passed in; the order of draws is fixed, so a seed replays):

- `moran_step`: one birth-death event: a parent type drawn by `birth_probabilities`, its
  offspring (mutated with probability mu) replaces an individual drawn uniformly (the parent
  included, as `evolution.moran_step`).
- `wright_fisher_step`: a whole new generation of Z offspring of parents drawn with replacement
  by `birth_probabilities`, each mutated with probability mu.
- `pairwise_comparison_step`: a learner drawn uniformly switches with probability mu to another
  type chosen uniformly, else imitates a model drawn from the other Z-1 with probability
  1 / (1 + exp(beta (f_learner - f_model))) (egttools' process).

Mutation goes to a different type chosen uniformly (`evolution.mutate`). Birth probabilities are
proportional to count times fitness: with `beta` None the fitness itself, shifted to be
non-negative (by -min over present types when any is negative; by count alone when all are 0),
as `evolution.selection_weights`; with a number, exp(beta fitness) (exponential fitness), under
which a Moran process without mutation fixes with exactly the pairwise comparison rule's
probability (`group_evolution.fixation_probability`): both have T-/T+ = exp(-beta (f_A - f_B)).

`run_group_evolution` runs a process from initial counts and gives the counts per generation;
`fixation_statistics` runs it from several seeds to fixation. For Moran and pairwise comparison a
generation is one event (as in the pairwise runner). Pure: no I/O, randomness only from the
Generators passed in or made from the seeds given (`evolution.make_generator`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pdbench.core.evolution import make_generator, mutate, population_from_counts
from pdbench.core.group_evolution import fermi, finite_fitness

GROUP_PROCESSES = ("moran", "wright_fisher", "pairwise_comparison")

Counts = Sequence[int] | np.ndarray


def birth_probabilities(
    counts: Counts, fitness: Sequence[float] | np.ndarray, beta: float | None = None
) -> np.ndarray:
    """Per type: the probability that the next parent is of that type (see the module
    docstring); absent types get 0 whatever their fitness (NaN included)."""
    n = _counts(counts)
    present = n > 0
    f = np.where(present, np.asarray(fitness, dtype=np.float64), 0.0)
    if beta is None:
        low = f[present].min()
        if low < 0:
            f = f - low
        weights = np.where(present, n * f, 0.0)
        if weights.sum() <= 0:
            weights = n.astype(np.float64)
    else:
        weights = np.where(present, n * np.exp(beta * (f - f[present].max())), 0.0)
    return weights / weights.sum()


def moran_step(
    counts: Counts,
    fitness: Sequence[float] | np.ndarray,
    rng: np.random.Generator,
    mutation_rate: float = 0.0,
    beta: float | None = None,
) -> np.ndarray:
    """One birth-death event; returns the new counts. Draws: parent, the one replaced, mutation."""
    n = _counts(counts)
    return _moran(n, birth_probabilities(n, fitness, beta), rng, mutation_rate)


def wright_fisher_step(
    counts: Counts,
    fitness: Sequence[float] | np.ndarray,
    rng: np.random.Generator,
    mutation_rate: float = 0.0,
    beta: float | None = None,
) -> np.ndarray:
    """A whole new generation of Z offspring (multinomial over parent types), then mutation."""
    n = _counts(counts)
    return _wright_fisher(n, birth_probabilities(n, fitness, beta), rng, mutation_rate)


def _moran(
    n: np.ndarray, births: np.ndarray, rng: np.random.Generator, mutation_rate: float
) -> np.ndarray:
    parent = _draw(births, rng.random())
    dead = _pick(n, int(rng.integers(int(n.sum()))))
    child = parent
    if mutation_rate > 0:
        child = int(mutate(np.array([parent]), rng, mutation_rate, n.size)[0])
    out = n.copy()
    out[dead] -= 1
    out[child] += 1
    return out


def _wright_fisher(
    n: np.ndarray, births: np.ndarray, rng: np.random.Generator, mutation_rate: float
) -> np.ndarray:
    offspring = rng.multinomial(int(n.sum()), births)
    if mutation_rate > 0:
        individuals = mutate(population_from_counts(offspring), rng, mutation_rate, n.size)
        offspring = np.bincount(individuals, minlength=n.size)
    return offspring.astype(np.int64)


def pairwise_comparison_step(
    counts: Counts,
    fitness: Sequence[float] | np.ndarray,
    rng: np.random.Generator,
    mutation_rate: float = 0.0,
    beta: float = 1.0,
) -> np.ndarray:
    """One learner's update; returns the new counts. Draws: learner, mutation or not, then
    either the new type (mutation) or the model and whether it is imitated."""
    n = _counts(counts)
    if int(n.sum()) < 2:
        raise ValueError(
            f"the pairwise comparison rule needs 2 individuals or more (got {n.sum()})"
        )
    return _pairwise(n, np.asarray(fitness, dtype=np.float64), rng, mutation_rate, beta)


def _pairwise(
    n: np.ndarray, fitness: np.ndarray, rng: np.random.Generator, mutation_rate: float, beta: float
) -> np.ndarray:
    z = int(n.sum())
    learner = _pick(n, int(rng.integers(z)))
    if rng.random() < mutation_rate:
        new = int((learner + rng.integers(1, n.size)) % n.size) if n.size > 1 else learner
    else:
        others = n.copy()
        others[learner] -= 1
        model = _pick(others, int(rng.integers(z - 1)))
        imitates = rng.random() < fermi(beta, float(fitness[learner]), float(fitness[model]))
        new = model if imitates else learner
    out = n.copy()
    out[learner] -= 1
    out[new] += 1
    return out


def run_group_evolution(
    counts: Counts,
    payoffs: np.ndarray,
    group_size: int,
    rng: np.random.Generator,
    process: str = "moran",
    generations: int = 1000,
    mutation_rate: float = 0.0,
    beta: float | None = None,
) -> np.ndarray:
    """Counts per generation, shape (generations run + 1, s), row 0 the initial counts. Stops
    after `generations` steps, or earlier when one type is left and mutation_rate is 0."""
    memo = _Memo(payoffs, group_size, beta)
    return _run(counts, memo, rng, process, generations, mutation_rate, beta)


@dataclass(frozen=True, slots=True)
class FixationStats:
    """Runs of a process from the same counts: per type, the runs that ended with that type
    alone; `unfixed` the runs still mixed after the generation limit; `mean_generations` the
    mean generations to fixation over the fixed runs (None if none fixed)."""

    fixations: tuple[int, ...]
    unfixed: int
    mean_generations: float | None

    @property
    def runs(self) -> int:
        """How many runs (seeds)."""
        return sum(self.fixations) + self.unfixed

    def probability(self, strategy: int) -> float:
        """The share of runs in which `strategy` fixed."""
        return self.fixations[strategy] / self.runs


def fixation_statistics(
    counts: Counts,
    payoffs: np.ndarray,
    group_size: int,
    seeds: Sequence[int],
    process: str = "moran",
    max_generations: int = 100_000,
    beta: float | None = None,
) -> FixationStats:
    """Run the process without mutation once per seed (`make_generator(seed)`) until one type is
    left or `max_generations`; count which type fixed."""
    if not seeds:
        raise ValueError("fixation_statistics needs at least one seed")
    memo = _Memo(payoffs, group_size, beta)
    n = _counts(counts)
    fixed = [0] * n.size
    unfixed = 0
    lengths: list[int] = []
    for seed in seeds:
        path = _run(n, memo, make_generator(seed), process, max_generations, 0.0, beta)
        last = path[-1]
        if np.count_nonzero(last) == 1:
            fixed[int(np.flatnonzero(last)[0])] += 1
            lengths.append(len(path) - 1)
        else:
            unfixed += 1
    return FixationStats(tuple(fixed), unfixed, float(np.mean(lengths)) if lengths else None)


# ----------------------------------------------------------------------------------------------


def _run(
    counts: Counts,
    memo: _Memo,
    rng: np.random.Generator,
    process: str,
    generations: int,
    mutation_rate: float,
    beta: float | None,
) -> np.ndarray:
    if process not in GROUP_PROCESSES:
        raise ValueError(f"unknown process {process!r}; choose one of {', '.join(GROUP_PROCESSES)}")
    if process == "pairwise_comparison" and beta is None:
        raise ValueError("the pairwise_comparison process needs a selection intensity beta >= 0")
    if generations < 0 or not 0.0 <= mutation_rate <= 1.0:
        raise ValueError(
            f"need generations >= 0 and 0 <= mutation_rate <= 1 (got {generations}, {mutation_rate})"
        )
    state = _counts(counts)
    memo(state)  # checks the payoff table and the population against the group size
    path = [state]
    for _ in range(generations):
        if mutation_rate == 0 and np.count_nonzero(state) <= 1:
            break
        fitness, births = memo(state)
        if process == "moran":
            state = _moran(state, births, rng, mutation_rate)
        elif process == "wright_fisher":
            state = _wright_fisher(state, births, rng, mutation_rate)
        else:
            state = _pairwise(state, fitness, rng, mutation_rate, float(beta))
        path.append(state)
    return np.array(path, dtype=np.int64)


class _Memo:
    """Fitness and birth probabilities remembered per state (runs revisit few states)."""

    def __init__(self, payoffs: np.ndarray, group_size: int, beta: float | None) -> None:
        self.table = np.asarray(payoffs, dtype=np.float64)
        self.group_size = group_size
        self.beta = beta
        self.known: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}

    def __call__(self, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = state.tobytes()
        if key not in self.known:
            fitness = finite_fitness(state, self.table, self.group_size)
            self.known[key] = (fitness, birth_probabilities(state, fitness, self.beta))
        return self.known[key]


def _counts(counts: Counts) -> np.ndarray:
    n = np.asarray(counts, dtype=np.int64)
    if n.ndim != 1 or n.size < 1 or (n < 0).any() or n.sum() < 1:
        raise ValueError(f"counts must be counts >= 0 per type, not all 0 (got {n.tolist()})")
    return n


def _draw(probabilities: np.ndarray, u: float) -> int:
    """The type drawn by a uniform u in [0, 1) from probabilities; never one of probability 0."""
    cumulative = np.cumsum(probabilities)
    index = int(np.searchsorted(cumulative, u * cumulative[-1], side="right"))
    return min(index, int(np.flatnonzero(probabilities > 0)[-1]))


def _pick(counts: np.ndarray, individual: int) -> int:
    """The type of individual number `individual` (0-based) when individuals are sorted by type."""
    for strategy, count in enumerate(counts.tolist()):
        if individual < count:
            return strategy
        individual -= count
    raise ValueError(f"no individual number {individual} in counts {counts.tolist()}")
