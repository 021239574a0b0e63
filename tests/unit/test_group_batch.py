"""The vectorized group engine (`pdbench.core.group_batch`).

- N = 2: every pairwise policy's machine, translated by `from_pairwise`, and the group versions of
  TFT, ALLC, ALLD, WSLS, GRIM, RANDOM (and CC, which at N = 2 is TFT) play bit for bit like the
  pairwise engine `core.batch.play_batch` (moves and payoffs), with noise and unequal lengths;
- a public goods batch's payoffs equal a hand calculation for a known move pattern;
- the machine's checks, noise 1, per-game noise, the empty batch and the result's helpers.
"""

from __future__ import annotations

import numpy as np
import pytest

from pdbench.agents.group_policy import make_group_policy
from pdbench.agents.policy import POLICY_REGISTRY, sided_machines
from pdbench.core.batch import StateMachine, play_batch
from pdbench.core.config import PolicyAgentConfig, PolicyParams
from pdbench.core.group_batch import GroupMachine, from_pairwise, play_group_batch
from pdbench.core.group_game import GroupGame
from pdbench.core.payoff import PayoffMatrix

PAIRWISE_WITH_MACHINES = sorted(k for k, cls in POLICY_REGISTRY.items() if cls.memory is not None)


def pairwise_config(name: str) -> PolicyAgentConfig:
    params = {"coop_prob": 0.3} if name == "RANDOM" else {}
    return PolicyAgentConfig(type="policy", policy=name, params=PolicyParams(**params))


def all_pairs_batch(n_policies: int, replicates: int) -> tuple[np.ndarray, ...]:
    """Seat/side indices of every ordered pair, seeds, and unequal lengths (some 0 and 1)."""
    pairs = [(a, b) for a in range(n_policies) for b in range(n_policies)] * replicates
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    seeds = np.arange(len(pairs), dtype=np.uint64) * 7919 + 17
    lengths = np.array([(i * 13) % 37 for i in range(len(pairs))])
    return a, b, seeds, lengths


def assert_same_as_pairwise(group_machines: list[GroupMachine], pairwise_names: list[str]) -> None:
    matrix = PayoffMatrix()
    sided = [sided_machines(pairwise_config(name), matrix) for name in pairwise_names]
    a, b, seeds, lengths = all_pairs_batch(len(sided), replicates=3)
    pair = play_batch(sided, a, b, seeds, lengths, matrix, 0.05)
    group = play_group_batch(
        group_machines, np.stack([a, b], 1), seeds, lengths, GroupGame.from_matrix(matrix), 0.05
    )
    assert (pair.played_a != pair.intended_a).any()  # the noise really flips moves
    for seat, side in enumerate("ab"):
        for field in ("intended", "played", "payoffs"):
            expected = getattr(pair, f"{field}_{side}")
            got = getattr(group, field)[:, seat, :]
            assert got.dtype == expected.dtype and np.array_equal(got, expected), (field, side)
    totals_a, totals_b = pair.totals()
    assert np.array_equal(group.totals(), np.stack([totals_a, totals_b], 1))
    coop_a, coop_b = pair.cooperations()
    assert np.array_equal(group.cooperations(), np.stack([coop_a, coop_b], 1))


def test_translated_pairwise_machines_play_like_the_pairwise_engine() -> None:
    matrix = PayoffMatrix()
    machines = []
    for name in PAIRWISE_WITH_MACHINES:
        side_a, side_b = sided_machines(pairwise_config(name), matrix)
        assert side_a == side_b  # a symmetric game: one machine serves both seats
        machines.append(from_pairwise(side_a))
    assert_same_as_pairwise(machines, PAIRWISE_WITH_MACHINES)


def test_group_policies_at_two_players_play_like_their_pairwise_namesakes() -> None:
    game = GroupGame.from_matrix(PayoffMatrix())
    group_names = ["TFT", "ALLC", "ALLD", "WSLS", "GRIM", "RANDOM", "CC"]
    pairwise_names = ["TFT", "ALLC", "ALLD", "WSLS", "GRIM", "RANDOM", "TFT"]
    machines = [
        make_group_policy(name, PolicyParams(coop_prob=0.3) if name == "RANDOM" else None).machine(
            2, game
        )
        for name in group_names
    ]
    assert_same_as_pairwise(machines, pairwise_names)


# A machine that alternates C, D, C, ... by its own last move (state 0: C next, 1: D next).
def alternator(n: int) -> GroupMachine:
    return GroupMachine((1.0, 0.0), (((1,) * n, (0,) * n),) * 2)


def test_public_goods_payoffs_equal_a_hand_calculation() -> None:
    # N = 4, r = 3, c = 2: each cooperator pays 2; the pot 2 * #C * 3 is shared by 4, so every
    # seat gets 1.5 * #C and a cooperator 1.5 * #C - 2.
    game = GroupGame.public_goods(4, r=3.0, c=2.0)
    tft = make_group_policy("TFT").machine(4, game)
    machines = [GroupMachine.constant(1.0, 4), GroupMachine.constant(0.0, 4), alternator(4), tft]
    # game 0 (2 rounds): ALLD, ALLC, ALT, TFT; game 1 (3 rounds): ALLC, ALT, ALLD, TFT.
    ids = [[1, 0, 2, 3], [0, 2, 1, 3]]
    batch = play_group_batch(machines, ids, [5, 6], [2, 3], game)
    # game 0: r1 D C C C (#C 3: D 4.5, C 2.5); r2 D C D D (TFT answers the D; #C 1: D 1.5, C -0.5)
    # game 1: r1 C C D C (#C 3); r2 C D D D (#C 1); r3 C C D D (#C 2: D 3, C 1)
    expected_moves = [["DD", "CC", "CD", "CD"], ["CCC", "CDC", "DDD", "CDD"]]
    expected_payoffs = [
        [[4.5, 1.5, 0.0], [2.5, -0.5, 0.0], [2.5, 1.5, 0.0], [2.5, 1.5, 0.0]],
        [[2.5, -0.5, 1.0], [2.5, 1.5, 1.0], [4.5, 1.5, 3.0], [2.5, 1.5, 3.0]],
    ]
    for i, n in enumerate((2, 3)):
        moves = ["".join("C" if c else "D" for c in seat[:n]) for seat in batch.played[i]]
        assert moves == expected_moves[i]
    assert not batch.played[0, :, 2].any()  # nothing after a game's end
    assert batch.payoffs.tolist() == expected_payoffs
    assert batch.totals().tolist() == [[6.0, 2.0, 4.0, 4.0], [3.0, 5.0, 9.0, 7.0]]
    assert batch.cooperations().tolist() == [[0, 2, 1, 1], [3, 2, 0, 1]]
    one = batch.game(0)
    assert one["payoffs"].tolist() == [row[:2] for row in expected_payoffs[0]]
    assert one["played"].shape == one["intended"].shape == (4, 2)


@pytest.mark.parametrize("lengths", [[4, 4, 2], [2, 4, 4]])  # input order sorted or not
def test_result_helpers_agree_with_the_full_arrays(lengths: list[int]) -> None:
    game = GroupGame.public_goods(3, r=2.2)
    machines = [GroupMachine.constant(0.5, 3), alternator(3)]
    batch = play_group_batch(machines, [[0, 1, 0], [1, 0, 0], [0, 0, 0]], [1, 2, 3], lengths, game)
    assert batch.payoffs.shape == (3, 3, 4)
    assert np.array_equal(batch.totals(), batch.payoffs.sum(axis=2))
    assert np.array_equal(batch.cooperations(), batch.played.sum(axis=2))
    for i, n in enumerate(lengths):
        one = batch.game(i)
        for key in ("intended", "played", "payoffs"):
            assert np.array_equal(one[key], getattr(batch, key)[i, :, :n]), (i, key)
        for t in range(n):  # payoffs are the game's payoffs of the played moves
            assert list(one["payoffs"][:, t]) == list(game.payoffs(list(one["played"][:, t])))


def test_certain_noise_flips_every_move_and_noise_per_game() -> None:
    # Noise 1 in game 1 only: ALLC, ALLD, ALLC then play D, C, D every round. Linear PD of 3:
    # a cooperator gets 1.5 k, a defector 1 + 2 k (k cooperating others).
    game = GroupGame.linear_pd(3)
    machines = [GroupMachine.constant(1.0, 3), GroupMachine.constant(0.0, 3)]
    batch = play_group_batch(machines, [[0, 1, 0]] * 2, [9, 9], [3, 3], game, np.array([0.0, 1.0]))
    intended = [[True] * 3, [False] * 3, [True] * 3]  # seats by rounds
    assert batch.intended[0].tolist() == batch.intended[1].tolist() == intended
    assert batch.played[0].tolist() == batch.intended[0].tolist()
    assert batch.played[1].tolist() == [[False] * 3, [True] * 3, [False] * 3]
    assert batch.payoffs[0].tolist() == [[1.5] * 3, [5.0] * 3, [1.5] * 3]
    assert batch.payoffs[1].tolist() == [[3.0] * 3, [0.0] * 3, [3.0] * 3]


def test_empty_batch() -> None:
    game = GroupGame.linear_pd(5)
    empty = play_group_batch([GroupMachine.constant(1.0, 5)], np.zeros((0, 5), int), [], [], game)
    assert empty.n_games == 0 and empty.played.shape == (0, 5, 0)
    assert empty.totals().shape == (0, 5) and empty.payoffs.shape == (0, 5, 0)


@pytest.mark.parametrize(
    ("ids", "seeds", "lengths", "machine_n", "message"),
    [
        ([[0, 0]], [1], [3], 3, "ids must be"),  # two seats in a game of three
        ([[0, 0, 0]], [1, 2], [3], 3, "ids must be"),
        ([[0, 0, 0]], [1], [-1], 3, "non-negative"),
        ([[0, 1, 0]], [1], [3], 3, "index the 1 machines"),
        ([[0, 0, 0]], [1], [3], 4, "built for 4 players, not 3"),
    ],
)
def test_bad_arguments_are_refused(
    ids: list[list[int]], seeds: list[int], lengths: list[int], machine_n: int, message: str
) -> None:
    game = GroupGame.linear_pd(3)
    with pytest.raises(ValueError, match=message):
        play_group_batch([GroupMachine.constant(1.0, machine_n)], ids, seeds, lengths, game)


@pytest.mark.parametrize(
    ("coop_prob", "next_state", "message"),
    [
        ((1.0,) * 6, (((0, 0), (0, 0)),) * 6, "1..5 states"),
        ((1.0, 0.0), (((0, 0), (0, 0)),), "one row each"),
        ((1.5,), (((0, 0), (0, 0)),), r"\[0, 1\]"),
        ((1.0,), (((0, 0), (0, 0, 0)),), "one width"),
        ((1.0, 1.0), (((0, 0), (0, 0)), ((0, 0, 0), (0, 0, 0))), "one width"),
        ((1.0,), (((0,), (0,)),), "n in 2..26"),
        ((1.0,), (((0, 1), (0, 0)),), "does not have"),
    ],
)
def test_machine_checks(coop_prob: tuple, next_state: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GroupMachine(coop_prob, next_state)


def test_from_pairwise_and_reacting_by_hand() -> None:
    # Pairwise TFT: after the opponent's C -> state 1, after its D -> state 2 (either own move).
    # As a group machine of 2: k = 1 (the other cooperated) -> 1, k = 0 -> 2.
    tft = from_pairwise(StateMachine.reacting_to_opponent(1.0, 1.0, 0.0))
    assert tft.coop_prob == (1.0, 1.0, 0.0)
    assert tft.next_state == (((2, 1), (2, 1)),) * 3
    # reacting: C after (my C, k = 2) and after (my D, k = 0) in a group of 3 (WSLS of the linear
    # PD), D otherwise.
    wsls = GroupMachine.reacting(3, lambda my_c, k: (my_c and k == 2) or (not my_c and k == 0))
    assert wsls.next_state == (((1, 1, 0), (0, 1, 1)),) * 2 and wsls.coop_prob == (1.0, 0.0)
    prob, nxt = wsls.arrays(3)
    assert prob.tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert nxt.shape == (5, 2, 3) and nxt[4].tolist() == [[4, 4, 4], [4, 4, 4]]  # inert padding
