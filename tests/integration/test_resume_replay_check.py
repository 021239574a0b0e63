"""Resume keeps a finished game of agents that replay exactly (policies; Axelrod strategies
replay the same way) only when its moves are those its agents play: a game rewritten so that its payoffs and running
totals still fit its moves passed every record check and was kept; it is now played again and
named (the same check as groups', tests/integration/test_groups_resume.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from tests.support.cli import run_process


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


@pytest.mark.parametrize("rounds_log", ["jsonl", "both"])
def test_a_rewritten_policy_game_that_adds_up_is_played_again(
    tmp_path: Path, rounds_log: str
) -> None:
    out = tmp_path / "out"
    config = tmp_path / "pw.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "run": {
                    "run_id": "pw",
                    "seed": 3,
                    "output_dir": str(out),
                    "rounds_log": rounds_log,
                },
                "horizon": {"type": "fixed", "n_rounds": 10},
                "experiment": {
                    "replicates": 2,
                    "conditions": [
                        {"name": "TFT_vs_ALLD", "agent_a": "TFT", "agent_b": "ALLD"},
                        {"name": "noisy", "agent_a": "GTFT", "agent_b": "WSLS", "noise": 0.1},
                    ],
                },
            }
        )
    )
    assert run_process(["run", str(config)], tmp_path).returncode == 0
    want = [
        {k: v for k, v in r.items() if k != "timestamp_utc"} for r in _records(out / "rounds.jsonl")
    ]
    rewritten, totals = [], [0.0, 0.0]
    for record in _records(out / "rounds.jsonl"):
        if record["condition"] == "TFT_vs_ALLD" and record["replicate"] == 0:
            for i, side in enumerate("ab"):  # ALLD cooperating, paid R = 3 each round
                record[f"agent_{side}_action"] = record[f"agent_{side}_intended_action"] = "C"
                record[f"agent_{side}_payoff"] = 3.0
                totals[i] += 3.0
                record[f"agent_{side}_cum_payoff"] = totals[i]
        rewritten.append(json.dumps(record))
    (out / "rounds.jsonl").write_text("\n".join(rewritten) + "\n")
    manifest_path = out / "run_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["status"] = "interrupted"
    manifest.pop("jsonl_stamp", None)
    manifest_path.write_text(json.dumps(manifest))
    done = run_process(["resume", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "3 kept from before" in done.stdout
    assert (
        "game 'TFT_vs_ALLD' replicate 0: its moves are not what its agents play (replayed)"
        in done.stdout
    )
    got = [
        {k: v for k, v in r.items() if k != "timestamp_utc"} for r in _records(out / "rounds.jsonl")
    ]
    assert got == want
