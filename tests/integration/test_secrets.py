"""API keys never reach an artifact, the cache, a log line or the terminal.

A distinctive fake key is planted in the variable named by `api_key_env` (or in a `.env` file),
runs are made against the offline FakeOpenAIServer with store_prompts and store_raw_responses on
(the server accepts the key, so it really was sent), with a server that rejects it (401) and one
that even echoes it back in its error message; then every file of the run and cache directories
and everything printed is searched for the key and for its first 12 characters.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support.openai_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
KEY = "sk-test-PLANTED-4f9a1c77"
NEEDLES = (KEY.encode(), KEY[:12].encode())
KEY_ENV = "PDBENCH_PLANTED_KEY"
MODELS = {"openai": "test-model", "litellm": "openai/test-model"}
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


class EchoingServer(FakeOpenAIServer):
    """A server that rejects every key and quotes the key it got in the error (some do)."""

    def _auth_error(self, h: Any) -> Any:
        given = h.headers.get("Authorization", "").removeprefix("Bearer ")
        body = {
            "error": {
                "message": f"Incorrect API key provided: {given}. You can find your API key at ...",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        }
        return 401, body, {"X-Echoed-Key": given}


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    yield


def write_experiment(tmp_path: Path, provider: str, base_url: str) -> Path:
    cfg_dir = tmp_path / "cfg"
    if not cfg_dir.exists():
        shutil.copytree(CONFIGS, cfg_dir)
    agent = {
        "ref": "agents/llm_default.yaml",
        "overrides": {
            "provider": provider,
            "model": MODELS[provider],
            "base_url": base_url,
            "api_key_env": KEY_ENV,
            "persona": "tit_for_tat",
            "timeout_s": 20,
            "transport": {"max_retries": 2, "backoff_initial_s": 0.01, "backoff_max_s": 0.05},
        },
    }
    body = {
        "run": {
            "run_id": "secrets",
            "seed": 3,
            "output_dir": str(tmp_path / "out"),
            "store_prompts": True,
            "store_raw_responses": True,
        },
        "horizon": {"type": "fixed", "n_rounds": 4},
        "experiment": {
            "replicates": 2,
            "conditions": [
                {
                    "name": "LLM_vs_TFT",
                    "agent_a": agent,
                    "agent_b": {"ref": "agents/policies.yaml", "overrides": {"policy": "TFT"}},
                },
                {"name": "LLM_vs_LLM", "agent_a": agent, "agent_b": agent},
            ],
        },
    }
    path = cfg_dir / "experiment.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def run_cli(args: list[str], capfd: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`pdbench ARGS` through the console entry point in this process; (code, stdout, stderr).

    capfd captures the file descriptors, so whatever any library logs or prints is included;
    warnings are added to stderr as Python would print them.
    """
    from pdbench import cli

    old_argv = sys.argv
    sys.argv = ["pdbench", *args]
    gc.collect()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                cli.main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            gc.collect()
    finally:
        sys.argv = old_argv
    out, err = capfd.readouterr()
    err += "".join(
        warnings.formatwarning(w.message, w.category, w.filename, w.lineno) for w in caught
    )
    return code, out, err


def assert_no_key(*, dirs: list[Path], texts: dict[str, str]) -> int:
    """No file under `dirs` and no text contains the key or its first 12 characters.
    Returns how many files were searched."""
    searched = 0
    for root in dirs:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                data = path.read_bytes()
                searched += 1
                for needle in NEEDLES:
                    assert needle not in data, f"{path} contains {needle.decode()!r}"
    for name, text in texts.items():
        for needle in NEEDLES:
            assert needle.decode() not in text, f"{name} contains {needle.decode()!r}"
    return searched


def read_manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "run_manifest.json").read_text(encoding="utf-8"))


def check_manifest_names_the_variable(run_dir: Path) -> None:
    config = read_manifest(run_dir)["config"]
    agents = [
        cond[key]
        for cond in config["experiment"]["conditions"]
        for key in ("agent_a", "agent_b")
        if cond[key]["type"] == "llm"
    ]
    assert len(agents) == 3
    assert all(agent["api_key_env"] == KEY_ENV for agent in agents)


# --------------------------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["environment", "dotenv"])
@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_accepted_key_is_used_but_stored_nowhere(
    tmp_path: Path,
    provider: str,
    source: str,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    if source == "environment":
        monkeypatch.setenv(KEY_ENV, KEY)
    else:
        (work / ".env").write_text(f'# local keys\n{KEY_ENV}="{KEY}"\n', encoding="utf-8")
    with FakeOpenAIServer(api_key=KEY) as srv:
        cfg = write_experiment(tmp_path, provider, srv.base_url)
        code, out, err = run_cli(["run", str(cfg), "--cache-dir", str(tmp_path / "cache")], capfd)
        requests = srv.requests
    assert code == 0, err
    # The key was sent: the server requires it and answered every request.
    assert len(requests) == 4 * 2 + 4 * 2 * 2
    assert all(r["had_auth"] and r["status"] == 200 for r in requests)
    run_dir = tmp_path / "out"
    rounds = [json.loads(x) for x in (run_dir / "rounds.jsonl").read_text().splitlines()]
    assert all("prompts" in r and "raw_responses" in r for r in rounds)  # logging is on
    searched = assert_no_key(
        dirs=[run_dir, tmp_path / "cache", tmp_path / "cfg"],
        texts={"stdout": out, "stderr": err},
    )
    assert searched >= 5  # rounds, manifest, aggregates, call log, cache database
    check_manifest_names_the_variable(run_dir)


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_rejected_key_is_named_by_variable_only(
    tmp_path: Path,
    provider: str,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, KEY)
    with FakeOpenAIServer(api_key="sk-test-the-right-one-000") as srv:
        cfg = write_experiment(tmp_path, provider, srv.base_url)
        code, out, err = run_cli(["run", str(cfg), "--cache-dir", str(tmp_path / "cache")], capfd)
        assert srv.chat_count >= 1
    assert code == 2
    assert "401" in err and "authentication" in err.lower()
    run_dir = tmp_path / "out"
    calls = [json.loads(x) for x in (run_dir / "llm_calls.jsonl").read_text().splitlines()]
    assert calls and all(not c["ok"] for c in calls)
    assert_no_key(dirs=[run_dir, tmp_path / "cfg"], texts={"stdout": out, "stderr": err})
    if (tmp_path / "cache").exists():
        assert_no_key(dirs=[tmp_path / "cache"], texts={})
    check_manifest_names_the_variable(run_dir)
    assert read_manifest(run_dir)["status"] == "failed"


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_key_echoed_back_by_the_server_is_redacted(
    tmp_path: Path,
    provider: str,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, KEY)
    with EchoingServer() as srv:
        cfg = write_experiment(tmp_path, provider, srv.base_url)
        code, out, err = run_cli(["run", str(cfg), "--cache-dir", str(tmp_path / "cache")], capfd)
        assert srv.chat_count >= 1
    assert code == 2
    # The server's message is shown, with the key replaced.
    assert "Incorrect API key provided: ***." in err
    run_dir = tmp_path / "out"
    calls = [json.loads(x) for x in (run_dir / "llm_calls.jsonl").read_text().splitlines()]
    assert any("Incorrect API key provided" in (c["error"] or "") for c in calls)
    assert_no_key(dirs=[run_dir, tmp_path / "cfg"], texts={"stdout": out, "stderr": err})
    assert KEY not in read_manifest(run_dir)["error"]


@pytest.mark.slow
def test_real_process_run_prints_and_stores_no_key(tmp_path: Path) -> None:
    """The same through a separate `pdbench` process: everything it prints is searched."""
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS and k != "OPENAI_API_KEY"}
    env.update({KEY_ENV: KEY, "NO_PROXY": "127.0.0.1,localhost"})
    with FakeOpenAIServer(api_key=KEY) as srv:
        cfg = write_experiment(tmp_path, "openai", srv.base_url)
        proc = subprocess.run(
            [sys.executable, "-m", "pdbench.cli", "run", str(cfg)]
            + ["--cache-dir", str(tmp_path / "cache")],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert srv.chat_count == 24
    assert proc.returncode == 0, proc.stderr
    assert "spent: 24 provider calls" in proc.stdout
    assert_no_key(
        dirs=[tmp_path / "out", tmp_path / "cache"],
        texts={"stdout": proc.stdout, "stderr": proc.stderr},
    )


def test_validate_and_dry_run_show_no_key(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, KEY)
    cfg = write_experiment(tmp_path, "openai", "http://127.0.0.1:9/v1")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code_v, out_v, err_v = run_cli(["validate", str(cfg)], capfd)
    code_d, out_d, err_d = run_cli(["run", str(cfg), "--dry-run"], capfd)
    assert (code_v, code_d) == (0, 0), err_v + err_d
    assert "valid" in out_v and "dry run: nothing was written" in out_d
    assert_no_key(
        dirs=[],
        texts={"validate stdout": out_v, "validate stderr": err_v, "dry-run stdout": out_d}
        | {"dry-run stderr": err_d},
    )
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
