"""The Ray backend (`--backend ray`) against the local backend, on a local Ray instance started
offline once for the module (2 CPUs).

- An experiment with policy, Axelrod and mock-LLM conditions, and a tournament, give the same
  rounds.jsonl (timestamps aside), call log and Parquet artifacts as the local backend.
- Provider limits hold across the cluster: LLM agents against a local fake OpenAI-compatible
  server that records its peak of requests in flight never exceed max_concurrency 4 summed over
  the workers, and reach it; the budget's max_calls counts every worker's calls, and the run it
  stops resumes to the uninterrupted result.
- A re-run reuses the response cache: no request reaches the server the second time.

Every test makes sure the local backend's engine is not used (`RunSession._play` raises), so
the games really are played by Ray tasks in other processes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from tests.support.cli import run_in_process, start_process
from tests.support.configs import experiment, llm, policy, write_config
from tests.support.openai_server import FakeOpenAIServer

from pdbench.runners.lifecycle.session import RunSession

pytestmark = pytest.mark.slow
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
KEY_ENV = "PDBENCH_TEST_RAY_KEY"


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    """A local Ray instance (2 CPUs, no dashboard, no usage statistics) for the module; its
    workers inherit this environment, so the fake server's key is set and proxies are off."""
    saved = {k: os.environ.get(k) for k in (*PROXY_VARS, KEY_ENV, "NO_PROXY")}
    for name in PROXY_VARS:
        os.environ.pop(name, None)
    os.environ.update({KEY_ENV: "sk-test-ray-0001", "NO_PROXY": "127.0.0.1,localhost"})
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    import ray

    temp = tempfile.mkdtemp(prefix="pdray", dir="/tmp")  # Ray's socket paths must stay short
    ray.init(num_cpus=2, _temp_dir=temp, include_dashboard=False, logging_level="warning")
    try:
        yield ray
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def on_ray(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`pdbench ARGS --backend ray`, failing if the local backend's engine plays any game."""

    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("the local backend played games")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RunSession, "_play", refuse)
        return run_in_process([*args, "--backend", "ray"], capsys)


def line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run_in_process(args, capsys)


def rounds(run_dir: Path) -> list[dict[str, Any]]:
    out = []
    for line in (run_dir / "rounds.jsonl").read_text().splitlines():
        record = json.loads(line)
        record.pop("timestamp_utc")
        out.append(record)
    return out


def calls(run_dir: Path) -> Counter[tuple[Any, ...]]:
    """The call log as a multiset of what each attempt was (order and timing aside)."""
    fields = ("condition", "replicate", "agent", "round_index", "attempt", "cached", "ok")
    lines = (run_dir / "llm_calls.jsonl").read_text().splitlines()
    return Counter(tuple(json.loads(line)[f] for f in fields) for line in lines)


def same_parquet(a: Path, b: Path, name: str) -> None:
    left, right = pq.read_table(a / name), pq.read_table(b / name)
    assert left.num_rows > 0
    assert left.equals(right), name


def status(run_dir: Path, manifest: str = "run_manifest.json") -> str:
    return json.loads((run_dir / manifest).read_text())["status"]


def fake_llm(server: FakeOpenAIServer, persona: str, max_concurrency: int) -> dict[str, Any]:
    """An openai-provider LLM agent against the fake server."""
    return llm(
        persona,
        provider="openai",
        model="test-model",
        base_url=server.base_url,
        api_key_env=KEY_ENV,
        max_concurrency=max_concurrency,
        timeout_s=20,
        transport={"max_retries": 3, "backoff_initial_s": 0.01, "backoff_max_s": 0.05},
    )


def test_experiment_with_policy_and_mock_llm_conditions_equals_local(
    ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = ("tft_vs_random", "llm_vs_grim", "llm_vs_llm", "prober_vs_wsls")
    data = experiment(
        [
            (names[0], policy("TFT"), policy("RANDOM")),
            (names[1], llm("cooperative", mock={"invalid_rate": 0.2}), policy("GRIM")),
            (names[2], llm("tit_for_tat"), llm("exploitative")),
            (names[3], "axelrod:Prober", policy("WSLS")),
        ],
        replicates=3,
        noise=0.05,
        horizon={"type": "geometric", "stop_prob": 0.08, "max_rounds": 30},
    )
    config = str(write_config(data, tmp_path))
    local, ray = tmp_path / "local", tmp_path / "ray"
    code, _, err = cli(
        ["run", config, "-o", str(local), "--cache-dir", str(tmp_path / "c1")], capsys
    )
    assert code == 0, err
    code, out, err = on_ray(
        ["run", config, "-o", str(ray), "--cache-dir", str(tmp_path / "c2")], capsys
    )
    assert code == 0, err
    assert "12 games" in out
    assert {r["condition"] for r in rounds(ray)} == set(names)
    assert rounds(ray) == rounds(local)
    assert calls(ray) == calls(local)
    provider_calls = sum(n for key, n in calls(ray).items() if not key[5])
    assert provider_calls > 0
    same_parquet(local, ray, "aggregates.parquet")
    manifest = json.loads((ray / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["usage"]["spent_all_sessions"]["provider_calls"] == provider_calls
    assert (
        manifest["usage"]["total"]
        == json.loads((local / "run_manifest.json").read_text())["usage"]["total"]
    )


def test_tournament_equals_local(
    ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = {
        "run": {"run_id": "ray_tournament", "seed": 77, "output_dir": "unused"},
        "game": {"noise": 0.05},
        "horizon": {"type": "fixed", "n_rounds": 25},
        "tournament": {
            "repetitions": 3,
            "log_rounds": True,
            "players": [
                "TFT",
                "ALLD",
                "GTFT",
                "axelrod:Prober",
                "axelrod:Grudger",
                {"ref": "agents/llm_default.yaml", "overrides": {"persona": "wsls"}},
            ],
        },
    }
    config = str(write_config(data, tmp_path))
    local, ray = tmp_path / "local", tmp_path / "ray"
    cache = ["--cache-dir", str(tmp_path / "cache")]
    code, _, err = cli(["tournament", config, "-o", str(local), "--no-cache"], capsys)
    assert code == 0, err
    code, out, err = on_ray(["tournament", config, "-o", str(ray), *cache], capsys)
    assert code == 0, err
    assert "45 matches" in out
    assert rounds(ray) == rounds(local)
    for name in ("matches.parquet", "leaderboard.parquet", "payoff_matrix.parquet"):
        same_parquet(local, ray, name)
    assert status(ray, "tournament_manifest.json") == "completed"


def test_evolution_equals_local(
    ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = {
        "run": {"run_id": "ray_evolution", "seed": 5, "output_dir": "unused"},
        "horizon": {"type": "fixed", "n_rounds": 15},
        "evolution": {
            "process": "moran",
            "generations": 40,
            "repetitions": 3,
            "population": [
                {"player": "ALLD", "count": 4},
                {"player": "TFT", "count": 4},
                {"player": "axelrod:Prober", "count": 3},
                {"player": {"ref": "agents/llm_default.yaml"}, "count": 3},
            ],
        },
    }
    config = str(write_config(data, tmp_path))
    local, ray = tmp_path / "local", tmp_path / "ray"
    code, _, err = cli(["evolve", config, "-o", str(local), "--no-cache"], capsys)
    assert code == 0, err
    code, _, err = on_ray(["evolve", config, "-o", str(ray), "--no-cache"], capsys)
    assert code == 0, err
    assert rounds(ray) == rounds(local)
    same_parquet(local, ray, "generations.parquet")


def test_cluster_wide_concurrency_limit(
    ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """16 LLM-vs-LLM games in 8 tasks on 2 workers, each worker with up to 8 calls wanting a
    slot: with max_concurrency 4 the server never sees more than 4 requests at once, and does
    see 4; with 16 it sees more than 4 (so 4 was the binding limit, not the demand)."""
    peaks = {}
    for limit in (4, 16):
        with FakeOpenAIServer(latency_s=0.03) as server:
            data = experiment(
                [
                    (
                        f"llm_{i}",
                        fake_llm(server, "tit_for_tat", limit),
                        fake_llm(server, "wsls", limit),
                    )
                    for i in range(4)
                ],
                replicates=4,
                horizon={"type": "fixed", "n_rounds": 4},
            )
            config = str(write_config(data, tmp_path / f"limit{limit}"))
            code, _, err = on_ray(
                ["run", config, "-o", str(tmp_path / f"out{limit}"), "--no-cache"], capsys
            )
            assert code == 0, err
            assert server.chat_count >= 16 * 4 * 2
            peaks[limit] = server.peak_in_flight
    assert peaks[4] == 4
    assert peaks[16] > 4


def test_budget_holds_across_the_cluster_and_resume_completes_the_run(
    ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def config(max_calls: int | None) -> str:
        data = experiment(
            [
                ("coop_vs_tft", llm("cooperative", mock={"latency_ms": 5}), policy("TFT")),
                ("tft_vs_wsls", llm("tit_for_tat", mock={"latency_ms": 5}), llm("wsls")),
                ("grim_vs_alld", policy("GRIM"), policy("ALLD")),
            ],
            replicates=4,
            horizon={"type": "fixed", "n_rounds": 10},
            run={"budget": {"max_calls": max_calls}},
        )
        return str(write_config(data, tmp_path / "cfg"))

    reference, run_dir = tmp_path / "reference", tmp_path / "run"
    code, _, err = cli(["run", config(None), "-o", str(reference), "--no-cache"], capsys)
    assert code == 0, err
    needed = sum(calls(reference).values())
    budget = needed // 3
    code, _, err = on_ray(
        ["run", config(budget), "-o", str(run_dir), "--cache-dir", str(tmp_path / "cache")], capsys
    )
    assert code == 2 and "budget reached: max_calls" in err, err
    assert status(run_dir) == "stopped"
    made = sum(n for key, n in calls(run_dir).items() if not key[5])
    assert made == budget  # every worker's calls count against the one budget
    config(None)  # the budget is raised (the only change a resume accepts)
    code, _, err = on_ray(["resume", str(run_dir)], capsys)
    assert code == 0, err
    assert status(run_dir) == "completed"
    assert rounds(run_dir) == rounds(reference)
    same_parquet(reference, run_dir, "aggregates.parquet")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill", "term"])
def test_killed_driver_on_a_running_cluster_resumes_to_the_uninterrupted_run(
    ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], sig: int
) -> None:
    """A `pdbench run --backend ray --ray-address` process joins the module's cluster and is
    killed mid-run (SIGKILL; or SIGTERM, which stops it like Ctrl-C although `ray.init` sets
    its own handler); the games it wrote are kept and `pdbench resume` completes the run equal
    to an uninterrupted one."""
    # 2 calls in flight for the whole cluster, 15 ms each: the LLM games take a few seconds
    agent = {"mock": {"latency_ms": 15, "invalid_rate": 0.1}, "max_concurrency": 2}
    data = experiment(
        [("wsls_vs_random", policy("WSLS"), policy("RANDOM"))]
        + [
            (f"llm_{i}", llm("tit_for_tat", **agent), llm("generous_tft", **agent))
            for i in range(4)
        ],
        replicates=3,
        horizon={"type": "fixed", "n_rounds": 10},
    )
    config = str(write_config(data, tmp_path))
    reference, run_dir = tmp_path / "reference", tmp_path / "run"
    code, _, err = cli(["run", config, "-o", str(reference), "--no-cache"], capsys)
    assert code == 0, err
    address = ray_cluster.get_runtime_context().gcs_address
    args = ["run", config, "-o", str(run_dir), "--cache-dir", str(tmp_path / "cache")]
    proc = start_process([*args, "--backend", "ray", "--ray-address", address], tmp_path)
    # Games are written in plan order, so rounds.jsonl grows in bursts; the call log grows
    # steadily: signal once the policy games (first in the plan) are written and about a
    # quarter of the ~260 calls are made.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if line_count(run_dir / "rounds.jsonl") >= 3 * 10:
            if line_count(run_dir / "llm_calls.jsonl") >= 60:
                break
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(sig)
    proc.wait(timeout=60)
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
        assert status(run_dir) == "running"  # nothing closed the manifest
    else:
        assert proc.returncode == 130, proc.stderr.read() if proc.stderr else ""
        assert status(run_dir) == "interrupted"
    written = len(rounds(run_dir))
    assert 3 * 10 <= written < len(rounds(reference)) and written % 10 == 0  # whole games
    code, _, err = on_ray(["resume", str(run_dir)], capsys)
    assert code == 0, err
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["sessions"][-1]["games_kept"] == written // 10
    assert rounds(run_dir) == rounds(reference)
    same_parquet(reference, run_dir, "aggregates.parquet")


def test_rerun_reuses_the_response_cache(
    ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer() as server:
        data = experiment(
            [(f"llm_{i}", fake_llm(server, "cooperative", 4), policy("TFT")) for i in range(3)],
            replicates=2,
            horizon={"type": "fixed", "n_rounds": 5},
        )
        config = str(write_config(data, tmp_path))
        cache = ["--cache-dir", str(tmp_path / "cache")]
        code, _, err = on_ray(["run", config, "-o", str(tmp_path / "first"), *cache], capsys)
        assert code == 0, err
        first = server.chat_count
        assert first >= 3 * 2 * 5
        code, out, err = on_ray(["run", config, "-o", str(tmp_path / "second"), *cache], capsys)
        assert code == 0, err
        assert server.chat_count == first  # no request the second time
    assert rounds(tmp_path / "second") == rounds(tmp_path / "first")
    assert all(key[5] for key in calls(tmp_path / "second"))
    assert "0 provider calls" in out


def test_unreachable_address_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(write_config(experiment([("a", policy("TFT"), policy("ALLD"))]), tmp_path))
    args = ["run", config, "-o", str(tmp_path / "out"), "--backend", "ray"]
    code, _, err = cli([*args, "--ray-address", "127.0.0.1:1"], capsys)  # nothing listens
    assert code == 2
    assert err.strip().startswith("--ray-address 127.0.0.1:1: cannot reach a Ray cluster there")
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    code, _, err = cli(
        ["run", config, "-o", str(tmp_path / "out"), "--ray-address", "auto"], capsys
    )
    assert code == 2 and err.strip() == "--ray-address needs --backend ray"


def test_missing_ray_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    config = str(write_config(experiment([("a", policy("TFT"), policy("ALLD"))]), tmp_path))
    code, _, err = cli(["run", config, "-o", str(tmp_path / "out"), "--backend", "ray"], capsys)
    assert code == 2
    assert err.strip() == "--backend ray needs the ray extra: run `uv sync --extra ray`"
    assert not (tmp_path / "out").exists()
