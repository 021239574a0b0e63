"""Group policies (`pdbench.agents.group_policy`): hand-worked versus tables and exact agreement
of the round-by-round rule with the machine.

- Versus tables, N = 3 and 5: the co-players' moves in (scripted), the policy's own moves out,
  worked by hand; each row is played three ways: the round-by-round agent, the machine stepped in
  plain Python, and the vectorized engine with the co-players as cyclic machines.
- N = 5, mixed policies and noise: the vectorized engine equals the round-by-round agents played
  in a plain Python loop (payoffs from `GroupGame.payoffs`, noise from the NOISE draw).
- The registry: names, duplicates, unknown names, CC's m checked against N.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from pdbench.agents.group_policy import (
    GROUP_POLICY_REGISTRY,
    GroupPolicy,
    GroupPolicyAgent,
    group_policy_names,
    make_group_policy,
    register_group_policy,
)
from pdbench.core.config import PolicyParams
from pdbench.core.group_batch import GroupMachine, play_group_batch
from pdbench.core.group_game import GroupGame, GroupObservation, GroupRound
from pdbench.core.rng import Purpose, agent_seed, counter_uniform
from pdbench.core.types import Action

C, D = Action.C, Action.D


def scripted(moves: str, n: int) -> GroupMachine:
    """A machine playing `moves` (at most 5) in a cycle, whatever happens."""
    size = len(moves)
    return GroupMachine(
        tuple(1.0 if m == "C" else 0.0 for m in moves),
        tuple((((s + 1) % size,) * n,) * 2 for s in range(size)),
    )


class ScriptedSeat:
    """A round-by-round co-player playing a fixed string of moves."""

    def __init__(self, moves: str) -> None:
        self.moves = moves

    def reset(self, seed: int | None = None) -> None:
        pass

    async def decide(self, obs: GroupObservation) -> Action:
        return Action(self.moves[obs.round_index % len(self.moves)])


async def play_loop(
    agents: list, game: GroupGame, seed: int, length: int, noise: float, window: int | None = None
) -> tuple[list[list[bool]], list[list[bool]], list[tuple[float, ...]]]:
    """One game round by round: (intended, played) per round (True for C) and payoffs."""
    n = game.n_players
    streams = [agent_seed(seed, seat) for seat in range(n)]
    for agent, stream in zip(agents, streams, strict=True):
        agent.reset(stream)
    history: list[GroupRound] = []
    intended, played, payoffs = [], [], []
    for t in range(length):
        shown = tuple(history if window is None else history[len(history) - window :])
        moves = []
        for seat, agent in enumerate(agents):
            obs = GroupObservation(seat, n, t, shown, game, "fixed")
            out = await agent.decide(obs)
            moves.append(out if isinstance(out, Action) else out.action)
        flipped = [
            m.flipped if counter_uniform(streams[s], t, Purpose.NOISE) < noise else m
            for s, m in enumerate(moves)
        ]
        pay = game.payoffs([m is C for m in flipped])
        history.append(GroupRound(tuple(flipped), pay))
        intended.append([m is C for m in moves])
        played.append([m is C for m in flipped])
        payoffs.append(pay)
    return intended, played, payoffs


def step_machine(machine: GroupMachine, ks: list[int]) -> str:
    """A deterministic machine's moves stepped in plain Python against co-players of whom k
    cooperate in each round: state 0; C when coop_prob is 1; then next_state[s][my_D][k]."""
    state, out = 0, []
    for k in ks:
        assert machine.coop_prob[state] in (0.0, 1.0)
        my_d = 0 if machine.coop_prob[state] == 1.0 else 1
        out.append("CD"[my_d])
        state = machine.next_state[state][my_d][k]
    return "".join(out)


LPD3, LPD5, PGG5 = GroupGame.linear_pd(3), GroupGame.linear_pd(5), GroupGame.public_goods(5, 3.0)
# Linear PD of 3: C gets 1.5 k, D 1 + 2 k; aspiration (3 + 1) / 2 = 2, so WSLS stays after
# (C, k=2) and (D, k>=1). Linear PD of 5: C gets 0.75 k, D 1 + k; aspiration 2: stays after
# (C, k>=3) and (D, k>=1) (1 + 1 = 2 >= 2). Public goods of 5, r = 3: C gets 0.6 (k+1) - 1, D
# 0.6 k; aspiration (2 + 0) / 2 = 1: stays after (C, k>=3) and (D, k>=2).
# Others' rows -> k per round: A3 k = 2,0,1,2,2; B3 k = 0,0,1,2,2; A5 k = 4,2,1,3,0;
# B5 k = 3,4,4,0,4; C5 k = 0,0,4,4,4.
A3 = ("CDCCC", "CDDCC")
B3 = ("DDCCC", "DDDCC")
A5 = ("CCDCD", "CCDCD", "CDDCD", "CDCDD")
B5 = ("DCCDC", "CCCDC", "CCCDC", "CCCDC")
C5 = ("DDCCC",) * 4
VERSUS = [
    # (policy, params, game, others, own moves)
    ("ALLC", {}, LPD3, A3, "CCCCC"),
    ("ALLD", {}, LPD5, A5, "DDDDD"),
    ("TFT", {}, LPD3, A3, "CCDDC"),
    ("TFT", {}, LPD3, B3, "CDDDC"),
    ("TFT", {}, LPD5, A5, "CCDDD"),
    ("TFT", {}, LPD5, B5, "CDCCD"),
    ("TFT", {}, LPD5, C5, "CDDCC"),
    ("GRIM", {}, LPD3, A3, "CCDDD"),
    ("GRIM", {}, LPD3, B3, "CDDDD"),
    ("GRIM", {}, LPD5, B5, "CDDDD"),
    ("CC", {}, LPD3, A3, "CCDCC"),  # m = ceil(2 / 2) = 1
    ("CC", {}, LPD3, B3, "CDDCC"),
    ("CC", {"m": 2}, LPD3, A3, "CCDDC"),  # m = N - 1: TFT
    ("CC", {}, LPD5, A5, "CCCDC"),  # m = ceil(4 / 2) = 2
    ("CC", {}, LPD5, B5, "CCCCD"),
    ("CC", {"m": 1}, LPD5, A5, "CCCCC"),
    ("CC", {"m": 4}, LPD5, A5, "CCDDD"),
    ("WSLS", {}, LPD3, A3, "CCDDD"),
    ("WSLS", {}, LPD3, B3, "CDCDD"),
    ("WSLS", {}, LPD5, A5, "CCDDD"),  # stays D after (D, k=1): 2 >= 2
    ("WSLS", {}, LPD5, B5, "CCCCD"),
    ("WSLS", {}, LPD5, C5, "CDCCC"),
    ("WSLS", {}, PGG5, A5, "CCDCC"),
    ("WSLS", {"win_threshold": 0.5}, PGG5, A5, "CCCDD"),  # C stays at k >= 2, D at k >= 1
]


@pytest.mark.parametrize(("name", "params", "game", "others", "expected"), VERSUS)
def test_versus_scripted_co_players(
    name: str, params: dict, game: GroupGame, others: tuple[str, ...], expected: str
) -> None:
    n = game.n_players
    seat = n // 2  # the policy sits among its co-players, not first
    policy = make_group_policy(name, PolicyParams(**params))
    # Round by round.
    agent = GroupPolicyAgent(name, policy, seat)
    seats: list[ScriptedSeat | GroupPolicyAgent] = [ScriptedSeat(m) for m in others]
    seats.insert(seat, agent)
    _, played, _ = asyncio.run(play_loop(seats, game, 11, len(expected), 0.0))
    assert "".join("C" if row[seat] else "D" for row in played) == expected
    # The machine stepped in plain Python.
    machine = policy.machine(n, game)
    ks = [sum(m[t] == "C" for m in others) for t in range(len(expected))]
    assert step_machine(machine, ks) == expected
    # The vectorized engine, co-players as cyclic machines.
    machines = [machine, *(scripted(m, n) for m in others)]
    ids = [list(range(1, n))]
    ids[0].insert(seat, 0)
    batch = play_group_batch(machines, ids, [11], [len(expected)], game)
    assert "".join("C" if c else "D" for c in batch.played[0, seat]) == expected
    assert batch.payoffs[0].T.tolist() == [list(game.payoffs(row)) for row in played]


@pytest.mark.parametrize(
    ("params", "draws", "expected"),
    [({"coop_prob": 0.3}, (0.0, 0.29, 0.3, 0.9), "CCDD"), ({}, (0.4999, 0.5, 0.1), "CDC")],
)
def test_random_cooperates_when_the_draw_is_below_p(
    params: dict, draws: tuple[float, ...], expected: str
) -> None:
    policy = make_group_policy("RANDOM", PolicyParams(**params))
    obs = GroupObservation(0, 3, 0, (), LPD3, "fixed")
    assert "".join(policy.choose(obs, u).value for u in draws) == expected
    assert policy.machine(3, LPD3).coop_prob == (params.get("coop_prob", 0.5),)


def test_grim_remembers_beyond_a_history_window_of_one_until_reset() -> None:
    # Co-players D once in round 2, then C: with only the last round shown GRIM still defects.
    game = LPD3
    for window in (None, 1):
        agents = [GroupPolicyAgent("g", make_group_policy("GRIM"), 0), *map(ScriptedSeat, B3)]
        _, played, _ = asyncio.run(play_loop(agents, game, 3, 5, 0.0, window))
        assert "".join("C" if row[0] else "D" for row in played) == "CDDDD"
    # The same agent in a new game: reset forgets the trigger.
    agents[1:] = [ScriptedSeat("C"), ScriptedSeat("C")]
    _, played, _ = asyncio.run(play_loop(agents, game, 4, 3, 0.0, 1))
    assert [row[0] for row in played] == [True] * 3


MIXED = [
    ("ALLC", {}),
    ("ALLD", {}),
    ("RANDOM", {}),
    ("RANDOM", {"coop_prob": 0.3}),
    ("CC", {}),
    ("CC", {"m": 4}),
    ("CC", {"m": 1}),
    ("TFT", {}),
    ("GRIM", {}),
    ("WSLS", {}),
]


@pytest.mark.parametrize(
    ("game", "noise"),
    [
        (PGG5, 0.1),
        (LPD5, np.array([0.0, 0.05, 0.2, 0.5] * 8)),
        (LPD5, np.array([0.0, 0.05, 0.2, 1.0] * 8)),  # noise 1 takes another comparison
    ],
)
def test_five_players_vectorized_equals_round_by_round(game: GroupGame, noise: object) -> None:
    n, n_games = 5, 32
    rng = np.random.default_rng(2024)
    ids = rng.integers(0, len(MIXED), (n_games, n))
    lengths = rng.integers(0, 25, n_games)
    seeds = rng.integers(0, 2**63, n_games, dtype=np.uint64)
    policies = [make_group_policy(name, PolicyParams(**params)) for name, params in MIXED]
    batch = play_group_batch(
        [p.machine(n, game) for p in policies], ids, seeds, lengths, game, noise
    )
    noise_per_game = np.broadcast_to(np.asarray(noise, dtype=float), (n_games,))
    assert (batch.played != batch.intended).any()
    for g in range(n_games):
        agents = [GroupPolicyAgent(f"s{s}", policies[ids[g, s]], s) for s in range(n)]
        intended, played, payoffs = asyncio.run(
            play_loop(agents, game, int(seeds[g]), int(lengths[g]), float(noise_per_game[g]))
        )
        one = batch.game(g)
        assert one["intended"].T.tolist() == intended, g
        assert one["played"].T.tolist() == played, g
        assert one["payoffs"].T.tolist() == [list(p) for p in payoffs], g


def test_registry() -> None:
    assert group_policy_names() == ["ALLC", "ALLD", "CC", "GRIM", "RANDOM", "TFT", "WSLS"]
    assert type(make_group_policy("tft")) is GROUP_POLICY_REGISTRY["TFT"]
    assert make_group_policy("GRIM") is not make_group_policy("GRIM")
    with pytest.raises(KeyError, match="valid: ALLC, ALLD, CC"):
        make_group_policy("TF2T")

    class Again(GroupPolicy):
        key = "tft"
        deterministic = True

    with pytest.raises(ValueError, match="duplicate group policy name 'TFT'"):
        register_group_policy(Again)

    class Undeclared(GroupPolicy):
        key = "NEW"

    with pytest.raises(ValueError, match="deterministic"):
        register_group_policy(Undeclared)
    assert "NEW" not in GROUP_POLICY_REGISTRY


@pytest.mark.parametrize(
    ("m", "n", "ok"), [(4, 5, True), (5, 5, False), (1, 2, True), (2, 2, False)]
)
def test_cc_threshold_is_checked_against_the_group(m: int, n: int, ok: bool) -> None:
    policy = make_group_policy("CC", PolicyParams(m=m))
    game = GroupGame.linear_pd(n)
    if ok:
        assert policy.machine(n, game).n_players == n
    else:
        with pytest.raises(ValueError, match=f"m must be 1..{n - 1}"):
            policy.machine(n, game)


def test_agent_checks_its_seat_and_keeps_its_own_policy() -> None:
    shared = make_group_policy("GRIM")
    first, second = GroupPolicyAgent("a", shared, 0), GroupPolicyAgent("b", shared, 1)
    assert first.policy is not second.policy is not shared
    with pytest.raises(ValueError, match="seat 1 given to the agent of seat 0"):
        asyncio.run(first.decide(GroupObservation(1, 3, 0, (), LPD3, "fixed")))
