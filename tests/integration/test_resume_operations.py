"""Resuming as an operator does it: from another working directory, with the cache the run
used (recorded in the manifest as an absolute path, or null for --no-cache) unless --cache-dir
or --no-cache says otherwise, and with `--concurrency N` meaning what it means for `run`.

Runs stop on a call budget (a clean, resumable stop) and are resumed after the budget is
raised; the offline mock provider plays the LLM agents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import run_in_process
from tests.support.configs import experiment, llm, policy, write_config

from pdbench.agents.providers.mock import MockProvider

N_ROUNDS = 8


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "run_manifest.json").read_text(encoding="utf-8"))


def stopped_run(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    *,
    latency_ms: int = 0,
    max_calls: int = 30,
) -> tuple[Path, Path]:
    """A run of (config, out) stopped by max_calls, then the budget lifted in the config."""
    mock = {"invalid_rate": 0.1, "latency_ms": latency_ms}
    data = experiment(
        [
            ("llm_vs_tft", llm("cooperative", mock=mock), policy("TFT")),
            ("llm_vs_llm", llm("tit_for_tat", mock=mock), llm("wsls", mock=mock)),
        ],
        replicates=3,
        horizon={"type": "fixed", "n_rounds": N_ROUNDS},
        run={"budget": {"max_calls": max_calls}},
    )
    cfg = write_config(data, tmp_path / "cfg")
    out = tmp_path / "out"
    code, _, err = run_in_process(["run", str(cfg), "-o", str(out), *args], capsys)
    assert code == 2 and f"max_calls={max_calls}" in err, err
    cfg.write_text(cfg.read_text().replace(f"max_calls: {max_calls}", "max_calls: null"))
    return cfg, out


def call_id(call: dict[str, Any]) -> tuple[Any, ...]:
    return (
        call["condition"],
        call["replicate"],
        call["agent"],
        call["round_index"],
        call["attempt"],
    )


def finished_games(run_dir: Path) -> set[tuple[str, int]]:
    counts: dict[tuple[str, int], int] = {}
    for rec in read_jsonl(run_dir / "rounds.jsonl"):
        key = (rec["condition"], rec["replicate"])
        counts[key] = counts.get(key, 0) + 1
    return {key for key, n in counts.items() if n == N_ROUNDS}


@pytest.mark.parametrize("where", ["default .pdbench_cache", "relative $PDBENCH_CACHE_DIR"])
def test_resume_from_another_directory_uses_the_cache_the_run_used(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    started, elsewhere = tmp_path / "started_here", tmp_path / "elsewhere"
    started.mkdir()
    elsewhere.mkdir()
    if where.startswith("default"):
        monkeypatch.delenv("PDBENCH_CACHE_DIR")
        cache_name = ".pdbench_cache"
    else:
        monkeypatch.setenv("PDBENCH_CACHE_DIR", "rel-cache")
        cache_name = "rel-cache"
    monkeypatch.chdir(started)
    cfg, out = stopped_run(tmp_path, capsys, [])
    cache = (started / cache_name).resolve()
    assert manifest(out)["cache_dir"] == str(cache) and cache.is_dir()
    first = read_jsonl(out / "llm_calls.jsonl")
    kept = finished_games(out)
    # The replies of the games that did not finish: a resume replays those games from the cache.
    replayable = {
        call_id(c) for c in first if c["ok"] and (c["condition"], c["replicate"]) not in kept
    }
    assert replayable

    monkeypatch.chdir(elsewhere)  # where $PDBENCH_CACHE_DIR or .pdbench_cache means another dir
    code, _, err = run_in_process(["resume", str(out)], capsys)
    assert code == 0, err
    assert not (elsewhere / cache_name).exists()
    resumed = [c for c in read_jsonl(out / "llm_calls.jsonl") if c["session"] == 1]
    assert {call_id(c) for c in resumed if c["cached"]} == replayable
    m = manifest(out)
    assert m["status"] == "completed" and m["cache_dir"] == str(cache)


def test_run_with_resume_also_uses_the_cache_the_run_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "the-runs-cache"
    cfg, out = stopped_run(tmp_path, capsys, ["--cache-dir", str(cache)])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, _, err = run_in_process(["run", str(cfg), "-o", str(out), "--resume"], capsys)
    assert code == 0, err
    assert not (tmp_path / "default-cache").exists()  # $PDBENCH_CACHE_DIR of this test
    resumed = [c for c in read_jsonl(out / "llm_calls.jsonl") if c["session"] == 1]
    assert any(c["cached"] for c in resumed)
    assert manifest(out)["cache_dir"] == str(cache.resolve())


def test_a_run_without_cache_is_resumed_without_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg, out = stopped_run(tmp_path, capsys, ["--no-cache"])
    assert manifest(out)["cache_dir"] is None
    code, _, err = run_in_process(["resume", str(out)], capsys)
    assert code == 0, err
    assert not (tmp_path / "default-cache").exists()
    calls = read_jsonl(out / "llm_calls.jsonl")
    assert {c["session"] for c in calls} == {0, 1} and not any(c["cached"] for c in calls)
    assert manifest(out)["cache_dir"] is None


def test_cache_options_given_to_resume_win_over_the_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg, out = stopped_run(tmp_path, capsys, ["--cache-dir", str(tmp_path / "first")])
    other = tmp_path / "other"
    code, _, err = run_in_process(["resume", str(out), "--cache-dir", str(other)], capsys)
    assert code == 0, err
    resumed = [c for c in read_jsonl(out / "llm_calls.jsonl") if c["session"] == 1]
    assert resumed and not any(c["cached"] for c in resumed)  # a fresh cache: nothing in it
    assert (other / "responses.sqlite").is_file()
    assert manifest(out)["cache_dir"] == str(other.resolve())


class InFlight:
    """Counts mock provider calls in flight (the most at once), in this process."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = self.most = 0
        original = MockProvider.complete

        async def complete(provider: MockProvider, request: Any) -> Any:
            self.now += 1
            self.most = max(self.most, self.now)
            try:
                return await original(provider, request)
            finally:
                self.now -= 1

        monkeypatch.setattr(MockProvider, "complete", complete)

    def reset(self) -> None:
        self.now = self.most = 0


@pytest.mark.parametrize("concurrency", [1, 3])
def test_resume_concurrency_means_what_run_concurrency_means(
    concurrency: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At most N provider calls in flight, for `run -c N` and `resume -c N` alike; N = 1 plays
    one game at a time. Both agents of an LLM-vs-LLM round are asked at once, so with N > 1
    more than one call is in flight."""
    calls = InFlight(monkeypatch)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    c = ["--concurrency", str(concurrency)]
    # The calls are slow (20 ms) so that calls that may overlap do.
    cfg, out = stopped_run(tmp_path, capsys, [*cache, *c], latency_ms=20)
    run_most = calls.most
    calls.reset()
    code, _, err = run_in_process(["resume", str(out), *c], capsys)
    assert code == 0, err
    resume_most = calls.most
    if concurrency == 1:
        assert run_most == resume_most == 1
        # One game at a time: the resumed session's calls come game after game.
        games = [
            (x["condition"], x["replicate"])
            for x in read_jsonl(out / "llm_calls.jsonl")
            if x["session"] == 1
        ]
        blocks = [g for i, g in enumerate(games) if i == 0 or games[i - 1] != g]
        assert len(blocks) == len(set(blocks)), blocks
    else:
        assert 1 < run_most <= concurrency and 1 < resume_most <= concurrency
