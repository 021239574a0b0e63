"""The run directory: preparing it, the manifest, and reading back finished games for resume."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

import pdbench
from pdbench.errors import RunError
from pdbench.storage.files import environment_info, read_json, write_bytes_atomic
from pdbench.storage.schema import ARTIFACTS, CALLS_FILE, MANIFEST_FILE, ROUNDS_FILE

# Keys of the config snapshot that may change between a run and its resume.
RESUMABLE_CHANGES = ("budget",)


def prepare_output_dir(path: Path, overwrite: bool, artifacts: tuple[str, ...] = ARTIFACTS) -> None:
    """Create the output dir; refuse a non-empty one unless `overwrite` (then remove our artifacts)."""
    if path.exists() and not path.is_dir():
        raise RunError(f"{path}: output_dir exists and is not a directory")
    if path.is_dir() and any(path.iterdir()):
        if not overwrite:
            raise RunError(
                f"{path}: output directory is not empty; pass --overwrite or change run.output_dir"
            )
        for name in artifacts:
            target = path / name
            if target.is_file():
                target.unlink()
        for leftover in path.glob(".*.tmp"):
            leftover.unlink()
    path.mkdir(parents=True, exist_ok=True)


def comparable_snapshot(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The snapshot without the keys a resume may change (budgets)."""
    out = orjson.loads(orjson.dumps(snapshot))
    for key in RESUMABLE_CHANGES:
        out.get("run", {}).pop(key, None)
    return out


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """The manifest of a run directory; RunError when missing or unreadable."""
    path = run_dir / MANIFEST_FILE
    if not path.is_file():
        raise RunError(f"{run_dir}: no {MANIFEST_FILE}; not a pdbench run directory")
    try:
        return read_json(path)
    except ValueError as exc:
        raise RunError(f"{path}: not valid JSON ({exc})") from None


def finished_games(
    run_dir: Path, expected_rounds: dict[tuple[str, int], int]
) -> dict[tuple[str, int], list[bytes]]:
    """Lines of every complete game in rounds.jsonl, keyed by (condition, replicate).

    A game is complete when it has exactly its planned rounds 0..n-1; a torn last line (a kill
    mid-write) and incomplete or unexpected games are dropped.
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
    """(provider calls, tokens, cost) already spent by earlier sessions of this run (from the call log)."""
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


def base_manifest(loaded: Any, plans: list[Any], replicates: int, started: str) -> dict[str, Any]:
    """The manifest written when a run starts (status 'running')."""
    from pdbench.core.config import LLMAgentConfig

    cfg = loaded.config
    conditions = []
    for cond in cfg.experiment.conditions:
        games = [p for p in plans if p.condition.name == cond.name]
        horizon = cond.horizon or cfg.horizon
        disclosure = {}
        for key in ("agent_a", "agent_b"):
            agent = getattr(cond, key)
            if isinstance(agent, LLMAgentConfig):
                default = "exact" if horizon.type == "fixed" else "stop_prob"
                disclosure[key] = agent.horizon_disclosure or default
        conditions.append(
            {
                "name": cond.name,
                "agent_a": cond.agent_a.display_name(),
                "agent_b": cond.agent_b.display_name(),
                "horizon": horizon.model_dump(mode="json"),
                "horizon_disclosure": disclosure,
                "noise": games[0].noise if games else cfg.game.noise,
                "games": [
                    {"replicate": p.replicate, "seed": p.seed, "n_rounds": p.n_rounds}
                    for p in games
                ],
            }
        )
    return {
        "run_id": cfg.run.run_id,
        "seed": cfg.run.seed,
        "status": "running",
        "started_at_utc": started,
        "finished_at_utc": None,
        "sessions": [{"started_at_utc": started, "resumed": False}],
        "pdbench_version": pdbench.__version__,
        "config_path": str(Path(loaded.path).resolve()),
        "config_sha256": loaded.config_sha256,
        "config": loaded.snapshot,
        "prompt_files": loaded.prompt_files,
        "replicates": replicates,
        "collapse": {"k": cfg.metrics.collapse.k, "threshold": cfg.metrics.collapse.threshold},
        "conditions": conditions,
        "totals": {"games": len(plans), "rounds": sum(p.n_rounds for p in plans)},
        "warnings": loaded.warnings,
        "environment": environment_info(loaded.root),
        "usage": None,
        "error": None,
    }


def manifest_header(loaded: Any, started: str) -> dict[str, Any]:
    """The keys every tournament and evolution manifest starts with (config, versions, status)."""
    cfg = loaded.config
    return {
        "run_id": cfg.run.run_id,
        "seed": cfg.run.seed,
        "status": "completed",
        "started_at_utc": started,
        "finished_at_utc": datetime.now(UTC).isoformat(),
        "pdbench_version": pdbench.__version__,
        "config_path": str(loaded.path),
        "config_sha256": loaded.config_sha256,
        "config": loaded.snapshot,
        "prompt_files": loaded.prompt_files,
        "warnings": loaded.warnings,
    }
