"""Evolution with fitness from group compositions, checked against egttools, by hand, against
pdbench's pairwise evolution (N = 2) and by simulating the processes over many seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdbench.core import evolution as dyn
from pdbench.core import group_evolution as ge
from pdbench.core import group_process as gp
from pdbench.core.group_game import GroupGame

try:  # a dev dependency with wheels for CPython 3.12 only (see pyproject.toml)
    import egttools
    from egttools.analytical import PairwiseComparison, replicator_equation_n_player
    from egttools.behaviors.pgg_behaviors import PGGOneShotStrategy
    from egttools.games import PGG, MatrixNPlayerGameHolder, NPlayerStagHunt
    from egttools.utils import calculate_stationary_distribution
except ImportError:  # pragma: no cover - only where egttools has no wheel
    egttools = None

needs_egttools = pytest.mark.skipif(egttools is None, reason="egttools is not installed")

HAWK_DOVE_3 = np.array([[-0.5, 2.0, 1.0, 3.0], [0.0, 0.0, 1.0, 2.0]])  # egttools' doc example


def pgg_table(n: int, r: float = 2.0, c: float = 1.0) -> np.ndarray:
    return ge.unconditional_payoffs(GroupGame.public_goods(n, r, c))


def random_table(n: int, s: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(s, ge.nb_compositions(n, s)))


# ----------------------------------------------------------------------------------------------
# Configurations and payoff tables


def test_compositions_by_hand() -> None:
    assert ge.compositions(3, 3).tolist() == [
        [3, 0, 0], [2, 1, 0], [2, 0, 1], [1, 2, 0], [1, 1, 1],
        [1, 0, 2], [0, 3, 0], [0, 2, 1], [0, 1, 2], [0, 0, 3],
    ]  # fmt: skip
    assert ge.compositions(2, 2).tolist() == [[2, 0], [1, 1], [0, 2]]
    assert [ge.composition_index(c) for c in ge.compositions(4, 3)] == list(range(15))
    assert ge.nb_compositions(4, 3) == 15


@needs_egttools
@pytest.mark.parametrize(("n", "s"), [(3, 2), (3, 3), (5, 4), (20, 3), (1, 5), (0, 2)])
def test_compositions_are_egttools_order(n: int, s: int) -> None:
    rows = ge.compositions(n, s)
    assert len(rows) == ge.nb_compositions(n, s) == egttools.calculate_nb_states(n, s)
    for c, row in enumerate(rows):
        assert row.tolist() == egttools.sample_simplex(c, n, s).tolist()
        assert ge.composition_index(row) == egttools.calculate_state(n, row.astype(np.uint64))


def test_payoff_table_from_a_function() -> None:
    # Strategy i's payoff is (i + 1) times a number that spells the composition.
    table = ge.payoff_table(
        lambda c: [(i + 1) * (c[0] + 10 * c[1] + 100 * c[2]) for i in range(3)], 3, 2
    )
    # configurations (2,0,0) (1,1,0) (1,0,1) (0,2,0) (0,1,1) (0,0,2); absent strategies get 0
    assert table.tolist() == [
        [2, 11, 101, 0, 0, 0],
        [0, 22, 0, 40, 220, 0],
        [0, 0, 303, 0, 330, 600],
    ]
    with pytest.raises(ValueError, match="one payoff per strategy"):
        ge.payoff_table(lambda c: [1.0], 3, 2)


def test_unconditional_payoffs_by_hand() -> None:
    # PGG N=3, r=2, c=1: with k cooperators in the group a cooperator gets 2k/3 - 1, a defector 2k/3
    table = pgg_table(3)
    expected = [[1.0, 1 / 3, -1 / 3, 0.0], [0.0, 4 / 3, 2 / 3, 0.0]]
    np.testing.assert_allclose(table, expected, rtol=0, atol=1e-15)


@needs_egttools
@pytest.mark.parametrize("n", [3, 5])
def test_unconditional_payoffs_equal_egttools_games(n: int) -> None:
    pgg = PGG(n, 1.0, 2.0, [PGGOneShotStrategy(1), PGGOneShotStrategy(0)])
    np.testing.assert_allclose(pgg_table(n), pgg.calculate_payoffs(), rtol=0, atol=1e-14)
    # egttools' stag hunt orders (D, C) and has c = 1
    hunt = NPlayerStagHunt(group_size=n, enhancement_factor=2.5, cooperation_threshold=2, cost=1.0)
    mine = ge.unconditional_payoffs(GroupGame.stag_hunt(n, 2, 2.5, 1.0))
    np.testing.assert_allclose(mine[::-1, ::-1], hunt.calculate_payoffs(), rtol=0, atol=1e-14)


# ----------------------------------------------------------------------------------------------
# Fitness


def test_finite_fitness_by_hand_two_strategies() -> None:
    # Z=4, N=3, PGG r=2: pay_c = [-1/3, 1/3, 1], pay_d = [0, 2/3, 4/3]; 2 C and 2 D.
    # A C's two co-players come from {C, D, D}: k=0 with 1/3, k=1 with 2/3 -> -1/9 + 2/9 = 1/9.
    # A D's come from {C, C, D}: k=2 with 1/3, k=1 with 2/3 -> 4/9 + 4/9 = 8/9.
    np.testing.assert_allclose(
        ge.finite_fitness([2, 2], pgg_table(3), 3), [1 / 9, 8 / 9], atol=1e-15
    )


def test_finite_fitness_by_hand_three_strategies() -> None:
    # Z=4, N=3, counts (2, 1, 1); payoff of strategy i in (a, b, c): (i + 1)(a + 10 b + 100 c).
    # A 0 meets two of {0, 1, 2}: groups (2,1,0) (2,0,1) (1,1,1) -> (12 + 102 + 111) / 3 = 75.
    # A 1 meets two of {0, 0', 2}: (2,1,0) once, (1,1,1) twice -> (24 + 2 * 222) / 3 = 156.
    # A 2 meets two of {0, 0', 1}: (2,0,1) once, (1,1,1) twice -> (306 + 2 * 333) / 3 = 324.
    table = ge.payoff_table(
        lambda c: [(i + 1) * (c[0] + 10 * c[1] + 100 * c[2]) for i in range(3)], 3, 3
    )
    np.testing.assert_allclose(ge.finite_fitness([2, 1, 1], table, 3), [75, 156, 324], rtol=1e-14)
    fitness = ge.finite_fitness([3, 0, 1], table, 3)
    assert np.isnan(fitness[1]) and not np.isnan(fitness[[0, 2]]).any()


@pytest.mark.parametrize(("z", "n", "r"), [(10, 3, 2.0), (20, 5, 3.0), (7, 7, 4.5), (50, 4, 1.5)])
def test_pgg_fitness_difference_in_closed_form(z: int, n: int, r: float) -> None:
    # Linear PGG: f_C - f_D = r c / N (1 - (N-1)/(Z-1)) - c whatever the counts (a C sees one
    # cooperator fewer among the others than a D does).
    expected = r / n * (z - n) / (z - 1) - 1.0
    for i in range(1, z):
        f = ge.finite_fitness([i, z - i], pgg_table(n, r), n)
        assert f[0] - f[1] == pytest.approx(expected, abs=1e-12)


def test_two_player_groups_are_the_pairwise_evolution() -> None:
    # N = 2: the configuration (a, b) holds the focal and one co-player, and fitness is
    # pdbench's expected_fitness from the 2x2 matrix (mean over every other individual).
    matrix = np.array([[3.0, 0.0, 2.0], [5.0, 1.0, -1.0], [4.0, 2.0, 0.5]])

    def payoff_of(c: tuple[int, ...]) -> list[float]:
        return [
            matrix[i, (np.array(c) - np.eye(3, dtype=int)[i]).argmax()] if c[i] else 0.0
            for i in range(3)
        ]

    table = ge.payoff_table(payoff_of, 3, 2)
    counts = [4, 1, 3]
    population = dyn.population_from_counts(counts)
    per_individual = dyn.expected_fitness(population, matrix)
    np.testing.assert_allclose(
        ge.finite_fitness(counts, table, 2)[population], per_individual, atol=1e-14
    )


def test_infinite_fitness_of_pgg_by_hand() -> None:
    # Co-players cooperate independently with x: E[k] = (N-1) x, so f_C - f_D = r c / N - c and
    # the replicator gradient of C is x (1 - x) (r / N - 1).
    for x in np.linspace(0, 1, 7):
        f = ge.infinite_fitness([x, 1 - x], pgg_table(5, 3.0), 5)
        assert f[1] == pytest.approx(3.0 * 4 * x / 5, abs=1e-13)
        assert f[0] - f[1] == pytest.approx(3.0 / 5 - 1, abs=1e-13)
        grad = ge.replicator_gradient([x, 1 - x], pgg_table(5, 3.0), 5)
        np.testing.assert_allclose(
            grad, np.array([1, -1]) * x * (1 - x) * (3.0 / 5 - 1), atol=1e-13
        )


@needs_egttools
@pytest.mark.parametrize(
    ("table", "n"),
    [(HAWK_DOVE_3, 3), (pgg_table(3), 3), (pgg_table(3, 2.5), 3), (pgg_table(6, 4.0), 6)],
    ids=["hawk_dove", "pgg_r2", "pgg_r2.5", "pgg_n6"],
)
def test_replicator_gradient_equals_egttools(table: np.ndarray, n: int) -> None:
    for x in np.linspace(0, 1, 41):
        freq = np.array([x, 1 - x])
        expected = replicator_equation_n_player(freq, table, n)
        np.testing.assert_allclose(
            ge.replicator_gradient(freq, table, n), expected, rtol=0, atol=1e-12
        )


@needs_egttools
def test_replicator_gradient_of_three_strategies_equals_egttools() -> None:
    table = random_table(4, 3, seed=5)
    for x in np.random.default_rng(6).dirichlet([1, 1, 1], size=30):
        expected = replicator_equation_n_player(x, table, 4)
        np.testing.assert_allclose(
            ge.replicator_gradient(x, table, 4), expected, rtol=0, atol=1e-12
        )


# ----------------------------------------------------------------------------------------------
# Finite populations: the pairwise comparison rule


def _assert_fixation_matches(mine: float, theirs: float) -> None:
    if theirs == 0.0:  # egttools stops and returns 0 once the sum exceeds 1e7
        assert 0.0 <= mine < 1e-7
    else:
        assert mine == pytest.approx(theirs, rel=0, abs=1e-10)


@needs_egttools
@pytest.mark.parametrize("z", [20, 35, 50])
def test_fixation_in_pgg_equals_egttools(z: int) -> None:
    game = PGG(3, 1.0, 2.0, [PGGOneShotStrategy(1), PGGOneShotStrategy(0)])
    model = PairwiseComparison(z, game)
    table = pgg_table(3)
    compared = 0
    for beta in (0.0, 0.01, 0.1, 0.5, 1.0, 5.0):
        for invader, resident in ((0, 1), (1, 0)):
            theirs = model.calculate_fixation_probability(invader, resident, beta)
            _assert_fixation_matches(
                ge.fixation_probability(invader, resident, table, 3, z, beta), theirs
            )
            compared += theirs > 0
    assert compared >= 8  # most cases compared to 1e-10, not only below egttools' cut-off


@needs_egttools
@pytest.mark.parametrize("z", [20, 35, 50])
def test_fixation_in_stag_hunt_equals_egttools(z: int) -> None:
    hunt = NPlayerStagHunt(group_size=3, enhancement_factor=2.5, cooperation_threshold=2, cost=1.0)
    model = PairwiseComparison(z, hunt)  # strategies (D, C)
    table = ge.unconditional_payoffs(GroupGame.stag_hunt(3, 2, 2.5, 1.0))  # (C, D)
    for beta in (0.0, 0.05, 0.2, 1.0, 3.0):
        for mine_c, theirs_c in ((0, 1), (1, 0)):
            theirs = model.calculate_fixation_probability(theirs_c, 1 - theirs_c, beta)
            mine = ge.fixation_probability(mine_c, 1 - mine_c, table, 3, z, beta)
            _assert_fixation_matches(mine, theirs)


@pytest.mark.parametrize(
    ("table", "n", "z"),
    [(pgg_table(3), 3, 20), (HAWK_DOVE_3, 3, 7), (random_table(4, 3, 1), 4, 30)],
)
def test_neutral_drift_fixes_with_one_over_z(table: np.ndarray, n: int, z: int) -> None:
    assert ge.fixation_probability(1, 0, table, n, z, 0.0) == pytest.approx(1 / z, abs=1e-15)
    assert ge.fixation_probability(0, table.shape[0] - 1, table, n, z, 0.0) == pytest.approx(
        1 / z, abs=1e-15
    )


@pytest.mark.parametrize(("z", "beta"), [(10, 0.3), (20, 1.0), (50, 0.05)])
def test_fixation_of_defectors_in_pgg_in_closed_form(z: int, beta: float) -> None:
    # f_D - f_C = delta is the same in every state, so T-/T+ = g = exp(-beta delta) and
    # rho_D = 1 / sum_{m<Z} g^m = (1 - g) / (1 - g^Z); rho_C is the same with -delta.
    delta = 1.0 - 2.0 / 3 * (z - 3) / (z - 1)
    for invader, d in ((1, delta), (0, -delta)):
        g = math.exp(-beta * d)
        expected = (1 - g) / (1 - g**z)
        assert ge.fixation_probability(
            invader, 1 - invader, pgg_table(3), 3, z, beta
        ) == pytest.approx(expected, rel=1e-12)


@needs_egttools
def test_gradient_of_selection_equals_egttools() -> None:
    # PairwiseComparison keeps a reference to its game: the game must outlive it (a variable)
    game = PGG(3, 1.0, 2.0, [PGGOneShotStrategy(1), PGGOneShotStrategy(0)])
    model = PairwiseComparison(25, game)
    for i in range(0, 26):
        state = np.array([i, 25 - i], dtype=np.uint64)
        expected = model.calculate_gradient_of_selection(0.7, state)
        np.testing.assert_allclose(
            ge.gradient_of_selection(state, pgg_table(3), 3, 0.7), expected, atol=1e-14
        )
    # three strategies: egttools divides the sum over ordered pairs by s (= 3), not by 2
    table = random_table(4, 3, seed=2)
    game3 = MatrixNPlayerGameHolder(3, 4, table)
    model3 = PairwiseComparison(12, game3)
    for state in ([3, 4, 5], [0, 6, 6], [12, 0, 0], [1, 1, 10]):
        expected = model3.calculate_gradient_of_selection(0.7, np.array(state, dtype=np.uint64))
        np.testing.assert_allclose(
            ge.gradient_of_selection(state, table, 4, 0.7), expected * 3 / 2, atol=1e-14
        )


@needs_egttools
@pytest.mark.parametrize(("beta", "mu"), [(0.7, 0.05), (2.0, 0.001), (0.0, 0.3)])
def test_transition_matrix_and_stationary_distribution_equal_egttools(
    beta: float, mu: float
) -> None:
    table = random_table(4, 3, seed=7)
    game = MatrixNPlayerGameHolder(3, 4, table)
    model = PairwiseComparison(12, game)
    theirs = model.calculate_transition_matrix(beta, mu).toarray()
    mine = ge.transition_matrix(table, 4, 12, beta, mu)
    np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-13)
    np.testing.assert_allclose(mine.sum(axis=1), 1.0, atol=1e-13)
    # egttools takes the transposed (column-stochastic) matrix and uses an eigensolver, which
    # leaves a residual pi T - pi near 1e-15 here; pdbench's linear solve leaves less
    pi = ge.stationary_distribution(mine)
    assert np.abs(pi @ mine - pi).max() < 1e-16
    np.testing.assert_allclose(
        pi, calculate_stationary_distribution(theirs.T), rtol=1e-6, atol=1e-12
    )


@needs_egttools
def test_small_mutation_limit_equals_egttools() -> None:
    table = random_table(3, 3, seed=3)
    game = MatrixNPlayerGameHolder(3, 3, table)
    model = PairwiseComparison(30, game)
    for beta in (0.3, 0.5):  # every fixation probability above egttools' cut-off
        theirs_t, theirs_f = model.calculate_transition_and_fixation_matrix_sml(beta)
        assert (theirs_f + np.eye(3) > 1e-5).all()
        mine_t, mine_f = ge.monomorphic_transitions(table, 3, 30, beta)
        np.testing.assert_allclose(mine_f, theirs_f, rtol=0, atol=1e-12)
        np.testing.assert_allclose(mine_t, theirs_t, rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            ge.stationary_distribution(mine_t),
            calculate_stationary_distribution(theirs_t.T),
            rtol=0,
            atol=1e-10,
        )
    # beta = 1: one fixation probability (8.9e-9) is below egttools' cut-off, which gives 0
    theirs_t, theirs_f = model.calculate_transition_and_fixation_matrix_sml(1.0)
    mine_t, mine_f = ge.monomorphic_transitions(table, 3, 30, 1.0)
    for mine, theirs in zip(mine_f.ravel(), theirs_f.ravel(), strict=True):
        _assert_fixation_matches(float(mine), float(theirs))


def test_stationary_distribution_by_hand() -> None:
    # Two states leaving with a and b: pi = (b, a) / (a + b).
    a, b = 0.2, 0.05
    pi = ge.stationary_distribution(np.array([[1 - a, a], [b, 1 - b]]))
    np.testing.assert_allclose(pi, [0.2, 0.8], atol=1e-15)
    with pytest.raises(ValueError, match="stationary"):
        ge.stationary_distribution(np.eye(2))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ge.finite_fitness([1, 1], pgg_table(3), 3), "cannot form groups"),
        (lambda: ge.finite_fitness([1, 1, 1], pgg_table(3), 3), "counts needs 2"),
        (lambda: ge.replicator_gradient([0.5, 0.5], pgg_table(3), 4), "configurations"),
        (lambda: ge.fixation_probability(0, 0, pgg_table(3), 3, 10, 1.0), "two different"),
        (lambda: ge.fixation_probability(0, 1, pgg_table(3), 3, 10, -1.0), "beta"),
        (lambda: ge.fixation_probability(0, 1, pgg_table(3), 3, 2, 1.0), "population_size"),
    ],
)
def test_errors_name_the_problem(call, message: str) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match=message):
        call()


# ----------------------------------------------------------------------------------------------
# Stochastic processes


def test_birth_probabilities_by_hand() -> None:
    np.testing.assert_allclose(gp.birth_probabilities([2, 1, 0], [1.0, 3.0, np.nan]), [0.4, 0.6, 0])
    # a negative fitness: shifted by -min over present types -> (0, 2)
    np.testing.assert_allclose(gp.birth_probabilities([1, 1], [-1.0, 1.0]), [0.0, 1.0])
    np.testing.assert_allclose(gp.birth_probabilities([3, 1], [0.0, 0.0]), [0.75, 0.25])
    # exponential fitness: 1 * e^0 : 1 * e^(ln 2)
    np.testing.assert_allclose(
        gp.birth_probabilities([1, 1], [0.0, 1.0], math.log(2)), [1 / 3, 2 / 3]
    )


def test_steps_follow_fitness_and_mutation() -> None:
    rng = dyn.make_generator(3)
    assert gp.wright_fisher_step([2, 2], [0.0, 2.0], rng).tolist() == [0, 4]
    assert gp.moran_step([3, 0], [1.0, np.nan], rng, mutation_rate=1.0).tolist() == [2, 1]
    assert gp.pairwise_comparison_step([3, 0], [1.0, np.nan], rng, 1.0, 1.0).tolist() == [2, 1]
    # a learner always imitates a far fitter model and never a far worse one
    seen = {
        tuple(gp.pairwise_comparison_step([1, 1], [0.0, 1e3], rng, 0.0, 1.0)) for _ in range(40)
    }
    assert seen == {(0, 2), (1, 1)}  # the 0 learned from the 1; the 1 kept its strategy


@pytest.mark.parametrize("process", gp.GROUP_PROCESSES)
def test_run_keeps_size_stops_at_fixation_and_replays(process: str) -> None:
    table = pgg_table(3)
    path = gp.run_group_evolution(
        [15, 5], table, 3, dyn.make_generator(1), process, 10_000, beta=1.0
    )
    assert path[0].tolist() == [15, 5] and (path.sum(axis=1) == 20).all()
    assert np.count_nonzero(path[-1]) == 1 and np.count_nonzero(path[-2]) == 2
    again = gp.run_group_evolution(
        [15, 5], table, 3, dyn.make_generator(1), process, 10_000, beta=1.0
    )
    assert np.array_equal(path, again)
    mutating = gp.run_group_evolution(
        [20, 0], table, 3, dyn.make_generator(1), process, 50, 0.2, 1.0
    )
    assert mutating.shape == (51, 2)  # with mutation it runs the whole length


def test_run_rejects_bad_process_beta_and_table() -> None:
    with pytest.raises(ValueError, match="choose one of moran, wright_fisher"):
        gp.run_group_evolution([2, 2], pgg_table(3), 3, dyn.make_generator(0), "fermi")
    with pytest.raises(ValueError, match="beta"):
        gp.run_group_evolution(
            [2, 2], pgg_table(3), 3, dyn.make_generator(0), "pairwise_comparison"
        )
    with pytest.raises(ValueError, match="configurations"):  # checked even when already fixed
        gp.run_group_evolution([4, 0], pgg_table(4), 3, dyn.make_generator(0))


def _within(stats: gp.FixationStats, strategy: int, exact: float) -> None:
    """exact lies in the 99.9% Wilson interval of the simulated fixation share."""
    z, n, hits = 3.290526731491926, stats.runs, stats.fixations[strategy]
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert stats.unfixed == 0
    assert centre - half <= exact <= centre + half, (p, exact)


@pytest.mark.parametrize("process", ["moran", "pairwise_comparison"])
def test_simulated_fixation_matches_the_exact_probability(process: str) -> None:
    # One defector among 9 cooperators in the 3-player PGG (r=2), beta = 1. The Moran process
    # with exponential fitness has the pairwise comparison rule's T-/T+, so the same rho.
    exact = ge.fixation_probability(1, 0, pgg_table(3), 3, 10, 1.0)
    assert 0.3 < exact < 0.5  # far from neutral 1/Z = 0.1
    stats = gp.fixation_statistics([9, 1], pgg_table(3), 3, range(1000), process, beta=1.0)
    _within(stats, 1, exact)


@pytest.mark.slow
@pytest.mark.parametrize("process", ["moran", "pairwise_comparison"])
@pytest.mark.parametrize(("invader", "game"), [(1, "pgg"), (0, "stag_hunt"), (1, "stag_hunt")])
def test_simulated_fixation_over_many_seeds(process: str, invader: int, game: str) -> None:
    base = GroupGame.public_goods(3, 2.0) if game == "pgg" else GroupGame.stag_hunt(3, 2, 3.0)
    table = ge.unconditional_payoffs(base)
    exact = ge.fixation_probability(invader, 1 - invader, table, 3, 20, 1.0)
    start = [1, 19] if invader == 0 else [19, 1]
    stats = gp.fixation_statistics(start, table, 3, range(5000), process, beta=1.0)
    _within(stats, invader, exact)


def _wright_fisher_fixation(table: np.ndarray, n: int, z: int, beta: float) -> float:
    """Independent: the absorbing chain of i mutants, binomial offspring, solved exactly."""
    states = range(1, z)
    q = np.zeros((z - 1, z - 1))
    to_fix = np.zeros(z - 1)
    for a, i in enumerate(states):
        f = ge.finite_fitness([z - i, i], table, n)
        w = np.exp(beta * f)
        p = i * w[1] / (i * w[1] + (z - i) * w[0])
        pmf = [math.comb(z, j) * p**j * (1 - p) ** (z - j) for j in range(z + 1)]
        q[a] = pmf[1:z]
        to_fix[a] = pmf[z]
    return float(np.linalg.solve(np.eye(z - 1) - q, to_fix)[0])


def test_wright_fisher_fixation_matches_the_absorbing_chain() -> None:
    # One defector among 19 cooperators in the 3-player PGG (r=2), exponential fitness, beta = 1:
    # a generation is Z births, so rho differs from the Moran one.
    table = pgg_table(3)
    exact = _wright_fisher_fixation(table, 3, 20, 1.0)
    assert abs(exact - ge.fixation_probability(1, 0, table, 3, 20, 1.0)) > 0.1
    stats = gp.fixation_statistics([19, 1], table, 3, range(1500), "wright_fisher", beta=1.0)
    _within(stats, 1, exact)
    assert stats.mean_generations is not None and stats.mean_generations >= 1
