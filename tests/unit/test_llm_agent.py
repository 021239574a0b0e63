"""Unit tests of pdbench.agents.llm (LLMAgent retry/fallback logic, prompt hashes) and of the
offline MockProvider."""

from __future__ import annotations

import asyncio
import hashlib
import random
from pathlib import Path
from typing import Any

import pytest

from pdbench.agents.llm import (
    LLMAgent,
    ParseFailureAbort,
    PromptTemplates,
    render_round,
    render_system,
)
from pdbench.agents.providers.base import (
    CallTag,
    Completion,
    CompletionRequest,
    Provider,
    ProviderBase,
)
from pdbench.agents.providers.mock import MockProvider
from pdbench.core.config import LLMAgentConfig, PromptFiles
from pdbench.core.parse import parse_action
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action, Observation

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "configs" / "prompts"


def templates(persona: str = "tit_for_tat") -> PromptTemplates:
    return PromptTemplates(
        system=(PROMPTS_DIR / "pd_system.md").read_text(encoding="utf-8"),
        round=(PROMPTS_DIR / "pd_round.md").read_text(encoding="utf-8"),
        persona=(PROMPTS_DIR / "personas" / f"{persona}.md").read_text(encoding="utf-8"),
    )


def config(**overrides: Any) -> LLMAgentConfig:
    values: dict[str, Any] = {
        "type": "llm",
        "model": "x",
        "prompts": PromptFiles(system="s", round="r", personas_dir="p"),
    }
    values.update(overrides)
    return LLMAgentConfig(**values)


class ScriptedProvider(ProviderBase):
    """A fake async provider: returns queued replies in order and records every call."""

    name = "scripted"

    def __init__(self, replies: list[str]) -> None:
        super().__init__(config(), None)
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []

    async def complete(self, request: CompletionRequest) -> Completion:
        self.calls.append(
            {
                "system": request.system,
                "prompt": request.prompt,
                "temperature": request.temperature,
                "max_tokens": request.max_tokens,
                "seed": request.seed,
                "tag": request.tag,
                "turns": request.turns,
            }
        )
        if not self.replies:
            raise AssertionError("provider called more often than scripted")
        return Completion(text=self.replies.pop(0))


def observation(
    a_moves: str = "CCD", b_moves: str = "CDD", agent: int = 0, window: int | None = None
) -> Observation:
    t = Transcript(PayoffMatrix())
    for a, b in zip(a_moves, b_moves, strict=True):
        t.record(Action(a), Action(b))
    return t.observation(
        agent, history_window=window, include_totals=True, horizon_type="fixed", total_rounds=10
    )


def decide(agent: LLMAgent, obs: Observation):
    return asyncio.run(agent.decide(obs))


def sha(system: str, prompt: str) -> str:
    return hashlib.sha256((system + "\x1e" + prompt).encode("utf-8")).hexdigest()


def mock_provider(**mock: Any) -> MockProvider:
    return MockProvider(config(mock=mock), None)


def test_providers_satisfy_the_protocol():
    assert isinstance(ScriptedProvider([]), Provider)
    assert isinstance(mock_provider(), Provider)


# --- retries and fallbacks ---------------------------------------------------------------------


def test_valid_first_reply_is_one_attempt():
    provider = ScriptedProvider([" c\n"])
    agent = LLMAgent(
        config(temperature=0.7, max_tokens=5), provider, templates(), PayoffMatrix(), name="Ann"
    )
    agent.reset(11)
    decision = decide(agent, observation())
    assert decision.action is Action.C
    assert decision.parse_failure is False
    assert len(decision.attempts) == 1
    att = decision.attempts[0]
    assert (att.index, att.raw, att.valid, att.error) == (0, " c\n", True, None)
    call = provider.calls[0]
    assert call["system"] == decision.system_prompt == agent.system_prompt
    assert call["prompt"] == decision.round_prompt
    assert call["temperature"] == 0.7
    assert call["max_tokens"] == 5
    assert att.prompt_sha256 == sha(call["system"], call["prompt"])


def test_invalid_then_valid_reprompts_as_a_conversation():
    provider = ScriptedProvider(["Cooperate", "D"])
    agent = LLMAgent(config(), provider, templates(), PayoffMatrix(), name="Ann")
    agent.reset(1)
    decision = decide(agent, observation())
    assert decision.action is Action.D
    assert decision.parse_failure is False
    assert [a.valid for a in decision.attempts] == [False, True]
    assert decision.attempts[0].raw == "Cooperate"
    assert decision.attempts[0].error
    first, second = provider.calls
    # The re-prompt keeps the round prompt as it was and goes on with the invalid reply as the
    # model's turn, then a correction naming the allowed form and what was wrong as a new turn.
    assert first["prompt"] == second["prompt"] == decision.round_prompt
    assert first["turns"] == ()
    ((reply, correction),) = second["turns"]
    assert reply == "Cooperate"
    assert "C or D" in correction and "Cooperate" in correction
    assert "invalid" in correction.lower()
    # Each attempt's hash covers its whole conversation.
    assert decision.attempts[0].prompt_sha256 == sha(agent.system_prompt, decision.round_prompt)
    assert (
        decision.attempts[1].prompt_sha256
        == hashlib.sha256(
            "\x1e".join([agent.system_prompt, decision.round_prompt, reply, correction]).encode()
        ).hexdigest()
    )


def test_reprompt_text_is_configurable_and_turns_accumulate():
    provider = ScriptedProvider(["x", "y", "C"])
    cfg = config(max_retries=2, reprompt="No. {expected}! ({error})")
    agent = LLMAgent(cfg, provider, templates(), PayoffMatrix(), name="Ann")
    agent.reset(1)
    decision = decide(agent, observation())
    assert decision.action is Action.C
    turns = provider.calls[2]["turns"]
    assert [reply for reply, _ in turns] == ["x", "y"]
    assert turns[0][1] == "No. exactly one letter: C or D! (no C or D in the reply (got 'x'))"


@pytest.mark.parametrize(("policy", "fallback"), [("defect", Action.D), ("cooperate", Action.C)])
def test_all_invalid_falls_back(policy, fallback):
    provider = ScriptedProvider(["maybe", "CD", ""])
    agent = LLMAgent(
        config(max_retries=2, on_parse_failure=policy), provider, templates(), PayoffMatrix()
    )
    agent.reset(3)
    decision = decide(agent, observation())
    assert decision.action is fallback
    assert decision.parse_failure is True
    assert len(provider.calls) == 3
    assert [a.index for a in decision.attempts] == [0, 1, 2]
    assert [a.raw for a in decision.attempts] == ["maybe", "CD", ""]
    assert not any(a.valid for a in decision.attempts)
    round_prompt = decision.round_prompt
    assert provider.calls[0]["prompt"] == round_prompt
    # Each re-prompt carries every earlier reply and a correction about it.
    assert all(call["prompt"] == round_prompt for call in provider.calls)
    assert [reply for reply, _ in provider.calls[2]["turns"]] == ["maybe", "CD"]
    assert "maybe" in provider.calls[1]["turns"][0][1]
    assert "CD" in provider.calls[2]["turns"][1][1]


def test_all_invalid_with_error_policy_aborts_naming_agent_and_round():
    provider = ScriptedProvider(["no", "no", "no"])
    agent = LLMAgent(
        config(max_retries=2, on_parse_failure="error"),
        provider,
        templates(),
        PayoffMatrix(),
        name="Zelda-7",
    )
    agent.reset(0)
    obs = observation("CCDD", "CDDC")  # 4 rounds played: this is round_index 4, round 5
    with pytest.raises(ParseFailureAbort) as info:
        decide(agent, obs)
    message = str(info.value)
    assert "Zelda-7" in message
    assert "round 5" in message
    assert len(provider.calls) == 3


def test_zero_retries_means_one_attempt():
    provider = ScriptedProvider(["nope"])
    agent = LLMAgent(config(max_retries=0), provider, templates(), PayoffMatrix())
    decision = decide(agent, observation())
    assert len(decision.attempts) == 1
    assert decision.action is Action.D
    assert decision.parse_failure is True


def test_json_output_format():
    provider = ScriptedProvider(['{"action": "D"}'])
    agent = LLMAgent(config(output_format="json"), provider, templates(), PayoffMatrix())
    decision = decide(agent, observation())
    assert decision.action is Action.D
    assert len(decision.attempts) == 1
    # Both prompts ask for the JSON form.
    assert '{"action": "C"}' in agent.system_prompt
    assert '{"action": "C"}' in provider.calls[0]["prompt"]


def test_json_format_rejects_a_bare_token_and_corrects_with_the_json_form():
    provider = ScriptedProvider(["D", '{"action":"c"}'])
    agent = LLMAgent(config(output_format="json"), provider, templates(), PayoffMatrix())
    decision = decide(agent, observation())
    assert decision.action is Action.C
    assert [a.valid for a in decision.attempts] == [False, True]
    ((reply, correction),) = provider.calls[1]["turns"]
    assert reply == "D"
    assert '{"action": "C"}' in correction and '{"action": "D"}' in correction


def test_call_seeds_are_reproducible_and_differ_per_attempt():
    def seeds_for(agent_seed: int) -> list[int | None]:
        provider = ScriptedProvider(["x", "y", "C"])
        agent = LLMAgent(config(), provider, templates(), PayoffMatrix())
        agent.reset(agent_seed)
        decide(agent, observation())
        return [c["seed"] for c in provider.calls]

    a = seeds_for(5)
    assert a == seeds_for(5)
    assert len(set(a)) == 3
    assert all(isinstance(s, int) and 0 <= s < 2**63 for s in a)
    assert seeds_for(6) != a


def test_calls_are_tagged_with_round_and_attempt():
    provider = ScriptedProvider(["?", "C"])
    agent = LLMAgent(config(), provider, templates(), PayoffMatrix())
    decide(agent, observation("CCD", "CDD"))  # 3 rounds played: round_index 3
    assert [c["tag"] for c in provider.calls] == [CallTag(3, 0), CallTag(3, 1)]


def test_sync_act_returns_a_plain_letter():
    agent = LLMAgent(config(), ScriptedProvider(["d"]), templates(), PayoffMatrix())
    assert agent.act(observation()) == "D"


def test_display_name_defaults_from_config():
    agent = LLMAgent(
        config(model="m1", persona="wsls"), ScriptedProvider([]), templates(), PayoffMatrix()
    )
    assert agent.name == "m1[wsls]"


# --- rendered prompts --------------------------------------------------------------------------


def test_round_prompt_shows_windowed_history_with_game_round_numbers():
    # After A=CCDD, B=CDDC with window 2, agent A sees game rounds 3 and 4 (1-based).
    obs = observation("CCDD", "CDDC", agent=0, window=2)
    text = render_round(templates().round, obs, 2, "token")
    assert "Round 3: you played D, the opponent played D; you got 1, they got 1." in text
    assert "Round 4: you played D, the opponent played C; you got 5, they got 0." in text
    assert "Round 2:" not in text
    assert "Opponent's last move: C" in text
    assert "Round 5 of 10." in text
    # Totals: A = 3 + 0 + 1 + 5 = 9, B = 3 + 5 + 1 + 0 = 9.
    assert "you 9 points, the opponent 9 points" in text


def test_system_prompt_carries_persona_and_payoffs():
    text = render_system(templates("wsls"), PayoffMatrix(), "token")
    assert "Persona: wsls." in text
    assert "- you play D, they play C: you get 5, they get 0" in text
    assert "C or D" in text


# --- MockProvider ------------------------------------------------------------------------------


def random_prompts(persona: str, n: int, seed: int, fmt: str = "token") -> list[tuple[str, str]]:
    """(system, round prompt) pairs from random games at random points, rendered for real."""
    rnd = random.Random(seed)
    tpl = templates(persona)
    system = render_system(tpl, PayoffMatrix(), fmt)
    out = []
    for _ in range(n):
        length = rnd.randint(0, 12)
        a = "".join(rnd.choice("CD") for _ in range(length))
        b = "".join(rnd.choice("CD") for _ in range(length))
        window = rnd.choice([None, 1, 3, 10])
        obs = observation(a, b, agent=rnd.randint(0, 1), window=window)
        out.append((system, render_round(tpl.round, obs, window, fmt)))
    return out


def test_mock_is_deterministic_for_seed_system_and_prompt():
    prompts = random_prompts("cooperative", 100, seed=1)
    one, two = mock_provider(), mock_provider()
    for i, (system, prompt) in enumerate(prompts):
        r1 = one.reply(system=system, prompt=prompt, seed=i)
        assert r1 == two.reply(system=system, prompt=prompt, seed=i)
        assert r1 == one.reply(system=system, prompt=prompt, seed=i)
        request = CompletionRequest(system, prompt, 0.0, 16, seed=i)
        assert r1 == asyncio.run(two.complete(request)).text


def test_mock_seed_changes_some_replies():
    prompts = random_prompts("cooperative", 200, seed=2)
    mock = mock_provider()
    first = [mock.reply(system=s, prompt=p, seed=1) for s, p in prompts]
    second = [mock.reply(system=s, prompt=p, seed=2) for s, p in prompts]
    assert first != second


def test_mock_answers_a_completion_request():
    mock = mock_provider()
    request = CompletionRequest(
        system="Persona: tit_for_tat.",
        prompt="Round 1: you played C, the opponent played D; you got 0, they got 5.",
        temperature=0.0,
        max_tokens=16,
        seed=1,
        tag=CallTag(1, 0),
    )
    completion = asyncio.run(mock.complete(request))
    assert completion.text == "D"
    assert completion.input_tokens == len(request.system.split()) + len(request.prompt.split())


def test_mock_tit_for_tat_mirrors_the_opponents_last_move():
    mock = mock_provider()
    tpl = templates("tit_for_tat")
    system = render_system(tpl, PayoffMatrix(), "token")
    rnd = random.Random(3)
    for _ in range(100):
        length = rnd.randint(1, 12)
        a = "".join(rnd.choice("CD") for _ in range(length))
        b = "".join(rnd.choice("CD") for _ in range(length))
        agent = rnd.randint(0, 1)
        opponent_moves = b if agent == 0 else a
        obs = observation(a, b, agent=agent, window=rnd.choice([None, 1, 4]))
        prompt = render_round(tpl.round, obs, None, "token")
        assert (
            mock.reply(system=system, prompt=prompt, seed=rnd.randint(0, 10**6))
            == (opponent_moves[-1])
        )
    # No history yet: cooperate.
    first = render_round(tpl.round, observation("", ""), None, "token")
    assert mock.reply(system=system, prompt=first, seed=0) == "C"


def test_llm_agent_with_mock_tit_for_tat_plays_tft():
    provider = mock_provider()
    cfg = config(persona="tit_for_tat", history_window=10)
    agent = LLMAgent(cfg, provider, templates("tit_for_tat"), PayoffMatrix())
    agent.reset(17)
    opponent = "CDDCDCCD"
    t = Transcript(PayoffMatrix())
    mine = []
    for theirs in opponent:
        obs = t.observation(
            0, history_window=cfg.history_window, include_totals=True, horizon_type="fixed"
        )
        decision = asyncio.run(agent.decide(obs))
        assert decision.parse_failure is False
        mine.append(decision.action.value)
        t.record(decision.action, Action(theirs))
    # TFT: C, then the opponent's previous move.
    assert "".join(mine) == "C" + opponent[:-1]


@pytest.mark.parametrize("fmt", ["token", "json"])
def test_mock_invalid_rate_one_is_always_invalid(fmt):
    mock = mock_provider(invalid_rate=1.0)
    for i, (system, prompt) in enumerate(random_prompts("cooperative", 200, seed=4, fmt=fmt)):
        reply = mock.reply(system=system, prompt=prompt, seed=i)
        assert not parse_action(reply, fmt).ok, reply


def test_mock_answers_json_when_asked():
    mock = mock_provider()
    for i, (system, prompt) in enumerate(random_prompts("exploitative", 50, seed=5, fmt="json")):
        assert parse_action(mock.reply(system=system, prompt=prompt, seed=i), "json").ok


def test_mock_cooperative_persona_cooperates_more_than_exploitative():
    mock = mock_provider()

    def c_count(persona: str) -> int:
        prompts = random_prompts(persona, 400, seed=6)
        return sum(
            mock.reply(system=s, prompt=p, seed=i) == "C" for i, (s, p) in enumerate(prompts)
        )

    coop, expl = c_count("cooperative"), c_count("exploitative")
    assert coop > expl
    # Loose bounds: cooperative plays C with prob >= 0.75 (expected >= 300 of 400, binomial sd
    # <= 10), exploitative with prob 0.15 (expected 60, sd 7.1); 5 sd margins.
    assert coop >= 300 - 50
    assert expl <= 60 + 36
