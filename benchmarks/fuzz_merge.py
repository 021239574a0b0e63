"""The merge fuzzer at scale: seeded damage to shard directories (truncate, duplicate, delete, swap
lines and files, edit fields and types in rounds.jsonl, llm_calls.jsonl and the manifests), each
case merged and checked like the test suite's 520 (tests/integration/test_merge_guarantees.py):
refused in one line with nothing left behind, or merged into exactly the undamaged result.

Run: `uv run python benchmarks/fuzz_merge.py [--cases 5000 --start 0 --shards 2 3]`.
Prints, per split, the cases refused and merged, the kinds of damage that merged, the time per
case, and every case that failed the check (seed and damage: rerun it with --start SEED
--cases 1). Exit 1 when a case failed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.support.shards: the shards and the damage

from tests.support.shards import MergeFuzz, run_shards, shard_config  # noqa: E402

from pdbench.runners.lifecycle.merge import merge_shards  # noqa: E402


def fuzz_split(k: int, start: int, cases: int, base: Path) -> list[str]:
    """Run the cases against a K-shard split; the failures."""
    shards = run_shards(shard_config(base / "cfg"), base / f"k{k}", k=k)
    merge_shards(base / f"ref{k}", shards)
    fuzz = MergeFuzz(shards, base / f"ref{k}", base / f"work{k}")
    outcomes: Counter[str] = Counter()
    merged_kinds: Counter[str] = Counter()
    failures = []
    began = time.perf_counter()
    for seed in range(start, start + cases):
        try:
            outcome, what = fuzz.case(seed)
        except Exception as exc:  # noqa: BLE001 - a failed check or a crash: both reported
            failures.append(f"K={k} seed {seed}: {type(exc).__name__}: {exc}".splitlines()[0])
            if not isinstance(exc, AssertionError):
                failures.append(traceback.format_exc(limit=-3))
            shutil.rmtree(fuzz.work / "out", ignore_errors=True)
            continue
        outcomes[outcome] += 1
        if outcome == "merged":
            for item in what:
                merged_kinds[item.split(":")[0] + ": " + item.split(":")[1].split()[0]] += 1
    elapsed = time.perf_counter() - began
    print(
        f"K={k}: {cases} cases, refused {outcomes['refused']}, merged {outcomes['merged']}, "
        f"failed {len(failures)}; {1000 * elapsed / max(1, cases):.1f} ms per case"
    )
    for kind, n in merged_kinds.most_common(8):
        print(f"  merged after {kind}: {n}")
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--shards", type=int, nargs="+", default=[2, 3])
    args = parser.parse_args()
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None  # many small files: keep them in memory
    base = Path(tempfile.mkdtemp(prefix="fuzz-merge-", dir=shm))
    try:
        failures = [f for k in args.shards for f in fuzz_split(k, args.start, args.cases, base)]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for failure in failures:
        print(failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
