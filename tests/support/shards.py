"""Sharded runs for the merge tests: a small experiment (a policy condition and a mock-LLM one,
2 replicates of 5 rounds) played as K shards through the library, and the seeded damage the merge
fuzzer does to copies of them (truncate, duplicate, delete, swap lines and files, edit fields and
types in rounds.jsonl, llm_calls.jsonl and the manifests)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

from tests.support.configs import experiment, llm, policy, write_config

from pdbench.errors import PdbenchError
from pdbench.runners.config.loader import load_config
from pdbench.runners.lifecycle.merge import merge_shards
from pdbench.runners.lifecycle.session import RunOptions, snapshot_changes
from pdbench.runners.science.experiment import run_experiment

FILES = ("rounds.jsonl", "llm_calls.jsonl", "run_manifest.json")
# Record fields whose values only the shard recorded (no plan or payoff matrix fixes them; for
# the LLM agent's side, the flags and P(C) are only bounded): a merge carries them as they are,
# so an edit there may merge (and must then be carried exactly).
RECORDED_ONLY = {
    "timestamp_utc",
    "agent_a_p_cooperate",
    "agent_b_p_cooperate",
    "agent_a_parse_failure",
    "agent_b_parse_failure",
    "prompts",
    "raw_responses",
}


def shard_config(directory: Path, seed: int = 4242, run_id: str = "sharded") -> Path:
    """The experiment's config file in `directory` (with the prompt files beside it)."""
    data = experiment(
        [
            ("tft_vs_alld", policy("TFT"), policy("ALLD")),
            ("llm_vs_grim", llm("cooperative", mock={"invalid_rate": 0.3}), policy("GRIM")),
        ],
        replicates=2,
        horizon={"type": "fixed", "n_rounds": 5},
        run={"seed": seed, "run_id": run_id},
    )
    return write_config(data, directory)


def run_shards(config: Path, out: Path, k: int = 2, only: tuple[int, ...] = ()) -> list[Path]:
    """Play shards 1..k (or `only` those) of `config` into out/shard{i}; their directories."""
    dirs = []
    for i in only or range(1, k + 1):
        loaded = load_config(config, overrides={"run.shard": f"{i}/{k}"})
        target = out / f"shard{i}"
        run_experiment(loaded, RunOptions(output_dir=target, use_cache=False, concurrency=4))
        dirs.append(target)
    return dirs


def records(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON Lines file."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def copy_shards(shards: list[Path], into: Path) -> list[Path]:
    """Copies of the shard directories under `into`."""
    out = []
    for shard in shards:
        target = into / shard.name
        shutil.copytree(shard, target)
        out.append(target)
    return out


# ------------------------------------------------------------------------------------------
# Damage


def _other_value(value: Any, rng: random.Random) -> Any:
    """A value that differs from `value`: of the same type (nudged) or of another type."""
    choices: list[Any] = [None, True, False, 0, -1, 7, 2.5, float(10**20), "", "x", "C", "D"]
    choices += [[], {}, [1], {"a": 1}, "<img src=x>", "0", "3.0", 10**30]
    if rng.random() < 0.5:
        if isinstance(value, bool):
            return not value
        if isinstance(value, int):
            return value + rng.choice([-1, 1, 1000])
        if isinstance(value, float):
            return value + rng.choice([-1.0, 0.5, 1.0])
        if isinstance(value, str):
            return rng.choice(
                [value + "x", value[:-1], value.upper(), "C" if value == "D" else "D"]
            )
    for _ in range(20):
        candidate = rng.choice(choices)
        if candidate != value or type(candidate) is not type(value):
            return candidate
    return "changed"


def _leaf_paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to every value of a JSON document (containers too)."""
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for key, value in data.items():
            out += _leaf_paths(value, (*prefix, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out += _leaf_paths(value, (*prefix, i))
    return out


def _edit_json(data: Any, rng: random.Random) -> tuple[Any, str]:
    """One edit of a JSON document: a value replaced, a key removed or one added."""
    paths = _leaf_paths(data)
    if rng.random() < 0.8:  # mostly what a merge reads, not the environment's many facts
        paths = [p for p in paths if p[0] not in ("environment", "warnings")] or paths
    if not paths:
        return "garbage", "replaced the document"
    path = rng.choice(paths)
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    what = rng.random()
    if what < 0.15 and isinstance(parent, dict):
        del parent[last]
        return data, f"deleted {'.'.join(map(str, path))}"
    if what < 0.25 and isinstance(parent, dict):
        parent[f"{last}_extra"] = 1
        return data, f"added {'.'.join(map(str, path))}_extra"
    parent[last] = _other_value(parent[last], rng)
    return data, f"set {'.'.join(map(str, path))} = {parent[last]!r}"[:120]


def damage(shards: list[Path], rng: random.Random) -> str:
    """Damage one of the shard directories (in place) in one random way; what was done."""
    shard = rng.choice(shards)
    name = rng.choice(FILES)
    path = shard / name
    kind = rng.choice(
        ["truncate", "delete_line", "duplicate_line", "swap_lines", "edit", "edit", "edit"]
        + ["edit", "edit", "move_line", "swap_files", "remove_file", "garbage_line", "empty"]
    )
    where = f"{shard.name}/{name}"
    if not path.is_file():
        return f"{where}: absent"
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    if kind == "truncate":
        cut = rng.randrange(0, max(1, len(data)))
        path.write_bytes(data[:cut])
        return f"{where}: truncated to {cut} bytes"
    if kind == "empty":
        path.write_bytes(b"")
        return f"{where}: emptied"
    if kind == "remove_file":
        path.unlink()
        return f"{where}: removed"
    if kind == "swap_files":
        other = rng.choice([s for s in shards if s != shard] or shards)
        tmp = path.read_bytes()
        if (other / name).is_file():
            path.write_bytes((other / name).read_bytes())
            (other / name).write_bytes(tmp)
        return f"{where}: swapped with {other.name}'s"
    if kind == "garbage_line":
        at = rng.randrange(0, len(lines) + 1)
        lines.insert(at, rng.choice([b"{}\n", b"\n", b"[1,2]\n", b'{"condition":1}\n', b"x\n"]))
        path.write_bytes(b"".join(lines))
        return f"{where}: garbage line at {at}"
    if name == "run_manifest.json" or kind == "edit":
        if name == "run_manifest.json":
            try:
                document = json.loads(data)
            except ValueError:
                return f"{where}: not JSON already"
            edited, what = _edit_json(document, rng)
            path.write_text(json.dumps(edited, indent=2))
            return f"{where}: {what}"
        if not lines:
            return f"{where}: empty already"
        i = rng.randrange(len(lines))
        try:
            record = json.loads(lines[i])
        except ValueError:
            return f"{where}: line {i + 1} not JSON already"
        edited, what = _edit_json(record, rng)
        lines[i] = json.dumps(edited).encode() + b"\n"
        path.write_bytes(b"".join(lines))
        return f"{where}: line {i + 1}: {what}"
    if not lines:
        return f"{where}: empty already"
    i = rng.randrange(len(lines))
    if kind == "delete_line":
        del lines[i]
    elif kind == "duplicate_line":
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
    elif kind == "swap_lines":
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "move_line":
        other = rng.choice([s for s in shards if s != shard] or shards)
        target = other / name
        if target.is_file():
            with open(target, "ab") as fh:
                fh.write(lines[i])
        del lines[i]
    path.write_bytes(b"".join(lines))
    return f"{where}: {kind} {i + 1}"


# ------------------------------------------------------------------------------------------
# One fuzz case


def strip(rows: list[dict[str, Any]], drop: set[str]) -> list[dict[str, Any]]:
    """Records without the fields in `drop`."""
    return [{k: v for k, v in r.items() if k not in drop} for r in rows]


def canonical(rows: list[dict[str, Any]]) -> list[str]:
    """Records as sorted canonical JSON (a multiset)."""
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


class MergeFuzz:
    """Undamaged shards (their files held in memory) and their merge, to damage and merge
    again: `case(seed)` restores the shard copies under `work`, damages them and checks the
    merge. Refused: a PdbenchError of one line (the CLI's exit 2) and no output directory left.
    Merged: the reference's rounds (values only the shards recorded carried exactly as the
    damaged shards hold them), manifest facts and aggregates."""

    def __init__(self, shards: list[Path], reference: Path, work: Path) -> None:
        self.originals = {
            shard.name: {n: (shard / n).read_bytes() for n in FILES if (shard / n).is_file()}
            for shard in shards
        }
        self.work = work
        self.reference = reference
        self.rounds = records(reference / "rounds.jsonl")
        self.manifest = json.loads((reference / "run_manifest.json").read_text())
        self.aggregates: Any = None

    def restore(self) -> list[Path]:
        """The shard copies, undamaged."""
        dirs = []
        for name, files in self.originals.items():
            target = self.work / "in" / name
            target.mkdir(parents=True, exist_ok=True)
            for existing in target.iterdir():
                if existing.name not in files:
                    existing.unlink()
            for file_name, data in files.items():
                (target / file_name).write_bytes(data)
            dirs.append(target)
        return dirs

    def case(self, seed: int) -> tuple[str, list[str]]:
        """('refused' or 'merged', what was damaged) for one seeded case; AssertionError when
        the merge did neither correctly."""
        import pyarrow.parquet as pq

        rng = random.Random(seed)
        shards = self.restore()
        what = [damage(shards, rng) for _ in range(rng.choice([1, 1, 1, 2]))]
        out = self.work / "out"
        context = f"seed {seed}: {what}"
        try:
            merge_shards(out, rng.sample(shards, len(shards)))
        except PdbenchError as exc:
            assert "\n" not in str(exc).strip(), f"{context}: {exc}"
            assert not out.exists(), f"{context}: {exc}"
            return "refused", what
        merged = records(out / "rounds.jsonl")
        assert strip(merged, RECORDED_ONLY) == strip(self.rounds, RECORDED_ONLY), context
        given = [r for shard in shards for r in records(shard / "rounds.jsonl")]
        assert canonical(merged) == canonical(given), context  # carried exactly
        manifest = json.loads((out / "run_manifest.json").read_text())
        assert manifest["status"] == "completed", context
        for key in ("conditions", "totals", "usage", "run_id", "seed", "collapse"):
            assert manifest[key] == self.manifest[key], f"{context}: {key}"
        # the config too, but for the output dir (each shard's and the merge's own) and
        # run.budget (which may differ between shards, as on resume); a key whose value is
        # null and a missing key are the same config (as for resume, `snapshot_changes`)
        budgetless = [
            {**c, "run": {**c["run"], "budget": None, "output_dir": None}}
            for c in (manifest["config"], self.manifest["config"])
        ]
        assert not snapshot_changes(budgetless[1], budgetless[0]), f"{context}: config"
        timeless = {"timestamp_utc"}
        if strip(merged, timeless) == strip(self.rounds, timeless):
            if self.aggregates is None:
                self.aggregates = pq.read_table(self.reference / "aggregates.parquet")
            assert pq.read_table(out / "aggregates.parquet").equals(self.aggregates), context
        shutil.rmtree(out)
        return "merged", what
