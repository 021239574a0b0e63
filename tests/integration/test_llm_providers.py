"""The real provider adapters (`openai`, `litellm`) against the offline FakeOpenAIServer.

Transient faults (429 with Retry-After, 500, 503, a reply slower than timeout_s, a malformed body,
a dropped connection) must be retried by the CallBroker and logged; an invalid move is a parse
retry; fatal errors (bad key, unknown model) stop the run at once with one line and exit code 2.

Everything talks to 127.0.0.1 only. Runs with `concurrency=1` are fully sequential, so the k-th
HTTP request the server saw is the k-th provider attempt in llm_calls.jsonl: faults can be paired
with the log line they produced.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support.cli import run_in_process
from tests.support.configs import execute
from tests.support.openai_server import FakeOpenAIServer, Fault

from pdbench.agents.providers.base import CompletionRequest
from pdbench.core.config import LLMAgentConfig
from pdbench.errors import RunError

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
MODELS = {"openai": "test-model", "litellm": "openai/test-model"}
KEY_ENV = "PDBENCH_TEST_PROVIDER_KEY"
KEY = "sk-test-providers-0001"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
FAST_TRANSPORT = {"max_retries": 5, "backoff_initial_s": 0.01, "backoff_max_s": 0.05}
INVALID_REPLY = "I think I will cooperate, maybe."


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


class TimedServer(FakeOpenAIServer):
    """FakeOpenAIServer that also notes when each chat request arrived (time.monotonic()).

    `_fault_for(index)` is called once per request that passed auth and model checks, as soon as
    the request is counted and before any scripted delay, so it marks the arrival time.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arrivals: dict[int, float] = {}

    def _fault_for(self, index: int) -> Fault | None:
        self.arrivals[index] = time.monotonic()
        return super()._fault_for(index)


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """127.0.0.1 never goes through a proxy; no real OpenAI key can reach the test server."""
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture(scope="module", autouse=True)
def _warm_sdks() -> Iterator[None]:
    """Make one call through each adapter first, so the SDKs' lazy imports (1-2 s on a first call,
    see test_first_call_is_not_timed_out_by_sdk_startup) do not land inside a 0.5 s timeout of
    the in-process runs below."""
    from pdbench.agents.providers.litellm import LiteLLMProvider
    from pdbench.agents.providers.openai import OpenAIProvider

    async def warm(url: str) -> None:
        for cls, model in (
            (OpenAIProvider, MODELS["openai"]),
            (LiteLLMProvider, MODELS["litellm"]),
        ):
            cfg = LLMAgentConfig.model_validate(
                {
                    "type": "llm",
                    "provider": cls.name,
                    "model": model,
                    "base_url": url,
                    "timeout_s": 30,
                    "prompts": {"system": "s", "round": "r", "personas_dir": "p"},
                }
            )
            client = cls(cfg, KEY)
            await client.complete(CompletionRequest("warm-up", "warm-up", 0.0, 2))
            await client.aclose()

    saved = {v: os.environ.pop(v, None) for v in PROXY_VARS}
    try:
        with FakeOpenAIServer() as srv:
            asyncio.run(warm(srv.base_url))
    finally:
        os.environ.update({k: v for k, v in saved.items() if v is not None})
    yield


def write_experiment(
    tmp_path: Path,
    provider: str,
    base_url: str,
    *,
    conditions: int = 2,
    replicates: int = 2,
    n_rounds: int = 8,
    opponent: str = "ALLD",
    agent: dict[str, Any] | None = None,
    out: str = "out",
) -> Path:
    """An experiment in tmp_path/cfg (a copy of configs/): `conditions` identical conditions of an
    LLM agent (provider against `base_url`) versus a policy."""
    cfg_dir = tmp_path / "cfg"
    if not cfg_dir.exists():
        shutil.copytree(CONFIGS, cfg_dir)
    overrides: dict[str, Any] = {
        "provider": provider,
        "model": MODELS[provider],
        "base_url": base_url,
        "api_key_env": KEY_ENV,
        "persona": "tit_for_tat",
        "timeout_s": 20,
        "transport": dict(FAST_TRANSPORT),
    }
    overrides.update(agent or {})
    conds = [
        {
            "name": f"LLM_vs_{opponent}_{i}",
            "agent_a": {"ref": "agents/llm_default.yaml", "overrides": overrides},
            "agent_b": {"ref": "agents/policies.yaml", "overrides": {"policy": opponent}},
        }
        for i in range(conditions)
    ]
    body = {
        "run": {"run_id": "providers", "seed": 11, "output_dir": str(tmp_path / out)},
        "horizon": {"type": "fixed", "n_rounds": n_rounds},
        "experiment": {"replicates": replicates, "conditions": conds},
    }
    path = cfg_dir / "experiment.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def read_manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "run_manifest.json").read_text(encoding="utf-8"))


def subprocess_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS and k != "OPENAI_API_KEY"}
    env.update(NO_PROXY="127.0.0.1,localhost", LITELLM_LOCAL_MODEL_COST_MAP="True")
    env.update(extra)
    return env


def pdbench(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pdbench.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def all_games(conditions: int, replicates: int, n_rounds: int, opponent: str = "ALLD") -> set:
    return {
        (f"LLM_vs_{opponent}_{c}", r, i)
        for c in range(conditions)
        for r in range(replicates)
        for i in range(n_rounds)
    }


# --------------------------------------------------------------------------------------------
# transient faults
# --------------------------------------------------------------------------------------------

# Request index (1-based, as the server counts) -> scripted fault. Every fault is followed by
# at least two normal requests, so each retry / re-prompt gets a good reply.
FAULTS = {
    2: Fault("429", retry_after=0.2),
    5: Fault("500"),
    8: Fault("503"),
    11: Fault("slow", delay_s=1.5),
    14: Fault("malformed"),
    17: Fault("disconnect"),
    20: Fault("invalid_action", content=INVALID_REPLY),
}
TRANSPORT_FAULTS = ("429", "500", "503", "slow", "malformed", "disconnect")


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_transient_faults_are_retried_logged_and_lose_no_round(
    tmp_path: Path, provider: str
) -> None:
    with TimedServer(faults=FAULTS) as srv:
        cfg = write_experiment(tmp_path, provider, srv.base_url, agent={"timeout_s": 0.5})
        summary = execute(cfg, concurrency=1, cache_dir=tmp_path / "cache")
        requests = srv.requests
    run_dir = tmp_path / "out"
    assert summary.manifest["status"] == "completed"
    assert read_manifest(run_dir)["status"] == "completed"

    # 32 rounds answered at once + 1 re-prompt after the invalid move + 6 failed transport tries.
    assert len(requests) == 32 + 1 + len(TRANSPORT_FAULTS)
    calls = read_jsonl(run_dir / "llm_calls.jsonl")
    assert not any(c["cached"] for c in calls)  # fresh cache dir
    assert len(calls) == len(requests)  # every HTTP request is one logged attempt, and back

    # Sequential run: request k produced log line k.
    for req, call in zip(requests, calls, strict=True):
        expect_ok = req["fault"] in (None, "invalid_action")
        assert call["ok"] is expect_ok, (req, call)
        if not expect_ok:
            assert call["retryable"] is True
            assert call["error"]
    failed = [c for c in calls if not c["ok"]]
    assert len(failed) == len(TRANSPORT_FAULTS)
    by_kind = dict(zip(TRANSPORT_FAULTS, failed, strict=True))
    assert "429" in by_kind["429"]["error"]
    assert "500" in by_kind["500"]["error"]
    assert "503" in by_kind["503"]["error"]
    # The SDK enforces timeout_s (0.5 s) itself: its timeout error is logged, as retryable.
    assert "timed out" in by_kind["slow"]["error"].lower()
    # A transport retry repeats the same call: same round and parse attempt, next transport_try.
    for i, call in enumerate(calls):
        if not call["ok"]:
            nxt = calls[i + 1]
            assert (nxt["condition"], nxt["replicate"], nxt["round_index"], nxt["attempt"]) == (
                call["condition"],
                call["replicate"],
                call["round_index"],
                call["attempt"],
            )
            assert nxt["transport_try"] == call["transport_try"] + 1 and nxt["ok"]

    # Every round of every game exactly once, in (condition, replicate, round) order.
    rounds = read_jsonl(run_dir / "rounds.jsonl")
    keys = [(r["condition"], r["replicate"], r["round_index"]) for r in rounds]
    assert len(keys) == 32 and set(keys) == all_games(2, 2, 8) and keys == sorted(keys)

    # The invalid move is a parse retry: an invalid attempt, then a valid one, in the same round.
    multi = [r for r in rounds if len(r["raw_responses"]["agent_a"]) > 1]
    assert len(multi) == 1
    first, second = multi[0]["raw_responses"]["agent_a"]
    assert (first["attempt"], first["raw"], first["valid"]) == (0, INVALID_REPLY, False)
    assert first["error"]
    assert (second["attempt"], second["valid"]) == (1, True)
    assert second["raw"] in ("C", "D")
    assert multi[0]["agent_a_parse_failure"] is False
    assert all(r["agent_a_parse_failure"] is False for r in rounds)
    # ... and in the call log it is an ok call (transport fine) followed by parse attempt 1.
    invalid_at = next(i for i, req in enumerate(requests) if req["fault"] == "invalid_action")
    assert calls[invalid_at]["ok"] is True and calls[invalid_at]["attempt"] == 0
    assert calls[invalid_at + 1]["attempt"] == 1 and calls[invalid_at + 1]["transport_try"] == 0

    # The games used 33 replies; the run spent 33 + 6 failed provider calls, none cached.
    usage = summary.manifest["usage"]
    assert usage["total"]["llm_calls"] == 33
    spent = usage["spent_all_sessions"]
    assert (spent["provider_calls"], spent["cached_calls"]) == (33 + len(TRANSPORT_FAULTS), 0)


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_retry_after_of_a_429_is_honoured(tmp_path: Path, provider: str) -> None:
    """Backoff is 0.01-0.05 s, so only Retry-After: 0.2 can make the retry wait 0.2 s (within
    backoff_max_s, 1 s here: every wait is capped by it)."""
    with TimedServer(faults={3: Fault("429", retry_after=0.2)}) as srv:
        cfg = write_experiment(tmp_path, provider, srv.base_url, conditions=1, replicates=1)
        cfg.write_text(cfg.read_text().replace("backoff_max_s: 0.05", "backoff_max_s: 1.0"))
        execute(cfg, concurrency=1, cache_dir=tmp_path / "cache")
        requests, arrivals = srv.requests, dict(srv.arrivals)
    assert [r["fault"] for r in requests[:4]] == [None, None, "429", None]
    assert requests[3]["messages"] == requests[2]["messages"]  # the retry of the same call
    gap = arrivals[4] - arrivals[3]
    assert gap >= 0.2, f"retry came {gap:.3f} s after the 429 (Retry-After: 0.2)"
    calls = read_jsonl(tmp_path / "out" / "llm_calls.jsonl")
    assert [c["ok"] for c in calls[:4]] == [True, True, False, True]
    assert calls[3]["transport_try"] == 1


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_periodic_faults_with_concurrent_games_keep_every_round(
    tmp_path: Path, provider: str
) -> None:
    """Every 5th request fails (500) while 4 games run at once."""
    with FakeOpenAIServer(fault_every=(5, Fault("500"))) as srv:
        cfg = write_experiment(tmp_path, provider, srv.base_url, opponent="TFT")
        execute(cfg, concurrency=4, cache_dir=tmp_path / "cache")
        n_requests = srv.chat_count
        faulted = sum(1 for r in srv.requests if r["fault"] == "500")
    calls = read_jsonl(tmp_path / "out" / "llm_calls.jsonl")
    assert len(calls) == n_requests
    assert sum(1 for c in calls if not c["ok"]) == faulted > 0
    assert sum(1 for c in calls if c["ok"]) == 32  # TFT server vs TFT: all valid, one per round
    rounds = read_jsonl(tmp_path / "out" / "rounds.jsonl")
    keys = [(r["condition"], r["replicate"], r["round_index"]) for r in rounds]
    assert len(keys) == len(set(keys)) == 32 and set(keys) == all_games(2, 2, 8, "TFT")
    assert keys == sorted(keys)
    # TFT vs TFT cooperates throughout, whatever failed on the way.
    assert {(r["agent_a_action"], r["agent_b_action"]) for r in rounds} == {("C", "C")}


# --------------------------------------------------------------------------------------------
# the prompts reach the server
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_tit_for_tat_server_against_alld_plays_tft_moves(tmp_path: Path, provider: str) -> None:
    with FakeOpenAIServer() as srv:
        cfg = write_experiment(
            tmp_path,
            provider,
            srv.base_url,
            conditions=1,
            replicates=1,
            n_rounds=6,
            agent={"temperature": 0.0, "max_tokens": 7},
        )
        execute(cfg, concurrency=1, cache_dir=tmp_path / "cache")
        requests = srv.requests
    rounds = read_jsonl(tmp_path / "out" / "rounds.jsonl")
    # TFT: C first, then copy the opponent's last move; ALLD always defects.
    assert [r["agent_a_action"] for r in rounds] == ["C", "D", "D", "D", "D", "D"]
    assert [r["agent_b_action"] for r in rounds] == ["D"] * 6
    assert [r["agent_a_payoff"] for r in rounds] == [0, 1, 1, 1, 1, 1]
    assert len(requests) == 6
    for i, req in enumerate(requests):
        assert req["model"] == "test-model"  # litellm strips its "openai/" routing prefix
        assert req["max_tokens"] == 7 and req["temperature"] == 0.0
        assert req["had_auth"] is True
        system, user = req["messages"]
        assert system["role"] == "system" and user["role"] == "user"
        assert "C (cooperate) or D (defect)" in system["content"]
        assert f"Round {i + 1} of 6." in user["content"]
        last = "none yet" if i == 0 else "D"
        assert f"Opponent's last move: {last}" in user["content"]
    # The prompts stored in rounds.jsonl are exactly what the server received.
    for rec, req in zip(rounds, requests, strict=True):
        assert rec["prompts"]["agent_a"]["round"] == req["messages"][1]["content"]
        assert rec["prompts"]["agent_a"]["system"] == req["messages"][0]["content"]


# --------------------------------------------------------------------------------------------
# fatal errors
# --------------------------------------------------------------------------------------------

FATAL_CASES = {
    # case: (server api_key, server models, value of KEY_ENV, words the one line must contain)
    "wrong_key": (KEY, {"test-model"}, "sk-test-wrong-key-9999", ("authentication",)),
    "unknown_model": (None, {"some-other-model"}, KEY, ("test-model", "not found")),
}


# In-process, so litellm is imported once per session instead of once per command (~10 s each
# in a fresh process).
run_cli = run_in_process


def _check_fatal_stderr(stderr: str, provider: str, words: tuple[str, ...]) -> str:
    # A slow machine may print a progress line first (every few seconds): not part of the error.
    lines = [
        line for line in stderr.splitlines() if line.strip() and not line.startswith("progress: ")
    ]
    assert len(lines) == 1, f"expected one line on stderr, got:\n{stderr}"
    line = lines[0]
    assert "Traceback" not in stderr
    assert "agent_a" in line and provider in line and MODELS[provider] in line
    for word in words:
        assert word in line.lower()
    return line


@pytest.mark.parametrize("case", sorted(FATAL_CASES))
@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_fatal_error_stops_run_with_one_line_and_no_retry(
    tmp_path: Path,
    provider: str,
    case: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server_key, models, env_key, words = FATAL_CASES[case]
    monkeypatch.setenv(KEY_ENV, env_key)
    monkeypatch.chdir(tmp_path)
    with FakeOpenAIServer(api_key=server_key, models=models) as srv:
        # The model check would catch the unknown model before any call: this tests the
        # provider's own fatal answer to a call.
        agent = {"check_model": False}
        cfg = write_experiment(tmp_path, provider, srv.base_url, agent=agent)
        code, out, err = run_cli(
            ["run", str(cfg), "--concurrency", "1", "--cache-dir", str(tmp_path / "cache")],
            capsys,
        )
        n_requests = srv.chat_count
    assert code == 2, err
    _check_fatal_stderr(err, provider, words)
    assert n_requests == 1  # one game started (concurrency 1), its first call failed, no retry
    run_dir = tmp_path / "out"
    manifest = read_manifest(run_dir)
    assert manifest["status"] == "failed"
    assert "agent_a" in manifest["error"]
    (call,) = read_jsonl(run_dir / "llm_calls.jsonl")
    assert call["ok"] is False and call["retryable"] is False and call["transport_try"] == 0
    assert (run_dir / "rounds.jsonl").read_text() == ""


@pytest.mark.parametrize("case", sorted(FATAL_CASES))
@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_fatal_error_with_concurrent_games_is_never_retried(
    tmp_path: Path,
    provider: str,
    case: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Default concurrency: all 4 games start at once; each may send its first request, none
    may send a second (a retried 401/404 would add up to 5 more requests per game)."""
    server_key, models, env_key, words = FATAL_CASES[case]
    monkeypatch.setenv(KEY_ENV, env_key)
    monkeypatch.chdir(tmp_path)
    with FakeOpenAIServer(api_key=server_key, models=models) as srv:
        # The model check would catch the unknown model before any call: this tests the
        # provider's own fatal answer to a call.
        agent = {"check_model": False}
        cfg = write_experiment(tmp_path, provider, srv.base_url, agent=agent)
        code, out, err = run_cli(["run", str(cfg), "--cache-dir", str(tmp_path / "cache")], capsys)
        n_requests = srv.chat_count
    assert code == 2, err
    assert 1 <= n_requests <= 4
    calls = read_jsonl(tmp_path / "out" / "llm_calls.jsonl")
    # The fatal reply is never retried; other games' calls in flight when the run stopped are
    # logged as cancelled (they may or may not have reached the server: a call cancelled while
    # the SDK was still preparing it never did), not retried either. At most one call a game.
    assert all(not c["ok"] and c["transport_try"] == 0 for c in calls)
    assert len(calls) <= 4
    fatal = [c for c in calls if not c.get("cancelled")]
    assert 1 <= len(fatal) <= n_requests
    assert all(c["retryable"] is False for c in fatal)
    assert all(c["retryable"] is None for c in calls if c.get("cancelled"))
    assert len({(c["condition"], c["replicate"]) for c in calls}) == len(calls)
    assert read_manifest(tmp_path / "out")["status"] == "failed"
    _check_fatal_stderr(err, provider, words)


def test_fatal_error_mid_run_keeps_finished_games_and_resume_completes(tmp_path: Path) -> None:
    """The model disappears after the first game's 8 calls: game 1 is kept, the run fails; with
    the model back, a resume plays the other 3 games."""
    holder: dict[str, FakeOpenAIServer] = {}
    served = {"n": 0}

    def tft_then_vanish(messages: list[dict[str, Any]]) -> str:
        from tests.support.openai_server import tit_for_tat_from_prompt

        served["n"] += 1
        if served["n"] == 8:
            holder["srv"].models = {"gone"}
        return tit_for_tat_from_prompt(messages)

    with FakeOpenAIServer(tft_then_vanish) as srv:
        holder["srv"] = srv
        cfg = write_experiment(tmp_path, "openai", srv.base_url, opponent="GRIM")
        with pytest.raises(RunError) as err:
            execute(cfg, concurrency=1, cache_dir=tmp_path / "cache")
        assert srv.chat_count == 9  # 8 good calls, then one 404, not retried
        assert "not found" in str(err.value) and "agent_a" in str(err.value)
        run_dir = tmp_path / "out"
        manifest = read_manifest(run_dir)
        assert manifest["status"] == "failed"
        kept = read_jsonl(run_dir / "rounds.jsonl")
        assert [(r["condition"], r["replicate"]) for r in kept] == [("LLM_vs_GRIM_0", 0)] * 8
        srv.models = {"test-model"}
        summary = execute(cfg, concurrency=1, resume=True, cache_dir=tmp_path / "cache")
        assert srv.chat_count == 9 + 24
    assert summary.manifest["status"] == "completed"
    assert summary.games_resumed == 1
    # The TFT server against GRIM cooperates throughout: every round is (C, C), 3 points each.
    records = read_jsonl(tmp_path / "out" / "rounds.jsonl")
    keys = [(r["condition"], r["replicate"], r["round_index"]) for r in records]
    assert keys == sorted(all_games(2, 2, 8, "GRIM"))
    for rec in records:
        i = rec["round_index"]
        assert (rec["agent_a_action"], rec["agent_b_action"]) == ("C", "C")
        assert (rec["agent_a_cum_payoff"], rec["agent_b_cum_payoff"]) == (3 * (i + 1), 3 * (i + 1))
    # The kept game is unchanged byte for byte (resume rewrites the file).
    assert [json.dumps(r, sort_keys=True) for r in records[:8]] == [
        json.dumps(r, sort_keys=True) for r in kept
    ]
    assert read_manifest(tmp_path / "out")["sessions"][1]["games_kept"] == 1


# --------------------------------------------------------------------------------------------
# start-up and keys
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_first_call_is_not_timed_out_by_sdk_startup(tmp_path: Path) -> None:
    """`pdbench run` (openai adapter) in a fresh process, timeout_s 0.5, against a server that
    answers in ~50 ms: no attempt may time out. The SDK's lazy imports on the first call
    (`client.chat...`) block the event loop for 1-2 s inside the timeout window; that attempt is
    logged as a timeout and charged to the budget although no request was sent (the server
    then sees fewer requests than the log has attempts). litellm's first call does the same;
    it is not run here only because importing litellm in a fresh process takes ~10 s."""
    with FakeOpenAIServer() as srv:
        cfg = write_experiment(
            tmp_path, "openai", srv.base_url, conditions=1, replicates=1, n_rounds=3,
            agent={"timeout_s": 0.5},
        )  # fmt: skip
        proc = pdbench(
            ["run", str(cfg), "--cache-dir", str(tmp_path / "cache")],
            tmp_path,
            subprocess_env(),
        )
        n_requests = srv.chat_count
    assert proc.returncode == 0, proc.stderr
    calls = read_jsonl(tmp_path / "out" / "llm_calls.jsonl")
    failed = [c["error"] for c in calls if not c["ok"]]
    assert failed == []
    assert len(calls) == n_requests == 3


def test_litellm_against_a_keyless_local_server(tmp_path: Path) -> None:
    """`api_key_env: null` is how a local OpenAI-compatible server is configured (it needs no
    key); the openai adapter sends a placeholder key, the litellm adapter should work too."""
    with FakeOpenAIServer() as srv:
        cfg = write_experiment(
            tmp_path, "litellm", srv.base_url, conditions=1, replicates=1, n_rounds=3,
            agent={"api_key_env": None},
        )  # fmt: skip
        try:
            summary = execute(cfg, concurrency=1, cache_dir=tmp_path / "cache")
        except RunError as exc:
            pytest.fail(f"litellm run against a keyless local server failed: {exc}")
        n_requests = srv.chat_count
    assert summary.manifest["status"] == "completed"
    assert n_requests == 3
    rounds = read_jsonl(tmp_path / "out" / "rounds.jsonl")
    assert [r["agent_a_action"] for r in rounds] == ["C", "D", "D"]
