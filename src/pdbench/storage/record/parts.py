"""Where a run directory keeps its rounds in columns, without importing pyarrow: the directory,
the parts' names and their order (see `columns`)."""

from __future__ import annotations

import os
from pathlib import Path

from pdbench.errors import RunError
from pdbench.storage.schema import ROUNDS_COLUMNS_DIR

PART_PREFIX = "part-"
PART_SUFFIX = ".parquet"
# Test knobs: the kill fuzzer (tests/support/kill_fuzz.py) shrinks parts and row groups in a
# `pdbench` subprocess, so small runs write many parts and games longer than a row group. Unset,
# the defaults (writer.PART_ROUNDS, columns.ROW_GROUP_ROWS) hold.
PART_ROUNDS_ENV = "PDBENCH_PART_ROUNDS"
ROW_GROUP_ROWS_ENV = "PDBENCH_ROW_GROUP_ROWS"


def columns_dir(run_dir: Path) -> Path:
    """Where a run directory keeps its rounds in columns."""
    return Path(run_dir) / ROUNDS_COLUMNS_DIR


def part_paths(run_dir: Path) -> list[Path]:
    """The complete parts of a run directory, in the order they were written."""
    directory = columns_dir(run_dir)
    if not directory.is_dir():
        return []
    return sorted(
        p
        for p in directory.iterdir()
        if p.name.startswith(PART_PREFIX) and p.name.endswith(PART_SUFFIX)
    )


def part_number(path: Path) -> int:
    """The sequence number in a part's name."""
    return int(path.name[len(PART_PREFIX) : -len(PART_SUFFIX)])


def has_columns(run_dir: Path) -> bool:
    """Whether the run directory holds rounds in columns."""
    return bool(part_paths(run_dir))


def rows_from_env(name: str, default: int) -> int:
    """$NAME as a positive number of rows (a test knob, see PART_ROUNDS_ENV), else `default`."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit() and int(raw) > 0):
        raise RunError(f"{name}: must be a positive number of rows (got {raw!r})")
    return int(raw)
