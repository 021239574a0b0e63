"""The N-player stage games against hand calculations and the published facts they must meet."""

from __future__ import annotations

from fractions import Fraction

import pytest

from pdbench.core.group_game import GroupGame, is_symmetric, pairwise_payoffs
from pdbench.core.payoff import PayoffMatrix


@pytest.mark.parametrize("n", [2, 3, 5, 10])
@pytest.mark.parametrize("r", [1.5, 2.0, 3.0, 4.9, 5.0, 7.5, 12.0])
def test_public_goods_payoffs_and_dominance(n: int, r: float) -> None:
    # k cooperating co-players: a cooperator gets r c (k+1)/N - c, a defector r c k/N (egttools'
    # PGG.play); computed here in exact fractions, independently of the module.
    c = Fraction(3, 2)
    game = GroupGame.public_goods(n, r, float(c))
    rf = Fraction(r).limit_denominator(1000)
    for k in range(n):
        assert game.pay_c[k] == pytest.approx(float(rf * c * (k + 1) / n - c), abs=1e-12)
        assert game.pay_d[k] == pytest.approx(float(rf * c * k / n), abs=1e-12)
    # D dominates exactly when r < N (switching C -> D changes one's payoff by c (1 - r/N)).
    assert game.defection_dominates() is (r < n)
    assert game.all_cooperate() == pytest.approx(float(c * (rf - 1)))
    assert game.all_defect() == 0.0


def test_free_rider_advantage_matches_the_published_numbers() -> None:
    # open_spiel PR #1571 (public_goods mode, E = 10, multiplier 1.5): the free rider's advantage
    # is E (1 - m/N) = 2.5, 5.0, 7.0, 8.5 for N = 2, 3, 5, 10, whatever the others do.
    for n, advantage in [(2, 2.5), (3, 5.0), (5, 7.0), (10, 8.5)]:
        game = GroupGame.public_goods(n, 1.5, 10.0)
        for k in range(n):
            assert game.pay_d[k] - game.pay_c[k] == pytest.approx(advantage)


def test_payoffs_of_a_round_by_hand() -> None:
    game = GroupGame.public_goods(5, 3.0, 1.0)
    # three cooperators: pot 3 * 3 = 9, each gets 9/5 = 1.8; cooperators paid 1.
    assert game.payoffs([True, True, False, False, True]) == pytest.approx(
        (0.8, 0.8, 1.8, 1.8, 0.8)
    )
    assert game.payoffs([False] * 5) == (0.0,) * 5
    with pytest.raises(ValueError, match="5 moves"):
        game.payoffs([True, False])


def test_linear_pd_interpolates_the_two_by_two_game() -> None:
    matrix = PayoffMatrix()  # R, S, T, P = 3, 0, 5, 1
    two = GroupGame.linear_pd(2, matrix)
    assert two.pay_c == (0.0, 3.0) and two.pay_d == (1.0, 5.0)
    assert two == GroupGame(2, two.pay_c, two.pay_d, "linear_pd", two.params)
    assert GroupGame.from_matrix(matrix).pay_c == two.pay_c
    five = GroupGame.linear_pd(5, matrix)
    # k of 4 others cooperate: C gets 0 + 3 k/4, D gets 1 + 4 k/4
    assert five.pay_c == (0.0, 0.75, 1.5, 2.25, 3.0)
    assert five.pay_d == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert five.defection_dominates()
    assert five.aspiration() == 2.0  # (R + P) / 2


def test_volunteer_and_stag_hunt_by_hand() -> None:
    vd = GroupGame.volunteer(3, b=2.0, c=1.0)
    assert vd.payoffs([False, False, False]) == (0.0, 0.0, 0.0)
    assert vd.payoffs([True, False, False]) == (1.0, 2.0, 2.0)
    assert not vd.defection_dominates()  # with nobody else volunteering, C pays 1 > 0
    sh = GroupGame.stag_hunt(4, threshold=3, r=4.0, c=1.0)
    # two cooperators, below the threshold: cooperators lose c, nobody gets anything
    assert sh.payoffs([True, True, False, False]) == (-1.0, -1.0, 0.0, 0.0)
    # three: pot 3 * 4 = 12 shared by 4 -> 3 each
    assert sh.payoffs([True, True, True, False]) == (2.0, 2.0, 2.0, 3.0)
    with pytest.raises(ValueError, match="threshold"):
        GroupGame.stag_hunt(4, threshold=5, r=4.0)


def test_only_symmetric_two_by_two_games_are_groups() -> None:
    assert is_symmetric(PayoffMatrix())
    skew = PayoffMatrix(cc=(3.0, 2.0))
    assert not is_symmetric(skew)
    with pytest.raises(ValueError, match="symmetric"):
        GroupGame.from_matrix(skew)
    with pytest.raises(ValueError, match="2..26"):
        GroupGame(1, (0.0,), (0.0,))
    with pytest.raises(ValueError, match="one payoff per number"):
        GroupGame(3, (0.0, 1.0), (0.0, 1.0, 2.0))


def test_pairwise_play_inside_a_group_sums_the_pairs() -> None:
    # TextArena's ThreePlayerIPD: a move toward each co-player, the round payoff summed.
    # seat 0 cooperates with 1, defects on 2; seat 1 cooperates with both; seat 2 defects on both.
    moves = [[None, True, False], [True, None, True], [False, False, None]]
    # 0: vs1 (C,C)=3, vs2 (D,D)=1 -> 4;  1: vs0 (C,C)=3, vs2 (C,D)=0 -> 3;  2: vs0 (D,D)=1, vs1 (D,C)=5
    assert pairwise_payoffs(PayoffMatrix(), moves) == (4.0, 3.0, 6.0)
