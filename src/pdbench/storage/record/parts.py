"""Where a run directory keeps its rounds in columns, without importing pyarrow: the directory,
the parts' names and their order, and what proves a part belongs to the run (see `columns`).

`rounds/` holds parts named `part-NNNNNN.parquet` and, after a kill mid-write, the temporary
files of a part not yet renamed (`.part-NNNNNN.parquet.<pid>.<hex>.tmp`, which no reader takes
and `resume` removes). Any other file there is refused by every reader, in one line naming it.

Each part's footer records its origin (`ORIGIN_KEY`): the run id, the run seed, a fingerprint
of the planned games and the part's own number. Every reader checks it against the run's
manifest the same way (`check_origin`), so a part copied from another run, a part renamed or a
file that pdbench did not write is refused, never read as data.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from pdbench.errors import RunError
from pdbench.storage.schema import MANIFEST_FILES, ROUNDS_COLUMNS_DIR

PART_PREFIX = "part-"
PART_SUFFIX = ".parquet"
PART_NAME = re.compile(r"part-(\d{6,})\.parquet")
# What a part being written is called until it is complete (`columns.write_part`).
TEMP_NAME = re.compile(r"\.part-\d{6,}\.parquet\.\d+\.[0-9a-f]+\.tmp")
ORIGIN_KEY = b"pdbench.origin"
# Test knobs: the kill fuzzer (tests/support/kill_fuzz.py) shrinks parts and row groups in a
# `pdbench` subprocess, so small runs write many parts and games longer than a row group. Unset,
# the defaults (writer.PART_ROUNDS, columns.ROW_GROUP_ROWS) hold.
PART_ROUNDS_ENV = "PDBENCH_PART_ROUNDS"
ROW_GROUP_ROWS_ENV = "PDBENCH_ROW_GROUP_ROWS"


class RoundsColumnsError(RunError):
    """A columnar rounds part that cannot be read (damaged, or not this run's)."""


def columns_dir(run_dir: Path) -> Path:
    """Where a run directory keeps its rounds in columns."""
    return Path(run_dir) / ROUNDS_COLUMNS_DIR


def part_paths(run_dir: Path) -> list[Path]:
    """The complete parts of a run directory, in the order they were written (by number).

    RoundsColumnsError (one line, naming the file) for anything else in `rounds/` but the
    temporary file of a part a kill left unwritten."""
    directory = columns_dir(run_dir)
    if not directory.is_dir():
        return []
    found: list[tuple[int, Path]] = []
    for path in directory.iterdir():
        match = PART_NAME.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), path))
        elif not TEMP_NAME.fullmatch(path.name):
            raise RoundsColumnsError(
                f"{path}: not a rounds part (a stray file in {directory}; parts are named "
                "part-NNNNNN.parquet); move it out of the directory"
            )
    found.sort()
    return [path for _, path in found]


def temp_paths(run_dir: Path) -> list[Path]:
    """The temporary files of parts a kill left half-written."""
    directory = columns_dir(run_dir)
    if not directory.is_dir():
        return []
    return [p for p in directory.iterdir() if TEMP_NAME.fullmatch(p.name)]


def part_number(path: Path) -> int:
    """The sequence number in a part's name."""
    match = PART_NAME.fullmatch(path.name)
    if match is None:
        raise RoundsColumnsError(f"{path}: not a rounds part name (part-NNNNNN.parquet)")
    return int(match.group(1))


def has_columns(run_dir: Path) -> bool:
    """Whether the run directory holds rounds in columns."""
    return bool(part_paths(run_dir))


# --------------------------------------------------------------------------------------------
# Origin: what ties a part to its run


def plan_fingerprint(manifest: dict[str, Any]) -> str | None:
    """A short hash of the plan the manifest records: each condition's name, agents, noise and
    horizon, and its games (replicate, rounds), in any order; None when the manifest lists no
    conditions (another kind of run, an older pdbench). The games' seeds are left out: they
    follow from the run seed, recorded beside it, and a JSON tool that reads numbers as
    doubles (jq) rounds them."""
    conditions = manifest.get("conditions")
    if not isinstance(conditions, list) or not conditions:
        return None
    plan: list[Any] = []
    for condition in conditions:
        if not isinstance(condition, dict):
            plan.append(None)
            continue
        games = [
            [game.get("replicate"), game.get("n_rounds")] if isinstance(game, dict) else None
            for game in condition.get("games") or ()
        ]
        facts = [condition.get(k) for k in ("name", "agent_a", "agent_b", "noise", "horizon")]
        plan.append([*facts, sorted(games, key=_canonical)])
    plan.sort(key=_canonical)  # the same games in another order are the same plan
    return hashlib.sha256(_canonical(plan).encode()).hexdigest()[:16]


def _canonical(value: Any) -> str:
    """JSON of a value with sorted keys and every number a double."""
    return json.dumps(
        _numbers_as_doubles(value), separators=(",", ":"), sort_keys=True, default=str
    )


def _numbers_as_doubles(value: Any) -> Any:
    """Every number as a double, as any JSON tool reads it back (jq writes 0.0 as 0)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return {str(k): _numbers_as_doubles(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_numbers_as_doubles(v) for v in value]
    return str(value)


def run_origin(manifest: dict[str, Any]) -> dict[str, Any]:
    """What a part of this run records about the run (its number is added when written)."""
    return {
        "run_id": manifest.get("run_id"),
        "seed": manifest.get("seed"),
        "plan": plan_fingerprint(manifest),
    }


def planned_seeds(manifest: dict[str, Any]) -> dict[tuple[str, int], Any]:
    """(condition, replicate) -> the game's seed, as the manifest plans it (empty when it lists
    none)."""
    out: dict[tuple[str, int], Any] = {}
    conditions = manifest.get("conditions")
    for condition in conditions if isinstance(conditions, list) else ():
        if not isinstance(condition, dict):
            continue
        for game in condition.get("games") or ():
            if isinstance(game, dict) and isinstance(game.get("replicate"), int):
                out[(str(condition.get("name")), game["replicate"])] = game.get("seed")
    return out


def check_origin(path: Path, found: Any, expected: dict[str, Any]) -> None:
    """Refuse a part whose recorded origin is not this run's (one line naming the part)."""
    if not isinstance(found, dict):
        raise RoundsColumnsError(
            f"{path}: records no origin (run id, seed, plan); not a part this pdbench wrote for "
            "this run: move it out of rounds/"
        )
    for key, what in (("run_id", "run id"), ("seed", "seed"), ("plan", "planned games")):
        if found.get(key) != expected.get(key):
            raise RoundsColumnsError(
                f"{path}: a part of another run ({what} {found.get(key)!r}, this run's "
                f"{expected.get(key)!r}); move it out of rounds/"
            )
    number = found.get("part")
    if number != part_number(path):
        raise RoundsColumnsError(
            f"{path}: written as part {number!r}, not as this file's part; a renamed or copied "
            "part: move it out of rounds/"
        )


def manifest_beside(run_dir: Path) -> dict[str, Any]:
    """The run's manifest (of whichever kind the directory holds), for readers given none;
    RoundsColumnsError when there is none to check the parts against."""
    for name in MANIFEST_FILES.values():
        path = Path(run_dir) / name
        if path.is_file():
            try:
                manifest = json.loads(path.read_bytes())
            except (OSError, ValueError) as exc:
                raise RoundsColumnsError(f"{path}: not readable JSON ({exc})") from None
            if isinstance(manifest, dict):
                return manifest
            raise RoundsColumnsError(f"{path}: not a JSON object")
    raise RoundsColumnsError(
        f"{run_dir}: no manifest beside {ROUNDS_COLUMNS_DIR}/, so its parts cannot be checked"
    )


def rows_from_env(name: str, default: int) -> int:
    """$NAME as a positive number of rows (a test knob, see PART_ROUNDS_ENV), else `default`."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit() and int(raw) > 0):
        raise RunError(f"{name}: must be a positive number of rows (got {raw!r})")
    return int(raw)
