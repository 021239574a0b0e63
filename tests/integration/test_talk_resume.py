"""kill -9 during a run whose agents talk, then `resume`: the same rounds (messages included) and
aggregates (talk metrics included) as an uninterrupted run, and the kept games' message calls
are not made again."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.integration.test_resume import (
    CONFIGS,
    N_ROUNDS,
    aggregates,
    complete_games,
    manifest,
    pdbench,
    read_calls,
    rounds_without_timestamps,
    start_and_stop,
)
from tests.support.configs import execute

REPLICATES = 4


def write_talk_experiment(root: Path) -> Path:
    """root/cfg (a copy of configs/) with a talking experiment (mock LLMs with latency and
    invalid replies, and policies with message rules)."""
    cfg_dir = root / "cfg"
    if not cfg_dir.exists():
        shutil.copytree(CONFIGS, cfg_dir)

    def llm(persona: str) -> dict[str, Any]:
        mock = {"invalid_rate": 0.1, "latency_ms": 20}
        return {"ref": "agents/llm_default.yaml", "overrides": {"persona": persona, "mock": mock}}

    def policy(name: str, talk: str) -> dict[str, Any]:
        return {"ref": "agents/policies.yaml", "overrides": {"policy": name, "talk": talk}}

    body = {
        "run": {"run_id": "talk_resume", "seed": 99, "output_dir": "out-not-used"},
        "horizon": {"type": "fixed", "n_rounds": N_ROUNDS},
        "communication": {"mode": "every_round", "order": "alternate"},
        "experiment": {
            "replicates": REPLICATES,
            "conditions": [
                {
                    "name": "coop_vs_exploit",
                    "agent_a": llm("cooperative"),
                    "agent_b": llm("exploitative"),
                },
                {
                    "name": "tft_vs_liar",
                    "agent_a": llm("tit_for_tat"),
                    "agent_b": policy("ALLD", "always_promise"),
                },
                {
                    "name": "honest_pair",
                    "agent_a": policy("TFT", "honest"),
                    "agent_b": policy("WSLS", "honest"),
                },
            ],
        },
    }
    path = cfg_dir / "talk.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.slow
def test_kill_9_during_a_talk_run_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    cfg = write_talk_experiment(reference)
    ref_out = reference / "out"
    summary = execute(cfg, output_dir=ref_out, cache_dir=reference / "cache", concurrency=8)
    assert summary.manifest["status"] == "completed"
    ref_rounds = rounds_without_timestamps(ref_out)
    assert all("exchange" in r for r in ref_rounds)  # every round is preceded by an exchange

    cfg = write_talk_experiment(tmp_path / "killed")
    out, cache = tmp_path / "killed" / "out", tmp_path / "killed" / "cache"
    proc = start_and_stop(cfg, out, cache, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    kept = complete_games(out)
    assert 1 <= len(kept) < 3 * REPLICATES
    calls_path = out / "llm_calls.jsonl"
    offset = len(calls_path.read_bytes())

    done = pdbench(
        ["run", str(cfg), "--resume", "--output-dir", str(out), "--cache-dir", str(cache)],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert manifest(out)["status"] == "completed"
    assert rounds_without_timestamps(out) == ref_rounds
    got, want = aggregates(out, set()), aggregates(ref_out, set())
    assert [
        {k: (r[k], w[k]) for k in r if r[k] != w[k]} for r, w in zip(got, want, strict=True)
    ] == [{}] * len(got)
    resumed = [json.loads(line) for line in calls_path.read_bytes()[offset:].splitlines()]
    assert not {(c["condition"], c["replicate"]) for c in resumed} & kept
    assert any(c["purpose"] == "message" for c in read_calls(calls_path))
