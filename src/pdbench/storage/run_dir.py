"""A run directory on disk, for every mode: preparing it, its manifest, and reading back the
games a stopped run finished (for resume)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from pdbench.errors import RunError
from pdbench.storage.files import read_json, write_bytes_atomic, write_json_atomic
from pdbench.storage.schema import (
    ARTIFACTS,
    CALLS_FILE,
    MANIFEST_FILES,
    ROUNDS_FILE,
    check_version,
)


def prepare_output_dir(path: Path, overwrite: bool, kind: str) -> None:
    """Create the output dir; refuse a non-empty one unless `overwrite` (then remove the
    artifacts of this kind of run)."""
    if path.exists() and not path.is_dir():
        raise RunError(f"{path}: output_dir exists and is not a directory")
    if path.is_dir() and any(path.iterdir()):
        if not overwrite:
            raise RunError(
                f"{path}: output directory is not empty; pass --overwrite or change run.output_dir"
            )
        for name in ARTIFACTS[kind]:
            target = path / name
            if target.is_file():
                target.unlink()
        for leftover in path.glob(".*.tmp"):
            leftover.unlink()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"{path}: cannot create the output directory ({exc.strerror})") from None


def run_kind(run_dir: Path) -> str:
    """experiment, tournament or evolution: which manifest the directory holds."""
    if not run_dir.is_dir():
        raise RunError(f"{run_dir}: no such directory")
    for kind, name in MANIFEST_FILES.items():
        if (run_dir / name).is_file():
            return kind
    names = ", ".join(MANIFEST_FILES.values())
    raise RunError(f"{run_dir}: not a pdbench run directory (none of {names})")


def read_manifest(run_dir: Path, kind: str | None = None) -> dict[str, Any]:
    """The manifest of a run directory (of any kind when `kind` is None); RunError when missing,
    unreadable or newer than this pdbench."""
    kind = kind or run_kind(run_dir)
    path = run_dir / MANIFEST_FILES[kind]
    if not path.is_file():
        raise RunError(f"{run_dir}: no {MANIFEST_FILES[kind]}; not a pdbench {kind} directory")
    try:
        manifest = read_json(path)
    except ValueError as exc:
        raise RunError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict):
        raise RunError(f"{path}: not a JSON object")
    check_version(str(path), manifest.get("schema_version"))
    return manifest


def write_manifest(run_dir: Path, kind: str, manifest: dict[str, Any]) -> None:
    """Write the manifest atomically."""
    write_json_atomic(run_dir / MANIFEST_FILES[kind], manifest)


def finished_games(
    run_dir: Path, expected_rounds: dict[tuple[str, int], int]
) -> dict[tuple[str, int], list[bytes]]:
    """Lines of every complete game in rounds.jsonl, keyed by (condition, replicate).

    A game is complete when it has exactly its planned rounds 0..n-1; a torn last line (a kill
    mid-write) and incomplete or unexpected games are dropped. A record newer than this pdbench
    is an error.
    """
    path = run_dir / ROUNDS_FILE
    if not path.is_file():
        return {}
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
    games: dict[tuple[str, int], list[bytes]] = {}
    rounds_seen: dict[tuple[str, int], set[int]] = {}
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
            key = (str(record["condition"]), int(record["replicate"]))
            round_index = int(record["round_index"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
        check_version(str(path), record.get("schema_version"))
        games.setdefault(key, []).append(line)
        rounds_seen.setdefault(key, set()).add(round_index)
    complete: dict[tuple[str, int], list[bytes]] = {}
    for key, lines in games.items():
        n = expected_rounds.get(key)
        if n is not None and len(lines) == n and rounds_seen[key] == set(range(n)):
            complete[key] = lines
    return complete


def write_games_in_order(
    run_dir: Path, games: dict[tuple[str, int], list[bytes]], order: Iterable[tuple[str, int]]
) -> None:
    """Rewrite rounds.jsonl atomically with the given games in plan order."""
    chunks = [b"\n".join(games[key]) + b"\n" for key in order if key in games]
    write_bytes_atomic(run_dir / ROUNDS_FILE, b"".join(chunks))


def previous_usage(run_dir: Path) -> tuple[int, int, float]:
    """(provider calls, tokens, cost) spent by earlier sessions of this run (from the call log)."""
    path = run_dir / CALLS_FILE
    calls = tokens = 0
    cost = 0.0
    if not path.is_file():
        return 0, 0, 0.0
    for line in path.read_bytes().splitlines():
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if record.get("cached"):
            continue
        calls += 1
        tokens += (record.get("input_tokens") or 0) + (record.get("output_tokens") or 0)
        cost += record.get("cost_usd") or 0.0
    return calls, tokens, cost
