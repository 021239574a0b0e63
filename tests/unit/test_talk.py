"""The message channel's pieces: intentions read from text, speaking order, policies' message
rules, what each seat can see, and the say-do metrics worked out by hand."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from pdbench.core.talk import (
    CommunicationConfig,
    CommunicationOverride,
    read_intent,
    rule_message,
    speaking_groups,
)
from pdbench.core.talk_metrics import talk_columns, talk_tracks
from pdbench.core.types import Action, Message, Observation, Utterance
from pdbench.runners.engine import chat as chat_module
from pdbench.runners.engine.chat import Chat

C, D = Action.C, Action.D


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("I will cooperate.", ("C", "D"), C),
        ("I'll cooperate if you do", ("C", "D"), C),
        ("I will always cooperate", ("C", "D"), C),
        ("I promise to cooperate", ("C", "D"), C),
        ("Let's both cooperate!", ("C", "D"), C),
        ("We should cooperate", ("C", "D"), C),
        ("I won't defect", ("C", "D"), C),
        ("I never defect", ("C", "D"), C),
        ("I will defect.", ("C", "D"), D),
        ("I will not cooperate", ("C", "D"), D),
        ("I'm going to betray you", ("C", "D"), D),
        # the agent's own labels (Akata et al.'s J/F)
        ("I'll play J", ("J", "F"), C),
        ("I will choose F this time", ("J", "F"), D),
        ("I'll play J", ("C", "D"), None),  # J means nothing under C/D
        # neither, both, or not a first-person statement of the next move
        ("Hello there", ("C", "D"), None),
        ("Defect!", ("C", "D"), None),
        ("You will cooperate", ("C", "D"), None),
        ("I will definitely not defect", ("C", "D"), None),
        ("I will cooperate or I will defect", ("C", "D"), None),
        ("", ("C", "D"), None),
    ],
)
def test_read_intent(text: str, labels: tuple[str, str], expected: Action | None) -> None:
    assert read_intent(text, labels) is expected


@pytest.mark.parametrize(
    ("order", "exchange", "turns", "expected"),
    [
        ("simultaneous", 0, 1, [(0, 1)]),
        ("simultaneous", 3, 2, [(0, 1), (0, 1)]),
        ("a_first", 0, 1, [(0,), (1,)]),
        ("a_first", 1, 2, [(0,), (1,), (0,), (1,)]),
        ("alternate", 0, 1, [(0,), (1,)]),
        ("alternate", 1, 1, [(1,), (0,)]),
        ("alternate", 2, 1, [(0,), (1,)]),
    ],
)
def test_speaking_groups(
    order: str, exchange: int, turns: int, expected: list[tuple[int, ...]]
) -> None:
    assert speaking_groups(order, exchange, turns) == expected


@pytest.mark.parametrize(
    ("rule", "planned", "text", "expected"),
    [
        ("silent", C, None, None),
        ("honest", C, None, ("I will cooperate.", C, "declared")),
        ("honest", D, None, ("I will defect.", D, "declared")),
        ("always_promise", D, None, ("I will cooperate.", C, "declared")),
        ("fixed", D, "I'll cooperate, trust me", ("I'll cooperate, trust me", C, "phrases")),
        ("fixed", C, "Nice weather", ("Nice weather", None, "none")),
    ],
)
def test_message_rules(rule: str, planned: Action, text: str | None, expected: Any) -> None:
    assert rule_message(rule, planned, text) == expected


def test_a_condition_changes_only_the_keys_it_sets() -> None:
    base = CommunicationConfig(mode="every_round", order="a_first", turns=2, history=3)
    got = CommunicationOverride(mode="pregame").over(base)
    assert (got.mode, got.order, got.turns, got.history) == ("pregame", "a_first", 2, 3)
    assert CommunicationOverride().over(base) == base
    assert base.exchange_before(0) and base.exchange_before(7)
    assert got.exchange_before(0) and not got.exchange_before(1)
    assert not CommunicationConfig().exchange_before(0)


# --------------------------------------------------------------------------------------------
# What each seat sees while writing: a recorder stands in for the agents


class _Spec:
    config = None


def _exchange(order: str, turns: int, rounds: int, history: int = 10) -> list[dict[str, Any]]:
    """Run `rounds` exchanges; each writer's message is "<seat><round>.<turn>", and each call
    records what the writer could see then."""
    seen: list[dict[str, Any]] = []

    async def fake_speak(
        agent: Any, config: Any, obs: Observation, turn: int, max_chars: int
    ) -> Utterance:
        seen.append(
            {
                "who": agent,
                "round": obs.round_index,
                "turn": turn,
                "sees": [(m.mine, m.text) for m in obs.messages],
            }
        )
        return Utterance(f"{agent}{obs.round_index}.{turn}")

    channel = CommunicationConfig(mode="every_round", order=order, turns=turns, history=history)
    chat = Chat(channel, [_Spec(), _Spec()])
    original = chat_module.speak
    chat_module.speak = fake_speak  # type: ignore[assignment]
    try:
        for r in range(rounds):
            obs = [Observation(r, (), None, "fixed") for _ in range(2)]  # type: ignore[arg-type]
            asyncio.run(chat.exchange(r, ["A", "B"], obs))
    finally:
        chat_module.speak = original  # type: ignore[assignment]
    return seen


def test_simultaneous_messages_are_shown_to_nobody_before_both_are_written() -> None:
    seen = _exchange("simultaneous", turns=2, rounds=2)
    by = {(s["who"], s["round"], s["turn"]): s["sees"] for s in seen}
    assert by[("A", 0, 0)] == [] and by[("B", 0, 0)] == []
    # turn 1 of round 0: both messages of turn 0, and nothing of turn 1
    assert by[("A", 0, 1)] == [(True, "A0.0"), (False, "B0.0")]
    assert by[("B", 0, 1)] == [(False, "A0.0"), (True, "B0.0")]
    # round 1 begins with round 0's four messages
    assert [t for _, t in by[("B", 1, 0)]] == ["A0.0", "B0.0", "A0.1", "B0.1"]


def test_a_first_and_alternate_show_the_first_writer_s_message_to_the_second() -> None:
    seen = _exchange("a_first", turns=1, rounds=1)
    assert [(s["who"], s["sees"]) for s in seen] == [("A", []), ("B", [(False, "A0.0")])]
    seen = _exchange("alternate", turns=1, rounds=2)
    assert [(s["who"], s["round"]) for s in seen] == [("A", 0), ("B", 0), ("B", 1), ("A", 1)]
    assert seen[2]["sees"] == [(False, "A0.0"), (True, "B0.0")]
    assert seen[3]["sees"] == [(True, "A0.0"), (False, "B0.0"), (False, "B1.0")]


def test_history_limits_the_earlier_messages_shown() -> None:
    seen = _exchange("a_first", turns=1, rounds=3, history=1)
    last_b = seen[-1]
    assert last_b["who"] == "B" and last_b["round"] == 2
    # one earlier message (B's of round 1), then the current exchange's (A's of round 2)
    assert last_b["sees"] == [(True, "B1.0"), (False, "A2.0")]
    seen = _exchange("simultaneous", turns=1, rounds=2, history=0)
    assert seen[-1]["sees"] == []


# --------------------------------------------------------------------------------------------
# Say-do metrics, by hand


def test_the_liar_against_tft_by_hand() -> None:
    """ALLD promising C every round against an honest TFT, 5 rounds, no noise. The liar plays
    D D D D D; TFT plays C D D D D and announces it: "cooperate" once, then "defect". Both
    declare what they say here, so the said and declared readings agree."""
    liar = [False] * 5
    tft = [True, False, False, False, False]
    messages = [Message(r, 0, 0, "I will cooperate.", C, "declared") for r in range(5)]
    messages += [
        Message(r, 0, 1, "I will cooperate." if r == 0 else "I will defect.", C if r == 0 else D)
        for r in range(5)
    ]
    messages = [
        Message(m.round_index, m.turn, m.side, m.text, m.intent, "declared") for m in messages
    ]
    got = talk_columns(talk_tracks(messages, liar, tft))
    assert got["agent_a_messages"] == 5 and got["agent_a_said_promise_messages"] == 5
    assert got["agent_a_said_promise_rate"] == 1.0 and got["agent_a_declared_promise_rate"] == 1.0
    assert got["agent_a_said_promises"] == 5 and got["agent_a_declared_promises"] == 5
    assert got["agent_a_said_promise_kept_rate"] == 0.0  # 0 of 5 promises kept
    assert got["agent_a_said_deception_rate"] == 1.0  # 5 of 5 followed by D
    assert got["agent_a_said_agreement_rate"] == 0.0
    assert got["agent_a_said_trust_rate"] == 0.0  # TFT said C once (round 0): the liar played D
    assert got["agent_b_said_promise_rate"] == pytest.approx(1 / 5)
    assert got["agent_b_said_promises"] == 1 and got["agent_b_said_promise_kept_rate"] == 1.0
    assert got["agent_b_said_statements"] == 5 and got["agent_b_said_agreement_rate"] == 1.0
    assert got["agent_b_said_trust_rate"] == pytest.approx(1 / 5)  # C after 1 of 5 promises
    assert got["agent_b_declared_agreement_rate"] == 1.0


def test_the_last_stated_intention_of_an_exchange_counts() -> None:
    """Two turns: A says C then D before round 0, says nothing stating a move before round 1.
    The intentions were read from the text (source phrases): nothing is declared."""
    messages = [
        Message(0, 0, 0, "I will cooperate", C, "phrases"),
        Message(0, 1, 0, "Actually I will defect", D, "phrases"),
        Message(1, 0, 0, "hello", None, "none"),
    ]
    a, b = talk_tracks(messages, [False, True], [True, True])
    assert a.said.tolist() == [0, -1] and a.messages.tolist() == [2, 1]
    assert a.said_promises.tolist() == [1, 0] and a.declared.tolist() == [-1, -1]
    got = talk_columns((a, b))
    assert got["agent_a_said_promise_rate"] == pytest.approx(1 / 3)
    assert got["agent_a_said_promises"] == 0 and got["agent_a_said_promise_kept_rate"] is None
    assert got["agent_a_said_agreement_rate"] == 1.0  # said D, chose D
    assert got["agent_a_declared_statements"] == 0  # text read, nothing declared
    assert got["agent_a_declared_promise_rate"] == 0.0  # 0 of 3 messages declare C
    assert got["agent_b_messages"] == 0 and got["agent_b_said_promise_rate"] is None
    assert talk_columns(None) == dict.fromkeys(got)
    assert isinstance(a.chose_c, np.ndarray)
