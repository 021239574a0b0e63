"""A run directory on disk, for every mode: preparing it, its manifest, and reading back the
games a stopped run finished (for resume)."""

from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import orjson

from pdbench.errors import RunError
from pdbench.storage.files import read_json, write_json_atomic
from pdbench.storage.schema import (
    ARTIFACTS,
    CALLS_FILE,
    LOCK_FILE,
    MANIFEST_FILES,
    check_version,
)


class RunLock:
    """An exclusive lock on a run directory for one process: `flock` on `.pdbench.lock`, which
    holds the holder's pid while it is held and is removed on release. A second run, resume or
    aggregate of the same directory refuses at once, naming the pid; the lock goes with the
    process, also on kill -9 (a stale file is then reused)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / LOCK_FILE
        self._fh: Any = None

    def __enter__(self) -> RunLock:
        while True:
            try:
                fh = open(self.path, "a+", encoding="utf-8")
            except OSError as exc:
                raise RunError(f"{self.run_dir}: cannot lock ({exc.strerror or exc})") from None
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                error = _in_use(self.run_dir, fh)
                fh.close()
                raise error from None
            try:  # the file may have been removed by a holder that released it meanwhile
                same = os.stat(self.path).st_ino == os.fstat(fh.fileno()).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            fh.close()
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        self._fh = fh
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            self.path.unlink(missing_ok=True)  # while still held: no one can take a stale file
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None


def _in_use(run_dir: Path, fh: Any) -> RunError:
    """The error for a lock held by another process, naming its pid (which the holder writes
    just after taking the lock: wait a moment for it)."""
    holder = ""
    for _ in range(50):
        fh.seek(0)
        holder = fh.read().strip()
        if holder:
            break
        time.sleep(0.002)
    return RunError(
        f"{run_dir}: in use by another pdbench process (pid {holder or 'unknown'}); wait for it "
        "to finish or use another output dir"
    )


def check_not_in_use(run_dir: Path) -> None:
    """RunError naming the holder when another process holds the run directory's lock (e.g. a
    run that has started but not yet written its manifest)."""
    try:
        fh = open(run_dir / LOCK_FILE, encoding="utf-8")
    except OSError:
        return
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            raise _in_use(run_dir, fh) from None
        fcntl.flock(fh, fcntl.LOCK_UN)


def make_run_dir(path: Path) -> None:
    """Create a run directory (and its parents); RunError when that is impossible."""
    if path.exists() and not path.is_dir():
        raise RunError(f"{path}: output_dir exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"{path}: cannot create the output directory ({exc.strerror})") from None


def prepare_output_dir(path: Path, overwrite: bool, kind: str) -> None:
    """Create the output dir; refuse a non-empty one unless `overwrite` (then remove the
    artifacts of this kind of run). The lock file does not count."""
    if path.exists() and not path.is_dir():
        raise RunError(f"{path}: output_dir exists and is not a directory")
    if path.is_dir() and any(p.name != LOCK_FILE for p in path.iterdir()):
        if not overwrite:
            raise RunError(
                f"{path}: output directory is not empty; pass --overwrite or change run.output_dir"
            )
        for name in ARTIFACTS[kind]:
            remove_artifact(path / name)
        for leftover in path.glob(".*.tmp"):
            leftover.unlink()
    make_run_dir(path)


def remove_artifact(target: Path) -> None:
    """Remove an artifact: a file, or a directory of them (the columnar rounds parts)."""
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.is_file() or target.is_symlink():
        target.unlink()


def run_kind(run_dir: Path) -> str:
    """experiment, tournament or evolution: which manifest the directory holds."""
    if not run_dir.is_dir():
        raise RunError(f"{run_dir}: no such directory")
    for kind, name in MANIFEST_FILES.items():
        if (run_dir / name).is_file():
            return kind
    check_not_in_use(run_dir)
    names = ", ".join(MANIFEST_FILES.values())
    raise RunError(f"{run_dir}: not a pdbench run directory (none of {names})")


def read_manifest(run_dir: Path, kind: str | None = None) -> dict[str, Any]:
    """The manifest of a run directory (of any kind when `kind` is None); RunError when missing,
    unreadable or newer than this pdbench."""
    kind = kind or run_kind(run_dir)
    path = run_dir / MANIFEST_FILES[kind]
    if not path.is_file():
        check_not_in_use(run_dir)
        raise RunError(f"{run_dir}: no {MANIFEST_FILES[kind]}; not a pdbench {kind} directory")
    try:
        manifest = read_json(path)
    except ValueError as exc:
        raise RunError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict):
        raise RunError(f"{path}: not a JSON object")
    check_version(str(path), manifest.get("schema_version"))
    problem = manifest_problem(manifest)
    if problem:
        raise RunError(f"{path}: {problem}; not a manifest pdbench wrote (restore it)")
    return manifest


# The manifest keys readers rely on, with their types (None is allowed for every one).
MANIFEST_TYPES: dict[str, tuple[type, ...]] = {
    "kind": (str,),
    "run_id": (str,),
    "seed": (int,),
    "status": (str,),
    "config": (dict,),
    "config_path": (str,),
    "overrides": (dict,),
    "prompt_files": (dict,),
    "sessions": (list,),
    "conditions": (list,),
    "collapse": (dict,),
    "replicates": (int,),
    "cache_dir": (str,),
}


def manifest_problem(manifest: dict[str, Any]) -> str:
    """The first key with the wrong type ('' when the keys readers use are sound)."""
    for key, types in MANIFEST_TYPES.items():
        value = manifest.get(key)
        if value is not None and (not isinstance(value, types) or isinstance(value, bool)):
            return f"{key} should be a {types[0].__name__} (got {type(value).__name__})"
    for i, cond in enumerate(manifest.get("conditions") or []):
        if not isinstance(cond, dict) or not isinstance(cond.get("name"), str):
            return f"conditions[{i}] should be an object with a name"
    collapse = manifest.get("collapse") or {}
    k, threshold = collapse.get("k", 10), collapse.get("threshold", 0.2)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        return f"collapse.k should be a positive integer (got {k!r})"
    if not isinstance(threshold, int | float) or isinstance(threshold, bool):
        return f"collapse.threshold should be a number (got {threshold!r})"
    return ""


def write_manifest(run_dir: Path, kind: str, manifest: dict[str, Any]) -> None:
    """Write the manifest atomically."""
    write_json_atomic(run_dir / MANIFEST_FILES[kind], manifest)


def mark_failed_in_place(run_dir: Path, kind: str) -> bool:
    """Turn the manifest's `"status": "running"` into `"status": "failed" ` by overwriting those
    bytes in place (same length: no new disk block is needed, so it works on a full disk);
    True when the manifest now says failed."""
    path = run_dir / MANIFEST_FILES[kind]
    old, new = b'"status": "running"', b'"status": "failed" '
    try:
        with open(path, "r+b") as fh:
            data = fh.read()
            at = data.find(old)
            if at < 0:
                return b'"status": "running"' not in data
            fh.seek(at)
            fh.write(new)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError:
        return False
    return True


def close_all(*things: Any) -> str | None:
    """Close each (None skipped) even when one fails; the first OSError's reason, or None."""
    problem = None
    for thing in things:
        if thing is None:
            continue
        try:
            thing.close()
        except (OSError, sqlite3.Error) as exc:
            problem = problem or (getattr(exc, "strerror", None) or str(exc))
    return problem


def spending(run_dir: Path) -> dict[str, Any]:
    """What every session of this run spent (from the call log): calls that reached a provider
    (failed and cancelled ones too), their tokens and cost, and the replies served by the
    cache instead. Budgets count the first three."""
    out: dict[str, Any] = {
        "provider_calls": 0,
        "tokens": 0,
        "cost_usd": 0.0,  # None when some reply's price is unknown
        "cached_calls": 0,
        "unpriced_calls": 0,
    }
    path = run_dir / CALLS_FILE
    if not path.is_file():
        return out
    for line in path.read_bytes().splitlines():
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:  # a line torn by kill -9
            continue
        if record.get("cached"):
            out["cached_calls"] += 1
            continue
        out["provider_calls"] += 1
        out["tokens"] += (record.get("input_tokens") or 0) + (record.get("output_tokens") or 0)
        cost = record.get("cost_usd")
        if cost is not None:
            out["cost_usd"] += cost
        elif record.get("ok"):  # a reply whose price is unknown (failed calls cost nothing)
            out["unpriced_calls"] += 1
    out["cost_usd"] = round(out["cost_usd"], 8) if out["unpriced_calls"] == 0 else None
    return out
