"""`group_session.game_from_lines`, the reader resume and merge use for a group game's records:
the payoffs it reads back are the public goods game's worked out by hand, and of several
problems it names the first in round order (a wrong payoff, a running total that does not add
up, a seat renamed), a round where all five seats cooperate included."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from tests.support.group_run import FIVE_MOVES, FIVE_MOVES_REP1, ConditionSpec, GameSpec, game_lines

from pdbench.core.group_game import GroupGame
from pdbench.core.horizon import FixedHorizon
from pdbench.runners.engine.group_engine import GroupPlan
from pdbench.runners.lifecycle.group_session import game_from_lines

NAMES = ("s0", "s1", "s2", "s3", "s4")
SEED = 1000
RUN_ID = "groups_fixture"


def plan() -> GroupPlan:
    seats = tuple(SimpleNamespace(name=n, message_labels=("C", "D")) for n in NAMES)
    game = GroupGame.public_goods(5, 3.0, 1.0)
    return GroupPlan(0, "five", 0, seats, game, SEED, FixedHorizon(6), 0.0, 6)  # type: ignore[arg-type]


def lines(moves: tuple[str, ...]) -> list[bytes]:
    cond = ConditionSpec("five", NAMES, [GameSpec(0, moves)])
    return game_lines(cond, cond.games[0], SEED)


def edit(data: list[bytes], t: int, **changes: object) -> list[bytes]:
    out = list(data)
    record = json.loads(out[t])
    for name, value in changes.items():
        record[name] = value(record[name]) if callable(value) else value
    out[t] = json.dumps(record).encode() + b"\n"
    return out


def test_payoffs_read_back_are_those_of_the_game_by_hand() -> None:
    # Five seats, r = 3, c = 1: with K cooperators each gets 0.6 K, a cooperator pays 1.
    problem, outcome = game_from_lines(lines(FIVE_MOVES), plan(), RUN_ID)
    assert problem is None and outcome is not None
    # Round 1: C C C C D (K = 4): cooperators 1.4, the defector 2.4.
    assert np.allclose(outcome.payoffs[:, 0], [1.4, 1.4, 1.4, 1.4, 2.4])
    # Round 3: C D D C D (K = 2): cooperators 0.2, defectors 1.2.
    assert np.allclose(outcome.payoffs[:, 2], [0.2, 1.2, 1.2, 0.2, 1.2])
    # Rounds where all five cooperate (K = 5): 2.0 each.
    problem, outcome = game_from_lines(lines(FIVE_MOVES_REP1), plan(), RUN_ID)
    assert problem is None and outcome is not None
    assert np.allclose(outcome.payoffs[:, 1], [2.0] * 5)


def plus(x: float) -> float:
    return x + 1.0


CASES = [
    # (what is damaged, edits as (round, field, change), the problem named)
    (
        "a payoff and its total",
        [(2, "agent_d_payoff", plus), (2, "agent_d_cum_payoff", plus)],
        "round 2: seat 3's payoff is not the game's for the moves",
    ),
    ("a total only", [(4, "agent_b_cum_payoff", plus)], "round 4: seat 1's running total"),
    ("a total missing", [(3, "agent_e_cum_payoff", None)], "round 3: seat 4's running total"),
    (
        "a seat renamed before a wrong payoff",
        [(1, "agent_c_name", "x"), (3, "agent_a_payoff", plus)],
        "round 1: seat 2 is not 's2'",
    ),
    (
        "a wrong payoff before a seat renamed",
        [(1, "agent_a_payoff", plus), (3, "agent_c_name", "x")],
        "round 1: seat 0's payoff is not the game's",
    ),
    ("another run", [(5, "run_id", "other")], "round 5: another run's record"),
]


@pytest.mark.parametrize(("case", "edits", "named"), CASES, ids=[c[0] for c in CASES])
def test_the_first_problem_in_round_order_is_named(
    case: str, edits: list[tuple[int, str, object]], named: str
) -> None:
    data = lines(FIVE_MOVES)
    for t, field, change in edits:
        data = edit(data, t, **{field: change})
    problem, outcome = game_from_lines(data, plan(), RUN_ID)
    assert outcome is None and problem is not None and problem.startswith(named), problem
