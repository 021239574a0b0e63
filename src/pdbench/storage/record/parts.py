"""Where a run directory keeps its rounds in columns, without importing pyarrow: the directory,
the parts' names and their order (see `columns`)."""

from __future__ import annotations

from pathlib import Path

from pdbench.storage.schema import ROUNDS_COLUMNS_DIR

PART_PREFIX = "part-"
PART_SUFFIX = ".parquet"


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
