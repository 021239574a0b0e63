"""The progress reporter: its plain line (hand-computed figures, a fake clock), phases, the
session's figures read from a call broker, and the plain lines a stalled run still prints."""

from __future__ import annotations

import io
import threading
import time

import pytest

from pdbench.agents.providers.base import Completion
from pdbench.core.config import BudgetConfig
from pdbench.errors import RunError
from pdbench.runners.engine.broker import Budget, CallBroker
from pdbench.runners.engine.progress import (
    ProgressReporter,
    RunStats,
    duration,
    interval_from_env,
    run_progress,
    session_stats,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_line_shows_games_rounds_calls_tokens_cost_elapsed_and_eta() -> None:
    clock = Clock()
    reporter = ProgressReporter(("rounds",), clock=clock)
    reporter(0, 2000)  # the run starts at t = 0
    reporter.watch(lambda: RunStats(12, 40, True, 431, 120, 52310, 0.0123))
    clock.now += 62
    reporter(600, 2000)
    # 600 rounds in 62 s: the 1,400 left take 1400 * 62 / 600 = 144.67 s -> 2m25s.
    assert reporter.line() == (
        "progress: 12/40 games, 600/2,000 rounds (30%), 431 calls (120 cached), "
        "52,310 tokens, cost $0.0123, elapsed 1m02s, ETA 2m25s"
    )
    assert reporter.line(final=True).endswith("cost $0.0123, elapsed 1m02s")


def test_an_unknown_cost_is_shown_as_unknown_never_zero() -> None:
    reporter = ProgressReporter(("rounds",), clock=Clock())
    reporter(0, 10)
    reporter.watch(lambda: RunStats(0, 2, True, 3, 0, 90, None))
    assert "3 calls (0 cached), 90 tokens, cost unknown," in reporter.line()
    assert "$" not in reporter.line()


def test_without_llm_players_or_progress_the_line_says_less() -> None:
    clock = Clock()
    reporter = ProgressReporter(("rounds",), clock=clock)
    reporter(0, 100)
    reporter.watch(lambda: RunStats(0, 4, False))
    assert reporter.line() == "progress: 0/4 games, 0/100 rounds (0%), elapsed 0s, ETA unknown"


def test_a_resumed_run_estimates_from_the_rounds_of_this_session_only() -> None:
    clock = Clock()
    reporter = ProgressReporter(("rounds",), clock=clock)
    reporter(800, 1000)  # 800 rounds were kept from before
    clock.now += 10
    reporter(900, 1000)  # 100 rounds in 10 s: 100 left take 10 s
    assert reporter.line().endswith("900/1,000 rounds (90%), elapsed 10s, ETA 10s")


def test_an_evolution_counts_pool_rounds_then_generations() -> None:
    clock = Clock()
    reporter = ProgressReporter(("rounds", "generations"), clock=clock)
    reporter.watch(lambda: RunStats(3, 3, True, 60, 0, 600, 0.0))
    reporter(0, 120)
    clock.now += 4
    reporter(120, 120)
    assert reporter.line().startswith("progress: 3/3 games, 120/120 rounds (100%), 60 calls")
    reporter(0, 100)  # the process starts: a new total
    clock.now += 2
    reporter(25, 100)  # 25 generations in 2 s: 75 left take 6 s
    assert reporter.line() == (
        "progress: 25/100 generations (25%), 60 calls (0 cached), 600 tokens, cost $0.0000, "
        "elapsed 6s, ETA 6s"
    )


def test_session_stats_count_this_session_from_the_broker() -> None:
    # A resumed run's budget starts from earlier sessions' spending (10 calls, 500 tokens,
    # $0.5); progress shows what this session adds.
    budget = Budget(BudgetConfig(), 10, 500, 0.5)
    broker = CallBroker(None, budget, None, 4)
    games = [5, 8]
    stats = session_stats(broker, lambda: (games[0], games[1]), llm=True)
    assert stats() == RunStats(5, 8, True, 0, 0, 0, 0.0)
    budget.calls += 3  # three provider attempts
    budget.tokens += 120
    budget.cost_usd += 0.25
    broker.cached += 2  # two replies from the cache
    games[0] = 6
    assert stats() == RunStats(6, 8, True, calls=5, cached=2, tokens=120, cost_usd=0.25)


def test_a_reply_without_a_price_makes_the_sessions_cost_unknown() -> None:
    # An earlier session's unpriced reply is not this session's: its cost is still known.
    budget = Budget(BudgetConfig(), 4, 100, 0.1, unpriced_calls=1)
    broker = CallBroker(None, budget, None, 4)
    stats = session_stats(broker, lambda: (0, 1), llm=True)
    budget.calls += 1
    budget.spend(Completion("C", 10, 1, 0.002))
    assert stats().cost_usd == pytest.approx(0.002)
    budget.calls += 1
    budget.spend(Completion("D", 10, 1, None))  # a model nobody has a price for
    assert stats() == RunStats(0, 1, True, calls=2, cached=0, tokens=22, cost_usd=None)


def test_a_plain_stream_gets_lines_while_the_run_is_stalled_and_one_at_the_end() -> None:
    out = io.StringIO()
    out.isatty = lambda: False  # type: ignore[method-assign]
    with run_progress(("rounds",), stream=out, interval_s=0.01) as progress:
        progress(3, 10)
        progress.watch(lambda: RunStats(1, 2, False))
        # No progress is reported now (a slow provider call): lines keep coming.
        deadline = time.monotonic() + 30
        while out.getvalue().count("\n") < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert out.getvalue().count("\n") >= 3
        progress(10, 10)
        before = out.getvalue().count("\n")
    lines = out.getvalue().splitlines()
    assert all(line.startswith("progress: 1/2 games, ") for line in lines)
    assert len(lines) >= before + 1
    assert lines[-1].startswith("progress: 1/2 games, 10/10 rounds (100%), elapsed ")
    assert "ETA" not in lines[-1]


def test_a_failed_run_gets_no_final_line() -> None:
    out = io.StringIO()
    out.isatty = lambda: False  # type: ignore[method-assign]
    with pytest.raises(RuntimeError), run_progress(stream=out, interval_s=3600) as progress:
        progress(3, 10)
        raise RuntimeError("the provider failed")
    assert out.getvalue() == ""  # the error line is the last word, printed by the CLI


def test_the_ticker_thread_ends_with_the_run() -> None:
    out = io.StringIO()
    out.isatty = lambda: False  # type: ignore[method-assign]
    with run_progress(stream=out, interval_s=3600) as progress:
        progress(0, 1)
    assert not any(t.name == "pdbench-progress" for t in threading.enumerate())


def test_durations() -> None:
    assert [duration(s) for s in (0, 45.4, 62, 3600 + 2 * 60 + 3)] == [
        "0s",
        "45s",
        "1m02s",
        "1h02m03s",
    ]


@pytest.mark.parametrize("raw", ["0", "-1", "soon", "inf", "nan"])
def test_a_bad_interval_is_one_line(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PDBENCH_PROGRESS_INTERVAL_S", raw)
    with pytest.raises(RunError) as info:
        interval_from_env()
    assert info.value.lines() == [
        f"PDBENCH_PROGRESS_INTERVAL_S: must be a positive number of seconds (got {raw!r})"
    ]


def test_the_interval_defaults_to_five_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PDBENCH_PROGRESS_INTERVAL_S", raising=False)
    assert interval_from_env() == 5.0
    monkeypatch.setenv("PDBENCH_PROGRESS_INTERVAL_S", "0.5")
    assert interval_from_env() == 0.5
