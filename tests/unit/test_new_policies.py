"""RANDOM, STFT, TF2T, ALTERNATOR and DEFECT_ONCE: hand-written tables of (opponent moves in -> moves out).

Each case plays the policy against a scripted opponent without noise; `expected` lists
(policy's move, opponent's move) per round, written by hand from the rule in the docstring.
"""

from __future__ import annotations

import pytest

from pdbench.agents.policy import POLICY_REGISTRY, make_policy, policy_names
from pdbench.core.config import PolicyParams
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.rng import Purpose, counter_uniform
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action


def play_scripted(
    name: str,
    opponent: str,
    *,
    params: PolicyParams | None = None,
    seed: int = 0,
    window: int | None = None,
) -> list[tuple[str, str]]:
    """The policy (as A) against a fixed sequence of opponent moves; returns (mine, theirs)."""
    agent = make_policy(name, params)
    agent.reset(seed)
    transcript = Transcript(PayoffMatrix())
    for move in opponent:
        obs = transcript.observation(
            0, history_window=window, include_totals=True, horizon_type="fixed"
        )
        transcript.record(Action(agent.act(obs)), Action(move))
    return [
        (a.value, b.value) for a, b in zip(transcript.actions_a, transcript.actions_b, strict=True)
    ]


def pairs(mine: str, theirs: str) -> list[tuple[str, str]]:
    return list(zip(mine, theirs, strict=True))


CASES = [
    # STFT: D first, then the opponent's previous move.
    ("STFT", "CCCCC", "DCCCC"),
    ("STFT", "DDDDD", "DDDDD"),
    ("STFT", "CDCDC", "DCDCD"),
    ("STFT", "DCCDD", "DDCCD"),
    # TF2T: D only right after two opponent Ds in a row.
    ("TF2T", "CCCCC", "CCCCC"),
    ("TF2T", "DDDDD", "CCDDD"),
    ("TF2T", "DCDCD", "CCCCC"),
    ("TF2T", "CDDCDDD", "CCCDCCD"),
    # ALTERNATOR: C, D, C, D, ... whatever the opponent does.
    ("ALTERNATOR", "CCCCCC", "CDCDCD"),
    ("ALTERNATOR", "DDDDDD", "CDCDCD"),
    ("ALTERNATOR", "DCDDCC", "CDCDCD"),
    # DEFECT_ONCE: D in round 1, then C whatever the opponent does.
    ("DEFECT_ONCE", "CCCCC", "DCCCC"),
    ("DEFECT_ONCE", "DDDDD", "DCCCC"),
    ("DEFECT_ONCE", "DCDCD", "DCCCC"),
    ("DEFECT_ONCE", "C", "D"),
]


@pytest.mark.parametrize(("name", "opponent", "mine"), CASES)
def test_policy_table(name: str, opponent: str, mine: str) -> None:
    assert play_scripted(name, opponent) == pairs(mine, opponent)


def test_random_extremes() -> None:
    assert play_scripted("RANDOM", "CDCD", params=PolicyParams(coop_prob=1.0)) == pairs(
        "CCCC", "CDCD"
    )
    assert play_scripted("RANDOM", "CDCD", params=PolicyParams(coop_prob=0.0)) == pairs(
        "DDDD", "CDCD"
    )


def test_random_uses_the_policy_stream() -> None:
    # C in round t exactly when the agent's POLICY draw for round t is below coop_prob.
    seed, p = 12345, 0.3
    moves = play_scripted("RANDOM", "C" * 400, params=PolicyParams(coop_prob=p), seed=seed)
    expected = ["C" if counter_uniform(seed, t, Purpose.POLICY) < p else "D" for t in range(400)]
    assert [m for m, _ in moves] == expected
    share = expected.count("C") / 400
    assert abs(share - p) < 4 * (p * (1 - p) / 400) ** 0.5


def test_random_ignores_the_opponent() -> None:
    a = play_scripted("RANDOM", "C" * 50, seed=9)
    b = play_scripted("RANDOM", "D" * 50, seed=9)
    assert [m for m, _ in a] == [m for m, _ in b]


def test_tf2t_needs_two_rounds_of_history() -> None:
    # With a one-round window TF2T never sees two Ds, so it always cooperates.
    assert play_scripted("TF2T", "DDDD", window=1) == pairs("CCCC", "DDDD")
    assert play_scripted("TF2T", "DDDD", window=2) == pairs("CCDD", "DDDD")


def test_alternator_follows_its_own_played_move() -> None:
    # The history holds played moves: after a (noise-)flipped move it continues from that move.
    agent = make_policy("ALTERNATOR")
    agent.reset(0)
    transcript = Transcript(PayoffMatrix())
    transcript.record(Action.D, Action.C)  # it intended C but D was played
    obs = transcript.observation(0, history_window=None, include_totals=True, horizon_type="fixed")
    assert agent.act(obs) == "C"


def test_registered_with_descriptions() -> None:
    for name in ("RANDOM", "STFT", "TF2T", "ALTERNATOR"):
        assert name in policy_names()
        cls = POLICY_REGISTRY[name]
        assert cls.description and cls.__doc__
        assert make_policy(name.lower()).name == name
        assert cls.look.emoji and cls.look.nickname and cls.look.color.startswith("#")
    assert POLICY_REGISTRY["RANDOM"].reads == ("coop_prob",)
    assert POLICY_REGISTRY["TF2T"].reads == ()
