"""The response cache (re-runs make no provider calls; keys; `pdbench cache stats|clear`) and
budgets (a run stops at `max_calls`, resumable with a larger budget), against FakeOpenAIServer.

Provider calls are counted by the server itself (`chat_count`), independently of pdbench's logs.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support.cli import run_in_process
from tests.support.configs import execute
from tests.support.openai_server import FakeOpenAIServer, Fault

from pdbench.agents.providers.base import CallTag, CompletionRequest, ProviderBase
from pdbench.core.config import BudgetConfig
from pdbench.errors import RunError
from pdbench.runners.config.loader import load_config
from pdbench.runners.engine.broker import Budget, CallBroker

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
KEY_ENV = "PDBENCH_TEST_CACHE_KEY"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
N_COND, N_REP, N_ROUNDS = 2, 2, 8
N_ROUND_CALLS = N_COND * N_REP * N_ROUNDS  # one LLM agent per game, one call per round
NO_BUDGET = {"max_calls": None, "max_tokens": None, "max_cost_usd": None}


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv(KEY_ENV, "sk-test-cache-0000")
    monkeypatch.chdir(tmp_path)  # stray files would land here
    yield


def write_experiment(
    tmp_path: Path,
    base_url: str,
    *,
    budget: dict[str, Any] | None = None,
    temperature: float = 0.0,
) -> Path:
    cfg_dir = tmp_path / "cfg"
    if not cfg_dir.exists():
        shutil.copytree(CONFIGS, cfg_dir)
    agent = {
        "ref": "agents/llm_default.yaml",
        "overrides": {
            "provider": "openai",
            "model": "test-model",
            "base_url": base_url,
            "api_key_env": KEY_ENV,
            "persona": "tit_for_tat",
            "temperature": temperature,
            "timeout_s": 20,
            "transport": {"max_retries": 5, "backoff_initial_s": 0.01, "backoff_max_s": 0.05},
        },
    }
    opponents = ["ALLD", "GRIM"]
    body = {
        "run": {
            "run_id": "cache_budget",
            "seed": 99,
            "output_dir": str(tmp_path / "out"),
            "budget": budget or dict(NO_BUDGET),
        },
        "horizon": {"type": "fixed", "n_rounds": N_ROUNDS},
        "experiment": {
            "replicates": N_REP,
            "conditions": [
                {
                    "name": f"LLM_vs_{opp}",
                    "agent_a": agent,
                    "agent_b": {"ref": "agents/policies.yaml", "overrides": {"policy": opp}},
                }
                for opp in opponents[:N_COND]
            ],
        },
    }
    path = cfg_dir / "experiment.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def set_budget(cfg: Path, budget: dict[str, Any]) -> None:
    """Edit only run.budget of the YAML."""
    data = yaml.safe_load(cfg.read_text(encoding="utf-8"))
    data["run"]["budget"] = budget
    cfg.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


run_cli = run_in_process


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def rounds_without_timestamps(run_dir: Path) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in r.items() if k != "timestamp_utc"}
        for r in read_jsonl(run_dir / "rounds.jsonl")
    ]


def manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "run_manifest.json").read_text(encoding="utf-8"))


def stats_entries(out: str) -> int:
    match = re.search(r": (\d+) entries, \d+ bytes", out)
    assert match, out
    return int(match.group(1))


# --------------------------------------------------------------------------------------------
# cache
# --------------------------------------------------------------------------------------------

# A 500 (retried, not cached) and an invalid move (a valid call whose reply is cached, then a
# re-prompt): the first run makes N_ROUND_CALLS + 2 successful calls and 1 failed one.
FAULTS = {4: Fault("500"), 9: Fault("invalid_action", content="Cooperate!")}


def test_rerun_from_cache_makes_no_calls_and_same_rounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    with FakeOpenAIServer(faults=FAULTS) as srv:
        cfg = write_experiment(tmp_path, srv.base_url)
        code, out, err = run_cli(["run", str(cfg), "--cache-dir", str(cache)], capsys)
        assert code == 0, err
        first_requests = srv.chat_count
        assert first_requests == N_ROUND_CALLS + 1 + 1  # + the re-prompt + the 500's retry
        first = read_jsonl(tmp_path / "out" / "llm_calls.jsonl")
        ok_calls = [c for c in first if c["ok"] and not c["cached"]]
        assert len(ok_calls) == N_ROUND_CALLS + 1

        # cache stats: one entry per successful provider call (the failed one is not stored).
        code, out, err = run_cli(["cache", "stats", "--cache-dir", str(cache)], capsys)
        assert code == 0, err
        assert stats_entries(out) == len(ok_calls)
        assert f"openai/test-model: {len(ok_calls)} entries" in out

        # Same config again, another output dir: everything from the cache.
        code, out, err = run_cli(
            ["run", str(cfg), "-o", str(tmp_path / "again"), "--cache-dir", str(cache)], capsys
        )
        assert code == 0, err
        assert srv.chat_count == first_requests
        again = read_jsonl(tmp_path / "again" / "llm_calls.jsonl")
        assert len(again) == len(ok_calls) and all(c["cached"] and c["ok"] for c in again)
        assert f"spent: 0 provider calls, {len(ok_calls)} from cache" in out
        usage = manifest(tmp_path / "again")["usage"]
        spent = usage["spent_all_sessions"]
        assert (spent["provider_calls"], spent["cached_calls"]) == (0, len(ok_calls))
        # The games used the same replies as the first run, however they were served.
        assert usage["total"]["llm_calls"] == len(ok_calls)
        assert usage["total"] == manifest(tmp_path / "out")["usage"]["total"]
        assert rounds_without_timestamps(tmp_path / "again") == rounds_without_timestamps(
            tmp_path / "out"
        )
        # The invalid reply came back from the cache too, as the same invalid first attempt.
        retried = [
            r for r in read_jsonl(tmp_path / "again" / "rounds.jsonl")
            if len(r["raw_responses"]["agent_a"]) == 2
        ]  # fmt: skip
        assert [a["raw"] for a in retried[0]["raw_responses"]["agent_a"]][0] == "Cooperate!"
        assert len(retried) == 1

        # --no-cache: every call made again, nothing read from or added to the cache.
        code, out, err = run_cli(
            ["run", str(cfg), "-o", str(tmp_path / "nocache"), "--no-cache"]
            + ["--cache-dir", str(cache)],
            capsys,
        )
        assert code == 0, err
        assert srv.chat_count == first_requests + N_ROUND_CALLS  # the faults are used up
        nocache = read_jsonl(tmp_path / "nocache" / "llm_calls.jsonl")
        assert len(nocache) == N_ROUND_CALLS and not any(c["cached"] for c in nocache)
        code, out, err = run_cli(["cache", "stats", "--cache-dir", str(cache)], capsys)
        assert stats_entries(out) == len(ok_calls)

        # cache clear empties it; the next run calls the provider again.
        code, out, err = run_cli(["cache", "clear", "--cache-dir", str(cache)], capsys)
        assert code == 0, err
        assert f"removed {len(ok_calls)} entries" in out
        code, out, err = run_cli(["cache", "stats", "--cache-dir", str(cache)], capsys)
        assert stats_entries(out) == 0
        before = srv.chat_count
        code, out, err = run_cli(
            ["run", str(cfg), "-o", str(tmp_path / "cleared"), "--cache-dir", str(cache)], capsys
        )
        assert code == 0, err
        assert srv.chat_count == before + N_ROUND_CALLS
    assert not (tmp_path / "default-cache").exists()  # --cache-dir was honoured throughout


def _bound(broker: CallBroker, cfg: Any, replicate: int, game_seed: int) -> Any:
    # A provider that is never called: the key is a function of the request and settings.
    provider = ProviderBase(cfg, None)
    return broker.bind(
        provider, cfg, condition="c", replicate=replicate, agent_key="agent_a", game_seed=game_seed
    )


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_cache_key_includes_the_replicate_only_when_sampling(
    tmp_path: Path, temperature: float
) -> None:
    cfg_path = write_experiment(tmp_path, "http://127.0.0.1:9/v1", temperature=temperature)
    agent_cfg = load_config(cfg_path).config.experiment.conditions[0].agent_a
    broker = CallBroker(None, Budget(BudgetConfig()), None, 1)
    tag = CallTag(3, 0)

    def request(system: str = "sys", prompt: str = "prompt", call: CallTag = tag) -> Any:
        return CompletionRequest(system, prompt, temperature, 16, tag=call)

    key0 = _bound(broker, agent_cfg, 0, 1234).key_for(request())
    key1 = _bound(broker, agent_cfg, 1, 1234).key_for(request())
    # Same game seed on purpose: only the replicate index differs.
    assert (key0 != key1) is (temperature > 0)
    # Everything else that shapes a reply is in the key.
    base = _bound(broker, agent_cfg, 0, 1234)
    assert base.key_for(request(call=CallTag(3, 1))) != key0  # parse attempt
    assert base.key_for(request(prompt="prompt2")) != key0
    assert base.key_for(request(system="sys2")) != key0
    assert _bound(broker, agent_cfg, 0, 1235).key_for(request()) != key0


def test_replicates_do_not_share_cached_replies_when_sampling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """temperature 0.7 against a deterministic server: every replicate's calls are its own."""
    cache = tmp_path / "cache"
    with FakeOpenAIServer() as srv:
        cfg = write_experiment(tmp_path, srv.base_url, temperature=0.7)
        code, out, err = run_cli(["run", str(cfg), "--cache-dir", str(cache)], capsys)
        assert code == 0, err
        assert srv.chat_count == N_ROUND_CALLS
        assert {r["temperature"] for r in srv.requests} == {0.7}
    calls = read_jsonl(tmp_path / "out" / "llm_calls.jsonl")
    assert not any(c["cached"] for c in calls)
    # Replicates 0 and 1 see the same prompts (the server is deterministic) ...
    prompts: dict[int, list[str]] = {}
    for r in read_jsonl(tmp_path / "out" / "rounds.jsonl"):
        if r["condition"] == "LLM_vs_ALLD":
            prompts.setdefault(r["replicate"], []).append(r["prompts"]["agent_a"]["round"])
    assert prompts[0] == prompts[1]
    # ... and still got one cache entry each.
    code, out, err = run_cli(["cache", "stats", "--cache-dir", str(cache)], capsys)
    assert stats_entries(out) == N_ROUND_CALLS


# --------------------------------------------------------------------------------------------
# budgets
# --------------------------------------------------------------------------------------------


def test_max_calls_stops_the_run_and_a_resume_with_a_larger_budget_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The broker checks the budget and counts the call with no await in between, right before
    each attempt, so at most max_calls attempts start, whatever the concurrency."""
    cache = tmp_path / "cache"
    with FakeOpenAIServer(latency_s=0.02) as srv:
        cfg = write_experiment(tmp_path, srv.base_url, budget={"max_calls": 10})
        code, out, err = run_cli(
            ["run", str(cfg), "--concurrency", "4", "--cache-dir", str(cache)], capsys
        )
        assert code == 2
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and "max_calls=10" in lines[0] and "pdbench resume" in lines[0]
        assert "Traceback" not in err
        assert srv.chat_count <= 10
        run_dir = tmp_path / "out"
        m = manifest(run_dir)
        assert m["status"] == "stopped" and "max_calls=10" in m["error"]
        # Only whole games are kept.
        assert (run_dir / "rounds.jsonl").read_text().count("\n") % N_ROUNDS == 0

        # Raise the budget (only run.budget changes) and resume.
        set_budget(cfg, dict(NO_BUDGET))
        code, out, err = run_cli(
            ["run", str(cfg), "--resume", "--concurrency", "4", "--cache-dir", str(cache)],
            capsys,
        )
        assert code == 0, err
        assert manifest(run_dir)["status"] == "completed"
        assert len(manifest(run_dir)["sessions"]) == 2
        total_requests = srv.chat_count

    with FakeOpenAIServer() as srv2:
        cfg2 = write_experiment(tmp_path / "plain", srv2.base_url)
        code, out, err = run_cli(
            ["run", str(cfg2), "--cache-dir", str(tmp_path / "cache2")], capsys
        )
        assert code == 0, err
        assert srv2.chat_count == N_ROUND_CALLS
    assert rounds_without_timestamps(run_dir) == rounds_without_timestamps(
        tmp_path / "plain" / "out"
    )
    # Nothing was paid twice except calls cut off in flight when the budget stopped the run.
    assert N_ROUND_CALLS <= total_requests <= N_ROUND_CALLS + 3


def test_max_calls_counts_every_call_of_every_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """max_calls is a limit on the run (a resume counts earlier sessions' calls from the call
    log). Calls in flight when the budget stops the run were sent to the provider too, so a run
    stopped at 10 and resumed with max_calls 20 may make 20 requests in all, not more."""
    cache = tmp_path / "cache"
    with FakeOpenAIServer(latency_s=0.05) as srv:
        cfg = write_experiment(tmp_path, srv.base_url, budget={"max_calls": 10})
        code, _, err = run_cli(
            ["run", str(cfg), "--concurrency", "4", "--cache-dir", str(cache)], capsys
        )
        assert code == 2, err
        first = srv.chat_count
        logged = [c for c in read_jsonl(tmp_path / "out" / "llm_calls.jsonl") if not c["cached"]]
        set_budget(cfg, {"max_calls": 20, "max_tokens": None, "max_cost_usd": None})
        code, _, err = run_cli(
            ["run", str(cfg), "--resume", "--concurrency", "4", "--cache-dir", str(cache)],
            capsys,
        )
        assert code == 2 and "max_calls=20" in err
        total = srv.chat_count
    assert first <= 10
    # Every request the provider got is in llm_calls.jsonl. A call cancelled when the run
    # stopped is logged (and counted against the budget) even if its request never arrived.
    cancelled = [c for c in logged if c.get("cancelled")]
    assert len(logged) - len(cancelled) <= first <= len(logged), (logged, first)
    assert total <= 20, f"{total} provider requests under max_calls 20"


def test_max_tokens_budget_stops_the_run(tmp_path: Path) -> None:
    with FakeOpenAIServer() as srv:
        cfg = write_experiment(
            tmp_path,
            srv.base_url,
            budget={"max_calls": None, "max_tokens": 1, "max_cost_usd": None},
        )
        with pytest.raises(RunError, match="max_tokens=1"):
            execute(cfg, concurrency=1, cache_dir=tmp_path / "cache")
        # The first call spends more than 1 token; no second call may start.
        assert srv.chat_count == 1
    assert manifest(tmp_path / "out")["status"] == "stopped"


# --------------------------------------------------------------------------------------------
# dry run
# --------------------------------------------------------------------------------------------


def test_dry_run_prints_expected_calls_and_tokens_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache-dry"
    with FakeOpenAIServer() as srv:
        cfg = write_experiment(tmp_path, srv.base_url)
        before = sorted(tmp_path.rglob("*"))
        code, out, err = run_cli(["run", str(cfg), "--dry-run", "--cache-dir", str(cache)], capsys)
        assert code == 0, err
        assert srv.chat_count == 0
        assert sorted(tmp_path.rglob("*")) == before  # no output dir, no cache, nothing
        assert not (tmp_path / "out").exists() and not cache.exists()
        # 2 conditions x 2 replicates x 8 rounds, one LLM agent: 32 calls, x3 with max_retries 2.
        assert f"expected LLM calls: {N_ROUND_CALLS} (up to {N_ROUND_CALLS * 3} with parse" in out
        match = re.search(r"estimated tokens: ~(\d+) input, at most (\d+) output", out)
        assert match, out
        est_in, est_out = int(match.group(1)), int(match.group(2))
        assert est_out == N_ROUND_CALLS * 16  # max_tokens 16 per call
        assert "dry run: nothing was written" in out

        # The estimate against what a real run sends (the server counts whitespace words, fewer
        # than ~4-character tokens; the estimate assumes a full history window every round).
        execute(cfg, cache_dir=cache, concurrency=4)
        sent_words = sum(len(m["content"].split()) for r in srv.requests for m in r["messages"])
        sent_chars = sum(len(m["content"]) for r in srv.requests for m in r["messages"])
    assert sent_words <= est_in <= sent_chars
