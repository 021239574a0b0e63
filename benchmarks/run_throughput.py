"""How many logged rounds per second `pdbench run` writes on policy-only conditions.

Builds a temporary experiment of policy pairings (noise 0.05, so every draw path is exercised)
scaled to about one million rounds, and times, side by side:

  1. `pdbench run` as a fresh process, end to end (interpreter start, imports, validation,
     the vectorized engine, rounds.jsonl, metrics, aggregates.parquet, manifest);
  2. `run_experiment` in-process (the same work without interpreter start and imports);
  3. with `--baseline SRC` (the `src/` folder of another pdbench checkout, e.g. a git worktree
     of an earlier commit), that version's `pdbench run` too, interleaved with 1 so both see the
     same machine load.

It checks that rounds.jsonl has the expected number of lines and prints medians.

    uv run python benchmarks/run_throughput.py [--rounds-per-game 10000] [--replicates 10] [--repeat 3]
    git worktree add /tmp/pdbench-base <commit>
    uv run python benchmarks/run_throughput.py --baseline /tmp/pdbench-base/src
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

from pdbench.runners.config.loader import load_config
from pdbench.runners.lifecycle.session import RunOptions
from pdbench.runners.science.experiment import run_experiment

REPO = Path(__file__).resolve().parents[1]
PAIRS = (
    ("TFT", "ALLD"),
    ("GTFT", "WSLS"),
    ("GRIM", "RANDOM"),
    ("WSLS", "WSLS"),
    ("TF2T", "STFT"),
    ("ALLC", "GTFT"),
    ("TFT", "TFT"),
    ("ALTERNATOR", "GRIM"),
    ("RANDOM", "TFT"),
    ("GTFT", "GTFT"),
)


def write_experiment(
    root: Path, rounds_per_game: int, replicates: int, run_extra: dict | None = None
) -> Path:
    """The benchmark experiment under root (agents written inline, so that earlier pdbench
    versions read it too); returns its path."""
    cfg_dir = root / "cfg"
    cfg_dir.mkdir()
    conditions = [
        {
            "name": f"{a}_vs_{b}",
            "agent_a": {"type": "policy", "policy": a},
            "agent_b": {"type": "policy", "policy": b},
        }
        for a, b in PAIRS
    ]
    experiment = {
        "run": {
            "run_id": "throughput",
            "seed": 7,
            "output_dir": str(root / "out"),
            **(run_extra or {}),
        },
        "game": {"noise": 0.05},
        "horizon": {"type": "fixed", "n_rounds": rounds_per_game},
        "experiment": {"replicates": replicates, "conditions": conditions},
    }
    path = cfg_dir / "throughput.yaml"
    path.write_text(yaml.safe_dump(experiment, sort_keys=False))
    return path


def count_lines(path: Path) -> int:
    """Lines in a file."""
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 24), b""))


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds-per-game", type=int, default=10_000)
    parser.add_argument("--replicates", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--baseline", type=Path, default=None, help="src/ of another pdbench to time beside"
    )
    args = parser.parse_args()
    total = len(PAIRS) * args.replicates * args.rounds_per_game
    print(
        f"experiment: {len(PAIRS)} policy conditions x {args.replicates} replicates x "
        f"{args.rounds_per_game} rounds = {total:,} rounds, noise 0.05"
    )
    cli_times: list[float] = []
    lib_times: list[float] = []
    base_times: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = write_experiment(root, args.rounds_per_game, args.replicates)
        out = root / "out"
        for _ in range(args.repeat):
            cli_times.append(run_cli(config, None))
            assert count_lines(out / "rounds.jsonl") == total
            if args.baseline is not None:
                base_times.append(run_cli(config, args.baseline))
                assert count_lines(out / "rounds.jsonl") == total
            loaded = load_config(config, "experiment")
            start = time.perf_counter()
            run_experiment(loaded, RunOptions(overwrite=True))
            lib_times.append(time.perf_counter() - start)
            assert count_lines(out / "rounds.jsonl") == total
        size = (out / "rounds.jsonl").stat().st_size
    cli, lib = statistics.median(cli_times), statistics.median(lib_times)
    print(f"rounds.jsonl: {size / 1e6:.0f} MB")
    print(
        f"pdbench run (fresh process, end to end): {cli:6.2f} s  {total / cli:>12,.0f} rounds/s  (median of {args.repeat})"
    )
    print(
        f"run_experiment (in-process):             {lib:6.2f} s  {total / lib:>12,.0f} rounds/s  (median of {args.repeat})"
    )
    print(f"all CLI times: {', '.join(f'{t:.2f}' for t in cli_times)} s")
    if base_times:
        base = statistics.median(base_times)
        print(
            f"baseline pdbench run ({args.baseline}): {base:6.2f} s  {total / base:>12,.0f} "
            f"rounds/s  (median of {args.repeat}; all: {', '.join(f'{t:.2f}' for t in base_times)})"
        )


def run_cli(config: Path, src: Path | None) -> float:
    """Seconds taken by `pdbench run CONFIG --overwrite` in a fresh process (from `src` when
    given, by putting it first on PYTHONPATH)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pdbench.cli", "run", str(config), "--overwrite"],
        check=True,
        capture_output=True,
        env=env,
    )
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
