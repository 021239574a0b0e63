"""Groups against pairs, the same command, side by side: `pdbench run` of a five-player policy
run against a pairwise run, player-rounds per second and peak memory.

Run: `uv run python benchmarks/groups.py` (from the repository root; a few minutes).

1. Speed. A pairwise experiment (TFT, WSLS, GRIM, ALLD, RANDOM in pairs, noise 0.02) and a
   groups run (five-seat public goods groups of the group policies CC, TFT, WSLS, GRIM, ALLD,
   RANDOM, noise 0.02), each playing `--player-rounds` player-rounds (a pairwise round is two
   player-rounds, a five-seat round five), both with rounds.jsonl as their log, timed as a user
   waits for them: the whole `pdbench run CONFIG` process, from the command to its summary.
   Interleaved (pairs, groups, pairs, ...) so both see the same load; medians of `--repeat`.
   The goal: groups at least as fast per player-round.
2. Memory. Peak resident memory (the child's ru_maxrss) of a groups run of 10M player-rounds
   against a pairwise run of 1M rounds (2M player-rounds). The goal: the first within the
   second's.

The machine's load average is printed beside the times (2 shared cores inflate wall times).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
PAIR_POLICIES = ["TFT", "WSLS", "GRIM", "ALLD", "RANDOM"]
GROUP_SEATS = [
    ["CC", "CC", "TFT", "WSLS", "ALLD"],
    ["TFT", "GRIM", "WSLS", "RANDOM", "CC"],
    ["CC", "CC", "CC", "CC", "CC"],
    ["ALLD", "WSLS", "WSLS", "TFT", "GRIM"],
]


def pair_config(out: Path, rounds: int, n_rounds: int = 1000) -> dict:
    """A pairwise experiment of about `rounds` rounds, in games of `n_rounds`."""
    pairs = [(a, b) for i, a in enumerate(PAIR_POLICIES) for b in PAIR_POLICIES[i:]]
    reps = max(1, rounds // (n_rounds * len(pairs)))
    return {
        "run": {"run_id": "pairs", "seed": 1, "output_dir": str(out), "rounds_log": "jsonl"},
        "horizon": {"type": "fixed", "n_rounds": n_rounds},
        "game": {"noise": 0.02},
        "experiment": {
            "replicates": reps,
            "conditions": [{"name": f"{a}_vs_{b}", "agent_a": a, "agent_b": b} for a, b in pairs],
        },
    }


def group_config(out: Path, rounds: int, n_rounds: int = 1000) -> dict:
    """A groups run of about `rounds` five-seat rounds, in games of `n_rounds`."""
    reps = max(1, rounds // (n_rounds * len(GROUP_SEATS)))
    return {
        "run": {"run_id": "groups", "seed": 1, "output_dir": str(out), "rounds_log": "jsonl"},
        "horizon": {"type": "fixed", "n_rounds": n_rounds},
        "game": {"noise": 0.02},
        "group_game": {"kind": "public_goods", "r": 3.0, "c": 1.0},
        "groups": {
            "replicates": reps,
            "conditions": [
                {"name": f"group{i}", "seats": seats} for i, seats in enumerate(GROUP_SEATS)
            ],
        },
    }


def player_rounds(config: dict) -> int:
    """Player-rounds a config plays (fixed horizons)."""
    n = config["horizon"]["n_rounds"]
    if "experiment" in config:
        section = config["experiment"]
        return 2 * n * section["replicates"] * len(section["conditions"])
    section = config["groups"]
    return sum(n * section["replicates"] * len(c["seats"]) for c in section["conditions"])


def run_command(config: dict, workdir: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of `pdbench run CONFIG --overwrite` as a child process."""
    path = workdir / f"{config['run']['run_id']}.yaml"
    path.write_text(yaml.safe_dump(config))
    command = [sys.executable, "-m", "pdbench.cli", "run", str(path), "--overwrite"]
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)  # usage.ru_maxrss: the child's peak, KiB
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed: {proc.stderr.read().decode()[-400:]}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--player-rounds", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-memory", action="store_true", help="leave part 2 out")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        pairs = pair_config(work / "pairs", args.player_rounds // 2)
        groups = group_config(work / "groups", args.player_rounds // 5)
        n_pairs, n_groups = player_rounds(pairs), player_rounds(groups)
        times: dict[str, list[float]] = {"pairs": [], "groups": []}
        for _ in range(args.repeat):
            times["pairs"].append(run_command(pairs, work)[0])
            times["groups"].append(run_command(groups, work)[0])
        load = os.getloadavg()[0]
        print(f"1. speed: `pdbench run`, whole process, median of {args.repeat} (load {load:.1f})")
        rates = {}
        for name, count in (("pairs", n_pairs), ("groups", n_groups)):
            median = statistics.median(times[name])
            rates[name] = count / median
            print(
                f"  {name:<7} {count:>11,} player-rounds  {median:6.2f} s  "
                f"{rates[name] / 1e6:6.2f} M player-rounds/s"
            )
        ratio = rates["groups"] / rates["pairs"]
        verdict = "met" if ratio >= 1.0 else "NOT met"
        print(f"  groups / pairs, per player-round: {ratio:.2f} (goal >= 1: {verdict})")
        if args.no_memory:
            return
        big_groups = group_config(work / "groups", 10_000_000 // 5)
        big_pairs = pair_config(work / "pairs", 1_000_000)
        peaks: dict[str, list[float]] = {"pairs": [], "groups": []}
        for _ in range(args.repeat):  # interleaved; the peak varies from run to run
            peaks["pairs"].append(run_command(big_pairs, work)[1])
            peaks["groups"].append(run_command(big_groups, work)[1])
        rss_pairs = statistics.median(peaks["pairs"])
        rss_groups = statistics.median(peaks["groups"])
        print(f"2. memory: peak resident memory of the whole process, median of {args.repeat}")
        print(f"  pairs,  {player_rounds(big_pairs) // 2:>11,} rounds         {rss_pairs:7.0f} MiB")
        print(f"  groups, {player_rounds(big_groups):>11,} player-rounds  {rss_groups:7.0f} MiB")
        verdict = "met" if rss_groups <= rss_pairs else "NOT met"
        print(f"  groups within pairs' memory: {verdict}")


if __name__ == "__main__":
    main()
