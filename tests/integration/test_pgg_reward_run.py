"""`pdbench run` of a public goods game with the reward stage (issue 31): REWARDER seats and a free
rider, balances and the reward metric checked against a hand calculation; mock LLM seats that
reward and punish in the same stage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from tests.support.cli import run_in_process

REPO = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, capsys: Any, body: dict[str, Any]) -> Path:
    shutil.copytree(REPO / "configs" / "agents", tmp_path / "configs" / "agents")
    shutil.copytree(REPO / "configs" / "prompts", tmp_path / "configs" / "prompts")
    path = tmp_path / "configs" / "reward.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    code, _, err = run_in_process(["run", str(path)], capsys)
    assert code == 0, err
    return tmp_path / "out"


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "rounds.jsonl").read_bytes().splitlines()]


def test_rewarders_balances_and_reward_metric_by_hand(tmp_path: Path, capsys: Any) -> None:
    body = {
        "run": {"run_id": "reward", "seed": 4, "output_dir": str(tmp_path / "out")},
        "horizon": {"type": "fixed", "n_rounds": 3},
        "pgg": {
            "replicates": 2,
            "game": {
                "endowment": 10,
                "multiplier": 2.0,
                "reward": True,
                "reward_cost": 1,
                "reward_effect": 1,
                "reward_max_tokens": 5,
            },
            "conditions": [
                {"name": "rewarders", "seats": ["REWARDER"] * 3 + ["FREE_RIDER"]},
            ],
        },
    }
    out = _run(tmp_path, capsys, body)
    records = _records(out)
    assert len(records) == 6
    # each round: 10, 10, 10, 0 -> 30 x 2 / 4 = 15 each; every REWARDER gives 1 token to each of
    # the two other REWARDERs (mean 7.5), pays 2 and gets 2; the free rider keeps E + 15
    for r in records:
        assert r["contributions"] == [10, 10, 10, 0]
        assert r["reward_given"] == [2, 2, 2, 0] and r["reward_received"] == [2, 2, 2, 0]
        assert sorted(map(tuple, r["reward_tokens"])) == [
            (0, 1, 1),
            (0, 2, 1),
            (1, 0, 1),
            (1, 2, 1),
            (2, 0, 1),
            (2, 1, 1),
        ]
        assert {(d["seat"], d["stage"]) for d in r["decisions"]} >= {(0, "reward"), (3, "reward")}
        assert "punish_tokens" in r  # the record's fields as before, the reward ones added
    last = [r for r in records if r["last"]]
    assert [r["balances"] for r in last] == [[45, 45, 45, 75]] * 2
    row = pq.read_table(out / "aggregates.parquet").to_pylist()[0]
    # the group pays 6 a round, 18 a game; post-fund balances summed 70 + 140 + 210 = 420
    assert row["reward_given"] == row["reward_given_ci_low"] == row["reward_given_ci_high"] == 18
    assert row["reward_given_fraction"] == pytest.approx(18 / 420)
    assert row["efficiency"] == pytest.approx(210 / 240)  # rewards 1:1 move money, make none
    manifest = json.loads((out / "pgg_manifest.json").read_text())
    assert manifest["conditions"][0]["rules"]["reward_max_tokens"] == 5


def test_mock_llm_seats_reward_and_punish_in_one_stage(tmp_path: Path, capsys: Any) -> None:
    llm = {"ref": "agents/llm_pgg.yaml"}
    body = {
        "run": {"run_id": "reward_llm", "seed": 3, "output_dir": str(tmp_path / "out")},
        "horizon": {"type": "fixed", "n_rounds": 2},
        "pgg": {
            "replicates": 1,
            "game": {"preset": "pgg_bench", "reward": True},
            "conditions": [
                {"name": "mixed", "seats": [llm, "FULL_COOPERATOR", "FREE_RIDER"]},
            ],
        },
    }
    records = _records(_run(tmp_path, capsys, body))
    first = records[0]
    stages = {(d["seat"], d["stage"]): d for d in first["decisions"]}
    assert first["contributions"][1:] == [20, 0]
    # the cooperator (P1, 20 or 16) rewards P2, who gave 20 (at least its own), and punishes P3
    assert stages[(0, "reward")]["tokens"] == [[1, 1]]
    assert stages[(0, "punishment")]["tokens"] == [[2, 3]]
    call = stages[(0, "reward")]["calls"][0]
    assert "<reward>" in call["reply"] and "Reward Phase:" in call["prompt"]
    # P2: balance after the fund, then +1 from P1's reward token (1:1), no punishment received
    assert first["balances"][1] == first["post_fund"][1] + 1
    assert first["reward_received"] == [0, 1, 0]
    # the second round's prompts show the first round's rewards
    later = {(d["seat"], d["stage"]): d for d in records[1]["decisions"]}
    assert (
        "Rewards: P1 gave P2 1 token(s) (P2 got 1)"
        in later[(0, "contribution")]["calls"][0]["prompt"]
    )
