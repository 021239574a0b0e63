"""Per-seat say-do metrics of group games (pdbench.core.group_talk_metrics): a three-player game
counted by hand, conditional promises to everyone and to one player, and two seats equal to the
pairwise metrics (pdbench.core.talk_metrics) on random games."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pdbench.core.group_talk_metrics import (
    group_talk_column_names,
    group_talk_columns,
    group_talk_count_columns,
    group_talk_pooled_columns,
    group_talk_tracks,
)
from pdbench.core.talk_metrics import (
    TALK_COLUMNS,
    TALK_COUNT_COLUMNS,
    TALK_POOLED_COLUMNS,
    talk_columns,
    talk_tracks,
)
from pdbench.core.types import Action, Message

C, D = Action.C, Action.D
PROMISE, DEFECT, IF = "I will cooperate.", "I will defect.", "I'll cooperate if you do."


def test_names_per_seat() -> None:
    assert group_talk_column_names(2) == TALK_COLUMNS
    assert group_talk_count_columns(2) == TALK_COUNT_COLUMNS
    assert group_talk_pooled_columns(2) == TALK_POOLED_COLUMNS
    names = group_talk_column_names(3)
    assert len(names) == 3 * len(TALK_COLUMNS) // 2
    assert "agent_c_declared_promise_kept_rate" in names
    assert group_talk_pooled_columns(3)["agent_c_declared_deception_rate"] == (
        "agent_c_declared_promises"
    )


def test_three_players_by_hand() -> None:
    # chose (before noise): seat 0 C, D; seat 1 C, C; seat 2 D, C
    chose = np.array([[True, False], [True, True], [False, True]])
    messages = [
        Message(0, 0, 0, PROMISE, C, "declared"),  # kept
        Message(1, 0, 0, PROMISE, C, "declared"),  # broken: deception
        Message(0, 0, 1, IF, None, "none", to=0),  # seat 0 chose C in round 1: held, kept
        Message(1, 0, 1, IF, None, "none", to=2),  # seat 2 chose C in round 2: held, kept
        Message(0, 0, 2, DEFECT, D, "declared"),  # said and declared D, chose D
    ]
    out = group_talk_columns(group_talk_tracks(messages, chose), 3)
    a = {k[len("agent_a_") :]: v for k, v in out.items() if k.startswith("agent_a_")}
    assert a["messages"] == 2
    assert a["declared_promises"] == 2 and a["declared_promise_messages"] == 2
    assert a["declared_promise_kept_rate"] == 0.5 and a["declared_deception_rate"] == 0.5
    assert a["declared_statements"] == 2 and a["declared_agreement_rate"] == 0.5
    assert a["said_promises"] == 2 and a["said_deception_rate"] == 0.5
    # seat 0 could read seat 1's promise in round 1 (to it), not the one of round 2 (to seat 2)
    assert a["said_promises_received"] == 1 and a["said_trust_rate"] == 1.0
    assert out["agent_b_messages"] == 2 and out["agent_b_said_promises"] == 2
    assert out["agent_b_said_void_promises"] == 0 and out["agent_b_said_promise_kept_rate"] == 1.0
    assert out["agent_b_declared_promises"] == 0 and out["agent_b_declared_agreement_rate"] is None
    # seat 1 received seat 0's broadcast promises (both rounds); it chose C both times
    assert out["agent_b_said_promises_received"] == 2 and out["agent_b_said_trust_rate"] == 1.0
    # seat 2 received seat 0's promises (both rounds) and seat 1's conditional one (round 2)
    assert out["agent_c_said_promises_received"] == 2 and out["agent_c_said_trust_rate"] == 0.5
    assert out["agent_c_said_statements"] == 1 and out["agent_c_said_agreement_rate"] == 1.0
    assert out["agent_c_declared_agreement_rate"] == 1.0


@pytest.mark.parametrize(
    ("to", "others", "kept", "void"),
    [
        (None, (True, True), 1, 0),  # to everyone: everyone chose C, the condition held
        (None, (True, False), 0, 1),  # one co-player chose D: void
        (1, (True, False), 1, 0),  # to seat 1, who chose C: held
        (2, (True, False), 0, 1),  # to seat 2, who chose D: void
    ],
)
def test_conditional_promise_condition(
    to: int | None, others: tuple[bool, bool], kept: int, void: int
) -> None:
    chose = np.array([[True], [others[0]], [others[1]]])
    out = group_talk_columns(group_talk_tracks([Message(0, 0, 0, IF, to=to)], chose), 3)
    assert out["agent_a_said_promises"] == kept
    assert out["agent_a_said_void_promises"] == void
    assert out["agent_a_said_statements"] == kept


def test_no_talk_is_all_none() -> None:
    out = group_talk_columns(None, 4)
    assert set(out) == set(group_talk_column_names(4)) and set(out.values()) == {None}


TEXTS = [
    PROMISE,
    DEFECT,
    IF,
    "I will always cooperate.",
    "From now on I will defect.",
    "Let us see.",
    "Je vais coopérer.",
    "I'll play J.",
]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("pregame", [False, True])
def test_two_seats_equal_the_pairwise_metrics(seed: int, pregame: bool) -> None:
    rng = random.Random(seed)
    n_rounds = rng.randint(1, 6)
    chose = np.array([[rng.random() < 0.5 for _ in range(n_rounds)] for _ in range(2)])
    labels = (("C", "D"), ("J", "F") if seed % 3 == 0 else ("C", "D"))
    messages = []
    for r in range(n_rounds):
        for turn in range(rng.randint(0, 2)):
            for side in (0, 1):
                if rng.random() < 0.7:
                    intent = rng.choice([C, D, None])
                    source = "declared" if intent is not None and rng.random() < 0.7 else "none"
                    messages.append(
                        Message(r, turn, side, rng.choice(TEXTS), intent, source, to=None)
                    )
    rng.shuffle(messages)  # the readers sort by turn themselves
    messages.sort(key=lambda m: (m.round_index, m.turn))
    pair = talk_columns(talk_tracks(messages, chose[0], chose[1], labels, pregame))
    group = group_talk_columns(group_talk_tracks(messages, chose, labels, pregame), 2)
    assert group == pair
