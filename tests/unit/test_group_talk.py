"""Talk in groups: speaking orders for N seats (pdbench.core.talk), the channel's audience, and
a GroupChat exchange (pdbench.runners.engine.group_chat) of three policy agents, broadcast and
directed: who writes what, who sees what."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pdbench.agents.factory import AgentSpec
from pdbench.agents.group_llm import GroupLLMAgent
from pdbench.agents.llm import PromptTemplates
from pdbench.agents.providers.mock import MockProvider
from pdbench.core.config import LLMAgentConfig, PolicyAgentConfig, PromptFiles
from pdbench.core.group_game import GroupGame, GroupObservation
from pdbench.core.talk import (
    CommunicationConfig,
    CommunicationOverride,
    order_problem,
    speaking_groups,
)
from pdbench.core.types import Action, Message, SeenMessage
from pdbench.runners.engine.group_chat import GroupChat


@pytest.mark.parametrize(
    ("order", "exchange", "turns", "n", "expected"),
    [
        # two seats: today's orders, unchanged
        ("simultaneous", 0, 1, 2, [(0, 1)]),
        ("simultaneous", 3, 2, 2, [(0, 1), (0, 1)]),
        ("a_first", 1, 2, 2, [(0,), (1,), (0,), (1,)]),
        ("alternate", 0, 1, 2, [(0,), (1,)]),
        ("alternate", 1, 2, 2, [(1,), (0,), (1,), (0,)]),
        ("round_robin", 0, 1, 2, [(0,), (1,)]),
        ("round_robin", 1, 1, 2, [(1,), (0,)]),
        # four seats
        ("simultaneous", 0, 1, 4, [(0, 1, 2, 3)]),
        ("simultaneous", 5, 2, 4, [(0, 1, 2, 3), (0, 1, 2, 3)]),
        ("round_robin", 0, 1, 4, [(0,), (1,), (2,), (3,)]),
        ("round_robin", 1, 1, 4, [(1,), (2,), (3,), (0,)]),
        ("round_robin", 3, 1, 4, [(3,), (0,), (1,), (2,)]),
        ("round_robin", 6, 2, 4, [(2,), (3,), (0,), (1,), (2,), (3,), (0,), (1,)]),
    ],
)
def test_speaking_groups(
    order: str, exchange: int, turns: int, n: int, expected: list[tuple[int, ...]]
) -> None:
    assert speaking_groups(order, exchange, turns, n) == expected


def test_the_default_is_two_seats() -> None:
    assert speaking_groups("alternate", 1, 1) == [(1,), (0,)]


@pytest.mark.parametrize("order", ["a_first", "alternate"])
def test_orders_of_two_refused_for_more(order: str) -> None:
    message = (
        f"communication.order {order!r} is not an order of 4 players "
        "(valid: simultaneous, round_robin)"
    )
    assert order_problem(order, 4) == message
    assert order_problem(order, 2) is None
    with pytest.raises(ValueError) as raised:
        speaking_groups(order, 0, 1, 4)
    assert str(raised.value) == message


def test_audience_is_left_out_of_a_broadcast_snapshot() -> None:
    """A channel that does not set the audience dumps as before groups (its runs resume)."""
    assert CommunicationConfig(mode="every_round").model_dump(mode="json") == {
        "mode": "every_round",
        "order": "simultaneous",
        "turns": 1,
        "max_chars": 280,
        "history": 10,
    }
    directed = CommunicationConfig(mode="every_round", audience="directed")
    assert directed.model_dump(mode="json")["audience"] == "directed"
    assert CommunicationOverride(audience="directed").over(CommunicationConfig()).audience == (
        "directed"
    )


# --------------------------------------------------------------------------------------------
# GroupChat


class Stub:
    """A group policy agent for talk: `choose` gives its planned move and records the messages
    it was shown when asked."""

    def __init__(self, name: str, move: Action) -> None:
        self.name, self.move = name, move
        self.seen: list[tuple[SeenMessage, ...]] = []

    def choose(self, obs: GroupObservation) -> Action:
        self.seen.append(obs.messages)
        return self.move


GAME = GroupGame.linear_pd(3)
RULES = ("honest", "always_promise", "silent")


def _chat(**channel: Any) -> tuple[GroupChat, list[Stub], list[GroupObservation]]:
    specs = [
        AgentSpec(PolicyAgentConfig(type="policy", policy="ALLD", talk=rule)) for rule in RULES
    ]
    cfg = CommunicationConfig(**{"mode": "every_round", **channel})
    agents = [Stub("honest", Action.D), Stub("promiser", Action.D), Stub("silent", Action.C)]
    obs = [GroupObservation(s, 3, 0, (), GAME, "fixed") for s in range(3)]
    return GroupChat(cfg, specs, 3), agents, obs


def _seen(chat: GroupChat, seat: int, obs: GroupObservation) -> list[tuple[Any, ...]]:
    return [(m.mine, m.writer, m.to, m.text) for m in chat.shown(seat, obs).messages]


def test_broadcast_simultaneous() -> None:
    chat, agents, obs = _chat()
    said = asyncio.run(chat.exchange(0, agents, obs))
    assert [m for m, _ in said] == [
        Message(0, 0, 0, "I will defect.", Action.D, "declared", None),
        Message(0, 0, 1, "I will cooperate.", Action.C, "declared", None),
    ]
    assert agents[1].seen == [()]  # simultaneous: nothing of this turn was shown
    assert _seen(chat, 0, obs[0]) == [
        (True, 0, None, "I will defect."),
        (False, 1, None, "I will cooperate."),
    ]
    assert _seen(chat, 2, obs[2]) == [
        (False, 0, None, "I will defect."),
        (False, 1, None, "I will cooperate."),
    ]


def test_directed_simultaneous() -> None:
    chat, agents, obs = _chat(audience="directed")
    said = asyncio.run(chat.exchange(0, agents, obs))
    assert [(m.side, m.to, m.text) for m, _ in said] == [
        (0, 1, "I will defect."),
        (0, 2, "I will defect."),
        (1, 0, "I will cooperate."),
        (1, 2, "I will cooperate."),
    ]
    assert _seen(chat, 0, obs[0]) == [
        (True, 0, 1, "I will defect."),
        (True, 0, 2, "I will defect."),
        (False, 1, 0, "I will cooperate."),
    ]
    assert _seen(chat, 1, obs[1]) == [
        (False, 0, 1, "I will defect."),
        (True, 1, 0, "I will cooperate."),
        (True, 1, 2, "I will cooperate."),
    ]
    assert _seen(chat, 2, obs[2]) == [
        (False, 0, 2, "I will defect."),
        (False, 1, 2, "I will cooperate."),
    ]


def test_round_robin_each_reads_those_before_it() -> None:
    chat, agents, obs = _chat(order="round_robin", audience="directed")
    said = asyncio.run(chat.exchange(1, agents, obs))  # exchange 1: seat 1 first
    assert [(m.side, m.to, m.turn) for m, _ in said] == [(1, 0, 0), (1, 2, 0), (0, 1, 0), (0, 2, 0)]
    # seat 1 spoke first and saw nothing; seat 0 then saw seat 1's message to it (twice asked:
    # once per addressee), not the one to seat 2
    assert agents[1].seen == [(), ()]
    assert [[(m.writer, m.to) for m in seen] for seen in agents[0].seen] == [[(1, 0)], [(1, 0)]]


def test_history_keeps_the_visible_earlier_messages() -> None:
    chat, agents, obs = _chat(mode="pregame", audience="directed", history=1)
    asyncio.run(chat.exchange(0, agents, obs))
    later = [GroupObservation(s, 3, 1, (), GAME, "fixed") for s in range(3)]
    assert asyncio.run(chat.exchange(1, agents, later)) == []  # pregame: no exchange before 2
    # seat 2 could read two messages of exchange 0; history 1 keeps the last of them
    assert _seen(chat, 2, later[2]) == [(False, 1, 2, "I will cooperate.")]


def test_the_honest_rule_announces_the_planned_move() -> None:
    chat, agents, obs = _chat()
    agents[0].move = Action.C
    said = asyncio.run(chat.exchange(0, agents, obs))
    assert (said[0][0].text, said[0][0].intent) == ("I will cooperate.", Action.C)


def test_a_pair_order_is_refused_for_three() -> None:
    specs = [AgentSpec(PolicyAgentConfig(type="policy", policy="ALLC"))] * 3
    with pytest.raises(ValueError, match="valid: simultaneous, round_robin"):
        GroupChat(CommunicationConfig(mode="every_round", order="a_first"), specs, 3)


def test_mock_llm_seats_talk_and_move() -> None:
    """Three mock LLM seats (liar, cooperative, tit_for_tat) in one broadcast exchange: each
    writes its persona's group message with its declared intention, and each seat's message
    prompt and move prompt show the others' messages."""
    prompts = Path(__file__).resolve().parents[2] / "configs" / "prompts"
    personas = ("liar", "cooperative", "tit_for_tat")
    specs, agents = [], []
    for seat, persona in enumerate(personas):
        cfg = LLMAgentConfig(
            type="llm",
            model="mock-persona-v1",
            persona=persona,
            prompts=PromptFiles(system="s", round="r", personas_dir="p"),
        )
        templates = PromptTemplates(
            system=(prompts / "group_system.md").read_text(encoding="utf-8"),
            round=(prompts / "group_round.md").read_text(encoding="utf-8"),
            persona=(prompts / "group_personas" / f"{persona}.md").read_text(encoding="utf-8"),
        )
        specs.append(AgentSpec(cfg, templates))
        agents.append(GroupLLMAgent(cfg, MockProvider(cfg), templates, GAME, seat))
    chat = GroupChat(CommunicationConfig(mode="every_round"), specs, 3)
    obs = [GroupObservation(s, 3, 0, (), GAME, "fixed", total_rounds=3) for s in range(3)]
    said = asyncio.run(chat.exchange(0, agents, obs))
    assert [(m.side, m.text, m.intent) for m, _ in said] == [
        (0, "I will cooperate.", Action.D),  # the liar's private intention
        (1, "I will cooperate. Let's all keep cooperating.", Action.C),
        (2, "I will play what most of you played last round.", Action.C),
    ]
    shown = chat.shown(2, obs[2])
    prompt = agents[2].round_prompt(shown)
    assert '- before round 1, Player 1: "I will cooperate."' in prompt
    assert '- before round 1, you: "I will play what most of you played last round."' in prompt
    liar = asyncio.run(agents[0].decide(chat.shown(0, obs[0])))
    assert liar.action is Action.D
