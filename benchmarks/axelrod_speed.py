"""Axelrod strategies in pdbench (`axelrod:` players) against the Axelrod library, same work.

Run: `uv run python benchmarks/axelrod_speed.py` (needs `uv sync --extra axelrod`).

Work: a tournament of 12 Axelrod strategies (4 of them stochastic), 200 turns, 5 repetitions,
noise 0.05, every pair including self-play (as Axelrod plays it): 78 pairs, 390 matches,
78,000 turns. With noise, Axelrod cannot reuse the moves of a deterministic match, so both sides
play every turn.

1. In process, interleaved: pdbench's `play_tournament` (matches, leaderboard, pairwise payoffs)
   against `axelrod.Tournament(...).play(processes=1, progress_bar=False)` (its full
   ResultSet), each timed alternately after a garbage collection; medians and the ratio.
2. The whole user command: `pdbench tournament CONFIG -o DIR` as a subprocess (Python start,
   imports including the Axelrod library, the run directory and its artifacts), beside the
   in-process figure; and, for the Axelrod side, a subprocess that imports axelrod and plays the
   same tournament. Medians over a few runs; `--cli-repeats 0` skips this part.

Strategies that reclassify themselves whenever they are made (transformed ones such as
FirstByTidemanAndChieruzzi, which re-read their source: 15 ms per player in the library) are
left out of the 12, so the comparison is about playing, not about that quirk.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import yaml

from pdbench.agents.axelrod_adapter import import_axelrod
from pdbench.errors import RunError
from pdbench.runners.config.loader import load_config
from pdbench.runners.science.tournament import play_tournament

STRATEGIES = [
    "Cooperator",
    "Defector",
    "TitForTat",
    "Grudger",
    "WinStayLoseShift",
    "GTFT",  # stochastic
    "Random",  # stochastic
    "Prober",
    "Gradual",
    "OmegaTFT",
    "ZDGTFT2",  # stochastic
    "FirstByJoss",  # stochastic
]
TURNS, REPETITIONS, NOISE = 200, 5, 0.05

AXELROD_SCRIPT = f"""
import time, warnings
start = time.perf_counter()
warnings.simplefilter("ignore")
import axelrod as axl
players = [getattr(axl, name)() for name in {STRATEGIES!r}]
tournament = axl.Tournament(players, turns={TURNS}, repetitions={REPETITIONS}, noise={NOISE},
                            seed=1)
tournament.play(processes=1, progress_bar=False)
"""


def config(output_dir: Path) -> dict[str, Any]:
    """The pdbench tournament config of the benchmark's work."""
    return {
        "run": {"run_id": "axelrod_speed", "seed": 1, "output_dir": str(output_dir)},
        "game": {"noise": NOISE},
        "horizon": {"type": "fixed", "n_rounds": TURNS},
        "tournament": {
            "players": [f"axelrod:{name}" for name in STRATEGIES],
            "repetitions": REPETITIONS,
            "self_play": True,
        },
    }


def timed(fn: Any) -> tuple[float, Any]:
    """(seconds, result) of one call."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def interleaved(ours: Any, theirs: Any, repeats: int) -> tuple[list[float], list[float], Any, Any]:
    """Both sides' times, timed alternately (after a warm-up of each) so that both see the same
    machine load; before each call earlier results are dropped and the garbage collector run."""
    ours()
    theirs()
    our_times: list[float] = []
    their_times: list[float] = []
    our_result = their_result = None
    for _ in range(repeats):
        our_result = None
        gc.collect()
        seconds, our_result = timed(ours)
        our_times.append(seconds)
        their_result = None
        gc.collect()
        seconds, their_result = timed(theirs)
        their_times.append(seconds)
    return our_times, their_times, our_result, their_result


def run_command(command: list[str]) -> float:
    """Wall time of a subprocess (which must succeed)."""
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env={**os.environ, "CI": "1"})
    return time.perf_counter() - start


def pdbench_executable() -> str:
    """The `pdbench` command of this environment."""
    candidate = Path(sys.executable).parent / "pdbench"
    return str(candidate) if candidate.exists() else "pdbench"


def show(label: str, times: list[float]) -> float:
    """Print a side's median (and spread); returns the median."""
    median = statistics.median(times)
    spread = f"min {min(times):.3f} s, max {max(times):.3f} s, n={len(times)}"
    print(f"  {label:<34} median {median:7.3f} s  ({spread})")
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="in-process runs of each side")
    parser.add_argument("--cli-repeats", type=int, default=3, help="subprocess runs of each side")
    args = parser.parse_args()
    try:
        axl = import_axelrod()
    except RunError as exc:
        sys.exit(str(exc))
    warnings.filterwarnings("ignore")
    n = len(STRATEGIES)
    matches = n * (n + 1) // 2 * REPETITIONS
    print(
        f"{n} Axelrod strategies, {TURNS} turns, {REPETITIONS} repetitions, noise {NOISE}, "
        f"self-play included: {matches} matches, {matches * TURNS:,} turns"
    )
    with tempfile.TemporaryDirectory(prefix="pdbench-axelrod-speed-") as tmp:
        path = Path(tmp) / "tournament.yaml"
        path.write_text(yaml.safe_dump(config(Path(tmp) / "run")), encoding="utf-8")
        loaded = load_config(path)

        def ours() -> Any:
            return play_tournament(loaded)

        def theirs() -> Any:
            players = [getattr(axl, name)() for name in STRATEGIES]
            tournament = axl.Tournament(
                players, turns=TURNS, repetitions=REPETITIONS, noise=NOISE, seed=1
            )
            return tournament.play(processes=1, progress_bar=False)

        print(f"\nIn process, interleaved ({args.repeats} runs each):")
        our_times, their_times, result, results = interleaved(ours, theirs, args.repeats)
        assert result.manifest["totals"]["rounds"] == matches * TURNS
        ours_s = show("pdbench play_tournament", our_times)
        theirs_s = show("axelrod Tournament.play", their_times)
        print(
            f"  ratio pdbench / axelrod: {ours_s / theirs_s:.2f}  "
            f"(axelrod / pdbench: {theirs_s / ours_s:.2f}x)"
        )
        print(f"  top 3: pdbench {[r['player'] for r in result.leaderboard[:3]]}")
        print(f"         axelrod {results.ranked_names[:3]}")

        if args.cli_repeats > 0:
            print(
                f"\nThe whole command, as a subprocess ({args.cli_repeats} runs each, interleaved):"
            )
            cli = [pdbench_executable(), "tournament", str(path), "-o", str(Path(tmp) / "cli")]
            cli.append("--overwrite")
            script = [sys.executable, "-c", AXELROD_SCRIPT]
            cli_times: list[float] = []
            script_times: list[float] = []
            for _ in range(args.cli_repeats):
                cli_times.append(run_command(cli))
                script_times.append(run_command(script))
            written = sorted(p.name for p in (Path(tmp) / "cli").iterdir())
            cli_s = show("pdbench tournament CONFIG", cli_times)
            print(f"  {'(in process, above)':<34} median {ours_s:7.3f} s")
            script_s = show("python: import axelrod; play", script_times)
            print(f"  ratio pdbench / axelrod: {cli_s / script_s:.2f}")
            print(f"  pdbench wrote: {', '.join(written)}")
            print(
                "  (both include Python's start and importing the Axelrod library, which makes "
                "about 30,000 players at import; pdbench memoizes its source look-ups)"
            )


if __name__ == "__main__":
    main()
