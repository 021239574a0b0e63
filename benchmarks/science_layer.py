"""How long the science layer takes on a run of one million rounds.

Builds a temporary experiment of policy pairings (noise 0.05) with `--conditions` conditions x
`--replicates` games x `--rounds` rounds (default 10 x 100 x 1000 = 1,000,000 rounds), plays it
once with `pdbench run`, then times, as whole processes (interpreter start, imports, reading the
artifacts, writing the outputs), each command a user runs afterwards:

  pdbench aggregate RUN_DIR   (metrics and every interval: bootstrap over games)
  pdbench profile RUN_DIR     (strategy inference, SFEM shares with bootstrap intervals)
  pdbench compare RUN_DIR
  pdbench report RUN_DIR

and, beside them, the in-process time of the same work (`aggregate_run_dir`, `profile_run`,
`build_report`), `--repeat` times each, printing medians.

    uv run python benchmarks/science_layer.py [--conditions 10 --replicates 100 --rounds 1000]
        [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PAIRS = (
    ("TFT", "RANDOM"),
    ("GTFT", "WSLS"),
    ("GRIM", "RANDOM"),
    ("WSLS", "ALLD"),
    ("TF2T", "STFT"),
    ("ALTERNATOR", "TFT"),
    ("ALLC", "RANDOM"),
    ("STFT", "GTFT"),
    ("RANDOM", "GRIM"),
    ("WSLS", "TFT"),
)


def write_config(root: Path, conditions: int, replicates: int, rounds: int) -> Path:
    import shutil

    for sub in ("agents", "prompts"):
        shutil.copytree(REPO / "configs" / sub, root / sub)
    data = {
        "run": {"run_id": "science_bench", "seed": 7, "output_dir": str(root / "run")},
        "game": {"noise": 0.05},
        "horizon": {"type": "fixed", "n_rounds": rounds},
        "experiment": {
            "replicates": replicates,
            "conditions": [
                {
                    "name": f"{a}_vs_{b}_{i}",
                    "agent_a": {"type": "policy", "policy": a},
                    "agent_b": {"type": "policy", "policy": b},
                }
                for i, (a, b) in enumerate(PAIRS[i % len(PAIRS)] for i in range(conditions))
            ],
        },
    }
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def timed(args: list[str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conditions", type=int, default=10)
    parser.add_argument("--replicates", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from pdbench.report import build_report
    from pdbench.runners.science.profile import profile_run
    from pdbench.storage.aggregate import aggregate_run_dir

    root = Path(tempfile.mkdtemp(prefix="pdbench-science-"))
    config = write_config(root, args.conditions, args.replicates, args.rounds)
    run_dir = root / "run"
    pdbench = [sys.executable, "-m", "pdbench.cli"]
    play = timed([*pdbench, "run", str(config)])
    total = args.conditions * args.replicates * args.rounds
    print(
        f"{total:,} rounds ({args.conditions} conditions x {args.replicates} games x "
        f"{args.rounds} rounds); pdbench run: {play:.1f} s"
    )
    commands = {
        "aggregate": (["aggregate"], lambda: aggregate_run_dir(run_dir)),
        "profile": (["profile"], lambda: profile_run(run_dir)),
        "compare": (["compare"], None),
        "report": (["report"], lambda: build_report(run_dir)),
    }
    print(f"{'command':10} {'process (median s)':>19} {'in-process (median s)':>22}")
    for name, (cli_args, in_process) in commands.items():
        process_times, inner_times = [], []
        for _ in range(args.repeat):
            process_times.append(timed([*pdbench, *cli_args, str(run_dir)]))
            if in_process is not None:
                started = time.perf_counter()
                in_process()
                inner_times.append(time.perf_counter() - started)
        inner = f"{statistics.median(inner_times):.2f}" if inner_times else "-"
        print(f"{name:10} {statistics.median(process_times):>19.2f} {inner:>22}")


if __name__ == "__main__":
    main()
