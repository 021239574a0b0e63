"""Evolution of strategies that meet in groups: fitness from group compositions.

Payoff table (egttools' layout). With s strategies and groups of N, a group configuration is a
composition of N among the s strategies (how many of each are in the group); `payoffs[i, c]` is
strategy i's payoff in configuration c. Configurations are ordered as
`egttools.sample_simplex(c, N, s)` orders them: first count descending, then the second, ...
(N = 3, s = 3: (3,0,0), (2,1,0), (2,0,1), (1,2,0), (1,1,1), ...; two strategies: (N-c, c)).
An entry whose strategy is absent from its configuration is never used (`payoff_table` leaves
it 0). `payoff_table` fills the table from any `payoff_of(composition)` (e.g. played games);
`unconditional_payoffs` from a `GroupGame` for the strategies (C, D).

Fitness is a focal player's expected payoff in one group:

- `finite_fitness`: in a well-mixed population of Z with counts n, the N-1 co-players are drawn
  without replacement from the Z-1 others (multivariate hypergeometric);
- `infinite_fitness`: at frequencies x, co-players are drawn independently (multinomial), and
  `replicator_gradient` is the N-player replicator equation x_i (f_i - sum_j x_j f_j).

Finite populations under the pairwise comparison rule (Traulsen, Nowak & Pacheco 2006, as in
egttools' `PairwiseComparison`): a random learner imitates a random other individual, the model,
with probability 1 / (1 + exp(beta (f_learner - f_model))); with probability mu it switches
instead to another strategy chosen uniformly. `fixation_probability`, `gradient_of_selection`,
`transition_matrix` (all states, with mutation), `monomorphic_transitions` (the small-mutation
limit) and `stationary_distribution` are exact.

Stochastic processes over type counts for the runner are in `pdbench.core.group_process`.
Pure: numpy only, no I/O, no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache

import numpy as np

from pdbench.core.group_game import GroupGame

PayoffOf = Callable[[tuple[int, ...]], Sequence[float]]


# ----------------------------------------------------------------------------------------------
# Group configurations in egttools' order


def nb_compositions(total: int, n_strategies: int) -> int:
    """How many ways `total` individuals split among `n_strategies` types
    (egttools' `calculate_nb_states(total, n_strategies)`)."""
    if total < 0 or n_strategies < 1:
        raise ValueError(f"need total >= 0 and n_strategies >= 1 (got {total}, {n_strategies})")
    return math.comb(total + n_strategies - 1, n_strategies - 1)


def compositions(total: int, n_strategies: int) -> np.ndarray:
    """Every composition of `total` among `n_strategies`, one a row, in egttools' order: row c
    is `egttools.sample_simplex(c, total, n_strategies)`. Read-only (shared)."""
    nb_compositions(total, n_strategies)  # validates
    return _compositions(total, n_strategies)


@lru_cache(maxsize=64)
def _compositions(total: int, n_strategies: int) -> np.ndarray:
    rows = list(_compose(total, n_strategies))
    out = np.array(rows, dtype=np.int64).reshape(len(rows), n_strategies)
    out.flags.writeable = False
    return out


def _compose(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    if parts == 1:
        yield (total,)
        return
    for first in range(total, -1, -1):
        for rest in _compose(total - first, parts - 1):
            yield (first, *rest)


def composition_index(composition: Sequence[int]) -> int:
    """The row of `composition` in `compositions(sum, len)` (egttools' `calculate_state`)."""
    counts = [int(v) for v in composition]
    if not counts or min(counts) < 0:
        raise ValueError(f"a composition is a non-empty list of counts >= 0 (got {counts})")
    remaining, index, parts = sum(counts), 0, len(counts)
    for a in range(parts - 1):
        # configurations with a larger count in position a come first
        index += sum(
            nb_compositions(remaining - h, parts - a - 1)
            for h in range(counts[a] + 1, remaining + 1)
        )
        remaining -= counts[a]
    return index


@lru_cache(maxsize=64)
def _with_focal(group_size: int, n_strategies: int) -> np.ndarray:
    """[i, k]: the configuration index of co-players `compositions(N-1, s)[k]` plus a focal i."""
    full = {
        tuple(int(v) for v in row): c
        for c, row in enumerate(_compositions(group_size, n_strategies))
    }
    co = _compositions(group_size - 1, n_strategies)
    out = np.empty((n_strategies, len(co)), dtype=np.int64)
    for i in range(n_strategies):
        for k, row in enumerate(co):
            group = [int(v) for v in row]
            group[i] += 1
            out[i, k] = full[tuple(group)]
    out.flags.writeable = False
    return out


@lru_cache(maxsize=64)
def _multinomial_coefficients(total: int, n_strategies: int) -> np.ndarray:
    """total! / prod m_j! for every composition m of `total`, in order."""
    rows = _compositions(total, n_strategies)
    out = np.array(
        [math.factorial(total) // math.prod(math.factorial(int(v)) for v in row) for row in rows],
        dtype=np.float64,
    )
    out.flags.writeable = False
    return out


# ----------------------------------------------------------------------------------------------
# Payoff tables


def payoff_table(payoff_of: PayoffOf, n_strategies: int, group_size: int) -> np.ndarray:
    """payoffs[i, c] from `payoff_of(composition) -> one payoff per strategy`, called once per
    configuration (a tuple of counts, egttools' order); absent strategies' entries stay 0."""
    _check_group_size(group_size)
    configs = compositions(group_size, n_strategies)
    table = np.zeros((n_strategies, len(configs)))
    for c, config in enumerate(configs):
        values = np.asarray(payoff_of(tuple(int(v) for v in config)), dtype=np.float64)
        if values.shape != (n_strategies,):
            raise ValueError(
                f"payoff_of{tuple(config)} gave shape {values.shape}; one payoff per strategy "
                f"({n_strategies}) is needed"
            )
        present = config > 0
        table[present, c] = values[present]
    return table


def unconditional_payoffs(game: GroupGame) -> np.ndarray:
    """The payoff table of the strategies (C, D) = (0, 1), always cooperate and always defect:
    in configuration (k, N-k) a cooperator gets pay_c[k-1] and a defector pay_d[k]."""

    def payoff_of(composition: tuple[int, ...]) -> tuple[float, float]:
        cooperators, defectors = composition
        return (
            game.pay_c[cooperators - 1] if cooperators else 0.0,
            game.pay_d[cooperators] if defectors else 0.0,
        )

    return payoff_table(payoff_of, 2, game.n_players)


# ----------------------------------------------------------------------------------------------
# Fitness


def finite_fitness(
    counts: Sequence[int] | np.ndarray, payoffs: np.ndarray, group_size: int
) -> np.ndarray:
    """Per strategy: a focal player's expected payoff in a population with `counts`, its N-1
    co-players drawn without replacement from the other Z-1 individuals (multivariate
    hypergeometric); NaN for a strategy with no individual."""
    table, s = _table(payoffs, group_size)
    n = _counts(counts, s)
    z = int(n.sum())
    if z < group_size:
        raise ValueError(f"a population of {z} cannot form groups of {group_size}")
    co = group_size - 1
    groups = _compositions(co, s)  # (K, s) co-player compositions
    others = np.maximum(n[None, :] - np.eye(s, dtype=np.int64), 0)  # row i: the others of an i
    ways = _binomials(others, co)  # [i, j, m] = C(others[i, j], m)
    picked = ways[:, np.arange(s)[None, :], groups]  # [i, k, j] = C(others[i, j], groups[k, j])
    probability = picked.prod(axis=2) / float(math.comb(z - 1, co))
    payoff = table[np.arange(s)[:, None], _with_focal(group_size, s)]  # [i, k]
    fitness = (probability * payoff).sum(axis=1)
    return np.where(n > 0, fitness, np.nan)


def _binomials(n: np.ndarray, top: int) -> np.ndarray:
    """C(n, m) for m = 0..top, on a new last axis (n >= 0): falling factorial over m!."""
    steps = n[..., None] - np.arange(top)  # n, n-1, ..., n-top+1
    falling = np.concatenate(
        [np.ones(n.shape + (1,)), np.cumprod(np.maximum(steps, 0), axis=-1, dtype=np.float64)],
        axis=-1,
    )
    factorials = np.array([math.factorial(m) for m in range(top + 1)], dtype=np.float64)
    return falling / factorials


def infinite_fitness(
    x: Sequence[float] | np.ndarray, payoffs: np.ndarray, group_size: int
) -> np.ndarray:
    """Per strategy: a focal player's expected payoff when its N-1 co-players are drawn
    independently at frequencies `x` (multinomial)."""
    table, s = _table(payoffs, group_size)
    freq = np.asarray(x, dtype=np.float64)
    if freq.shape != (s,):
        raise ValueError(f"x needs one frequency per strategy ({s}), got shape {freq.shape}")
    co = group_size - 1
    groups = _compositions(co, s)
    probability = _multinomial_coefficients(co, s) * np.prod(
        np.power(freq[None, :], groups), axis=1
    )
    return table[np.arange(s)[:, None], _with_focal(group_size, s)] @ probability


def replicator_gradient(
    x: Sequence[float] | np.ndarray, payoffs: np.ndarray, group_size: int
) -> np.ndarray:
    """The N-player replicator equation dx_i/dt = x_i (f_i - sum_j x_j f_j), f = infinite_fitness
    (egttools' `replicator_equation_n_player(x, payoffs, group_size)`)."""
    freq = np.asarray(x, dtype=np.float64)
    fitness = infinite_fitness(freq, payoffs, group_size)
    return freq * (fitness - freq @ fitness)


# ----------------------------------------------------------------------------------------------
# Finite populations: the pairwise comparison rule


def fermi(beta: float, learner: float, model: float) -> float:
    """Probability that a learner of fitness `learner` imitates a model of fitness `model`."""
    exponent = beta * (learner - model)
    return 0.0 if exponent > 700.0 else 1.0 / (1.0 + math.exp(exponent))


def fixation_probability(
    invader: int,
    resident: int,
    payoffs: np.ndarray,
    group_size: int,
    population_size: int,
    beta: float,
) -> float:
    """Probability that one `invader` takes over a population of `resident`s under the pairwise
    comparison rule without mutation: 1 / (1 + sum_{m=1}^{Z-1} prod_{k=1}^{m} T-(k)/T+(k)), where
    T-/T+ = exp(-beta (f_invader(k) - f_resident(k))) with k invaders (egttools'
    `PairwiseComparison(Z, game).calculate_fixation_probability(invader, resident, beta)`)."""
    _, s = _table(payoffs, group_size)
    _check_pair(invader, resident, s)
    _check_population(population_size, group_size, beta)
    z = population_size
    log_ratios = np.empty(z - 1)
    counts = np.zeros(s, dtype=np.int64)
    for k in range(1, z):
        counts[invader], counts[resident] = k, z - k
        fitness = finite_fitness(counts, payoffs, group_size)
        log_ratios[k - 1] = -beta * (fitness[invader] - fitness[resident])
    terms = np.concatenate([[0.0], np.cumsum(log_ratios)])  # log of 1 and of each product
    top = terms.max()
    return float(np.exp(-top) / np.exp(terms - top).sum())


def gradient_of_selection(
    counts: Sequence[int] | np.ndarray, payoffs: np.ndarray, group_size: int, beta: float
) -> np.ndarray:
    """Per strategy i: the expected change of its count in one update without mutation,
    sum_j n_i n_j / (Z (Z-1)) tanh(beta (f_i - f_j) / 2) (T+ - T- for two strategies; egttools'
    `calculate_gradient_of_selection` divides this sum by s / 2, so they agree for s = 2)."""
    table, s = _table(payoffs, group_size)
    n = _counts(counts, s)
    z = int(n.sum())
    _check_population(z, group_size, beta)
    fitness = np.nan_to_num(finite_fitness(n, table, group_size))
    pair = np.outer(n, n) / (z * (z - 1))
    return (pair * np.tanh(beta * (fitness[:, None] - fitness[None, :]) / 2)).sum(axis=1)


def transition_matrix(
    payoffs: np.ndarray,
    group_size: int,
    population_size: int,
    beta: float,
    mutation_rate: float,
) -> np.ndarray:
    """Row-stochastic T[a, b] between all population states (`compositions(Z, s)` order) of the
    pairwise comparison rule with mutation (egttools' `calculate_transition_matrix(beta, mu)`):
    a learner of j (n_j / Z) becomes an i with probability
    mu / (s-1) + (1 - mu) n_i / (Z-1) fermi(beta, f_j, f_i)."""
    table, s = _table(payoffs, group_size)
    _check_population(population_size, group_size, beta)
    if not 0.0 <= mutation_rate <= 1.0 or s < 2:
        raise ValueError(
            f"need 0 <= mutation_rate <= 1 and two strategies or more (got {mutation_rate}, {s})"
        )
    z = population_size
    states = compositions(z, s)
    where = {tuple(int(v) for v in row): a for a, row in enumerate(states)}
    out = np.zeros((len(states), len(states)))
    mutation = mutation_rate / (s - 1)
    for a, state in enumerate(states):
        fitness = finite_fitness(state, table, group_size)
        for j in np.flatnonzero(state):
            for i in range(s):
                if i == j:
                    continue
                imitate = 0.0
                if state[i] > 0:
                    imitate = state[i] / (z - 1) * fermi(beta, fitness[j], fitness[i])
                after = state.copy()
                after[j] -= 1
                after[i] += 1
                out[a, where[tuple(int(v) for v in after)]] += (
                    state[j] / z * (mutation + (1.0 - mutation_rate) * imitate)
                )
        out[a, a] = 1.0 - out[a].sum()
    return out


def monomorphic_transitions(
    payoffs: np.ndarray, group_size: int, population_size: int, beta: float
) -> tuple[np.ndarray, np.ndarray]:
    """The small-mutation limit: (transitions, fixation) among the s monomorphic states, with
    fixation[i, j] the probability that one j takes over a population of i and transitions[i, j]
    = fixation[i, j] / (s-1) off the diagonal (egttools'
    `calculate_transition_and_fixation_matrix_sml(beta)`)."""
    _, s = _table(payoffs, group_size)
    fixation = np.zeros((s, s))
    for i in range(s):
        for j in range(s):
            if i != j:
                fixation[i, j] = fixation_probability(
                    j, i, payoffs, group_size, population_size, beta
                )
    transitions = fixation / (s - 1)
    np.fill_diagonal(transitions, 1.0 - transitions.sum(axis=1))
    return transitions, fixation


def stationary_distribution(transitions: np.ndarray) -> np.ndarray:
    """pi with pi T = pi and sum pi = 1 for a row-stochastic T with a single closed class (e.g.
    `transition_matrix` with mutation > 0, or `monomorphic_transitions` with every fixation > 0)."""
    t = np.asarray(transitions, dtype=np.float64)
    if t.ndim != 2 or t.shape[0] != t.shape[1]:
        raise ValueError(f"transitions must be a square matrix (got shape {t.shape})")
    system = t.T - np.eye(t.shape[0])
    system[-1, :] = 1.0
    rhs = np.zeros(t.shape[0])
    rhs[-1] = 1.0
    try:
        pi = np.linalg.solve(system, rhs)
    except np.linalg.LinAlgError as err:
        raise ValueError(
            "transitions has no unique stationary distribution (more than one closed class; "
            "use a mutation rate > 0)"
        ) from err
    return np.clip(pi, 0.0, None) / np.clip(pi, 0.0, None).sum()


# ----------------------------------------------------------------------------------------------
# Checks


def _check_group_size(group_size: int) -> None:
    if group_size < 2:
        raise ValueError(f"group_size must be 2 or more (got {group_size})")


def _table(payoffs: np.ndarray, group_size: int) -> tuple[np.ndarray, int]:
    """The payoff table as floats and its number of strategies, its shape checked."""
    _check_group_size(group_size)
    table = np.asarray(payoffs, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] < 1:
        raise ValueError(
            f"payoffs must be a 2-D table (strategies x configurations), got {table.shape}"
        )
    s = table.shape[0]
    need = nb_compositions(group_size, s)
    if table.shape[1] != need:
        raise ValueError(
            f"payoffs has {table.shape[1]} configurations; {s} strategies in groups of "
            f"{group_size} have {need}"
        )
    return table, s


def _counts(counts: Sequence[int] | np.ndarray, n_strategies: int) -> np.ndarray:
    n = np.asarray(counts, dtype=np.int64)
    if n.shape != (n_strategies,) or (n < 0).any():
        raise ValueError(
            f"counts needs {n_strategies} counts >= 0 (got {np.asarray(counts).tolist()})"
        )
    return n


def _check_pair(invader: int, resident: int, n_strategies: int) -> None:
    if invader == resident or not (0 <= invader < n_strategies and 0 <= resident < n_strategies):
        raise ValueError(
            f"invader and resident must be two different strategies 0..{n_strategies - 1} "
            f"(got {invader}, {resident})"
        )


def _check_population(population_size: int, group_size: int, beta: float) -> None:
    if population_size < max(group_size, 2):
        raise ValueError(
            f"population_size must be at least the group size {group_size} (got {population_size})"
        )
    if not (math.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta must be a finite number >= 0 (got {beta})")
