"""The LLM seats of the resource games (issue 31): prompts as the authors' modules build them, the
history text of ours (checked by hand), careful reading (parse failures, re-asks, the stated
fallback, clamping), the calls' records, and the mock's persona answers."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import date
from typing import Any

from pdbench.agents.commons_prompts import OUTSIDER_GOALS, harvest_prompt
from pdbench.agents.pgg_prompts import contribution_prompt, punishment_prompt
from pdbench.agents.providers.base import Completion, CompletionRequest
from pdbench.agents.providers.mock_resource import (
    mock_contribution,
    mock_harvest,
    mock_punishment,
    resource_reply,
)
from pdbench.agents.resource_llm import ResourceLLMSeat
from pdbench.agents.resource_policy import CommonsContext, Message, PGGContext
from pdbench.agents.resource_texts import month_date, pgg_history_text
from pdbench.core.commons import CommonsRules, SeasonResult
from pdbench.core.config import LLMAgentConfig
from pdbench.core.pgg import PGGRules, play_round
from pdbench.core.rng import derive_seed

RULES = PGGRules(
    n_players=3,
    endowment=10,
    multiplier=1.5,
    budget="balance",
    punishment=True,
    punish_max_tokens=5,
)
NAMES = ("alice", "bob", "carol")  # display names: the prompts say P1..P3


class FakeClient:
    """A provider that answers with scripted replies and keeps the requests."""

    name = "fake"
    model = "fake"
    enforces_timeout = True
    api_key = None

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        return Completion(self.replies.pop(0), finish_reason="stop")


def config(**over: Any) -> LLMAgentConfig:
    body = {
        "type": "llm",
        "model": "m",
        "prompts": {"system": "s.md", "round": "r.md", "personas_dir": "p"},
        "max_retries": 2,
    }
    return LLMAgentConfig.model_validate(body | over)


def seat(replies: list[str], game: str = "pgg", index: int = 1, **kw: Any) -> ResourceLLMSeat:
    n = 3 if game == "pgg" else 5
    opts = {"store_prompts": True, "store_raw": True, "talk": True} | kw
    cfg = opts.pop("cfg", config())
    return ResourceLLMSeat(
        cfg, FakeClient(replies), game=game, seat=index, game_seed=99, n_players=n, **opts
    )


def two_rounds() -> PGGContext:
    """Round 3 for seat 2 (P2) after two rounds worked out by hand (module RULES):
    round 1: 10, 4, 0 -> pot 14 x 1.5 = 21, 7 each; after the fund 7, 13, 17; P1 spends 2 on
    P3 (P3 loses 6): 5, 13, 11. Round 2: 5, 0, 0 -> 7.5, 2.5 each: 2.5, 15.5, 13.5."""
    first = play_round(RULES, (10.0, 10.0, 10.0), (10, 4, 0), {0: {2: 2}})
    second = play_round(RULES, first.balances, (5, 0, 0))
    assert first.balances == (5.0, 13.0, 11.0) and second.balances == (2.5, 15.5, 13.5)
    messages = (Message(0, 0, "Let's all give."), Message(2, 2, "Hi"))
    return PGGContext(RULES, 1, NAMES, 2, 4, (first, second), messages, 15.5, 15)


HAND_HISTORY = """Round 1:
  Messages: P1: "Let's all give."
  Contributions: P1=10, P2=4, P3=0 (total 14)
  Each player received 7 from the fund
  Punishments: P1 spent 2 punishing P3 (P3 lost 6)
  Balances after the round: P1=5, P2=13, P3=11
Round 2:
  Contributions: P1=5, P2=0, P3=0 (total 5)
  Each player received 2.5 from the fund
  Punishments: none
  Balances after the round: P1=2.5, P2=15.5, P3=13.5
Round 3 (this round):
  Messages: P3: "Hi\""""


def test_pgg_history_text_by_hand_and_the_contribution_prompt() -> None:
    s = seat(["<contribution>7</contribution>"])
    ctx = two_rounds()
    assert pgg_history_text(s.shown(ctx)) == HAND_HISTORY
    want = contribution_prompt(RULES, "P2", ("P1", "P2", "P3"), 3, 4, 15, HAND_HISTORY)
    assert s.contribution_prompt(ctx) == want
    choice = asyncio.run(s.contribute(ctx))
    assert (choice.value, choice.parse_failures, choice.fallback, choice.clamped) == (
        7,
        0,
        False,
        False,
    )
    request = s.client.requests[0]
    assert request.prompt == want and request.system == "" and request.purpose == "contribution"
    assert request.seed == derive_seed(99, "resource-call", 1, 2, "contribution", 0)
    (call,) = choice.calls
    assert call["stage"] == "contribution" and call["attempt"] == 0 and call["error"] is None
    assert call["prompt"] == want and call["reply"] == "<contribution>7</contribution>"


def test_total_visibility_shows_the_total_and_the_own_balance_only() -> None:
    ctx = replace(two_rounds(), rules=replace(RULES, visibility="total"))
    text = pgg_history_text(replace(ctx, names=("P1", "P2", "P3")))
    assert "  Total contributed: 14 (you contributed 4)" in text
    assert "  Your balance after the round: 15.5" in text and "P1=10" not in text


def test_unreadable_replies_are_re_asked_then_the_value_is_clamped() -> None:
    s = seat(["I'd give a lot", "<contribution>99</contribution>"], store_prompts=False)
    choice = asyncio.run(s.contribute(two_rounds()))
    assert (choice.value, choice.parse_failures, choice.fallback, choice.clamped) == (
        15,
        1,
        False,
        True,
    )
    first, second = choice.calls
    assert "no <contribution> tag" in first["error"] and second["error"] is None
    assert "clamped to 15" in second["clamped"]
    assert "prompt" not in first and first["reply"] == "I'd give a lot"
    retry = s.client.requests[1]
    assert retry.turns[0][0] == "I'd give a lot" and "between 0 and 15" in retry.turns[0][1]
    assert retry.seed != s.client.requests[0].seed and retry.tag.attempt == 1


def test_no_readable_reply_gives_the_stated_fallback() -> None:
    s = seat(["x", "<contribution>lots</contribution>", ""], store_raw=False)
    choice = asyncio.run(s.contribute(two_rounds()))
    assert (choice.value, choice.parse_failures, choice.fallback) == (0, 3, True)
    assert len(choice.calls) == 3 and all(c["error"] for c in choice.calls)
    assert all("reply" not in c for c in choice.calls)


def test_punishment_reads_tokens_clamps_and_falls_back() -> None:
    ctx = replace(two_rounds(), contributions=(5, 0, 0), post_fund=15.5)
    s = seat(["<punish>P3=20</punish>"])
    want = punishment_prompt(
        RULES, "P2", ("P1", "P2", "P3"), 3, 4, 15, pgg_history_text(s.shown(ctx), this_round=True)
    )
    assert s.punishment_prompt(ctx) == want
    assert (
        "  Contributions: P1=5, P2=0, P3=0 (total 5)\n  Your balance after the fund: 15.5" in want
    )
    choice = asyncio.run(s.punish(ctx))
    assert choice.tokens == {2: 5} and choice.clamped and choice.parse_failures == 0
    none = asyncio.run(seat(["<punish>NO</punish>"]).punish(ctx))
    assert none.tokens == {} and not none.fallback
    bad = asyncio.run(seat(["<punish>P9=1</punish>", "?", "no"]).punish(ctx))
    assert bad.tokens == {} and bad.fallback and bad.parse_failures == 3


def test_public_message_stop_is_silence_and_text_is_cut() -> None:
    ctx = two_rounds()
    silent = asyncio.run(seat(["<stop>"]).message(ctx))
    assert silent is not None and silent.text == "" and silent.calls[0]["stage"] == "message"
    said = asyncio.run(seat(["  I give everything, promise.  "], max_chars=6).message(ctx))
    assert said is not None and said.text == "I give"


COMMONS = CommonsRules()  # GovSim's: 5 fishermen, 100 tons


def season_one(outsider: bool = False) -> CommonsContext:
    """Season 2 (index 1) for Kate (seat 1): 10 tons each were caught in January."""
    january = SeasonResult(100, (10,) * 5, (10,) * 5, 50, 100, False)
    messages = (Message(0, 0, "Ten each is fine."), Message(1, 2, "Later today"))
    names = ("a", "b", "c", "d", "e")
    return CommonsContext(COMMONS, 1, names, 1, 3, (january,), messages, 100, True, outsider)


def test_harvest_prompt_is_govsim_s_with_heard_messages_and_reflections() -> None:
    s = seat(["Answer: 12 tons."], game="commons")
    s._joined = 0
    s._reflections = [(date(2024, 1, 1), "Ten each keeps the lake full.")]
    ctx = season_one()
    want = harvest_prompt(
        COMMONS,
        "Kate",
        100,
        date(2024, 2, 1),
        universalization=True,
        earlier_memories=[
            (date(2024, 1, 1), 'John said: "Ten each is fine."'),
            (date(2024, 1, 1), "Ten each keeps the lake full."),
        ],
    )
    assert s.harvest_prompt(ctx) == want
    choice = asyncio.run(s.harvest(ctx))
    assert (choice.value, choice.parse_failures, choice.fallback) == (12, 0, False)
    outsider = seat([], game="commons", index=4)
    assert OUTSIDER_GOALS in outsider.harvest_prompt(replace(ctx, seat=4, outsider=True))
    assert month_date(12) == date(2025, 1, 1)


def test_harvest_without_the_marker_is_a_parse_failure_and_the_fallback_is_zero() -> None:
    s = seat(["I would catch 7", "hmm", "Answer: many tons"], game="commons")
    choice = asyncio.run(s.harvest(season_one()))
    assert (choice.value, choice.parse_failures, choice.fallback) == (0, 3, True)
    high = asyncio.run(seat(["Answer: 140 tons"], game="commons").harvest(season_one()))
    assert high.value == 100 and high.clamped


def test_reflection_is_a_memory_and_messages_are_heard() -> None:
    s = seat(["Keep to ten.", "We agreed on ten."], game="commons")
    ctx = season_one()
    said = asyncio.run(s.message(ctx))
    assert said is not None and said.text == "Keep to ten."
    assert 'The fishermen\'s discussion this month so far:\n- Jack: "Later today"' in (
        s.client.requests[0].prompt
    )
    thought = asyncio.run(s.reflect(ctx))
    assert thought is not None and thought.calls[0]["stage"] == "reflection"
    assert s._reflections == [(date(2024, 2, 1), "We agreed on ten.")]
    assert 'Jack said: "Later today"' in s.client.requests[1].prompt  # this month's talk


def test_the_persona_is_the_system_prompt() -> None:
    s = seat(["<contribution>1</contribution>"], persona="Persona: liar. You lie.\n")
    asyncio.run(s.contribute(two_rounds()))
    assert s.client.requests[0].system == "Persona: liar. You lie.\n"


# ---------------------------------------------------------------------------------------------
# The mock's answers


def test_mock_contributions_per_persona() -> None:
    first = play_round(RULES, (10.0, 10.0, 10.0), (10, 4, 0))
    ctx = PGGContext(RULES, 1, ("P1", "P2", "P3"), 1, 4, (first,), (), 13.0, 13)
    history = pgg_history_text(ctx)
    prompt = contribution_prompt(RULES, "P2", ("P1", "P2", "P3"), 2, 4, 13, history)
    assert mock_contribution("cooperative", prompt, 0.1) == 13
    assert mock_contribution("cooperative", prompt, 0.9) == 10  # 4/5 of 13, rounded down
    assert mock_contribution("exploitative", prompt, 0.1) == 0
    assert mock_contribution("liar", prompt, 0.1) == 0
    assert mock_contribution("tit_for_tat", prompt, 0.1) == 5  # the others: (10 + 0) / 2
    start = contribution_prompt(RULES, "P2", ("P1", "P2", "P3"), 1, 4, 10, "No rounds played yet.")
    assert mock_contribution("tit_for_tat", start, 0.1) == 10
    assert resource_reply("liar", "contribution", "", prompt, 1) == "<contribution>0</contribution>"
    assert "promise" in resource_reply("liar", "message", "", prompt, 1)


def test_mock_cooperator_punishes_the_lowest_free_rider() -> None:
    ctx = PGGContext(RULES, 0, ("P1", "P2", "P3"), 0, 4, (), (), 10.0, 10, (10, 4, 0), 7.0)
    prompt = punishment_prompt(
        RULES, "P1", ("P1", "P2", "P3"), 1, 4, 7, pgg_history_text(ctx, this_round=True)
    )
    assert mock_punishment("cooperative", prompt) == "<punish>P3=3</punish>"
    assert mock_punishment("exploitative", prompt) == "<punish>NO</punish>"
    fair = PGGContext(RULES, 0, ("P1", "P2", "P3"), 0, 4, (), (), 10.0, 10, (10, 6, 5), 7.0)
    fair_prompt = punishment_prompt(
        RULES, "P1", ("P1", "P2", "P3"), 1, 4, 7, pgg_history_text(fair, this_round=True)
    )
    assert mock_punishment("cooperative", fair_prompt) == "<punish>NO</punish>"  # 2 x 5 >= 10


def test_mock_harvests_per_persona() -> None:
    prompt = harvest_prompt(COMMONS, "Kate", 80)  # share (80 // 2) // 5 = 8
    assert mock_harvest("cooperative", prompt, 0.1) == 8
    assert mock_harvest("cooperative", prompt, 0.9) == 7
    assert mock_harvest("exploitative", prompt, 0.1) == 40
    assert mock_harvest(None, harvest_prompt(COMMONS, "Luke", 80, goals=OUTSIDER_GOALS), 0.5) == 40
    memory = [(date(2024, 1, 1), "The others caught 14 tons each on average this month.")]
    remembered = harvest_prompt(COMMONS, "Kate", 80, date(2024, 2, 1), earlier_memories=memory)
    assert mock_harvest("tit_for_tat", remembered, 0.1) == 14
    assert mock_harvest("tit_for_tat", prompt, 0.1) == 8
    reply = resource_reply("cooperative", "harvest", "", prompt, 3)
    assert reply.endswith(("Answer: 8 tons.", "Answer: 7 tons."))
    assert resource_reply("cooperative", "harvest", "", prompt, 3, invalid_rate=1.0) in (
        "I am not sure yet.",
        "Let me think about what the others will do first.",
        "",
    )


def test_the_mock_provider_dispatches_resource_calls() -> None:
    from pdbench.agents.providers.mock import MockProvider

    provider = MockProvider(config(mock={"invalid_rate": 0.0}))
    prompt = harvest_prompt(COMMONS, "Kate", 80)
    request = CompletionRequest(
        system="Persona: exploitative.\n",
        prompt=prompt,
        temperature=0.0,
        max_tokens=64,
        seed=5,
        purpose="harvest",
    )
    done = asyncio.run(provider.complete(request))
    assert done.text.endswith("Answer: 40 tons.")
    again = asyncio.run(provider.complete(request))
    assert again.text == done.text


# ---------------------------------------------------------------------------------------------
# Short mock runs through `pdbench run`


def _run(tmp_path: Any, capsys: Any, name: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    import json
    import shutil
    from pathlib import Path

    import yaml
    from tests.support.cli import run_in_process

    repo = Path(__file__).resolve().parents[2]
    shutil.copytree(repo / "configs" / "agents", tmp_path / "configs" / "agents")
    shutil.copytree(repo / "configs" / "prompts", tmp_path / "configs" / "prompts")
    path = tmp_path / "configs" / f"{name}.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    code, _, err = run_in_process(["run", str(path)], capsys)
    assert code == 0, err
    out = tmp_path / "out"
    return [json.loads(line) for line in (out / "rounds.jsonl").read_bytes().splitlines()]


def test_a_mock_pgg_run_with_talk_and_punishment(tmp_path: Any, capsys: Any) -> None:
    llm = {"ref": "agents/llm_pgg.yaml"}
    body = {
        "run": {"run_id": "pgg_llm", "seed": 3, "output_dir": str(tmp_path / "out")},
        "horizon": {"type": "fixed", "n_rounds": 2},
        "pgg": {
            "replicates": 1,
            "talk": True,
            "game": {"preset": "pgg_bench"},
            "conditions": [
                {
                    "name": "mixed",
                    "seats": [llm, {**llm, "overrides": {"persona": "liar"}}, "FREE_RIDER"],
                }
            ],
        },
    }
    records = _run(tmp_path, capsys, "pgg", body)
    assert [r["round_index"] for r in records] == [0, 1]
    first = records[0]
    said = {m["from"]: m["text"] for m in first["messages"]}
    assert "promise" in said[1] and said[0]  # the liar promises; the cooperator talks
    stages = {(d["seat"], d["stage"]): d for d in first["decisions"]}
    assert stages[(0, "contribution")]["value"] == 20 or stages[(0, "contribution")]["value"] == 16
    assert stages[(1, "contribution")]["value"] == 0  # the liar free-rides
    assert stages[(0, "punishment")]["tokens"] == [[1, 3]]  # the cooperator punishes P2
    call = stages[(0, "contribution")]["calls"][0]
    assert "<contribution>" in call["reply"] and "You are P1 among these players" in call["prompt"]
    assert "calls" not in stages[(2, "contribution")]  # a policy makes no calls


def test_a_mock_commons_run_with_talk_and_reflections(tmp_path: Any, capsys: Any) -> None:
    llm = {"ref": "agents/llm_commons.yaml"}
    body = {
        "run": {"run_id": "commons_llm", "seed": 3, "output_dir": str(tmp_path / "out")},
        "horizon": {"type": "fixed", "n_rounds": 2},
        "commons": {
            "replicates": 1,
            "talk": True,
            "conditions": [
                {
                    "name": "talk",
                    "seats": [llm, llm, "SUSTAINABLE", "SUSTAINABLE", "SUSTAINABLE"],
                }
            ],
        },
    }
    records = _run(tmp_path, capsys, "commons", body)
    assert [r["round_index"] for r in records] == [0, 1]
    first = records[0]
    assert [m["from"] for m in first["messages"]] == [0, 1]
    assert first["messages"][0]["text"].startswith("Let's each catch at most")
    assert [r["from"] for r in first["reflections"]] == [0, 1]
    assert first["reflections"][0]["calls"][0]["stage"] == "reflection"
    harvest = [d for d in first["decisions"] if d["seat"] == 0][0]
    assert harvest["value"] in (9, 10)  # the sustainable share of 100 tons: (100 // 2) // 5
    assert "Answer:" in harvest["calls"][-1]["reply"]
    later = [d for d in records[1]["decisions"] if d["seat"] == 1][0]["calls"][0]["prompt"]
    assert "John said: \"Let's each catch at most" in later  # heard in January
    assert first["reflections"][1]["text"] in later  # its own reflection


def test_universalization_threshold_leaves_the_outsider_out() -> None:
    # GovSim's outsider run counts its 4 configured agents: at a full lake (100 // 2) // 4 = 12
    from pdbench.agents.commons_prompts import harvest_prompt
    from pdbench.core.commons import CommonsRules

    rules = CommonsRules(n_agents=5)
    five = harvest_prompt(rules, "John", 100, universalization=True)
    four = harvest_prompt(rules, "John", 100, universalization=True, sharing=4)
    assert "fishes more than 10 tons" in five
    assert "fishes more than 12 tons" in four
