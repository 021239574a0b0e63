"""End to end: the shipped OpenAI-compatible example (configs/openai_compatible.yaml and
configs/agents/openai_compatible.yaml), run from the command line against the offline
FakeOpenAIServer standing in for a user's vLLM / Ollama server.

configs/ is copied into tmp_path and only the agent file's base_url is rewritten to the test
server's; the server serves exactly the model the agent file names and needs no key (like a local
server, with `api_key_env: null`). Every command is a separate `pdbench` process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from tests.support.openai_server import FakeOpenAIServer

from pdbench.agents.providers.keys import read_dotenv

pytestmark = pytest.mark.slow  # a real server or a subprocess per test

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
EXAMPLE = Path("openai_compatible.yaml")
AGENT = Path("agents") / "openai_compatible.yaml"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def copy_configs(tmp_path: Path, base_url: str) -> Path:
    """A copy of configs/ whose openai_compatible agent points at `base_url`."""
    root = tmp_path / "configs"
    shutil.copytree(CONFIGS, root)
    agent_file = root / AGENT
    text = agent_file.read_text(encoding="utf-8")
    text, n = re.subn(r"(?m)^base_url: \S+", f"base_url: {base_url}", text)
    assert n == 1
    agent_file.write_text(text, encoding="utf-8")
    assert yaml.safe_load(agent_file.read_text(encoding="utf-8"))["base_url"] == base_url
    return root


def pdbench(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS and k != "OPENAI_API_KEY"}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return subprocess.run(
        [sys.executable, "-m", "pdbench.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def shipped_agent() -> dict[str, Any]:
    return yaml.safe_load((CONFIGS / AGENT).read_text(encoding="utf-8"))


def shipped_example() -> dict[str, Any]:
    return yaml.safe_load((CONFIGS / EXAMPLE).read_text(encoding="utf-8"))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def check_artifacts(run_dir: Path, srv: FakeOpenAIServer, example: dict[str, Any]) -> None:
    """The four artifacts of a completed run of the example, checked against the server's view."""
    conditions = [c["name"] for c in example["experiment"]["conditions"]]
    reps = example["experiment"]["replicates"]
    n = example["horizon"]["n_rounds"]
    rounds = read_jsonl(run_dir / "rounds.jsonl")
    assert len(rounds) == len(conditions) * reps * n
    keys = [(conditions.index(r["condition"]), r["replicate"], r["round_index"]) for r in rounds]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    # The test server plays tit-for-tat from the prompt's "Opponent's last move" line.
    by_game: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rounds:
        by_game.setdefault((r["condition"], r["replicate"]), []).append(r)
    for (cond, _rep), game in by_game.items():
        moves = "".join(r["agent_a_action"] for r in game)
        if cond == "LLMtft_vs_ALLD":
            assert moves == "C" + "D" * (n - 1)
        else:  # TFT and GRIM start with C and never defect first
            assert moves == "C" * n
    calls = read_jsonl(run_dir / "llm_calls.jsonl")
    assert len(calls) == srv.chat_count == len(rounds)
    assert all(c["ok"] and not c["cached"] for c in calls)
    assert {r["model"] for r in srv.requests} == {shipped_agent()["model"]}
    manifest = json.loads((run_dir / "run_manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "completed"
    assert manifest["usage"]["total"]["llm_calls"] == len(rounds)
    rows = pq.read_table(run_dir / "aggregates.parquet").to_pylist()
    assert len(rows) == len(conditions) * (reps + 1)
    tft = next(r for r in rows if r["scope"] == "condition" and r["condition"] == conditions[0])
    assert tft["agent_a_cooperation_rate"] == pytest.approx(1 / n)
    assert tft["agent_a_llm_calls"] == n


def test_shipped_agent_file_is_an_openai_compatible_agent() -> None:
    agent = shipped_agent()
    assert agent["type"] == "llm" and agent["provider"] == "openai"
    assert agent["api_key_env"] is None
    refs = {
        c[key]["ref"]
        for c in shipped_example()["experiment"]["conditions"]
        for key in ("agent_a", "agent_b")
    }
    assert "agents/openai_compatible.yaml" in refs


def test_example_validates_and_runs_from_the_cli(tmp_path: Path) -> None:
    """What the README tells users to type, from the repository root:
    `pdbench validate configs/openai_compatible.yaml`, then `pdbench run` on it."""
    example = shipped_example()
    with FakeOpenAIServer(models={shipped_agent()["model"]}) as srv:
        root = copy_configs(tmp_path, srv.base_url)
        config = root / EXAMPLE
        validate = pdbench(["validate", str(config)], tmp_path)
        assert validate.returncode == 0, validate.stderr
        assert f"{config}: valid" in validate.stdout
        run = pdbench(
            ["run", str(config), "-o", str(tmp_path / "run"), "--cache-dir", str(tmp_path / "c")],
            tmp_path,
        )
        assert run.returncode == 0, run.stderr
        check_artifacts(tmp_path / "run", srv, example)


def test_example_experiment_at_the_config_root_runs_from_the_cli(tmp_path: Path) -> None:
    """The same experiment saved next to agents/ (refs `agents/...`): validate, dry run, run."""
    example = shipped_example()
    text = (
        (CONFIGS / EXAMPLE).read_text(encoding="utf-8").replace("ref: ../agents/", "ref: agents/")
    )
    with FakeOpenAIServer(models={shipped_agent()["model"]}) as srv:
        root = copy_configs(tmp_path, srv.base_url)
        config = root / "openai_compatible_experiment.yaml"
        config.write_text(text, encoding="utf-8")

        validate = pdbench(["validate", str(config)], tmp_path)
        assert validate.returncode == 0, validate.stderr
        assert f"{config}: valid" in validate.stdout
        n_calls = 3 * 2 * 20  # conditions x replicates x rounds, one LLM agent each
        assert f"expected LLM calls: {n_calls} (up to {n_calls * 3} with parse retries)" in (
            validate.stdout
        )

        dry = pdbench(["run", str(config), "--dry-run"], tmp_path)
        assert dry.returncode == 0, dry.stderr
        assert srv.chat_count == 0
        assert not (tmp_path / "data").exists()  # run.output_dir is relative to the cwd

        out = tmp_path / "run"
        run = pdbench(
            ["run", str(config), "-o", str(out), "--cache-dir", str(tmp_path / "c")], tmp_path
        )
        assert run.returncode == 0, run.stderr
        assert f"run openai_compatible_v1: 6 games, 120 rounds -> {out}" in run.stdout
        assert f"spent: {n_calls} provider calls, 0 from cache" in run.stdout
        check_artifacts(out, srv, example)
        # The prompts reached the server: system and round prompt as stored in rounds.jsonl.
        first = read_jsonl(out / "rounds.jsonl")[0]
        req = srv.requests[0]
        assert [m["role"] for m in req["messages"]] == ["system", "user"]
        assert first["prompts"]["agent_a"]["round"] in {
            r["messages"][1]["content"] for r in srv.requests
        }


def test_env_example_lists_provider_keys_without_values() -> None:
    path = REPO / ".env.example"
    values = read_dotenv(path)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "MISTRAL_API_KEY"):
        assert name in values
    assert all(value == "" for value in values.values())  # names only, never a key
    text = path.read_text(encoding="utf-8")
    assert ".env" in text and "git" in text
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", ".env"], cwd=REPO, capture_output=True, timeout=30
    )
    assert ignored.returncode == 0  # .env is ignored by git
