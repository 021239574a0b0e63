"""The plan (`pdbench validate`, `run --dry-run`, the app's plan) against what a run records,
with and without talk (the messages shown grow every prompt): its input tokens are a quarter of
the characters the calls send (within 5%, counted from the stored prompts), and within 1.5x of
the input tokens the run records (the mock counts whitespace words); its calls within 1.5x of
the run's (parse retries come on top), its output an upper bound."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.support.configs import REPO, execute, experiment, llm, policy, write_config

from pdbench.runners.config.loader import load_config
from pdbench.runners.plan import describe_plan

CHARS_PER_TOKEN = 4  # the plan's stated rule (README, plan_tokens): ~4 characters a token


def _personas(rounds: int, **channel: Any) -> dict[str, Any]:
    """Two mock LLM agents (cooperative, exploitative), and TFT against the mock's wsls."""
    data = experiment(
        [
            ("LL", llm("cooperative"), llm("exploitative")),
            ("PL", policy("TFT", talk="honest"), llm("wsls", history_window=None)),
        ],
        horizon={"type": "fixed", "n_rounds": rounds},
        run={"store_prompts": True},
    )
    data["communication"] = channel
    return data


DESIGNS = {
    # the T02 repro's design (200 rounds there)
    "every_round_3_turns_history_1000": _personas(
        25, mode="every_round", turns=3, max_chars=2000, history=1000
    ),
    "a_first_history_20": _personas(40, mode="every_round", order="a_first", turns=2, history=20),
    "no_talk": _personas(40),
    "pregame": _personas(40, mode="pregame", order="alternate", turns=2),
}


def _planned(cfg: Path) -> tuple[int, int, int]:
    """(calls, input tokens, output tokens) as `describe_plan` prints them."""
    text = describe_plan(load_config(cfg))
    calls = re.search(r"expected LLM calls: (\d+)", text)
    tokens = re.search(r"estimated tokens: ~(\d+) input, at most (\d+) output", text)
    assert calls and tokens, text
    return int(calls.group(1)), int(tokens.group(1)), int(tokens.group(2))


def _sent_characters(run_dir: Path) -> int:
    """Characters of system and prompt of every call (not its retries), from rounds.jsonl."""
    sent = 0
    for line in (run_dir / "rounds.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        prompts = record.get("prompts") or {}
        for shown in prompts.values():
            sent += len(shown["system"]) + len(shown["round"])
        for message in record.get("exchange") or []:
            if message.get("prompt") is not None:
                sent += len(prompts[message["from"]]["system"]) + len(message["prompt"])
    return sent


def _check(cfg: Path, run_dir: Path) -> None:
    calls, tokens_in, tokens_out = _planned(cfg)
    execute(cfg, output_dir=run_dir, use_cache=False)
    used = json.loads((run_dir / "run_manifest.json").read_text())["usage"]["total"]
    sent = _sent_characters(run_dir)
    assert abs(tokens_in * CHARS_PER_TOKEN / sent - 1) < 0.05, (tokens_in, sent)
    assert 1 / 1.5 <= tokens_in / used["input_tokens"] <= 1.5, (tokens_in, used)
    assert 1 / 1.5 <= calls / used["llm_calls"] <= 1.5, (calls, used)
    assert used["output_tokens"] <= tokens_out


@pytest.mark.parametrize("design", DESIGNS)
def test_the_plan_s_estimate_is_near_what_the_run_uses(design: str, tmp_path: Path) -> None:
    _check(write_config(DESIGNS[design], tmp_path), tmp_path / "run")


def test_the_plan_of_configs_talk_yaml(tmp_path: Path) -> None:
    shutil.copytree(REPO / "configs", tmp_path / "configs")
    cfg = tmp_path / "configs" / "talk.yaml"
    text = cfg.read_text().replace("replicates: 10", "replicates: 3")  # the ratio is the same
    cfg.write_text(text)
    _check(cfg, tmp_path / "run")
