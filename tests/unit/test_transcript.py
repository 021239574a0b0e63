"""Unit tests of pdbench.core.transcript: recording, windowing and each agent's perspective."""

from __future__ import annotations

import pytest

from pdbench.core.payoff import PayoffMatrix
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action, HistoryEntry

C, D = Action.C, Action.D

# Five rounds, A's moves and B's moves, with default payoffs (A, B) worked out by hand:
#   round 0: C C -> (3, 3)
#   round 1: C D -> (0, 5)
#   round 2: D C -> (5, 0)
#   round 3: D D -> (1, 1)
#   round 4: C D -> (0, 5)
# Totals: A = 3+0+5+1+0 = 9, B = 3+5+0+1+5 = 14.
A_MOVES = [C, C, D, D, C]
B_MOVES = [C, D, C, D, D]
PAY_A = [3.0, 0.0, 5.0, 1.0, 0.0]
PAY_B = [3.0, 5.0, 0.0, 1.0, 5.0]


def five_rounds() -> Transcript:
    t = Transcript(PayoffMatrix())
    for a, b in zip(A_MOVES, B_MOVES, strict=True):
        t.record(a, b)
    return t


def obs(t: Transcript, agent: int, window: int | None, totals: bool = True):
    return t.observation(agent, history_window=window, include_totals=totals, horizon_type="fixed")


def test_record_returns_payoffs_and_accumulates():
    t = Transcript(PayoffMatrix())
    got = [t.record(a, b) for a, b in zip(A_MOVES, B_MOVES, strict=True)]
    assert got == list(zip(PAY_A, PAY_B, strict=True))
    assert len(t) == 5
    assert t.total_a == 9.0
    assert t.total_b == 14.0


def test_window_three_after_five_rounds_agent_a():
    o = obs(five_rounds(), 0, 3)
    assert o.round_index == 5
    assert o.round_number == 6
    # Rounds 2, 3, 4, oldest first, as (mine, theirs, my payoff, their payoff) for A.
    assert o.history == (
        HistoryEntry(D, C, 5.0, 0.0),
        HistoryEntry(D, D, 1.0, 1.0),
        HistoryEntry(C, D, 0.0, 5.0),
    )


def test_window_three_after_five_rounds_agent_b_is_mirrored():
    o = obs(five_rounds(), 1, 3)
    assert o.round_index == 5
    # Same rounds 2, 3, 4 seen by B: actions and payoffs swapped.
    assert o.history == (
        HistoryEntry(C, D, 0.0, 5.0),
        HistoryEntry(D, D, 1.0, 1.0),
        HistoryEntry(D, C, 5.0, 0.0),
    )


def test_window_none_shows_everything_oldest_first():
    t = five_rounds()
    a = obs(t, 0, None)
    b = obs(t, 1, None)
    assert [(h.my_action, h.opp_action) for h in a.history] == list(
        zip(A_MOVES, B_MOVES, strict=True)
    )
    assert [(h.my_payoff, h.opp_payoff) for h in a.history] == list(zip(PAY_A, PAY_B, strict=True))
    assert [(h.my_action, h.opp_action) for h in b.history] == list(
        zip(B_MOVES, A_MOVES, strict=True)
    )
    assert [(h.my_payoff, h.opp_payoff) for h in b.history] == list(zip(PAY_B, PAY_A, strict=True))


@pytest.mark.parametrize("agent", [0, 1])
def test_window_zero_shows_nothing(agent):
    o = obs(five_rounds(), agent, 0)
    assert o.history == ()
    assert o.round_index == 5  # the round counter is still known


@pytest.mark.parametrize("window", [5, 6, 100])
def test_window_at_least_the_game_length_shows_everything(window):
    assert obs(five_rounds(), 0, window).history == obs(five_rounds(), 0, None).history


def test_window_one_is_the_last_round():
    assert obs(five_rounds(), 0, 1).history == (HistoryEntry(C, D, 0.0, 5.0),)
    assert obs(five_rounds(), 1, 1).history == (HistoryEntry(D, C, 5.0, 0.0),)


def test_totals_present_from_each_perspective():
    t = five_rounds()
    a = obs(t, 0, 2, totals=True)
    b = obs(t, 1, 2, totals=True)
    # Totals are over all five rounds, not just the window: A 9, B 14.
    assert (a.my_cumulative_payoff, a.opponent_cumulative_payoff) == (9.0, 14.0)
    assert (b.my_cumulative_payoff, b.opponent_cumulative_payoff) == (14.0, 9.0)


def test_totals_hidden():
    o = obs(five_rounds(), 0, 2, totals=False)
    assert o.my_cumulative_payoff is None
    assert o.opponent_cumulative_payoff is None


def test_empty_transcript_first_observation():
    t = Transcript(PayoffMatrix())
    o = obs(t, 1, 3)
    assert o.round_index == 0
    assert o.round_number == 1
    assert o.history == ()
    assert (o.my_cumulative_payoff, o.opponent_cumulative_payoff) == (0.0, 0.0)


def test_round_index_grows_with_each_round_and_horizon_fields_pass_through():
    t = Transcript(PayoffMatrix())
    for i, (a, b) in enumerate(zip(A_MOVES, B_MOVES, strict=True)):
        o = t.observation(
            0,
            history_window=None,
            include_totals=False,
            horizon_type="geometric",
            stop_prob=0.25,
        )
        assert o.round_index == i
        assert len(o.history) == i
        assert o.horizon_type == "geometric"
        assert o.stop_prob == 0.25
        assert o.total_rounds is None
        t.record(a, b)
    o = t.observation(
        0, history_window=None, include_totals=False, horizon_type="fixed", total_rounds=9
    )
    assert o.total_rounds == 9
    assert o.payoff_matrix == PayoffMatrix()


def test_observation_is_a_snapshot():
    t = Transcript(PayoffMatrix())
    t.record(C, C)
    o = obs(t, 0, None)
    t.record(D, D)
    assert len(o.history) == 1
    assert o.round_index == 1
    assert o.my_cumulative_payoff == 3.0
