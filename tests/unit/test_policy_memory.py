"""Each policy's declared `memory` is the history window its rule really needs.

`memory` (a class attribute, the one place that says it) tells the vectorized engine how many
past rounds a policy must see to play like the unbounded round-by-round rule (`is_batchable`).
Here it is measured independently, in the spirit of Axelrod's classifier tests: the policy plays
every possible sequence of played outcomes (its own played move, which noise may have flipped, and
the opponent's) with the history cut to a window of `w` rounds, and its moves are compared with
those it makes seeing the whole history. The measured memory is the smallest `w` for which every
move is the same (for every `w` from there on too); it must equal the declared one, so a policy
that declares too little (the engine would play it wrongly) or too much fails.
"""

from __future__ import annotations

import itertools

import pytest

from pdbench.agents.policy import POLICY_REGISTRY, PolicyAgent
from pdbench.core.config import PolicyParams
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action, Observation

C, D = Action.C, Action.D
OUTCOMES = [(C, C), (C, D), (D, C), (D, D)]  # (its played move, the opponent's)
SEEDS = (0, 7)
DEFAULTS = (PolicyParams(), PayoffMatrix())
# Non-default parameters and payoffs: the declared memory must hold for them too.
OTHERS = (
    PolicyParams(generous_prob=0.6, win_threshold=5.5, coop_prob=0.2),
    PayoffMatrix(cc=(4.0, 4.0), cd=(-1.0, 6.0), dc=(6.0, -1.0), dd=(0.5, 0.5)),
)


def moves(
    cls: type[PolicyAgent],
    outcomes: tuple[tuple[Action, Action], ...],
    window: int | None,
    seed: int,
    setting: tuple[PolicyParams, PayoffMatrix],
) -> list[Action]:
    """The moves the policy chooses before each of the rounds `outcomes` and after the last, when
    the rounds are played as `outcomes` (whatever it chose) and it sees at most `window` of them."""
    params, matrix = setting
    agent = cls(params)
    agent.reset(seed)
    transcript = Transcript(matrix)
    chosen = []
    for outcome in (*outcomes, None):
        obs: Observation = transcript.observation(
            0, history_window=window, include_totals=False, horizon_type="fixed"
        )
        chosen.append(agent.choose(obs))
        if outcome is not None:
            transcript.record(*outcome)
    return chosen


def windows_like_full_history(
    cls: type[PolicyAgent], windows: range, past: int, setting: tuple[PolicyParams, PayoffMatrix]
) -> list[bool]:
    """For each window: True when, after every sequence of `past` outcomes and for each seed, the
    policy seeing that many rounds moves exactly as when it sees them all."""
    same = dict.fromkeys(windows, True)
    for outcomes in itertools.product(OUTCOMES, repeat=past):
        for seed in SEEDS:
            full = moves(cls, outcomes, None, seed, setting)
            for w in windows:
                if same[w]:
                    same[w] = moves(cls, outcomes, w, seed, setting) == full
    return list(same.values())


def measured_memory(
    cls: type[PolicyAgent], past: int, setting: tuple[PolicyParams, PayoffMatrix] = DEFAULTS
) -> int:
    """The smallest window after which the policy plays as with its whole history, over games of
    `past` rounds and one more move (so it tells memories up to `past - 1` apart)."""
    same = windows_like_full_history(cls, range(past), past, setting)
    first = same.index(True) if True in same else past  # a window of `past` shows every round
    assert all(same[first:]), f"{cls.key}: windows like the full history {same} (not monotone)"
    return first


@pytest.mark.parametrize("name", sorted(POLICY_REGISTRY))
def test_declared_memory_is_the_window_the_rule_needs(name: str) -> None:
    cls = POLICY_REGISTRY[name]
    if cls.memory is None:  # no state machine: plays round by round with any window
        return
    past = cls.memory + 2  # enough to see a dependence up to two rounds beyond the declared one
    assert measured_memory(cls, past) == cls.memory
    # With other parameters and payoffs it never needs more (it may need less: GTFT that always
    # forgives, say).
    assert windows_like_full_history(cls, range(cls.memory, past), past, OTHERS) == [True, True]


def test_the_measure_catches_a_wrong_declaration() -> None:
    # A rule looking two rounds back but declaring memory 1, and one looking one round back but
    # declaring 2: the measure gives the real windows, 2 and 1, whatever they declare.
    class SecondToLast(PolicyAgent):
        key = "SECOND_TO_LAST"
        memory = 1

        def choose(self, obs: Observation) -> Action:
            return obs.history[-2].opp_action if len(obs.history) >= 2 else C

    class OwnLastMove(PolicyAgent):
        key = "OWN_LAST"
        memory = 2

        def choose(self, obs: Observation) -> Action:
            return obs.history[-1].my_action if obs.history else D

    assert measured_memory(SecondToLast, 3) == 2
    assert measured_memory(OwnLastMove, 3) == 1
    # A rule of the round number alone needs no history at all.
    assert measured_memory(POLICY_REGISTRY["DEFECT_ONCE"], 2) == 0
