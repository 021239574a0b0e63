"""A real model in the resource games, offline: SmolLM2-135M-Instruct (llama.cpp's server, the
`local` extra) in a seat of a three-seat public goods game (PGG-Bench's prompts, talk and
punishment) and of a GovSim commons, two rounds each. A small model often answers outside the
asked format: every decision is read with re-asks, and the parse failures and fallbacks of the
record are what aggregates.parquet counts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from tests.support.cli import run_process

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
# one re-ask; the slot's cached prompt start reused (the games' prompts share a long start), so a
# call costs seconds, not tens of seconds
FAST = {"max_retries": 1, "prompt_cache": True}


def _run(tmp_path: Path, name: str, body: dict[str, Any]) -> tuple[list[dict], dict]:
    shutil.copytree(REPO / "configs", tmp_path / "configs")
    config = tmp_path / "configs" / f"{name}.yaml"
    config.write_text(yaml.safe_dump(body, sort_keys=False))
    done = run_process(["run", str(config)], tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    records = [json.loads(line) for line in (out / "rounds.jsonl").read_bytes().splitlines()]
    (row,) = pq.read_table(out / "aggregates.parquet").to_pylist()
    return records, row


def _counted(records: list[dict]) -> tuple[int, int]:
    """(parse failures, fallbacks) summed over the LLM seats' decisions of the record."""
    decisions = [d for r in records for d in r["decisions"] if d.get("calls")]
    assert decisions
    for d in decisions:  # every unreadable reply was re-asked, then the fallback stated
        errors = sum(1 for c in d["calls"] if c["error"])
        assert errors == d["parse_failures"]
        assert d["fallback"] is (errors == len(d["calls"]))
    return sum(d["parse_failures"] for d in decisions), sum(d["fallback"] for d in decisions)


def test_a_local_model_in_a_public_goods_game(tmp_path: Path) -> None:
    seat = {"ref": "agents/local_smollm2_pgg.yaml", "overrides": FAST}
    body = {
        "run": {"run_id": "local_pgg", "seed": 5, "output_dir": str(tmp_path / "out")},
        "horizon": {"type": "fixed", "n_rounds": 2},
        "pgg": {
            "replicates": 1,
            "talk": True,
            "game": {"preset": "pgg_bench"},
            "conditions": [{"name": "llm", "seats": [seat, "FULL_COOPERATOR", "FREE_RIDER"]}],
        },
    }
    records, row = _run(tmp_path, "local_pgg", body)
    assert [r["round_index"] for r in records] == [0, 1]
    for record in records:
        mine = [d for d in record["decisions"] if d["seat"] == 0]
        assert [d["stage"] for d in mine] == ["contribution", "punishment"]
        assert 0 <= mine[0]["value"] <= 40
        assert "You are P1 among these players: P1, P2, P3" in mine[0]["calls"][0]["prompt"]
        assert [m["from"] for m in record["messages"]] == [0]
    assert (row["parse_failures"], row["fallbacks"]) == _counted(records)


def test_a_local_model_in_a_commons(tmp_path: Path) -> None:
    seat = {"ref": "agents/local_smollm2_commons.yaml", "overrides": FAST}
    body = {
        "run": {"run_id": "local_commons", "seed": 5, "output_dir": str(tmp_path / "out")},
        "horizon": {"type": "fixed", "n_rounds": 2},
        "commons": {
            "replicates": 1,
            "talk": True,
            "conditions": [{"name": "llm", "seats": [seat, *["SUSTAINABLE"] * 4]}],
        },
    }
    records, row = _run(tmp_path, "local_commons", body)
    assert 1 <= len(records) <= 2  # a greedy first month may empty the lake
    first = records[0]
    (harvest,) = [d for d in first["decisions"] if d["seat"] == 0]
    assert "Task: With a fishing range set between 0-100" in harvest["calls"][0]["prompt"]
    assert [m["from"] for m in first["messages"]] == [0]
    assert [r["from"] for r in first["reflections"]] == [0]
    assert (row["parse_failures"], row["fallbacks"]) == _counted(records)
