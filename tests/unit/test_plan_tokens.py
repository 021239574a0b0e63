"""The plan's prompt size model (`pdbench.runners.plan_tokens`): its sums against brute force,
and a tiny talking game whose prompt characters are counted by hand, then checked against the
prompts the game really sends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.configs import execute, write_config

from pdbench.runners.config.loader import load_config
from pdbench.runners.plan import describe_plan, estimate_per_model
from pdbench.runners.plan_tokens import sum_min
from pdbench.runners.start import plans_for


@pytest.mark.parametrize("n", [0, 1, 2, 5, 17])
@pytest.mark.parametrize("slope", [1, 3, 6])
@pytest.mark.parametrize("cap", [None, 0, 1, 4, 10, 100])
def test_sum_min_is_the_sum_it_names(n: int, slope: int, cap: int | None) -> None:
    brute = sum(slope * r if cap is None else min(cap, slope * r) for r in range(n))
    assert sum_min(n, slope, cap) == brute


def _tiny(tmp_path: Path) -> Path:
    """3 rounds, a message before each move (simultaneous, 1 turn, 2 earlier messages shown):
    the mock LLM (no persona in its system prompt, so it says "Let's see how it goes.") with
    one-line templates, against ALLC saying "Hi"."""
    prompts = tmp_path / "tiny"
    prompts.mkdir()
    (prompts / "system.md").write_text("SYS\n")
    (prompts / "round.md").write_text("{history_len}\n")
    (prompts / "message.md").write_text("{history_len}|{messages}\n")
    agent = {
        "type": "llm",
        "provider": "mock",
        "model": "tiny",
        "prompts": {
            "system": "tiny/system.md",
            "round": "tiny/round.md",
            "message": "tiny/message.md",
            "personas_dir": "prompts/personas",
        },
        "mock": {"invalid_rate": 0.0},
    }
    allc = {"type": "policy", "policy": "ALLC", "talk": "fixed", "talk_text": "Hi"}
    data = {
        "run": {"run_id": "tiny", "seed": 1, "output_dir": "out", "store_prompts": True},
        "horizon": {"type": "fixed", "n_rounds": 3},
        "communication": {"mode": "every_round", "turns": 1, "history": 2},
        "experiment": {
            "replicates": 1,
            "conditions": [{"name": "tiny", "agent_a": agent, "agent_b": allc}],
        },
    }
    return write_config(data, tmp_path)


# By hand. A message line: "- before round R, the other player: " (36 characters) or
# "- before round R, you: " (23), then the text in quotes: ALLC's "Hi" 4, the mock's 24; so 40
# and 47, 41 and 48 with the line break before it. The header "Messages (oldest first):" is
# 24 characters, "No messages yet." 16.
SYSTEM = 4  # "SYS\n", sent with each of the 6 calls (3 moves, 3 messages)
# Message prompts "{history_len}|{messages}\n": round 1 sees no message yet; rounds 2 and 3 the
# two earlier messages kept (history: 2), the mock's and ALLC's of the exchange before.
MESSAGE_PROMPTS = (2 + 16 + 1) + 2 * (2 + 24 + 48 + 41 + 1)
# Move prompts "{history_len}" + "\n\n" + messages + "\n": round 1 shows its exchange (the
# mock's line, ALLC's line); rounds 2 and 3 the two of the exchange before too.
MOVE_PROMPTS = (1 + 2 + 24 + 48 + 41 + 1) + 2 * (1 + 2 + 24 + 2 * (48 + 41) + 1)
BY_HAND = 6 * SYSTEM + MESSAGE_PROMPTS + MOVE_PROMPTS


def test_the_tiny_game_s_prompt_characters_by_hand(tmp_path: Path) -> None:
    cfg = _tiny(tmp_path)
    loaded = load_config(cfg)
    (model,) = estimate_per_model(loaded, plans_for(loaded)).values()
    assert BY_HAND == 804
    assert model["calls"] == 6 and model["tokens_in"] == BY_HAND // 4
    assert f"~{BY_HAND // 4} input" in describe_plan(loaded)
    # what the game really sends: the stored prompts of each move and message call
    execute(cfg, output_dir=tmp_path / "run", use_cache=False)
    sent = 0
    for line in (tmp_path / "run" / "rounds.jsonl").read_text().splitlines():
        record = json.loads(line)
        prompts = record["prompts"]["agent_a"]
        sent += len(prompts["system"]) + len(prompts["round"])
        for message in record["exchange"]:
            if message["from"] == "agent_a":
                sent += len(prompts["system"]) + len(message["prompt"])
    assert sent == BY_HAND
