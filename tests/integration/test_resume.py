"""Resuming runs that stopped at any moment: kill -9, Ctrl-C, a budget, a torn last line.

The experiment uses the offline MockProvider with `latency_ms: 20` (so a run takes a few seconds
and can be interrupted mid-way) and `invalid_rate: 0.1` (so parse retries happen). The reference
is an uninterrupted run with a fresh cache, made once per module; every resumed run must give the
same rounds.jsonl (apart from timestamp_utc) and the same aggregates, LLM usage columns included
(they count the replies a game used, however they were served).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from tests.support.cli import (
    cli_env,
    default_sigint,
    run_process,
    signal_when_lines,
    start_process,
)
from tests.support.configs import execute

from pdbench.errors import RunError

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
N_ROUNDS = 15
REPLICATES = 4
CONDITIONS = ("LLMcoop_vs_TFT", "LLMexploit_vs_GRIM", "LLMtft_vs_LLMwsls")
N_GAMES = len(CONDITIONS) * REPLICATES
N_LINES = N_GAMES * N_ROUNDS
USAGE_COLUMNS = {
    f"agent_{side}_{name}"
    for side in "ab"
    for name in ("llm_calls", "input_tokens", "output_tokens", "cost_usd")
}


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def write_experiment(root: Path, budget: dict[str, Any] | None = None) -> Path:
    """root/cfg (a copy of configs/) with the experiment; output_dir is always overridden."""
    cfg_dir = root / "cfg"
    if not cfg_dir.exists():
        shutil.copytree(CONFIGS, cfg_dir)

    def llm(persona: str) -> dict[str, Any]:
        return {
            "ref": "agents/llm_default.yaml",
            "overrides": {"persona": persona, "mock": {"invalid_rate": 0.1, "latency_ms": 20}},
        }

    def policy(name: str) -> dict[str, Any]:
        return {"ref": "agents/policies.yaml", "overrides": {"policy": name}}

    body = {
        "run": {
            "run_id": "resume_itest",
            "seed": 2024,
            "output_dir": "out-not-used",
            "budget": budget or {"max_calls": None, "max_tokens": None, "max_cost_usd": None},
        },
        "horizon": {"type": "fixed", "n_rounds": N_ROUNDS},
        "experiment": {
            "replicates": REPLICATES,
            "conditions": [
                {"name": CONDITIONS[0], "agent_a": llm("cooperative"), "agent_b": policy("TFT")},
                {"name": CONDITIONS[1], "agent_a": llm("exploitative"), "agent_b": policy("GRIM")},
                {"name": CONDITIONS[2], "agent_a": llm("tit_for_tat"), "agent_b": llm("wsls")},
            ],
        },
    }
    path = cfg_dir / "experiment.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def rounds_without_timestamps(run_dir: Path) -> list[dict[str, Any]]:
    out = []
    for rec in read_jsonl(run_dir / "rounds.jsonl"):
        assert "timestamp_utc" in rec
        out.append({k: v for k, v in rec.items() if k != "timestamp_utc"})
    return out


def aggregates(run_dir: Path, drop: set[str]) -> list[dict[str, Any]]:
    rows = pq.read_table(run_dir / "aggregates.parquet").to_pylist()
    return [{k: v for k, v in row.items() if k not in drop} for row in rows]


def manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "run_manifest.json").read_text(encoding="utf-8"))


def provider_calls(lines: list[dict[str, Any]]) -> int:
    return sum(1 for c in lines if not c["cached"])


def read_calls(path: Path) -> list[dict[str, Any]]:
    """llm_calls.jsonl records (a line torn by kill -9 is skipped)."""
    out = []
    for line in path.read_bytes().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def complete_games(run_dir: Path) -> set[tuple[str, int]]:
    """Games with all N_ROUNDS rounds in rounds.jsonl (counted here, not by pdbench)."""
    counts: dict[tuple[str, int], int] = {}
    for line in (run_dir / "rounds.jsonl").read_bytes().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        key = (rec["condition"], rec["replicate"])
        counts[key] = counts.get(key, 0) + 1
    return {k for k, n in counts.items() if n == N_ROUNDS}


def pdbench(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_process(args, cwd)


def start_and_stop(cfg: Path, out: Path, cache: Path, sig: int) -> subprocess.Popen[str]:
    """Start `pdbench run` and send `sig` once at least one game is in rounds.jsonl."""
    args = ["run", str(cfg), "-o", str(out), "--cache-dir", str(cache), "--concurrency", "2"]
    proc = start_process(args, cfg.parent)
    signal_when_lines(proc, out / "rounds.jsonl", N_ROUNDS, sig)
    return proc


def start_gated_and_stop(cfg: Path, out: Path, cache: Path, sig: int) -> subprocess.Popen[str]:
    """Like `start_and_stop`, but the run surely is still in progress when `sig` arrives: once
    the first game is in rounds.jsonl, no further mock call starts (tests/support/gated_cli.py),
    so the run cannot end first, however late that first game is written."""
    rounds = out / "rounds.jsonl"
    env = cli_env()
    env.update(PDBENCH_TEST_GATE_FILE=str(rounds), PDBENCH_TEST_GATE_LINES=str(N_ROUNDS))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    args = ["run", str(cfg), "-o", str(out), "--cache-dir", str(cache), "--concurrency", "2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.gated_cli", *args],
        cwd=cfg.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    signal_when_lines(proc, rounds, N_ROUNDS, sig)
    return proc


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted run (fresh cache) of the same experiment."""
    root = tmp_path_factory.mktemp("reference")
    cfg = write_experiment(root)
    out = root / "B"
    summary = execute(cfg, output_dir=out, cache_dir=root / "cache", concurrency=8)
    assert summary.manifest["status"] == "completed"
    records = read_jsonl(out / "rounds.jsonl")
    assert len(records) == N_LINES
    # The reference itself: every game complete, once, in (condition, replicate, round) order.
    keys = [(CONDITIONS.index(r["condition"]), r["replicate"], r["round_index"]) for r in records]
    assert keys == sorted(keys) and len(set(keys)) == N_LINES
    calls = read_jsonl(out / "llm_calls.jsonl")
    assert not any(c["cached"] for c in calls)
    # invalid_rate 0.1 must have caused parse retries, or the retry path is not exercised.
    assert any(c["attempt"] > 0 for c in calls)
    return out


def assert_same_as_reference(run_dir: Path, reference: Path) -> None:
    got = rounds_without_timestamps(run_dir)
    want = rounds_without_timestamps(reference)
    assert len(got) == N_LINES
    keys = [(r["condition"], r["replicate"], r["round_index"]) for r in got]
    assert len(set(keys)) == len(keys), "duplicated rounds"
    assert got == want
    assert aggregates(run_dir, set()) == aggregates(reference, set())


# --------------------------------------------------------------------------------------------
# kill -9
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path: Path, reference: Path) -> None:
    cfg = write_experiment(tmp_path)
    out, cache = tmp_path / "A", tmp_path / "cache"
    proc = start_and_stop(cfg, out, cache, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    assert manifest(out)["status"] == "running"  # nobody could write anything else
    kept = complete_games(out)
    assert 1 <= len(kept) < N_GAMES
    calls_path = out / "llm_calls.jsonl"
    killed_calls = provider_calls(read_calls(calls_path))
    offset = len(calls_path.read_bytes())

    done = pdbench(
        ["run", str(cfg), "--resume", "--output-dir", str(out), "--cache-dir", str(cache)],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert f"({len(kept)} kept from before)" in done.stdout
    assert_same_as_reference(out, reference)

    m = manifest(out)
    assert m["status"] == "completed" and m["error"] is None
    assert [s["resumed"] for s in m["sessions"]] == [False, True]
    assert m["sessions"][1]["games_kept"] == len(kept)

    # The resumed session called the provider less than a full run: kept games were not
    # replayed and the killed session's replies came from the cache.
    resumed_lines = [json.loads(line) for line in calls_path.read_bytes()[offset:].splitlines()]
    resumed_calls = provider_calls(resumed_lines)
    full_calls = provider_calls(read_jsonl(reference / "llm_calls.jsonl"))
    assert resumed_calls < full_calls
    assert any(c["cached"] for c in resumed_lines)
    # Nothing is paid twice, except calls the kill caught in flight (at most --concurrency 2,
    # plus one logged but not yet cached).
    assert full_calls <= killed_calls + resumed_calls <= full_calls + 3
    # No call of a game kept from the killed session was made again.
    assert not {(c["condition"], c["replicate"]) for c in resumed_lines} & kept


def test_resume_of_a_completed_run_changes_nothing(tmp_path: Path, reference: Path) -> None:
    cfg = write_experiment(tmp_path)
    out = tmp_path / "A"
    execute(cfg, output_dir=out, cache_dir=tmp_path / "cache")
    rounds_before = (out / "rounds.jsonl").read_bytes()
    calls_before = (out / "llm_calls.jsonl").read_bytes()

    done = pdbench(["resume", str(out), "--cache-dir", str(tmp_path / "cache")], tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{N_GAMES} games ({N_GAMES} kept from before)" in done.stdout
    assert (out / "rounds.jsonl").read_bytes() == rounds_before
    assert (out / "llm_calls.jsonl").read_bytes() == calls_before  # no call, not even cached
    m = manifest(out)
    assert m["status"] == "completed"
    assert [s["resumed"] for s in m["sessions"]] == [False, True]
    assert m["sessions"][1]["games_kept"] == N_GAMES
    assert_same_as_reference(out, reference)


# --------------------------------------------------------------------------------------------
# Ctrl-C
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_marks_the_run_interrupted_and_resume_completes(
    tmp_path: Path, reference: Path
) -> None:
    cfg = write_experiment(tmp_path)
    out, cache = tmp_path / "A", tmp_path / "cache"
    proc = start_gated_and_stop(cfg, out, cache, signal.SIGINT)
    stderr = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    m = manifest(out)
    assert m["status"] == "interrupted"
    assert m["error"] == "interrupted by the user"
    assert m["finished_at_utc"] is not None
    kept = complete_games(out)
    assert 1 <= len(kept) < N_GAMES
    # What was written is whole games only (in-flight games are not written on Ctrl-C).
    assert (out / "rounds.jsonl").read_bytes().count(b"\n") == len(kept) * N_ROUNDS

    done = pdbench(["resume", str(out), "--cache-dir", str(cache)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert_same_as_reference(out, reference)
    m = manifest(out)
    assert m["status"] == "completed"
    assert [s["resumed"] for s in m["sessions"]] == [False, True]
    # Last: the interrupted run told the user so (cli.main prints "interrupted" on Ctrl-C).
    last = stderr.strip().splitlines()[-1:]
    assert last and last[0].startswith("interrupted") and "pdbench resume" in last[0], (
        f"stderr of the interrupted run: {stderr!r}"
    )


# --------------------------------------------------------------------------------------------
# a torn last line
# --------------------------------------------------------------------------------------------


def test_torn_last_line_of_a_stopped_run_is_dropped_on_resume(
    tmp_path: Path, reference: Path
) -> None:
    cfg = write_experiment(tmp_path, budget={"max_calls": 60})
    out, cache = tmp_path / "A", tmp_path / "cache"
    with pytest.raises(RunError, match="budget"):
        execute(cfg, output_dir=out, cache_dir=cache, concurrency=2)
    assert manifest(out)["status"] == "stopped"
    kept = complete_games(out)
    assert len(kept) < N_GAMES
    # A kill in the middle of writing the next game: half of its first line, no newline.
    ref_lines = (reference / "rounds.jsonl").read_bytes().splitlines()
    next_line = ref_lines[len(kept) * N_ROUNDS]
    rounds = out / "rounds.jsonl"
    with open(rounds, "ab") as fh:
        fh.write(next_line[: len(next_line) // 2])
    assert not rounds.read_bytes().endswith(b"\n")

    # Only run.budget may change on resume.
    write_experiment(tmp_path, budget={"max_calls": None})
    summary = execute(cfg, output_dir=out, cache_dir=cache, concurrency=2, resume=True)
    assert summary.games_resumed == len(kept)
    assert rounds.read_bytes().endswith(b"\n")
    assert_same_as_reference(out, reference)
    assert manifest(out)["status"] == "completed"


def test_resume_refuses_a_changed_config(tmp_path: Path) -> None:
    cfg = write_experiment(tmp_path, budget={"max_calls": 20})
    out, cache = tmp_path / "A", tmp_path / "cache"
    with pytest.raises(RunError):
        execute(cfg, output_dir=out, cache_dir=cache)
    before = (out / "rounds.jsonl").read_bytes()
    text = cfg.read_text(encoding="utf-8").replace(f"n_rounds: {N_ROUNDS}", "n_rounds: 16")
    cfg.write_text(text, encoding="utf-8")
    with pytest.raises(RunError, match="config changed"):
        execute(cfg, output_dir=out, cache_dir=cache, resume=True)
    assert (out / "rounds.jsonl").read_bytes() == before
    assert manifest(out)["status"] == "stopped"


# --------------------------------------------------------------------------------------------
# spending columns after a resume
# --------------------------------------------------------------------------------------------


def test_resumed_run_reports_the_tokens_of_an_uninterrupted_run(
    tmp_path: Path, reference: Path
) -> None:
    """Tokens count every reply a game used (cached or not), so a game's token columns do not
    depend on where its replies came from. A stopped game that is replayed on resume must not
    also count the replies of its abandoned first attempt."""
    cfg = write_experiment(tmp_path, budget={"max_calls": 60})
    out, cache = tmp_path / "A", tmp_path / "cache"
    with pytest.raises(RunError, match="budget"):
        execute(cfg, output_dir=out, cache_dir=cache, concurrency=2)
    write_experiment(tmp_path, budget={"max_calls": None})
    execute(cfg, output_dir=out, cache_dir=cache, concurrency=2, resume=True)
    keep = USAGE_COLUMNS | {"condition", "scope", "replicate"}
    got = [{k: v for k, v in r.items() if k in keep} for r in aggregates(out, set())]
    want = [{k: v for k, v in r.items() if k in keep} for r in aggregates(reference, set())]
    assert got == want
    assert (
        manifest(out)["usage"]["total"]["input_tokens"]
        == manifest(reference)["usage"]["total"]["input_tokens"]
    )
