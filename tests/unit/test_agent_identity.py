"""Who an agent is across runs (core/agents.py): an LLM agent's prompt version follows its prompt
files' contents and prompt settings, a policy agent is its policy and parameters, and the design
an agent faced is read from its own side."""

from __future__ import annotations

import json
from typing import Any

from pdbench.core.agents import (
    agent_identity,
    condition_design,
    design_differences,
    prompt_version,
    side_payoffs,
)

FILES = {
    "prompts/pd_system.md": "aaa",
    "prompts/pd_round.md": "bbb",
    "prompts/personas/cooperative.md": "ccc",
    "prompts/personas/exploitative.md": "ddd",
}
MATRIX = {"C": {"C": [3, 3], "D": [0, 5]}, "D": {"C": [5, 0], "D": [1, 1]}}


def llm_config(**changes: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "type": "llm",
        "provider": "mock",
        "model": "mock-persona-v1",
        "persona": "cooperative",
        "history_window": 10,
        "prompts": {
            "system": "prompts/pd_system.md",
            "round": "prompts/pd_round.md",
            "personas_dir": "prompts/personas",
        },
    }
    config.update(changes)
    return config


def test_the_prompt_version_follows_contents_and_settings_not_paths() -> None:
    base = prompt_version(llm_config(), FILES)
    assert len(base) == 8 and base == prompt_version(llm_config(), dict(FILES))
    # The same files named from another directory (an agent file's `../prompts/...`).
    moved = llm_config(
        prompts={
            "system": "../prompts/pd_system.md",
            "round": "./../prompts/pd_round.md",
            "personas_dir": "../prompts/personas",
        }
    )
    assert prompt_version(moved, FILES) == base
    # An edited system prompt, another persona text, another history window: new versions.
    assert prompt_version(llm_config(), {**FILES, "prompts/pd_system.md": "zzz"}) != base
    assert prompt_version(llm_config(), {**FILES, "prompts/personas/cooperative.md": "y"}) != base
    assert prompt_version(llm_config(history_window=5), FILES) != base
    # A file beside the round template (`pd_round.first_round.md`) is part of the prompt.
    beside = {**FILES, "prompts/pd_round.first_round.md": "eee"}
    assert prompt_version(llm_config(), beside) != base


def test_identities_of_llm_and_policy_agents() -> None:
    coop = agent_identity(llm_config(), "mock-persona-v1[cooperative]", FILES)
    exploit = agent_identity(llm_config(persona="exploitative"), "x", FILES)
    assert coop.kind == "llm" and coop.key != exploit.key
    assert coop.label.startswith("mock-persona-v1[cooperative] · prompt ")
    assert dict(coop.details) == {
        "model": "mock/mock-persona-v1",
        "persona": "cooperative",
        "prompt version": prompt_version(llm_config(), FILES),
    }
    gtft = {"type": "policy", "policy": "GTFT", "params": {"generous_prob": 0.3, "coop_prob": None}}
    plain = {"type": "policy", "policy": "GTFT", "params": {"generous_prob": None}}
    a, b = agent_identity(gtft, "GTFT", {}), agent_identity(plain, "GTFT", {})
    assert a.label == "GTFT(generous_prob=0.3)" and b.label == "GTFT" and a.key != b.key
    assert agent_identity(None, "Someone", {}).kind == "unknown"


def test_the_payoffs_from_side_b_put_its_own_payoff_first() -> None:
    # B plays C while A plays D: the matrix's D row, C column, [5, 0]: B gets 0, A gets 5.
    from_b = dict((m, (own, other)) for m, own, other in side_payoffs(MATRIX, "b"))
    assert from_b == {"CC": (3, 3), "CD": (0, 5), "DC": (5, 0), "DD": (1, 1)}
    skewed = {"C": {"C": [3, 2], "D": [0, 6]}, "D": {"C": [5, 0], "D": [1, 1]}}
    from_a = dict((m, (own, other)) for m, own, other in side_payoffs(skewed, "a"))
    from_b = dict((m, (own, other)) for m, own, other in side_payoffs(skewed, "b"))
    assert from_a["CD"] == (0, 6) and from_b["CD"] == (0, 5) and from_b["CC"] == (2, 3)


def test_design_differences_name_what_differs() -> None:
    tft = agent_identity({"type": "policy", "policy": "TFT", "params": {}}, "TFT", {})
    grim = agent_identity({"type": "policy", "policy": "GRIM", "params": {}}, "GRIM", {})
    fixed = {"type": "fixed", "n_rounds": 20}
    first = condition_design("a", tft, "TFT", MATRIX, fixed, 0.0, None)
    assert (
        design_differences(first, condition_design("a", tft, "TFT", MATRIX, fixed, None, None))
        == []
    )
    noisy = condition_design("a", tft, "TFT", MATRIX, fixed, 0.1, None)
    assert design_differences(first, noisy) == ["noise 0.0 vs 0.1"]
    other = condition_design(
        "a", grim, "GRIM", MATRIX, {"type": "fixed", "n_rounds": 30}, 0.0, None
    )
    found = design_differences(first, other)
    assert found[0] == "opponent TFT vs GRIM" and found[1].startswith("horizon ")
    talk = condition_design("a", tft, "TFT", MATRIX, fixed, 0.0, {"mode": "every_round"})
    assert design_differences(first, talk) == ["communication"]
    assert json.loads(first["noise"]) == 0.0
