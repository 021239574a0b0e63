"""GroupLLMAgent (pdbench.agents.group_llm): the pairwise agent's parse, retry and fallback
handling with group prompts, its message calls, and the group agent factory."""

from __future__ import annotations

import asyncio
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from pdbench.agents.factory import AgentSpec
from pdbench.agents.group_llm import GroupLLMAgent, make_group_agent
from pdbench.agents.llm import ParseFailureAbort, PromptTemplates, prompt_sha256
from pdbench.agents.providers.base import Completion, CompletionRequest, ProviderBase
from pdbench.core.config import (
    AxelrodAgentConfig,
    HumanAgentConfig,
    LLMAgentConfig,
    PolicyAgentConfig,
    PromptFiles,
)
from pdbench.core.group_game import GroupGame, GroupObservation
from pdbench.core.types import Action

PROMPTS = Path(__file__).resolve().parents[2] / "configs" / "prompts"
GAME = GroupGame.linear_pd(4)


def config(**overrides: Any) -> LLMAgentConfig:
    values: dict[str, Any] = {
        "type": "llm",
        "model": "x",
        "prompts": PromptFiles(system="s", round="r", personas_dir="p"),
    }
    values.update(overrides)
    return LLMAgentConfig(**values)


def templates() -> PromptTemplates:
    return PromptTemplates(
        system=(PROMPTS / "group_system.md").read_text(encoding="utf-8"),
        round=(PROMPTS / "group_round.md").read_text(encoding="utf-8"),
        persona="Persona: none.",
    )


class Scripted(ProviderBase):
    """Returns queued replies in order and records every request."""

    name = "scripted"

    def __init__(self, replies: list[str]) -> None:
        super().__init__(config(), None)
        self.replies = list(replies)
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        return Completion(text=self.replies.pop(0))


def obs(round_index: int = 0) -> GroupObservation:
    return GroupObservation(1, 4, round_index, (), GAME, "fixed", total_rounds=5)


def test_a_valid_reply_is_the_move_with_prompts_and_attempt() -> None:
    provider = Scripted(["D"])
    agent = GroupLLMAgent(config(), provider, templates(), GAME, 1)
    agent.reset(3)
    decision = asyncio.run(agent.decide(obs()))
    assert decision.action is Action.D and not decision.parse_failure
    assert decision.system_prompt == agent.system_prompt
    assert "You are Player 2, playing with Player 1, Player 3 and Player 4." in agent.system_prompt
    assert decision.round_prompt is not None and "Round 1 of 5." in decision.round_prompt
    (attempt,) = decision.attempts
    assert attempt.valid and attempt.raw == "D"
    assert attempt.prompt_sha256 == prompt_sha256(agent.system_prompt, decision.round_prompt)
    assert provider.requests[0].seed == agent.call_seed(0, 0)


@pytest.mark.parametrize(
    ("on_failure", "expected"), [("defect", Action.D), ("cooperate", Action.C)]
)
def test_invalid_replies_are_retried_then_fall_back(on_failure: str, expected: Action) -> None:
    provider = Scripted(["maybe", "CD", "???"])
    agent = GroupLLMAgent(
        config(max_retries=2, on_parse_failure=on_failure), provider, templates(), GAME, 0
    )
    decision = asyncio.run(agent.decide(obs(2)))
    assert decision.action is expected and decision.parse_failure
    assert [a.valid for a in decision.attempts] == [False, False, False]
    # each retry carries the earlier replies and corrections
    assert [len(r.turns) for r in provider.requests] == [0, 1, 2]
    assert provider.requests[1].turns[0][0] == "maybe"


def test_a_retry_that_succeeds() -> None:
    provider = Scripted(["hmm", '{"action": "J"}'])
    agent = GroupLLMAgent(
        config(output_format="json", action_labels="J/F"), provider, templates(), GAME, 3
    )
    decision = asyncio.run(agent.decide(obs()))
    assert decision.action is Action.C and not decision.parse_failure
    assert [a.valid for a in decision.attempts] == [False, True]


def test_on_parse_failure_error_aborts() -> None:
    agent = GroupLLMAgent(
        config(max_retries=0, on_parse_failure="error"), Scripted(["x"]), templates(), GAME, 0
    )
    with pytest.raises(ParseFailureAbort, match="no valid move in round 3"):
        asyncio.run(agent.decide(obs(2)))


def test_message_calls_seeds_and_fallback() -> None:
    provider = Scripted(['{"message": "I will cooperate.", "intention": "C"}', "", "", ""])
    agent = GroupLLMAgent(config(max_retries=2), provider, templates(), GAME, 1)
    agent.reset(11)
    said = asyncio.run(agent.speak(obs(), 0, 280))
    assert said is not None and said.text == "I will cooperate." and said.intent is Action.C
    assert said.source == "declared"
    silent = asyncio.run(agent.speak(obs(), 0, 280, to=2))
    assert silent is not None and silent.fallback and silent.text == ""
    broadcast, *directed = provider.requests
    assert broadcast.purpose == "message" and "to all the other players" in broadcast.prompt
    assert "to Player 3 only" in directed[0].prompt
    # a directed message's seeds are keyed apart from the broadcast one's
    assert broadcast.seed == agent.message_seed(0, 0, 0, None)
    assert directed[0].seed == agent.message_seed(0, 0, 0, 2) != broadcast.seed


class StubPolicyAgent:
    def __init__(self, name: str, policy: Any, seat: int) -> None:
        self.name, self.policy, self.seat = name, policy, seat


def test_make_group_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("pdbench.agents.group_policy")
    module.GroupPolicyAgent = StubPolicyAgent  # type: ignore[attr-defined]
    module.make_group_policy = lambda name, params: ("policy", name)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pdbench.agents.group_policy", module)
    bound: list[LLMAgentConfig] = []

    def provider_for(cfg: LLMAgentConfig) -> Scripted:
        bound.append(cfg)
        return Scripted([])

    llm = make_group_agent(AgentSpec(config(), templates()), 2, 4, GAME, provider_for)
    assert isinstance(llm, GroupLLMAgent) and llm.seat == 2 and llm.n_players == 4
    assert len(bound) == 1
    tft = make_group_agent(
        AgentSpec(PolicyAgentConfig(type="policy", policy="TFT")), 1, 4, GAME, provider_for
    )
    assert isinstance(tft, StubPolicyAgent)
    assert (tft.name, tft.policy, tft.seat) == ("TFT", ("policy", "TFT"), 1)
    human = make_group_agent(
        AgentSpec(HumanAgentConfig(type="human", moves=["C", "D"])), 0, 4, GAME, provider_for
    )
    assert human.name and len(bound) == 1
    with pytest.raises(ValueError, match="plays pairs only"):
        make_group_agent(
            AgentSpec(AxelrodAgentConfig(type="axelrod", strategy="Cooperator")),
            0,
            4,
            GAME,
            provider_for,
        )
    with pytest.raises(ValueError, match="the game has 4 players"):
        make_group_agent(AgentSpec(config(), templates()), 0, 3, GAME, provider_for)
