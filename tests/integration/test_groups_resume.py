"""kill -9 during a groups run whose LLM seats talk, then `resume`: the same rounds (messages
included) and group tables (talk metrics included) as an uninterrupted run, and the kept games'
calls are not made again. Also: a kept game that was tampered with is played again (a policy
game) and named."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from tests.integration.test_resume import (
    CONFIGS,
    N_ROUNDS,
    pdbench,
    read_calls,
    rounds_without_timestamps,
    start_and_stop,
)
from tests.support.configs import execute

REPLICATES = 3
TABLES = (
    "aggregates.parquet",
    "seats.parquet",
    "group_rounds.parquet",
    "group_conditional.parquet",
)


def write_groups(root: Path) -> Path:
    """root/cfg (a copy of configs/) with a groups config: a talking group of mock LLM seats
    (latency, invalid replies), a policy group, and groups drawn from a pool."""
    cfg_dir = root / "cfg"
    if not cfg_dir.exists():
        shutil.copytree(CONFIGS, cfg_dir)

    def llm(persona: str) -> dict[str, Any]:
        mock = {"invalid_rate": 0.1, "latency_ms": 20}
        return {"ref": "agents/llm_group.yaml", "overrides": {"persona": persona, "mock": mock}}

    def policy(name: str, talk: str = "silent", label: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"type": "policy", "policy": name, "talk": talk}
        if label:
            body["name"] = label
        return body

    body = {
        "run": {
            "run_id": "groups_resume",
            "seed": 99,
            "output_dir": "out-not-used",
            "rounds_log": "jsonl",
        },
        "horizon": {"type": "fixed", "n_rounds": N_ROUNDS},
        "group_game": {"kind": "public_goods", "r": 3.0},
        "communication": {"mode": "every_round", "order": "round_robin"},
        "groups": {
            "replicates": REPLICATES,
            "conditions": [
                {
                    "name": "talking_llms",
                    "seats": [
                        llm("cooperative"),
                        llm("liar"),
                        policy("CC", "honest"),
                        llm("tit_for_tat"),
                    ],
                },
                {
                    "name": "policies_broadcast",
                    "seats": [
                        policy("TFT", "honest"),
                        policy("ALLD", "always_promise"),
                        policy("WSLS", "honest"),
                    ],
                    "noise": 0.05,
                },
                {
                    "name": "strangers_silent",
                    "pool": [
                        policy("CC", label="cc1"),
                        policy("CC", label="cc2"),
                        policy("ALLD"),
                        policy("TFT"),
                        policy("GRIM"),
                    ],
                    "size": 3,
                    "communication": {"mode": "none"},
                },
            ],
        },
    }
    path = cfg_dir / "groups_resume.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def tables(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    return {name: pq.read_table(run_dir / name).to_pylist() for name in TABLES}


def complete(run_dir: Path) -> set[tuple[str, int]]:
    counts: dict[tuple[str, int], int] = {}
    for line in (run_dir / "rounds.jsonl").read_bytes().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        key = (rec["condition"], rec["replicate"])
        counts[key] = counts.get(key, 0) + 1
    return {k for k, n in counts.items() if n == N_ROUNDS}


@pytest.mark.slow
def test_kill_9_during_a_talking_groups_run_then_resume_equals_an_uninterrupted_run(
    tmp_path: Path,
) -> None:
    reference = tmp_path / "reference"
    cfg = write_groups(reference)
    ref_out = reference / "out"
    summary = execute(cfg, output_dir=ref_out, cache_dir=reference / "cache", concurrency=8)
    assert summary.manifest["status"] == "completed"
    ref_rounds = rounds_without_timestamps(ref_out)
    talking = [r for r in ref_rounds if r["condition"] != "strangers_silent"]
    assert talking and all("exchange" in r for r in talking)
    assert any("to" not in e for r in talking for e in r["exchange"])  # broadcast

    cfg = write_groups(tmp_path / "killed")
    out, cache = tmp_path / "killed" / "out", tmp_path / "killed" / "cache"
    proc = start_and_stop(cfg, out, cache, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    kept = complete(out)
    assert 1 <= len(kept) < 3 * REPLICATES
    calls_path = out / "llm_calls.jsonl"
    offset = len(calls_path.read_bytes())

    done = pdbench(
        ["run", str(cfg), "--resume", "--output-dir", str(out), "--cache-dir", str(cache)],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "groups_manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert rounds_without_timestamps(out) == ref_rounds
    got, want = tables(out), tables(ref_out)
    for name in TABLES:
        assert got[name] == want[name], name
    resumed = [json.loads(line) for line in calls_path.read_bytes()[offset:].splitlines()]
    assert not {(c["condition"], c["replicate"]) for c in resumed} & kept
    assert any(c["purpose"] == "message" for c in read_calls(calls_path))


def test_resume_plays_a_tampered_policy_game_again_and_names_it(tmp_path: Path) -> None:
    root = tmp_path / "run"
    cfg = write_groups(root)
    body = yaml.safe_load(cfg.read_text())
    body["groups"]["conditions"] = body["groups"]["conditions"][1:]  # policies only
    cfg.write_text(yaml.safe_dump(body, sort_keys=False))
    out = root / "out"
    execute(cfg, output_dir=out)
    want = rounds_without_timestamps(out)
    lines = (out / "rounds.jsonl").read_bytes().splitlines(keepends=True)
    record = json.loads(lines[3])
    record["agent_b_payoff"] = 99.0  # not the game's payoff for these moves
    lines[3] = json.dumps(record).encode() + b"\n"
    (out / "rounds.jsonl").write_bytes(b"".join(lines))
    manifest_path = out / "groups_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["status"] = "interrupted"
    manifest_path.write_text(json.dumps(manifest))
    done = pdbench(["resume", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "damaged game(s) played again" in done.stdout
    assert "payoff is not the game's" in done.stdout
    assert rounds_without_timestamps(out) == want


def test_resume_plays_again_a_policy_game_rewritten_so_that_it_adds_up(tmp_path: Path) -> None:
    # ALLD cooperating in every round, payoffs and running totals made to fit the moves: the
    # record checks pass, but the policies' replay does not write it; it is played again.
    root = tmp_path / "run"
    cfg = write_groups(root)
    body = yaml.safe_load(cfg.read_text())
    body["groups"]["conditions"] = body["groups"]["conditions"][1:2]  # TFT, ALLD, WSLS; talk
    cfg.write_text(yaml.safe_dump(body, sort_keys=False))
    out = root / "out"
    execute(cfg, output_dir=out)
    want = rounds_without_timestamps(out)
    lines = (out / "rounds.jsonl").read_bytes().splitlines(keepends=True)
    rewritten = []
    totals = [0.0, 0.0, 0.0]
    for line in lines[:N_ROUNDS]:  # replicate 0
        record = json.loads(line)
        for i, seat in enumerate("abc"):
            record[f"agent_{seat}_action"] = "C"
            record[f"agent_{seat}_intended_action"] = "C"
            record[f"agent_{seat}_payoff"] = 2.0  # all three cooperate: 3 x 3 / 3 - 1
            totals[i] += 2.0
            record[f"agent_{seat}_cum_payoff"] = totals[i]
        rewritten.append(json.dumps(record).encode() + b"\n")
    (out / "rounds.jsonl").write_bytes(b"".join(rewritten + lines[N_ROUNDS:]))
    manifest_path = out / "groups_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["status"] = "interrupted"
    manifest_path.write_text(json.dumps(manifest))
    done = pdbench(["resume", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 damaged game(s) played again" in done.stdout
    assert "replicate 0: round 0: not what its policies play (replayed)" in done.stdout
    assert rounds_without_timestamps(out) == want
