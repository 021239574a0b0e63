"""Hardening of runs (issue 9): one process per run directory, resume refuses changed inputs,
keys never escape, waits are capped, a damaged cache is one line, completion is written last,
SIGTERM is like Ctrl-C, nothing is created before what can be checked is checked.

Each test names the numbered case of the issue it covers.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.support.cli import run_in_process, run_process, signal_when_lines, start_process
from tests.support.configs import execute, experiment, llm, write_config
from tests.support.openai_server import FakeOpenAIServer, Fault

from pdbench.errors import RunError, RunInterrupted
from pdbench.storage import files as files_module
from pdbench.storage.run_dir import RunLock, read_manifest, run_kind

SLOW_MOCK = {"invalid_rate": 0.0, "latency_ms": 30}
KEY_ENV, KEY = "PDBENCH_HARDENING_KEY", "sk-hardening-0123456789abcdef"


def slow_config(tmp_path: Path, replicates: int = 3, **run: Any) -> Path:
    data = experiment(
        [("llm_vs_tft", llm("cooperative", mock=SLOW_MOCK), "TFT")],
        replicates=replicates,
        horizon={"type": "fixed", "n_rounds": 12},
        run=run,
    )
    return write_config(data, tmp_path / "cfg")


def manifest(run_dir: Path) -> dict[str, Any]:
    return orjson.loads((run_dir / "run_manifest.json").read_bytes())


def all_bytes(*roots: Path) -> bytes:
    return b"".join(p.read_bytes() for root in roots for p in root.rglob("*") if p.is_file())


# --------------------------------------------------------------------------------------------
# 1. one process per run directory; unique temp files


@pytest.mark.slow
def test_1_a_second_process_refuses_a_run_dir_in_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg, out = slow_config(tmp_path, replicates=10), tmp_path / "out"  # about 4 s of calls
    first = start_process(["run", str(cfg), "-o", str(out), "-c", "1", "--no-cache"], tmp_path)
    deadline = time.monotonic() + 30
    while not (out / ".pdbench.lock").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    for args in (
        ["run", str(cfg), "-o", str(out), "--overwrite"],
        ["resume", str(out)],
        ["aggregate", str(out)],
    ):
        code, _, err = run_in_process(args, capsys)
        assert code == 2, args
        assert err.strip().splitlines() == [
            f"{out}: in use by another pdbench process (pid {first.pid}); wait for it to "
            "finish or use another output dir"
        ], args
    assert first.wait(timeout=60) == 0, first.stderr.read() if first.stderr else ""
    rounds = [orjson.loads(x) for x in (out / "rounds.jsonl").read_bytes().splitlines()]
    keys = [(r["condition"], r["replicate"], r["round_index"]) for r in rounds]
    assert len(keys) == len(set(keys)) == 10 * 12  # nothing written twice
    assert not (out / ".pdbench.lock").exists()  # released with the run
    assert run_in_process(["aggregate", str(out)], capsys)[0] == 0


def test_1_a_run_dir_locked_before_its_manifest_exists_is_in_use_not_foreign(
    tmp_path: Path,
) -> None:
    # A run that has taken the lock but not yet written its manifest: a resume or aggregate at
    # that moment must say "in use", not "not a pdbench run directory".
    with RunLock(tmp_path):
        for read in (run_kind, lambda d: read_manifest(d, "experiment")):
            with pytest.raises(RunError, match=r"in use by another pdbench process \(pid \d+\)"):
                read(tmp_path)
    with pytest.raises(RunError, match="not a pdbench run directory"):
        run_kind(tmp_path)  # released: the plain answer again


def test_1_temporary_files_are_unique_per_process_and_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    real = files_module.os.replace

    def spy(src: Any, dst: Any) -> None:
        seen.append(Path(src).name)
        real(src, dst)

    monkeypatch.setattr(files_module.os, "replace", spy)
    for _ in range(2):
        files_module.write_bytes_atomic(tmp_path / "m.json", b"{}")
    assert len(set(seen)) == 2 and all(f".{files_module.os.getpid()}." in n for n in seen)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


# --------------------------------------------------------------------------------------------
# 2. resume refuses inputs that changed


def test_2_resume_refuses_an_edited_persona_and_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg, out = slow_config(tmp_path, budget={"max_calls": 15}), tmp_path / "out"
    cache = ["--cache-dir", str(tmp_path / "cache")]
    code, _, err = run_in_process(["run", str(cfg), "-o", str(out), *cache], capsys)
    assert code == 2 and "budget reached" in err
    cfg.write_text(cfg.read_text().replace("max_calls: 15", "max_calls: null"))
    persona = tmp_path / "cfg" / "prompts" / "personas" / "cooperative.md"
    original = persona.read_text()
    persona.write_text(original + "\nAlways trust.\n")
    code, _, err = run_in_process(["resume", str(out)], capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        f"{out}: prompts/personas/cooperative.md changed since this run started, so finished "
        "and new games would differ; restore it, or start a new run with another output_dir "
        "or --overwrite"
    ]
    persona.write_text(original)
    code, _, err = run_in_process(["resume", str(out)], capsys)
    assert code == 0, err
    assert manifest(out)["status"] == "completed"


# --------------------------------------------------------------------------------------------
# 5. keys never reach an artifact, a log or an error line


def test_5_a_key_reflected_by_the_server_is_stored_nowhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    reflect = Fault("invalid_action", content=f"Authorization: Bearer {KEY}")
    with FakeOpenAIServer(api_key=KEY, faults={1: reflect, 3: reflect}) as srv:
        agent = llm(
            provider="openai", model="test-model", base_url=srv.base_url, api_key_env=KEY_ENV
        )
        data = experiment([("llm_vs_tft", agent, "TFT")], horizon={"type": "fixed", "n_rounds": 4})
        cfg = write_config(data, tmp_path / "cfg")
        code, out, err = run_in_process(
            ["run", str(cfg), "-o", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")],
            capsys,
        )
    assert code == 0, err
    replies = [
        a["raw"]
        for line in (tmp_path / "out" / "rounds.jsonl").read_bytes().splitlines()
        for a in orjson.loads(line)["raw_responses"]["agent_a"]
    ]
    assert "Authorization: Bearer ***" in replies  # the reply is kept, the key is not
    assert KEY.encode() not in all_bytes(tmp_path / "out", tmp_path / "c")
    assert KEY not in out + err


def test_5_a_key_in_the_base_url_is_hidden_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(models={"other"}) as srv:
        url = f"{srv.base_url}?api-key={KEY}"
        agent = llm(provider="openai", model="test-model", base_url=url)
        data = experiment([("llm_vs_tft", agent, "TFT")], horizon={"type": "fixed", "n_rounds": 2})
        cfg = write_config(data, tmp_path / "cfg")
        code, out, err = run_in_process(["run", str(cfg), "-o", str(tmp_path / "out")], capsys)
    assert code == 2 and "not found" in err  # the server knows no such model: a fatal error
    assert KEY not in out + err and "api-key=***" in err
    assert KEY.encode() not in all_bytes(tmp_path / "out")
    snapshot = manifest(tmp_path / "out")["config"]["experiment"]["conditions"][0]["agent_a"]
    assert snapshot["base_url"].endswith("?api-key=***")


# --------------------------------------------------------------------------------------------
# 6. every wait is capped


def test_6_a_huge_retry_after_waits_at_most_backoff_max_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    with FakeOpenAIServer(api_key=KEY, faults={2: Fault("429", retry_after=100_000)}) as srv:
        transport = {"max_retries": 2, "backoff_initial_s": 0.01, "backoff_max_s": 0.2}
        agent = llm(
            provider="openai",
            model="test-model",
            base_url=srv.base_url,
            api_key_env=KEY_ENV,
            transport=transport,
        )
        data = experiment([("llm_vs_tft", agent, "TFT")], horizon={"type": "fixed", "n_rounds": 3})
        started = time.monotonic()
        summary = execute(write_config(data, tmp_path / "cfg"), output_dir=tmp_path / "out")
        elapsed = time.monotonic() - started
    assert summary.manifest["status"] == "completed"
    # Retry-After asked for 100,000 s; the run waited the cap (0.2 s), not a day.
    assert elapsed < 60
    calls = [
        orjson.loads(x) for x in (tmp_path / "out" / "llm_calls.jsonl").read_bytes().splitlines()
    ]
    assert [c["ok"] for c in calls[:3]] == [True, False, True]


# --------------------------------------------------------------------------------------------
# 7. a damaged cache is one line; `cache clear` removes it


@pytest.mark.parametrize("damage", ["truncate", "random_bytes"])
def test_7_a_damaged_cache_is_one_line_and_clear_repairs_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    cfg, cache = slow_config(tmp_path, replicates=1), tmp_path / "cache"
    assert (
        run_in_process(
            ["run", str(cfg), "-o", str(tmp_path / "a"), "--cache-dir", str(cache)], capsys
        )[0]
        == 0
    )
    db = cache / "responses.sqlite"
    for journal in cache.glob("responses.sqlite-*"):
        journal.unlink()
    if damage == "truncate":
        db.write_bytes(db.read_bytes()[:100])
    else:
        db.write_bytes(bytes(range(256)) * 40)
    for args in (
        ["run", str(cfg), "-o", str(tmp_path / "b"), "--cache-dir", str(cache)],
        ["cache", "stats", "--cache-dir", str(cache)],
    ):
        code, _, err = run_in_process(args, capsys)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
        assert (
            lines[0].startswith(f"{db}: ")
            and f"pdbench cache clear --cache-dir {cache}" in lines[0]
        )
    assert not (tmp_path / "b").exists()  # found before the run dir is made (issue 20, V04)
    code, out, _ = run_in_process(["cache", "clear", "--cache-dir", str(cache)], capsys)
    assert code == 0 and "removed" in out
    assert (
        run_in_process(
            ["run", str(cfg), "-o", str(tmp_path / "b"), "--cache-dir", str(cache)], capsys
        )[0]
        == 0
    )


# --------------------------------------------------------------------------------------------
# 8. "completed" is written last; every exit path says what happened


def test_8_completion_is_written_after_the_artifacts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pdbench.storage import aggregate as module

    cfg = write_config(experiment([("c", "TFT", "ALLD")]), tmp_path / "cfg")

    def interrupted(rows: Any, path: Path) -> None:
        assert manifest(path.parent)["status"] == "running"  # not completed before this
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "write_aggregates", interrupted)
    with pytest.raises(RunInterrupted, match="continue with `pdbench resume"):
        execute(cfg, output_dir=tmp_path / "out")
    assert manifest(tmp_path / "out")["status"] == "interrupted"
    assert not (tmp_path / "out" / "aggregates.parquet").exists()
    monkeypatch.undo()
    execute(cfg, output_dir=tmp_path / "out", resume=True)
    assert manifest(tmp_path / "out")["status"] == "completed"
    assert (tmp_path / "out" / "aggregates.parquet").is_file()


# --------------------------------------------------------------------------------------------
# 13. SIGTERM is handled like Ctrl-C


def test_13_sigterm_stops_the_run_as_interrupted_and_it_resumes(tmp_path: Path) -> None:
    cfg, out = slow_config(tmp_path, replicates=4), tmp_path / "out"
    proc = start_process(["run", str(cfg), "-o", str(out), "-c", "1", "--no-cache"], tmp_path)
    signal_when_lines(proc, out / "rounds.jsonl", 12, signal.SIGTERM)
    assert proc.returncode == 130
    err = proc.stderr.read() if proc.stderr else ""
    assert "interrupted" in err and f"pdbench resume {out}" in err and "Traceback" not in err
    assert manifest(out)["status"] == "interrupted"
    done = run_process(["resume", str(out), "--no-cache"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert manifest(out)["status"] == "completed"


# --------------------------------------------------------------------------------------------
# 14. nothing is created before what can be checked is checked


def test_14_a_missing_key_or_bad_url_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    for i, agent in enumerate(
        [
            llm(
                provider="openai", model="m", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV
            ),
            llm(provider="openai", model="m", base_url="::::"),
        ]
    ):
        cfg = write_config(experiment([("c", agent, "TFT")]), tmp_path / f"cfg{i}")
        out = tmp_path / f"out{i}"
        code, _, err = run_in_process(["run", str(cfg), "-o", str(out)], capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert not out.exists() and "Traceback" not in err


def test_a_game_task_stopped_by_an_interrupt_is_not_reported_twice(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """SIGTERM raises KeyboardInterrupt inside a game's task: asyncio would print that task's
    exception as "never retrieved" with a traceback after the one-line "interrupted" (seen
    once in 10 runs of test 13); any other unretrieved exception is still reported."""
    import asyncio
    import logging

    from pdbench.runners.engine.engine import _quiet_on_interrupt

    loop = asyncio.new_event_loop()
    try:
        loop.set_exception_handler(_quiet_on_interrupt)
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            loop.call_exception_handler(
                {"message": "Task exception was never retrieved", "exception": KeyboardInterrupt()}
            )
            assert not caplog.records
            loop.call_exception_handler({"message": "boom", "exception": ValueError("boom")})
            assert [r.getMessage() for r in caplog.records] == ["boom"]
    finally:
        loop.close()
