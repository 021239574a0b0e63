"""A real model in a group, offline: SmolLM2-135M-Instruct (llama.cpp's server, the `local`
extra) in one seat of a three-seat public goods group with two group policies, on the group
prompts, three rounds. What it answered is read as moves are read in pairs (parse failures
counted, fallbacks stated) and the record holds its prompts and replies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from tests.support.cli import run_process

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_a_local_model_plays_a_seat_of_a_group(tmp_path: Path) -> None:
    shutil.copytree(REPO / "configs", tmp_path / "configs")
    seat = {"ref": "agents/local_smollm2_group.yaml", "overrides": {"max_retries": 1}}
    body = {
        "run": {
            "run_id": "local_group",
            "seed": 5,
            "output_dir": str(tmp_path / "out"),
            "rounds_log": "jsonl",
        },
        "horizon": {"type": "fixed", "n_rounds": 3},
        "group_game": {"kind": "public_goods", "r": 2.0},
        "groups": {
            "replicates": 1,
            "conditions": [{"name": "llm_cc_alld", "seats": [seat, "CC", "ALLD"]}],
        },
    }
    config = tmp_path / "configs" / "local_group.yaml"
    config.write_text(yaml.safe_dump(body, sort_keys=False))
    done = run_process(["run", str(config)], tmp_path)
    assert done.returncode == 0, done.stderr
    records = [
        json.loads(line) for line in (tmp_path / "out" / "rounds.jsonl").read_bytes().splitlines()
    ]
    assert [r["round_index"] for r in records] == [0, 1, 2]
    for record in records:
        assert record["agent_a_action"] in ("C", "D")
        system = record["prompts"]["agent_a"]["system"]
        assert "group of 3 players" in system and "You are Player 1" in system
        attempts = record["raw_responses"]["agent_a"]
        assert 1 <= len(attempts) <= 2
        # a fallback is stated: a round whose every reply was invalid is a parse failure
        valid = any(a.get("valid") for a in attempts)
        assert record["agent_a_parse_failure"] is (not valid)
    last = records[-1]["prompts"]["agent_a"]["round"]
    assert "Round 2: you played" in last and "Player 3 D" in last  # ALLD, seat 3, as labelled
    manifest = json.loads((tmp_path / "out" / "groups_manifest.json").read_text())
    assert manifest["status"] == "completed"
