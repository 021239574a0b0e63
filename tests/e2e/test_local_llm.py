"""End to end with a real LLM, offline: `pdbench run` on the shipped local example
(configs/local_llm.yaml, agents/local_smollm2.yaml), shortened, with llama.cpp's server serving
SmolLM2-135M-Instruct (the `local` extra, also in the dev group, so nothing here skips).

Each run is a separate `pdbench` process, so its llama.cpp server (a child of that process, found
through /proc by the `--parent-pid` in its argv) can be watched: it must be gone after a completed
run, after a failed run, after SIGTERM, and after SIGKILL of pdbench. TMPDIR points into tmp_path,
so the server's log directory can be checked too.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pdbench.agents.providers.llamacpp import SERVER_MODULE

REPO = Path(__file__).resolve().parents[2]
MODEL = "smollm2-135m-instruct"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="watches /proc"),
]


def make_configs(
    tmp_path: Path, n_rounds: int, conditions: list[str], **agent_overrides: Any
) -> Path:
    """configs/ copied into tmp_path; the local example cut to 1 replicate of `n_rounds` rounds
    and the named conditions; the agent file with `agent_overrides`."""
    root = tmp_path / "configs"
    shutil.copytree(REPO / "configs", root)
    if agent_overrides:
        agent_file = root / "agents" / "local_smollm2.yaml"
        data = yaml.safe_load(agent_file.read_text(encoding="utf-8"))
        data.update(agent_overrides)
        agent_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    example = root / "local_llm.yaml"
    data = yaml.safe_load(example.read_text(encoding="utf-8"))
    data["horizon"]["n_rounds"] = n_rounds
    data["experiment"]["replicates"] = 1
    kept = [c for c in data["experiment"]["conditions"] if c["name"] in conditions]
    assert [c["name"] for c in kept] == conditions
    data["experiment"]["conditions"] = kept
    example.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return example


def start(args: list[str], tmp_path: Path) -> subprocess.Popen[str]:
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1", TMPDIR=str(temp))
    return subprocess.Popen(
        [sys.executable, "-m", "pdbench.cli", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def servers_of(parent_pid: int) -> list[int]:
    """Live llama.cpp server processes started by `parent_pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if SERVER_MODULE.encode() in argv and str(parent_pid).encode() in argv:
            if alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def wait_for(predicate: Any, timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def server_logs(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "tmp").glob("pdbench-llamacpp-*"))


def test_a_short_real_game_through_pdbench_run(tmp_path: Path) -> None:
    config = make_configs(tmp_path, 2, ["SmolLM2coop_vs_TFT", "SmolLM2coop_vs_itself"])
    run_dir = tmp_path / "run"
    proc = start(["run", str(config), "-o", str(run_dir), "--no-cache"], tmp_path)
    seen: set[int] = set()
    while proc.poll() is None:  # note the server while the run plays
        seen.update(servers_of(proc.pid))
        time.sleep(0.05)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert seen, "no llama.cpp server was seen during the run"
    assert len(seen) == 1  # one server shared by every agent of the run
    assert not [pid for pid in seen if alive(pid)], "the server outlived the run"
    assert server_logs(tmp_path) == []

    rounds = read_jsonl(run_dir / "rounds.jsonl")
    assert [(r["condition"], r["round_index"]) for r in rounds] == [
        (c, i) for c in ("SmolLM2coop_vs_TFT", "SmolLM2coop_vs_itself") for i in range(2)
    ]
    for record in rounds:
        assert record["agent_a_action"] in ("C", "D")
        assert record["agent_a_name"] == f"{MODEL}[cooperative]"
        attempts = record["raw_responses"]["agent_a"]
        assert attempts and attempts[-1]["valid"]
        assert json.loads(attempts[-1]["raw"])["action"] == record["agent_a_intended_action"]

    calls = read_jsonl(run_dir / "llm_calls.jsonl")
    # One call per LLM decision at least: 2 rounds vs TFT, 2 rounds x 2 sides of self-play.
    assert len(calls) >= 6
    assert {c["provider"] for c in calls} == {"llamacpp"}
    assert all(c["ok"] and not c["cached"] for c in calls)
    assert {c["served_model"] for c in calls} == {MODEL}
    assert all(c["input_tokens"] > 50 and c["output_tokens"] > 0 for c in calls)
    assert all(c["latency_s"] > 0 for c in calls)
    assert {c["finish_reason"] for c in calls} <= {"stop", "length"}
    manifest = json.loads((run_dir / "run_manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "completed"


def test_the_local_model_talks_and_plays(tmp_path: Path) -> None:
    """configs/talk_local.yaml, cut to 1 round of its first condition: SmolLM2 writes a
    message before each move (a reply the server constrains to {message, intention}) and plays;
    the message, its raw reply and the call's purpose are recorded, and the talk metrics are
    in the aggregates."""
    root = tmp_path / "configs"
    shutil.copytree(REPO / "configs", root)
    example = root / "talk_local.yaml"
    data = yaml.safe_load(example.read_text(encoding="utf-8"))
    data["horizon"]["n_rounds"] = 1
    data["experiment"]["conditions"] = data["experiment"]["conditions"][:1]
    example.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    run_dir = tmp_path / "run"
    proc = start(["run", str(example), "-o", str(run_dir), "--no-cache"], tmp_path)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    rounds = read_jsonl(run_dir / "rounds.jsonl")
    assert len(rounds) == 1
    for record in rounds:
        said = {m["from"]: m for m in record["exchange"]}
        assert set(said) == {"agent_a", "agent_b"}
        mine = said["agent_a"]
        raw = json.loads(mine["attempts"][-1]["raw"])  # the server kept to the JSON form
        assert set(raw) == {"message", "intention"} and raw["intention"] in ("C", "D", "none")
        assert mine["text"] == raw["message"].strip()[: data["communication"]["max_chars"]]
        assert mine["source"] == ("declared" if raw["intention"] != "none" else mine["source"])
        assert "prompt" in mine and "Messages" in record["prompts"]["agent_a"]["round"]
    calls = read_jsonl(run_dir / "llm_calls.jsonl")
    assert sorted(c["purpose"] for c in calls) == ["message", "move"]
    import pyarrow.parquet as pq

    rows = pq.read_table(run_dir / "aggregates.parquet").to_pylist()
    row = next(r for r in rows if r["scope"] == "condition")
    assert row["agent_a_messages"] == 1 and row["agent_b_messages"] == 1
    assert row["agent_b_said_promise_kept_rate"] == 1.0  # honest TFT


def test_the_server_is_stopped_after_a_failed_run(tmp_path: Path) -> None:
    # Every reply is refused (the pattern never matches) and the agent errors on it.
    config = make_configs(
        tmp_path,
        3,
        ["SmolLM2coop_vs_TFT"],
        answer_pattern="NEVER(C|D)",
        on_parse_failure="error",
        max_retries=0,
    )
    run_dir = tmp_path / "run"
    proc = start(["run", str(config), "-o", str(run_dir), "--no-cache"], tmp_path)
    seen: set[int] = set()
    while proc.poll() is None:
        seen.update(servers_of(proc.pid))
        time.sleep(0.05)
    out, err = proc.communicate()
    assert proc.returncode != 0
    assert "no valid move" in err
    assert len(read_jsonl(run_dir / "llm_calls.jsonl")) >= 1  # the server did answer
    assert seen and not [pid for pid in seen if alive(pid)]
    assert server_logs(tmp_path) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_the_server_is_gone_when_pdbench_is_signalled(tmp_path: Path, sig: int) -> None:
    config = make_configs(tmp_path, 200, ["SmolLM2coop_vs_TFT"])
    run_dir = tmp_path / "run"
    proc = start(["run", str(config), "-o", str(run_dir), "--no-cache"], tmp_path)
    try:
        calls = run_dir / "llm_calls.jsonl"
        assert wait_for(lambda: calls.is_file() and calls.read_bytes().count(b"\n") >= 1), (
            proc.stderr.read() if proc.poll() is not None and proc.stderr else "no call made"
        )
        servers = servers_of(proc.pid)
        assert len(servers) == 1
        assert proc.poll() is None, "the run ended before it could be signalled"
        proc.send_signal(sig)
        proc.wait(timeout=60)
        # Within a few seconds (SIGKILL: the kernel's parent-death signal or stdin EOF).
        assert wait_for(lambda: not alive(servers[0]), timeout=15), "the server outlived pdbench"
        assert wait_for(lambda: server_logs(tmp_path) == [], timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.communicate()
