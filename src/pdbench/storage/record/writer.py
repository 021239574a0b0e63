"""The writer of a run's rounds in columns (see `columns`): whole games collected in the order
they come, written as a part every `PART_ROUNDS` rounds and at the end.

Games of the vectorized engine are held as their NumPy arrays and turned into columns a run of
games at a time when a part is written; pyarrow is imported only then, so a run starts playing
while it loads.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from pdbench.storage.record.fields import GameKey
from pdbench.storage.record.parts import (
    PART_ROUNDS_ENV,
    columns_dir,
    part_number,
    part_paths,
    rows_from_env,
)

PART_ROUNDS = 1 << 22  # rounds held in memory before a part is written


class ColumnarRoundsWriter:
    """Collects whole games and writes them as parts of `rounds/`; each part is complete or
    absent (written under a temporary name, then renamed)."""

    def __init__(
        self, run_dir: Path, origin: dict[str, Any], part_rounds: int | None = None
    ) -> None:
        self.run_dir = Path(run_dir)
        self.origin = origin  # the run's `parts.run_origin`, recorded in every part
        self.part_rounds = (
            rows_from_env(PART_ROUNDS_ENV, PART_ROUNDS) if part_rounds is None else part_rounds
        )
        # held: runs of vectorized games (keys, arrays, timestamps) or record batches
        self._held: list[Any] = []
        self._rows = 0
        existing = part_paths(run_dir)
        self._next = part_number(existing[-1]) + 1 if existing else 0
        self._closing: threading.Thread | None = None
        self._problem: BaseException | None = None

    def add_game(self, key: GameKey, arrays: dict[str, np.ndarray], timestamp: str) -> None:
        """One game of the vectorized engine (played_a/b, intended_a/b, payoffs_a/b)."""
        if not self._held or not isinstance(self._held[-1], _ArrayGames):
            self._held.append(_ArrayGames())
        self._held[-1].add(key, arrays, timestamp)
        self._grew(int(arrays["played_a"].shape[0]))

    def add_batch(self, batch: Any) -> None:
        """Whole games' rows as a pyarrow record batch (a game never split across calls)."""
        self._held.append(batch)
        self._grew(batch.num_rows)

    def add_table(self, table: Any) -> None:
        """Whole games' rows as a pyarrow Table, whatever its chunks (a game read back from
        several row groups is one game): its games go into one part together."""
        self._held.extend(table.to_batches())
        self._grew(table.num_rows)

    def add_lines(self, blob: bytes) -> None:
        """One or more whole games as rounds.jsonl lines (parsed when the part is written, so
        a game ends without waiting for pyarrow)."""
        if blob.strip():
            self._held.append(_Lines(blob))
            self._grew(blob.count(b"\n"))

    def _grew(self, rows: int) -> None:
        self._rows += rows
        if self._rows >= self.part_rounds:
            self.flush()

    def flush(self) -> None:
        """Write the games held as one part (nothing when none is held)."""
        if not self._held:
            return
        from pdbench.storage.record.columns import (
            games_batch,
            games_of,
            join_spans,
            lines_batch,
            write_part,
        )

        batches = [
            games_batch(h.keys, h.arrays, h.timestamps)
            if isinstance(h, _ArrayGames)
            else lines_batch(h.blob)
            if isinstance(h, _Lines)
            else h
            for h in self._held
        ]
        spans: list[tuple[str, int, int]] = []
        for held, batch in zip(self._held, batches, strict=True):
            if isinstance(held, _ArrayGames):
                spans += [
                    (k.condition, k.replicate, int(a["played_a"].shape[0]))
                    for k, a in zip(held.keys, held.arrays, strict=True)
                ]
            else:
                spans += games_of(batch)
        games: list[tuple[str, int, int, int]] = []
        first = 0
        for condition, replicate, n in join_spans(spans):
            games.append((condition, replicate, first, n))
            first += n
        write_part(columns_dir(self.run_dir), self._next, batches, games, self.origin)
        self._next += 1
        self._held, self._rows = [], 0

    def close(self) -> None:
        """Write what is held (after a `close_in_background`: wait for it, and raise what it
        raised)."""
        self.wait()
        self.flush()

    def wait(self) -> None:
        """Wait for a part being written in the background (`close_in_background`), and raise
        what writing it raised."""
        if self._closing is None:
            return
        self._closing.join()
        self._closing = None
        problem, self._problem = self._problem, None
        if problem is not None:
            raise problem

    def close_in_background(self) -> None:
        """Start writing what is held in a thread, so the caller goes on (the aggregate is
        computed while the last part is written: pyarrow writes without the GIL); `close`
        waits for it."""
        if self._closing is not None or not self._held:
            return

        def write() -> None:
            try:
                self.flush()
            except BaseException as exc:  # noqa: BLE001 - raised again by close()
                self._problem = exc

        self._closing = threading.Thread(target=write, name="rounds-part", daemon=True)
        self._closing.start()


class _ArrayGames:
    """Consecutive vectorized games, as the engine gave them."""

    def __init__(self) -> None:
        self.keys: list[GameKey] = []
        self.arrays: list[dict[str, np.ndarray]] = []
        self.timestamps: list[str] = []

    def add(self, key: GameKey, arrays: dict[str, np.ndarray], timestamp: str) -> None:
        self.keys.append(key)
        self.arrays.append(arrays)
        self.timestamps.append(timestamp)


class _Lines:
    """Whole games as rounds.jsonl lines, parsed when their part is written."""

    def __init__(self, blob: bytes) -> None:
        self.blob = blob
