"""The kill-anywhere fuzzer of the rounds log: `pdbench run` (and `pdbench resume` itself) killed
at seeded random moments, with SIGKILL or SIGTERM, then resumed until completed, and every
artifact compared with an uninterrupted run of the same config and seed.

Kill moments: a delay drawn over the command's duration (the uninterrupted run's, measured), or
targeted: the moment a new `rounds/part-*.parquet` appears (after a part write), the moment its
temporary file appears (during the write), or rounds.jsonl reaching a drawn share of its size.
The runs are policy-only (no LLM), so a run is deterministic. `pdbench` is the venv's executable,
started in a new session (its process group is what is signalled, and killed again afterwards,
so nothing it started outlives the case). Parts and row groups are shrunk through
$PDBENCH_PART_ROUNDS and $PDBENCH_ROW_GROUP_ROWS, so small runs write many parts and hold games
longer than a row group.

Compared (`differences`): rounds.jsonl without timestamp_utc (bytes), the parts' rows as one
table sorted by condition, replicate and round (every stored column but timestamp_utc),
aggregates.parquet (every value, exactly; NaN equals NaN), and the manifest's status, error,
totals, games, usage and warnings. A sharded case kills one shard of two, resumes it, merges
the shards and compares the merge with the unsharded run. Used by
tests/integration/test_kill_fuzz.py and benchmarks/kill_fuzz.py.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from pdbench.storage.record.parts import PART_ROUNDS_ENV, ROW_GROUP_ROWS_ENV

REPO = Path(__file__).resolve().parents[2]
PDBENCH = Path(sys.executable).parent / "pdbench"  # the executable: a kill hits pdbench itself
CONDITIONS = (("TFT_vs_RANDOM", "TFT", "RANDOM"), ("GTFT_vs_WSLS", "GTFT", "WSLS"))
MODES = ("jsonl", "columns", "both")
MANIFEST_KEYS = ("status", "error", "totals", "conditions", "usage", "warnings", "replicates")
TIMESTAMP = re.compile(rb',"timestamp_utc":"[^"]*"')
SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM}
STOP_WAIT_S = 120.0  # a SIGTERMed pdbench that has not exited by then is a finding, then killed


@dataclass(frozen=True)
class Design:
    """One config: a rounds_log mode, games of `n_rounds`, `replicates` per condition; `shards`
    = 2 makes its cases kill one shard and merge."""

    mode: str
    n_rounds: int
    replicates: int
    shards: int = 1
    long_rounds: int | None = None  # the second condition's games, when they are to differ

    @property
    def name(self) -> str:
        rounds = f"{self.n_rounds}+{self.long_rounds}" if self.long_rounds else str(self.n_rounds)
        return f"{self.mode}/{rounds}x{self.replicates}" + (
            f"/shards{self.shards}" if self.shards > 1 else ""
        )


@dataclass
class CaseResult:
    """What one case did: kills sent (signal, target, command), resumes, differences."""

    kills: list[str] = field(default_factory=list)
    resumes: int = 0
    restarts: int = 0
    differences: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)


@dataclass
class Reference:
    """The uninterrupted run: its directory, duration, and what is compared."""

    run_dir: Path
    seconds: float
    jsonl_sha: str | None
    jsonl_size: int
    parts: pa.Table | None
    aggregates: list[dict[str, Any]]
    manifest: dict[str, Any]


def env(part_rounds: int, row_group_rows: int) -> dict[str, str]:
    """The environment of a fuzzed pdbench: shrunk parts and row groups, no inherited knobs."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("PDBENCH_")}
    out.update({PART_ROUNDS_ENV: str(part_rounds), ROW_GROUP_ROWS_ENV: str(row_group_rows)})
    out["PYTHONUNBUFFERED"] = "1"
    return out


def write_config(directory: Path, design: Design, seed: int) -> Path:
    """The design's config (policies only, noise 0.05) in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    data = {
        "run": {"run_id": "killfuzz", "seed": seed, "output_dir": "unused"}
        | {"rounds_log": design.mode},
        "game": {"noise": 0.05},
        "horizon": {"type": "fixed", "n_rounds": design.n_rounds},
        "experiment": {
            "replicates": design.replicates,
            "conditions": [
                {"name": n, "agent_a": {"type": "policy", "policy": a}}
                | {"agent_b": {"type": "policy", "policy": b}}
                | (
                    {"horizon": {"type": "fixed", "n_rounds": design.long_rounds}}
                    if i and design.long_rounds
                    else {}
                )
                for i, (n, a, b) in enumerate(CONDITIONS)
            ],
        },
    }
    path = directory / f"{design.name.replace('/', '-')}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------
# Processes


def start(
    args: list[str], cwd: Path, environ: dict[str, str], log: Path
) -> subprocess.Popen[bytes]:
    """`pdbench ARGS` in a new session (its own process group), stderr to `log`."""
    with open(log, "ab") as err:
        return subprocess.Popen(
            [str(PDBENCH), *args],
            cwd=cwd,
            env=environ,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )


def reap(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int, bool]:
    """Wait for the process (at most `timeout`), then kill whatever is left of its group; its
    exit code and whether it had to be killed."""
    hung = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        hung = True
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return proc.wait(), hung


def finish(args: list[str], cwd: Path, environ: dict[str, str], log: Path) -> int:
    """`pdbench ARGS` to its end (a hang of 10 minutes is killed and reported by the code -9)."""
    code, _ = reap(start(args, cwd, environ, log), 600.0)
    return code


def last_line(log: Path) -> str:
    """The last non-empty line of a stderr log (the one-line error of a failed command)."""
    lines = [x for x in log.read_text(errors="replace").splitlines() if x.strip()]
    return lines[-1] if lines else "(no output)"


# ------------------------------------------------------------------------------------------
# Kill moments


def _parts(run_dir: Path) -> tuple[int, bool]:
    """(complete parts, whether a part's temporary file is there)."""
    try:
        names = os.listdir(run_dir / "rounds")
    except OSError:
        return 0, False
    done = sum(1 for n in names if n.startswith("part-") and n.endswith(".parquet"))
    return done, any(n.startswith(".part-") and n.endswith(".tmp") for n in names)


def _jsonl_size(run_dir: Path) -> int:
    try:
        return (run_dir / "rounds.jsonl").stat().st_size
    except OSError:
        return 0


def draw_moment(
    rng: random.Random, design: Design, run_dir: Path, ref: Reference
) -> tuple[str, Callable[[], bool]]:
    """A kill moment: (its name, a test that is true once it has come)."""
    kinds = ["delay", "delay"]
    if design.mode != "jsonl":
        kinds += ["part", "tmp"]
    if design.mode != "columns":
        kinds.append("jsonl")
    kind = rng.choice(kinds)
    began = time.monotonic()
    if kind == "delay":
        delay = rng.uniform(0.0, 1.2 * ref.seconds)
        return f"delay {delay:.2f}s", lambda: time.monotonic() - began >= delay
    if kind == "jsonl":
        share = rng.uniform(0.0, 1.0)
        size = share * ref.jsonl_size
        return f"jsonl {share:.0%}", lambda: _jsonl_size(run_dir) > size
    before = _parts(run_dir)[0]
    if kind == "tmp":
        return "during a part write", lambda: _parts(run_dir)[1]
    extra = rng.uniform(0.0, 0.05)
    seen: list[float] = []

    def after_part() -> bool:
        if not seen and _parts(run_dir)[0] > before:
            seen.append(time.monotonic())
        return bool(seen) and time.monotonic() - seen[0] >= extra

    return f"after a part +{1000 * extra:.0f}ms", after_part


def run_and_kill(
    args: list[str],
    cwd: Path,
    environ: dict[str, str],
    log: Path,
    sig_name: str,
    moment: Callable[[], bool],
) -> tuple[bool, int, bool]:
    """Start `pdbench ARGS`, signal its group when `moment()` comes while it runs; (whether the
    signal was sent, exit code, whether it hung after SIGTERM)."""
    proc = start(args, cwd, environ, log)
    sent = False
    while proc.poll() is None:
        if moment():
            try:
                os.killpg(proc.pid, SIGNALS[sig_name])
                sent = True
            except ProcessLookupError:
                pass
            break
        time.sleep(0.001)
    code, hung = reap(proc, STOP_WAIT_S if sent else 600.0)
    return sent, code, hung


# ------------------------------------------------------------------------------------------
# What is compared


def jsonl_digest(run_dir: Path) -> tuple[str | None, int]:
    """sha256 of rounds.jsonl without timestamp_utc (None when absent), and its size."""
    path = run_dir / "rounds.jsonl"
    if not path.exists():
        return None, 0
    data = path.read_bytes()
    return hashlib.sha256(TIMESTAMP.sub(b"", data)).hexdigest(), len(data)


def parts_table(run_dir: Path) -> pa.Table | None:
    """Every part's rows (pyarrow directly, not pdbench's reader), text decoded, without
    timestamp_utc, sorted by condition, replicate, round_index; None without parts."""
    paths = (
        sorted((run_dir / "rounds").glob("part-*.parquet")) if (run_dir / "rounds").is_dir() else []
    )
    if not paths:
        return None
    tables = []
    for path in paths:
        table = pq.read_table(path).replace_schema_metadata(None)
        columns = {
            name: (col.cast(pa.string()) if pa.types.is_dictionary(col.type) else col)
            for name, col in zip(table.column_names, table.columns, strict=True)
            if name != "timestamp_utc"
        }
        tables.append(pa.table(columns))
    table = pa.concat_tables(tables)
    return table.sort_by(
        [("condition", "ascending"), ("replicate", "ascending"), ("round_index", "ascending")]
    )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def reference(run_dir: Path, seconds: float) -> Reference:
    """What an uninterrupted run holds, for `compare`."""
    sha, size = jsonl_digest(run_dir)
    return Reference(
        run_dir,
        seconds,
        sha,
        size,
        parts_table(run_dir),
        pq.read_table(run_dir / "aggregates.parquet").to_pylist(),
        json.loads((run_dir / "run_manifest.json").read_text()),
    )


def _games(table: pa.Table) -> dict[tuple[str, int], int]:
    counts = table.group_by(["condition", "replicate"]).aggregate([("round_index", "count")])
    return {
        (c, r): n
        for c, r, n in zip(
            counts.column("condition").to_pylist(),
            counts.column("replicate").to_pylist(),
            counts.column("round_index_count").to_pylist(),
            strict=True,
        )
    }


def _parts_difference(got: pa.Table | None, want: pa.Table | None) -> str | None:
    if got is None or want is None:
        return (
            None
            if got is None and want is None
            else f"rounds/: parts {'absent' if got is None else 'present'}, the reference's {'absent' if want is None else 'present'}"
        )
    if got.equals(want):
        return None
    g, w = _games(got), _games(want)
    missing = sorted(k for k in w if k not in g)
    short = sorted(k for k in w if k in g and g[k] < w[k])
    long = sorted(k for k in w if k in g and g[k] > w[k])
    if missing or short or long:
        return (
            f"rounds/: {got.num_rows} rows vs {want.num_rows}; games missing {len(missing)} "
            f"{missing[:3]}, cut {len(short)} {short[:3]}, extra rows {len(long)} {long[:3]}"
        )
    cols = [c for c in want.column_names if not got.column(c).equals(want.column(c))]
    if cols:
        first = cols[0]
        bad = pc.not_equal(got.column(first), want.column(first))
        row = int(pc.index(bad, True).as_py())
        return f"rounds/: same games, values differ in {cols} (first at row {row} of {first})"
    return f"rounds/: schema differs: {got.schema} vs {want.schema}"


def compare(run_dir: Path, ref: Reference) -> list[str]:
    """Differences between a run directory and the uninterrupted run (none: an empty list)."""
    out: list[str] = []
    sha, _ = jsonl_digest(run_dir)
    if sha != ref.jsonl_sha:
        got = (run_dir / "rounds.jsonl").read_bytes().count(b"\n") if sha else 0
        want = (
            ref.run_dir.joinpath("rounds.jsonl").read_bytes().count(b"\n") if ref.jsonl_sha else 0
        )
        out.append(f"rounds.jsonl: differs without timestamps ({got} lines vs {want})")
    diff = _parts_difference(parts_table(run_dir), ref.parts)
    if diff:
        out.append(diff)
    try:
        aggregates = pq.read_table(run_dir / "aggregates.parquet").to_pylist()
    except (OSError, pa.ArrowException) as exc:
        aggregates = []
        out.append(f"aggregates.parquet: unreadable ({exc})")
    if aggregates and len(aggregates) != len(ref.aggregates):
        out.append(f"aggregates.parquet: {len(aggregates)} rows vs {len(ref.aggregates)}")
    elif aggregates:
        cells = [
            f"row {i} {k}: {row.get(k)!r} vs {want[k]!r}"
            for i, (row, want) in enumerate(zip(aggregates, ref.aggregates, strict=True))
            for k in want
            if not _same(row.get(k), want[k])
        ]
        if cells:
            out.append(f"aggregates.parquet: {len(cells)} values differ, e.g. {cells[:3]}")
    try:
        manifest = json.loads((run_dir / "run_manifest.json").read_text())
    except (OSError, ValueError) as exc:
        return [*out, f"run_manifest.json: unreadable ({exc})"]
    keys = [k for k in MANIFEST_KEYS if manifest.get(k) != ref.manifest.get(k)]
    if keys:
        out.append(f"run_manifest.json: {keys} differ (status {manifest.get('status')!r})")
    return out


def leftovers(run_dir: Path) -> list[str]:
    """Temporary files left in the run directory (an uninterrupted run leaves none)."""
    return sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*.tmp"))


# ------------------------------------------------------------------------------------------
# Cases


def status(run_dir: Path) -> str | None:
    """The manifest's status (None without a readable manifest)."""
    try:
        return str(json.loads((run_dir / "run_manifest.json").read_text())["status"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class KillFuzz:
    """One design's uninterrupted run (and shards), then cases that kill and resume copies."""

    def __init__(
        self,
        base: Path,
        design: Design,
        seed: int = 11,
        part_rounds: int = 1 << 22,
        row_group_rows: int = 1 << 16,
    ) -> None:
        self.base, self.design = Path(base), design
        self.base.mkdir(parents=True, exist_ok=True)
        self.env = env(part_rounds, row_group_rows)
        self.config = write_config(self.base / "cfg", design, seed)
        began = time.monotonic()
        self._must(["run", str(self.config), "-o", str(self.base / "reference"), "--no-cache"])
        self.ref = reference(self.base / "reference", time.monotonic() - began)
        self.shards = [self.base / f"shard{i}" for i in range(1, design.shards + 1)]
        if design.shards > 1:
            for i, shard in enumerate(self.shards, 1):
                self._must(self._run_args(shard, i))

    def _must(self, args: list[str]) -> None:
        log = self.base / "setup.log"
        if finish(args, self.base, self.env, log) != 0:
            raise RuntimeError(f"pdbench {' '.join(args)}: {last_line(log)}")

    def _run_args(self, target: Path, shard: int | None) -> list[str]:
        args = ["run", str(self.config), "-o", str(target), "--no-cache"]
        return [*args, "--shard", f"{shard}/{self.design.shards}"] if shard else args

    def case(self, seed: int) -> CaseResult:
        """Kill a run (or one shard) 1-3 times, the later kills hitting `resume`; resume until
        completed; (merge;) compare. Seeded: the same seed draws the same moments."""
        rng = random.Random(seed)
        work = self.base / "case"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        shard = rng.randint(1, self.design.shards) if self.design.shards > 1 else None
        target = work / (f"shard{shard}" if shard else "run")
        log, result = work / "stderr.log", CaseResult()

        def next_args() -> list[str]:
            if (target / "run_manifest.json").exists():
                result.resumes += 1
                return ["resume", str(target), "--no-cache"]
            result.restarts += 1  # killed before it wrote a manifest: start it again
            return [*self._run_args(target, shard), "--overwrite"]

        for k in range(1 + (rng.random() < 0.5) + (rng.random() < 0.25)):
            args = next_args() if k else self._run_args(target, shard)
            sig = rng.choice(tuple(SIGNALS))
            moment_name, moment = draw_moment(rng, self.design, target, self.ref)
            sent, code, hung = run_and_kill(args, work, self.env, log, sig, moment)
            if sent:
                result.kills.append(f"SIG{sig} {args[0]} at {moment_name}")
            if hung:
                result.differences.append(
                    f"{args[0]}: still running {STOP_WAIT_S:.0f}s after SIGTERM"
                )
            if not sent and code != 0:
                result.differences.append(f"{args[0]} exit {code}: {last_line(log)}")
        for _ in range(3):
            if status(target) == "completed" and rng.random() >= 0.25:
                break  # else: resume a completed run once more (it must change nothing)
            code = finish(next_args(), work, self.env, log)
            if code != 0:
                result.differences.append(f"resume exit {code}: {last_line(log)}")
                break
        if status(target) != "completed":
            result.differences.append(f"never completed (status {status(target)!r})")
        result.leftovers = leftovers(target)
        if shard:
            shards = [target if i == shard else s for i, s in enumerate(self.shards, 1)]
            merged = work / "merged"
            code = finish(["merge", str(merged), *map(str, shards)], work, self.env, log)
            if code != 0:
                result.differences.append(f"merge exit {code}: {last_line(log)}")
                return result
            target = merged
        result.differences += compare(target, self.ref)
        shutil.rmtree(work, ignore_errors=True)
        return result
