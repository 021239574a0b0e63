"""The kill-anywhere fuzzer of the rounds log at size: `pdbench run` and `pdbench resume` killed
(SIGKILL, SIGTERM) at seeded random delays and at part writes, resumed until completed (sharded
runs merged), every artifact compared with an uninterrupted run (tests/support/kill_fuzz.py).

Run: `uv run python benchmarks/kill_fuzz.py [--kills 240 --seed 0]`. Designs, for each of
`run.rounds_log` jsonl, columns and both: games of 2,000 rounds (shorter than a row group,
65,536 rows), games of 70,000 rounds (longer), and the short games as 2 shards, one killed and
merged. Parts are written every 50,000 rounds ($PDBENCH_PART_ROUNDS), so a run writes several.
Cases go round the designs until each mode has had its share of kills. Prints, per design, the
cases, kills, resumes and differences, each case that differed (design, seed, kills, first
difference: rerun it with --only DESIGN --seed SEED --kills 1), temporary files left behind,
and the closing figure. Exit 1 when a case differed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.support.kill_fuzz: the cases and the comparison

from tests.support.kill_fuzz import MODES, Design, KillFuzz  # noqa: E402

PART_ROUNDS = 50_000
SHORT, LONG = (2_000, 30), (70_000, 2)  # (rounds a game, replicates a condition)


def designs(only: str | None) -> list[Design]:
    """The designs, in the order cases go round them."""
    out = [
        Design(mode, *size, shards)
        for mode in MODES
        for size, shards in ((SHORT, 1), (LONG, 1), (SHORT, 2))
    ]
    return [d for d in out if only is None or d.name == only]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=240, help="kills in all (split by mode)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first case")
    parser.add_argument("--only", help="one design by name, e.g. columns/70000x2")
    args = parser.parse_args()
    began = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="kill-fuzz-"))
    chosen = designs(args.only)
    modes = sorted({d.mode for d in chosen}, key=MODES.index)
    quota = -(-args.kills // len(modes))
    kills: Counter[str] = Counter()
    stats: dict[str, Counter[str]] = {d.name: Counter() for d in chosen}
    failures: list[str] = []
    leftovers: Counter[str] = Counter()
    try:
        fuzzers = {}
        for d in chosen:
            fuzzers[d.name] = KillFuzz(base / d.name.replace("/", "-"), d, part_rounds=PART_ROUNDS)
            print(f"{d.name}: uninterrupted run {fuzzers[d.name].ref.seconds:.2f} s", flush=True)
        seed = args.seed
        while any(kills[m] < quota for m in modes):
            for d in chosen:
                if kills[d.mode] >= quota:
                    continue
                result = fuzzers[d.name].case(seed)
                kills[d.mode] += len(result.kills)
                s = stats[d.name]
                s.update(
                    cases=1,
                    kills=len(result.kills),
                    resumes=result.resumes,
                    restarts=result.restarts,
                    differences=bool(result.differences),
                )
                leftovers[d.mode] += len(result.leftovers)
                if result.differences:
                    failures.append(
                        f"{d.name} seed {seed}: {'; '.join(result.kills) or 'no kill'} -> "
                        f"{' | '.join(result.differences)}"
                    )
                seed += 1
                if (seed - args.seed) % 25 == 0:
                    print(
                        f"... {seed - args.seed} cases, {time.monotonic() - began:.0f} s: kills "
                        f"{dict(kills)}, cases that differ {len(failures)}",
                        flush=True,
                    )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    elapsed = time.monotonic() - began
    for name, s in stats.items():
        print(
            f"{name}: {s['cases']} cases, {s['kills']} kills, {s['resumes']} resumes, "
            f"{s['restarts']} restarts (killed before the manifest), {s['differences']} differ"
        )
    for failure in failures:
        print(failure)
    diff = {
        m: sum(s["differences"] for n, s in stats.items() if n.startswith(m + "/")) for m in modes
    }
    res = sum(s["resumes"] for s in stats.values())
    print(
        "temporary files left in run directories: "
        + ", ".join(f"{m} {leftovers[m]}" for m in modes)
    )
    print(
        f"kills {sum(kills.values())} ({', '.join(f'{m} {kills[m]}' for m in modes)}), "
        f"resumes {res}, differences {sum(diff.values())} "
        f"({', '.join(f'{m} {diff[m]}' for m in modes)}); {elapsed / 60:.1f} min"
    )
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
