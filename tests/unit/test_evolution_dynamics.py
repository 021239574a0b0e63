"""Pure population dynamics: hand-checked steps and the neutral Moran fixation probability."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdbench.core import evolution as dyn


def test_expected_fitness_by_hand() -> None:
    # Types 0 and 1 with payoff [[3, 0], [5, 1]]; population: two of type 0, one of type 1.
    # Type 0 meets one other type-0 (3) and one type-1 (0): (3 + 0) / 2 = 1.5.
    # Type 1 meets two type-0 (5 each): (5 + 5) / 2 = 5.
    payoff = np.array([[3.0, 0.0], [5.0, 1.0]])
    population = np.array([0, 0, 1])
    assert dyn.expected_fitness(population, payoff).tolist() == [1.5, 1.5, 5.0]


def test_fitness_from_matches_by_hand() -> None:
    # Three individuals, all pairs: (0,1): 3/3, (0,2): 0/5, (1,2): 1/1.
    first, second = dyn.all_pairs(3)
    assert (first.tolist(), second.tolist()) == ([0, 0, 1], [1, 2, 2])
    fitness = dyn.fitness_from_matches(
        3, first, second, np.array([3.0, 0.0, 1.0]), np.array([3.0, 5.0, 1.0])
    )
    assert fitness.tolist() == [1.5, 2.0, 3.0]


def test_eliminate_clone_removes_worst_and_clones_best() -> None:
    population = np.array([0, 1, 2, 3, 4, 5])
    fitness = np.array([1.0, 5.0, 3.0, 2.0, 4.0, 0.0])
    out = dyn.eliminate_clone_step(population, fitness, 2, dyn.make_generator(1))
    # Worst two: individuals 5 (0.0) and 0 (1.0) go; best two: 1 (5.0) and 4 (4.0) are cloned.
    assert out.tolist() == [1, 1, 2, 3, 4, 4]
    with pytest.raises(ValueError):
        dyn.eliminate_clone_step(population, fitness, 4, dyn.make_generator(1))


def test_eliminate_clone_breaks_ties_at_random() -> None:
    population = np.array([0, 1, 2, 3])
    outcomes = {
        tuple(dyn.eliminate_clone_step(population, np.ones(4), 1, dyn.make_generator(s)).tolist())
        for s in range(40)
    }
    assert len(outcomes) > 4  # different individuals removed and cloned
    assert all(len(o) == 4 for o in outcomes)


def test_wright_fisher_and_moran_follow_fitness() -> None:
    population = np.array([0, 0, 1, 1])
    fitness = np.array([0.0, 0.0, 2.0, 2.0])  # type 0 never reproduces
    rng = dyn.make_generator(3)
    assert dyn.wright_fisher_step(population, fitness, rng).tolist() == [1, 1, 1, 1]
    for _ in range(20):
        population = dyn.moran_step(
            population, dyn.expected_fitness(population, np.array([[0.0, 0.0], [2.0, 2.0]])), rng
        )
        assert population.size == 4
    assert dyn.type_counts(population, 2)[0] <= 2


def test_mutation() -> None:
    rng = dyn.make_generator(0)
    types = np.array([0, 1, 2] * 10)
    assert (dyn.mutate(types, rng, 0.0, 3) == types).all()
    mutated = dyn.mutate(types, rng, 1.0, 3)
    assert (mutated != types).all() and set(mutated.tolist()) <= {0, 1, 2}


def test_selection_weights() -> None:
    assert dyn.selection_weights(np.array([1.0, 3.0])).tolist() == [0.25, 0.75]
    assert dyn.selection_weights(np.array([0.0, 0.0])).tolist() == [0.5, 0.5]
    assert dyn.selection_weights(np.array([-1.0, 1.0])).tolist() == [0.0, 1.0]


def test_neutral_moran_fixation_probability() -> None:
    # Two types of equal fitness: type 0 fixes with probability i/N (here 2/5).
    # 2000 runs; binomial 4-sigma bound (about +-0.044).
    size, start, runs = 5, 2, 2000
    payoff = np.full((2, 2), 3.0)
    rng = dyn.make_generator(20240501)
    fixed_zero = 0
    for _ in range(runs):
        population = dyn.population_from_counts([start, size - start])
        while not dyn.is_fixed(population):
            population = dyn.moran_step(
                population, dyn.expected_fitness(population, payoff), rng, 0.0, 2
            )
        fixed_zero += int(population[0] == 0)
    p = start / size
    assert abs(fixed_zero / runs - p) <= 4 * math.sqrt(p * (1 - p) / runs)
