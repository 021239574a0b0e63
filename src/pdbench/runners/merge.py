"""`pdbench merge OUT_DIR SHARD_DIR...`: join the shards of an experiment (`pdbench run CONFIG
--shard i/K`) into one run directory whose rounds.jsonl and aggregates.parquet equal those of an
unsharded run (timestamps aside). Refuses shards of different configs, shards or games that are
missing, and unfinished shards, naming them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson

from pdbench.errors import RunError
from pdbench.runners.loader import sha256_json
from pdbench.storage.aggregate import aggregate_run_dir
from pdbench.storage.files import write_bytes_atomic
from pdbench.storage.run_dir import make_run_dir, read_manifest, write_manifest
from pdbench.storage.schema import CALLS_FILE, ROUNDS_FILE


def _config_key(manifest: dict[str, Any]) -> str:
    """The config's hash without what differs between shards (shard, output dir)."""
    config = copy.deepcopy(manifest.get("config") or {})
    run = config.get("run") or {}
    run.pop("shard", None)
    run.pop("output_dir", None)
    return sha256_json(config)


def _lines_by_game(path: Path) -> dict[tuple[str, int], list[bytes]]:
    """A JSONL file's lines grouped by (condition, replicate), in file order."""
    out: dict[tuple[str, int], list[bytes]] = {}
    if not path.is_file():
        return out
    for line in path.read_bytes().splitlines(keepends=True):
        if not line.strip():
            continue
        record = orjson.loads(line)
        out.setdefault((str(record["condition"]), int(record["replicate"])), []).append(line)
    return out


def merge_shards(out_dir: Path, shard_dirs: list[Path]) -> dict[str, Any]:
    """Write the merged run into `out_dir` (which must not hold a run); returns its manifest."""
    out_dir = Path(out_dir)
    if not shard_dirs:
        raise RunError("merge: give at least one shard directory")
    manifests = [read_manifest(Path(d), "experiment") for d in shard_dirs]
    first = manifests[0]
    for d, m in zip(shard_dirs, manifests, strict=True):
        if _config_key(m) != _config_key(first):
            raise RunError(f"{d}: a shard of another config than {shard_dirs[0]} (configs differ)")
        if m.get("status") != "completed":
            raise RunError(f"{d}: shard not completed (status {m.get('status')}); resume it first")
    shards: dict[int, Path] = {}
    total = None
    for d, m in zip(shard_dirs, manifests, strict=True):
        spec = ((m.get("config") or {}).get("run") or {}).get("shard")
        i, k = (int(x) for x in spec.split("/")) if spec else (1, 1)
        if total is not None and k != total:
            raise RunError(f"{d}: shard {spec} of another split than {total} shards")
        total = k
        if i in shards:
            raise RunError(f"{d}: shard {i}/{k} given twice (also {shards[i]})")
        shards[i] = Path(d)
    assert total is not None
    missing_shards = [f"{i}/{total}" for i in range(1, total + 1) if i not in shards]
    if missing_shards:
        raise RunError(f"merge: missing shards {', '.join(missing_shards)}")
    order = [c["name"] for c in first.get("conditions", [])]
    replicates = int(first.get("replicates") or 1)
    rounds: dict[tuple[str, int], list[bytes]] = {}
    calls: dict[tuple[str, int], list[bytes]] = {}
    for d in shard_dirs:
        rounds.update(_lines_by_game(Path(d) / ROUNDS_FILE))
        for key, lines in _lines_by_game(Path(d) / CALLS_FILE).items():
            calls.setdefault(key, []).extend(lines)
    expected = [(c, r) for c in order for r in range(replicates)]
    missing = [f"{c} replicate {r}" for c, r in expected if (c, r) not in rounds]
    if missing:
        shown = ", ".join(missing[:10]) + (
            f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        )
        raise RunError(f"merge: games missing from the shards: {shown}")
    if out_dir.exists() and any(out_dir.iterdir()):
        raise RunError(f"{out_dir}: output directory is not empty; choose a new one")
    make_run_dir(out_dir)
    write_bytes_atomic(
        out_dir / ROUNDS_FILE, b"".join(line for key in expected for line in rounds[key])
    )
    if calls:
        write_bytes_atomic(
            out_dir / CALLS_FILE, b"".join(line for key in expected for line in calls.get(key, []))
        )
    manifest = copy.deepcopy(first)
    manifest["config"]["run"]["shard"] = None
    manifest["output_dir"] = str(out_dir)
    games_by_condition: dict[str, list[dict[str, Any]]] = {}
    for m in manifests:
        for cond in m.get("conditions", []):
            games_by_condition.setdefault(cond["name"], []).extend(cond.get("games", []))
    for cond in manifest.get("conditions", []):
        cond["games"] = sorted(
            games_by_condition.get(cond["name"], []), key=lambda g: g["replicate"]
        )
        if cond.get("noise") is None:
            cond["noise"] = next(
                (
                    c.get("noise")
                    for m in manifests
                    for c in m["conditions"]
                    if c["name"] == cond["name"] and c.get("games")
                ),
                None,
            )
    manifest["totals"] = {
        "games": len(expected),
        "rounds": sum(len(rounds[key]) for key in expected),
    }
    manifest["status"] = "completed"
    manifest["merged_from"] = [
        {
            "dir": str(Path(d).resolve()),
            "shard": ((m.get("config") or {}).get("run") or {}).get("shard"),
        }
        for d, m in zip(shard_dirs, manifests, strict=True)
    ]
    write_manifest(out_dir, "experiment", manifest)
    aggregate_run_dir(out_dir)
    return manifest
