"""Budgets and the response cache for groups runs with mock LLM seats that talk: a run stops
cleanly at `run.budget.max_calls` (status stopped, one line, whole games kept) and a resume with
a larger budget completes to the uninterrupted run's rounds and group tables; a second run with
the same cache makes no provider call (counted at the provider itself, not from pdbench's logs)
and writes the same rounds."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import run_in_process
from tests.support.group_shards import (
    GROUP_TABLES,
    N_ROUNDS,
    group_tables,
    manifest,
    read_jsonl,
    rounds_without_timestamps,
    set_budget,
    write_group_config,
)

from pdbench.agents.providers.mock import MockProvider

NO_BUDGET = {"max_calls": None, "max_tokens": None, "max_cost_usd": None}


@pytest.fixture
def provider_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Requests that reach the mock provider, by the run's output directory in use."""
    seen: Counter[str] = Counter()
    original = MockProvider.complete

    async def counted(self: MockProvider, request: Any) -> Any:
        seen["calls"] += 1
        return await original(self, request)

    monkeypatch.setattr(MockProvider, "complete", counted)
    return seen


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run_in_process(args, capsys)


def test_max_calls_stops_a_groups_run_and_a_resume_with_more_completes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], provider_calls: Counter[str]
) -> None:
    reference = tmp_path / "reference"
    config = write_group_config(reference)
    code, _, err = run(
        ["run", str(config), "-o", str(reference / "out"), "--cache-dir", str(reference / "c")],
        capsys,
    )
    assert code == 0, err
    uninterrupted = provider_calls["calls"]
    assert uninterrupted > 20  # the budget below stops the run before its LLM games finish

    root = tmp_path / "budget"
    config = write_group_config(root, budget={"max_calls": 20})
    out, cache = root / "out", root / "cache"
    args = ["run", str(config), "-o", str(out), "--cache-dir", str(cache), "--concurrency", "4"]
    provider_calls.clear()
    code, _, err = run(args, capsys)
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "max_calls=20" in lines[0] and f"pdbench resume {out}" in lines[0]
    assert provider_calls["calls"] <= 20
    stopped = manifest(out)
    assert stopped["status"] == "stopped" and "max_calls=20" in stopped["error"]
    counts = Counter((r["condition"], r["replicate"]) for r in read_jsonl(out / "rounds.jsonl"))
    assert counts and set(counts.values()) == {N_ROUNDS}  # whole games only
    assert "talking" not in {c for c, _ in counts}  # its games needed more calls

    set_budget(config, dict(NO_BUDGET))
    code, _, err = run([*args, "--resume"], capsys)
    assert code == 0, err
    done = manifest(out)
    assert done["status"] == "completed" and len(done["sessions"]) == 2
    assert rounds_without_timestamps(out) == rounds_without_timestamps(reference / "out")
    got, want = group_tables(out), group_tables(reference / "out")
    for name in GROUP_TABLES:
        assert got[name].equals(want[name]), name


def test_a_second_run_with_the_same_cache_calls_no_provider(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], provider_calls: Counter[str]
) -> None:
    config = write_group_config(tmp_path)
    cache = tmp_path / "cache"
    first, second = tmp_path / "first", tmp_path / "second"
    code, _, err = run(["run", str(config), "-o", str(first), "--cache-dir", str(cache)], capsys)
    assert code == 0, err
    made = provider_calls["calls"]
    assert made > 0
    provider_calls.clear()
    code, _, err = run(["run", str(config), "-o", str(second), "--cache-dir", str(cache)], capsys)
    assert code == 0, err
    assert provider_calls["calls"] == 0
    calls = read_jsonl(second / "llm_calls.jsonl")
    assert len(calls) == made and all(c["cached"] for c in calls)
    spent = manifest(second)["usage"]["spent_all_sessions"]
    assert spent["provider_calls"] == 0 and spent["cached_calls"] == made
    assert rounds_without_timestamps(second) == rounds_without_timestamps(first)
    got, want = group_tables(second), group_tables(first)
    for name in GROUP_TABLES:
        assert got[name].equals(want[name]), name
