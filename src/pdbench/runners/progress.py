"""A progress bar on a terminal (rich), and nothing when output is not a terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pdbench.runners.engine import ProgressFn


@contextmanager
def terminal_progress(label: str) -> Iterator[ProgressFn | None]:
    """Yield a progress callback drawing a rich bar on stderr when it is a terminal, else None."""
    if not sys.stderr.isatty():
        yield None
        return
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
        console=Console(stderr=True),
        transient=False,
    )
    task = progress.add_task(label, total=None)
    last = 0.0

    def update(done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if done == total or now - last > 0.1:
            progress.update(task, completed=done, total=total)
            last = now

    with progress:
        yield update
