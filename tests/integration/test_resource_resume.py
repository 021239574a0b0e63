"""kill -9 during a public goods run whose LLM seats talk and punish, then `resume`: the same
rounds (messages, punishments and decisions included) and tables as an uninterrupted run, and the
kept games' calls are not made again. The same for a commons with discussions and reflections."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from tests.support.cli import run_process, start_process
from tests.support.configs import execute

REPO = Path(__file__).resolve().parents[2]
TABLES = ("aggregates.parquet", "resource_rounds.parquet", "resource_seats.parquet")
ROUNDS = 4
REPLICATES = 3


def llm(kind: str, persona: str) -> dict[str, Any]:
    mock = {"invalid_rate": 0.1, "latency_ms": 15}
    return {"ref": f"agents/llm_{kind}.yaml", "overrides": {"persona": persona, "mock": mock}}


def write_config(root: Path, kind: str) -> Path:
    """root/cfg (a copy of configs/) with a pgg (talk, punishment) or commons (talk) config: a
    group of mock LLM seats and a group of policies."""
    cfg_dir = root / "cfg"
    if not cfg_dir.exists():
        shutil.copytree(REPO / "configs", cfg_dir)
    if kind == "pgg":
        section = {
            "replicates": REPLICATES,
            "game": {"preset": "pgg_bench"},
            "talk": True,
            "conditions": [
                {
                    "name": "talking_llms",
                    "seats": [
                        llm("pgg", "cooperative"),
                        llm("pgg", "liar"),
                        "PUNISHER",
                        llm("pgg", "tit_for_tat"),
                        llm("pgg", "exploitative"),
                    ],
                },
                {"name": "policies", "seats": ["PUNISHER", "FREE_RIDER", "FULL_COOPERATOR"]},
            ],
        }
    else:
        section = {
            "replicates": REPLICATES,
            "talk": True,
            "conditions": [
                {
                    "name": "talking_llms",
                    "seats": [
                        llm("commons", "cooperative"),
                        llm("commons", "tit_for_tat"),
                        "SUSTAINABLE",
                        llm("commons", "cooperative"),
                        llm("commons", "exploitative"),
                    ],
                },
                {"name": "policies", "seats": ["SUSTAINABLE"] * 4 + ["MODERATE"]},
            ],
        }
    body = {
        "run": {"run_id": f"{kind}_resume", "seed": 41, "output_dir": "out-not-used"},
        "horizon": {"type": "fixed", "n_rounds": ROUNDS},
        kind: section,
    }
    path = cfg_dir / f"{kind}_resume.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def rounds(run_dir: Path) -> list[dict[str, Any]]:
    out = []
    for line in (run_dir / "rounds.jsonl").read_bytes().splitlines():
        record = json.loads(line)
        record.pop("timestamp_utc")
        out.append(record)
    return out


def whole_games(run_dir: Path) -> set[tuple[str, int]]:
    """Games whose last line (`last`) is in rounds.jsonl (read here, not by pdbench)."""
    done = set()
    for line in (run_dir / "rounds.jsonl").read_bytes().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("last"):
            done.add((record["condition"], record["replicate"]))
    return done


def kill_after_a_whole_game(proc: Any, path: Path, timeout: float = 120) -> None:
    """kill -9 the run once rounds.jsonl holds a whole game (a line marked `last`; a game's
    lines may reach the file in more than one write, so a first line is not yet a game)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if path.is_file() and whole_games(path.parent):
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=timeout)


def calls(path: Path, offset: int = 0) -> list[dict[str, Any]]:
    out = []
    for line in path.read_bytes()[offset:].splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["pgg", "commons"])
def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path: Path, kind: str) -> None:
    reference = tmp_path / "reference"
    cfg = write_config(reference, kind)
    ref_out = reference / "out"
    summary = execute(cfg, output_dir=ref_out, cache_dir=reference / "cache", concurrency=2)
    assert summary.manifest["status"] == "completed"
    want = rounds(ref_out)
    talked = [r for r in want if r["condition"] == "talking_llms"]
    assert any(r["messages"] for r in talked)
    if kind == "pgg":
        assert any(r["punish_tokens"] for r in want)
    else:
        assert any(r["reflections"] for r in talked)

    cfg = write_config(tmp_path / "killed", kind)
    out, cache = tmp_path / "killed" / "out", tmp_path / "killed" / "cache"
    args = ["run", str(cfg), "-o", str(out), "--cache-dir", str(cache), "--concurrency", "1"]
    proc = start_process(args, cfg.parent)
    kill_after_a_whole_game(proc, out / "rounds.jsonl")
    assert proc.returncode == -signal.SIGKILL
    kept = whole_games(out)
    assert 1 <= len(kept) < 2 * REPLICATES
    calls_path = out / "llm_calls.jsonl"
    offset = len(calls_path.read_bytes())

    done = run_process(
        ["run", str(cfg), "--resume", "--output-dir", str(out), "--cache-dir", str(cache)],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / f"{kind}_manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["sessions"][-1]["games_kept"] == len(kept)
    assert rounds(out) == want
    for name in TABLES:
        assert pq.read_table(out / name).to_pylist() == pq.read_table(ref_out / name).to_pylist()
    resumed = {(c["condition"], c["replicate"]) for c in calls(calls_path, offset)}
    assert resumed and not resumed & kept
