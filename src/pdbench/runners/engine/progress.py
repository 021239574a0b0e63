"""A run's progress on stderr: a rich bar on a terminal; anywhere else (a pipe, a file, nohup) a
plain line every few seconds ($PDBENCH_PROGRESS_INTERVAL_S, default 5) and one when it finishes:

    progress: 12/40 games, 600/2,000 rounds (30%), 431 calls (120 cached), 52,310 tokens,
    cost $0.0123, elapsed 1m02s, ETA 2m25s

(one line). Both show the same facts. The engine reports rounds (an evolution: its pool's
rounds, then generations); the session hands the reporter a `stats()` callable for the rest:
games done, and this session's LLM calls (provider call attempts plus cached replies, as many
as it writes to llm_calls.jsonl), the tokens and cost the provider charged ("cost unknown" when
some reply had no known price). The ETA extrapolates the rate of the current phase.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from pdbench.errors import RunError

if TYPE_CHECKING:
    from pdbench.runners.engine.broker import CallBroker

INTERVAL_ENV = "PDBENCH_PROGRESS_INTERVAL_S"
DEFAULT_INTERVAL_S = 5.0


@dataclass(frozen=True, slots=True)
class RunStats:
    """A session's figures so far (see the module docstring)."""

    games_done: int
    games_total: int
    llm: bool  # the run has LLM players (else calls, tokens and cost are not shown)
    calls: int = 0
    cached: int = 0
    tokens: int = 0
    cost_usd: float | None = 0.0  # None: unknown


StatsFn = Callable[[], RunStats]


def session_stats(broker: CallBroker, games: Callable[[], tuple[int, int]], llm: bool) -> StatsFn:
    """Live figures of one session: what `broker` counts from now on, and `games()` as (done,
    total). A resumed run's broker starts from earlier sessions' spending; that is left out."""
    budget = broker.budget
    calls, cached, tokens = budget.calls, broker.cached, budget.tokens
    cost, unpriced = budget.cost_usd, budget.unpriced_calls

    def stats() -> RunStats:
        done, total = games()
        unknown = budget.unpriced_calls > unpriced  # a reply of this session had no price
        return RunStats(
            done,
            total,
            llm,
            calls=budget.calls - calls + broker.cached - cached,
            cached=broker.cached - cached,
            tokens=budget.tokens - tokens,
            cost_usd=None if unknown else budget.cost_usd - cost,
        )

    return stats


def interval_from_env() -> float:
    """Seconds between plain progress lines: $PDBENCH_PROGRESS_INTERVAL_S, else 5."""
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    if not raw:
        return DEFAULT_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise RunError(f"{INTERVAL_ENV}: must be a positive number of seconds (got {raw!r})")
    return value


def duration(seconds: float) -> str:
    """45s, 1m02s, 2h03m04s."""
    total = int(round(max(0.0, seconds)))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def call_facts(stats: RunStats | None) -> str:
    """'431 calls (120 cached), 52,310 tokens, cost $0.0123' ('' without LLM players)."""
    if stats is None or not stats.llm:
        return ""
    cost = "cost unknown" if stats.cost_usd is None else f"cost ${stats.cost_usd:.4f}"
    return f"{stats.calls:,} calls ({stats.cached:,} cached), {stats.tokens:,} tokens, {cost}"


class ProgressReporter:
    """The run's progress callback (`ProgressFn`): call it with (done, total) of the current
    unit; a new phase (the next of `units`) starts when the total changes or done goes back.
    `watch(stats)` is how the session hands over its live figures."""

    def __init__(self, units: Sequence[str], clock: Callable[[], float] = time.monotonic) -> None:
        self.units = tuple(units) or ("rounds",)
        self.clock = clock
        self.started = clock()
        self.phase = 0
        self.done: int | None = None
        self.total = 0
        self._phase_start = (self.started, 0)  # (time, done) when the phase began
        self._stats: StatsFn | None = None
        self._lock = threading.Lock()
        self.on_update: Callable[[], None] | None = None

    def watch(self, stats: StatsFn) -> None:
        """Show these figures too (called by the session once its call broker exists)."""
        self._stats = stats

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            if self.done is None:
                self._phase_start = (self.clock(), done)
            elif total != self.total or done < self.done:
                self.phase = min(self.phase + 1, len(self.units) - 1)
                self._phase_start = (self.clock(), done)
            self.done, self.total = done, total
        if self.on_update is not None:
            self.on_update()

    @property
    def unit(self) -> str:
        """What is counted now (rounds, generations)."""
        return self.units[self.phase]

    def stats(self) -> RunStats | None:
        """The session's figures, None before the session handed them over."""
        return self._stats() if self._stats is not None else None

    def eta(self) -> float | None:
        """Seconds left at the current phase's rate; None before any progress in it."""
        with self._lock:
            if self.done is None:
                return None
            if self.done >= self.total:
                return 0.0
            since, done0 = self._phase_start
            moved, spent = self.done - done0, self.clock() - since
            if moved <= 0 or spent <= 0:
                return None
            return (self.total - self.done) * spent / moved

    def games(self, stats: RunStats | None) -> str:
        """'12/40 games' while the games are played ('' after, e.g. during generations)."""
        if stats is None or self.phase != 0 or not stats.games_total:
            return ""
        return f"{stats.games_done:,}/{stats.games_total:,} games"

    def line(self, final: bool = False) -> str:
        """One plain progress line (see the module docstring); the final one has no ETA."""
        stats = self.stats()
        with self._lock:
            done, total, unit = self.done or 0, self.total, self.unit
        share = done / total if total else 1.0
        eta = self.eta()
        parts = [
            self.games(stats),
            f"{done:,}/{total:,} {unit} ({share:.0%})",
            call_facts(stats),
            f"elapsed {duration(self.clock() - self.started)}",
            "" if final else "ETA unknown" if eta is None else f"ETA {duration(eta)}",
        ]
        return "progress: " + ", ".join(p for p in parts if p)


@contextmanager
def run_progress(
    units: Sequence[str] = ("rounds",),
    stream: TextIO | None = None,
    interval_s: float | None = None,
) -> Iterator[ProgressReporter]:
    """Yield the progress reporter of one run, drawing a rich bar on `stream` (default stderr)
    when it is a terminal, else writing a plain line every `interval_s` seconds (default
    $PDBENCH_PROGRESS_INTERVAL_S, else 5) and one when the run finishes (not when it fails:
    then the error is the last line)."""
    out = stream if stream is not None else sys.stderr
    reporter = ProgressReporter(units)
    if out.isatty():
        with _bar(reporter, out):
            yield reporter
        return
    interval = interval_s if interval_s is not None else interval_from_env()
    stop = threading.Event()

    def write(final: bool = False) -> None:
        if reporter.done is not None:
            out.write(reporter.line(final) + "\n")
            out.flush()

    def tick() -> None:
        while not stop.wait(interval):
            write()

    ticker = threading.Thread(target=tick, name="pdbench-progress", daemon=True)
    ticker.start()
    try:
        yield reporter
    finally:
        stop.set()
        ticker.join()
    write(final=True)  # reached only when the run finished


@contextmanager
def _bar(reporter: ProgressReporter, out: TextIO) -> Iterator[None]:
    """The rich bar: the unit, bar, done/total, percentage, elapsed, remaining, and the facts
    of the plain line (games, calls, cached, tokens, cost)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.percentage:>5.1f}%"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[facts]}"),
        console=Console(file=out),
        transient=False,
    )
    task = progress.add_task(reporter.unit.capitalize(), total=None, facts="")
    last = [0.0, -1]  # time of the last redraw, phase drawn

    def update() -> None:
        now = time.monotonic()
        done, total = reporter.done or 0, reporter.total
        if done < total and now - last[0] <= 0.1 and reporter.phase == last[1]:
            return
        stats = reporter.stats()
        facts = ", ".join(p for p in (reporter.games(stats), call_facts(stats)) if p)
        fields: dict[str, Any] = {"facts": facts}
        if reporter.phase != last[1]:
            progress.reset(task, description=reporter.unit.capitalize())
        progress.update(task, completed=done, total=total, **fields)
        last[0], last[1] = now, reporter.phase

    reporter.on_update = update
    with progress:
        yield
        update()  # the last figures
