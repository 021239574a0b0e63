"""pdbench's vectorized tournament and Moran engines against the Axelrod library, same work.

Run: `uv run python benchmarks/tournament_vs_axelrod.py` (needs `uv sync --extra axelrod`).

1. Tournament: six strategies (ALLC, ALLD, TFT, GRIM, GTFT, WSLS; Axelrod: Cooperator, Defector,
   TitForTat, Grudger, GTFT, WinStayLoseShift), 200 turns, 100 repetitions, noise 0.05, every
   pair including self-play (as Axelrod plays it): 2,100 matches, 420,000 turns. Axelrod:
   `Tournament(...).play(processes=1, progress_bar=False)` building its full ResultSet; pdbench:
   `play_tournament` building matches, leaderboard and pairwise payoffs.
2. Moran process: 60 players (10 of each type), 200 turns, noise 0.05. Per generation every pair
   of players plays a match (1,770 matches) and one birth-death event follows. Axelrod:
   `next(MoranProcess(...))`; pdbench: `moran` with sampled fitness (the same per-generation
   work). Both timed for a few generations and compared per generation. pdbench's default
   `expected` fitness (pairwise matrix estimated once) is shown too, for information.

3. Whole process, the same tournament as a user starts it: `pdbench tournament CONFIG` (the
   installed command, writing its Parquet files and manifest) against a Python script that
   imports axelrod and plays the tournament. Wall and CPU (user + system) seconds of the
   process, medians; the load average is printed beside them (2-core machines shared with
   other work inflate wall times several-fold).

   Beside them, Python's own floor on this machine: `python -c pass`, `python -c "import numpy"`
   and the libraries the command cannot do without (NumPy, pydantic, typer, PyYAML, pyarrow's
   Parquet writer) imported and nothing done.

With `--baseline SRC` (the `src/` of another pdbench checkout, e.g. `git archive` of an earlier
commit), that version is timed beside this one in parts 1 and 3, interleaved so both see the
same load: its `play_tournament` in a child process (wall and CPU seconds of the call), its
`pdbench tournament` as a whole process. `--pdbench-only` leaves the Axelrod library and the
Moran process out (with `--baseline`: this pdbench against the baseline, nothing else).

Times are medians over repeats; rounds per second count both players' moves of a turn as one.
`--whole-only` runs part 3 alone; `--no-whole` leaves it out.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

# One BLAS thread, as the pdbench command sets it (`pdbench.cli.main`), before NumPy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import yaml  # noqa: E402

from pdbench.agents.axelrod_adapter import import_axelrod  # noqa: E402
from pdbench.errors import RunError  # noqa: E402
from pdbench.runners.config.loader import LoadedConfig, load_config  # noqa: E402
from pdbench.runners.science.evolve import simulate_evolution  # noqa: E402
from pdbench.runners.science.tournament import play_tournament  # noqa: E402

POLICIES = ["ALLC", "ALLD", "TFT", "GRIM", "GTFT", "WSLS"]
AXELROD = ["Cooperator", "Defector", "TitForTat", "Grudger", "GTFT", "WinStayLoseShift"]
TURNS, REPETITIONS, NOISE, MORAN_SIZE = 200, 100, 0.05, 60
RUN = {"run_id": "bench", "seed": 1, "output_dir": "unused"}


def loaded_config(data: dict[str, Any]) -> LoadedConfig:
    """A config loaded through the library's loader from a temporary YAML file."""
    with tempfile.TemporaryDirectory(prefix="pdbench-bench-") as tmp:
        path = Path(tmp) / "config.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        return load_config(path)


def timed(fn: Any) -> tuple[float, Any]:
    """(seconds, result) of one call."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def interleaved(
    ours: Any, theirs: Any, repeats: int, ours_per_repeat: int
) -> tuple[float, float, Any, Any]:
    """Median times of both sides, timed alternately so both see the same machine load.

    Before each timed call the previous results are dropped and the garbage collector run, so
    neither side pays for the other's (or its own earlier) live objects.
    """
    ours()  # warm-up (imports, caches)
    our_times, their_times = [], []
    our_result = their_result = None
    for _ in range(repeats):
        for _ in range(ours_per_repeat):
            our_result = None
            gc.collect()
            seconds, our_result = timed(ours)
            our_times.append(seconds)
        their_result = None
        gc.collect()
        seconds, their_result = timed(theirs)
        their_times.append(seconds)
    return statistics.median(our_times), statistics.median(their_times), our_result, their_result


def tournament_config(run: dict[str, Any] = RUN) -> dict[str, Any]:
    """The benchmark's tournament as a pdbench config."""
    return {
        "run": run,
        "game": {"noise": NOISE},
        "horizon": {"type": "fixed", "n_rounds": TURNS},
        "tournament": {"players": POLICIES, "repetitions": REPETITIONS, "self_play": True},
    }


def pdbench_tournament() -> Any:
    loaded = loaded_config(tournament_config())
    return lambda: play_tournament(loaded)


AXELROD_SCRIPT = """
import axelrod as axl
players = [getattr(axl, name)() for name in {names!r}]
axl.Tournament(players, turns={turns}, repetitions={reps}, noise={noise}, seed=1).play(
    processes=1, progress_bar=False
)
"""


def whole_process(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, children included) of one run of
    `command` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


FLOORS = {
    "python -c pass": "pass",
    'python -c "import numpy"': "import numpy",
    "python: import the libraries only": "import numpy, pydantic, typer, yaml, pyarrow.parquet",
}


def whole_processes(repeats: int, axelrod_repeats: int, baseline: Path | None = None) -> None:
    """Part 3: `pdbench tournament CONFIG` (and the baseline's), the Axelrod script and Python's
    floors, whole processes, interleaved."""
    pdbench = Path(sys.executable).parent / "pdbench"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory(prefix="pdbench-bench-") as tmp:
        config = Path(tmp) / "tournament.yaml"
        run = {**RUN, "output_dir": str(Path(tmp) / "out")}
        config.write_text(yaml.safe_dump(tournament_config(run)), encoding="utf-8")
        command = [str(pdbench), "tournament", str(config), "--overwrite"]
        ours_env = {**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
        runs: dict[str, tuple[list[str], dict[str, str]]] = {
            "pdbench tournament CONFIG": (command, ours_env)
        }
        if baseline is not None:
            runs["baseline pdbench tournament"] = (command, {**env, "PYTHONPATH": str(baseline)})
        for label, code in FLOORS.items():
            runs[label] = ([sys.executable, "-c", code], env)
        for cmd, cmd_env in runs.values():  # warm-up (file caches)
            whole_process(cmd, cmd_env)
        times: dict[str, list[tuple[float, float]]] = {label: [] for label in runs}
        for _ in range(repeats):
            for label, (cmd, cmd_env) in runs.items():
                times[label].append(whole_process(cmd, cmd_env))
    theirs = None
    if axelrod_repeats > 0:
        script = AXELROD_SCRIPT.format(names=AXELROD, turns=TURNS, reps=REPETITIONS, noise=NOISE)
        axelrod_times = [
            whole_process([sys.executable, "-c", script]) for _ in range(axelrod_repeats)
        ]
        theirs = (
            statistics.median(t[0] for t in axelrod_times),
            statistics.median(t[1] for t in axelrod_times),
        )
    print(f"\nWhole process, the same tournament (medians of {repeats}; {load_average()}):")
    for label, pairs in times.items():
        wall = statistics.median(t[0] for t in pairs)
        cpu = statistics.median(t[1] for t in pairs)
        print(
            f"  {label:<36}: {wall:6.3f} s wall, {cpu:6.3f} s CPU  (min wall {min(t[0] for t in pairs):.3f})"
        )
    if theirs is not None:
        print(f"  {'axelrod script':<36}: {theirs[0]:6.3f} s wall, {theirs[1]:6.3f} s CPU")
        ours_wall = statistics.median(t[0] for t in times["pdbench tournament CONFIG"])
        print(f"  whole-process speed-up: {theirs[0] / ours_wall:,.1f}x wall")


BASELINE_SCRIPT = """
import gc, json, os, sys, time
sys.path.insert(0, {bench!r})
from tournament_vs_axelrod import pdbench_tournament
run = pdbench_tournament()
run()
times = []
for _ in range({repeats}):
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    times.append((time.perf_counter() - wall, time.process_time() - cpu))
print(json.dumps(times))
"""


def baseline_work(baseline: Path, repeats: int) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of the baseline's `play_tournament`, `repeats` calls after a warm-up,
    in a child process importing the baseline's pdbench (and this benchmark file)."""
    script = BASELINE_SCRIPT.format(bench=str(Path(__file__).resolve().parent), repeats=repeats)
    env = {**os.environ, "PYTHONPATH": str(baseline), "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True, env=env
    ).stdout
    return [tuple(pair) for pair in json.loads(out.strip().splitlines()[-1])]


def work_against_baseline(baseline: Path, rounds: int, repeats: int) -> None:
    """Part 1 against the baseline: `rounds` times, `repeats` timed calls of ours, then as many
    of the baseline's in a child process; medians of wall and CPU seconds of the calls."""
    ours_run = pdbench_tournament()
    ours_run()
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    for _ in range(rounds):
        for _ in range(repeats):
            gc.collect()
            wall, cpu = time.perf_counter(), time.process_time()
            ours_run()
            ours.append((time.perf_counter() - wall, time.process_time() - cpu))
        theirs += baseline_work(baseline, repeats)
    print(f"\nplay_tournament, in process (medians of {len(ours)} calls; {load_average()}):")
    for label, pairs in (("this pdbench", ours), (f"baseline {baseline}", theirs)):
        wall = statistics.median(t[0] for t in pairs) * 1000
        cpu = statistics.median(t[1] for t in pairs) * 1000
        print(f"  {label:<36}: {wall:7.1f} ms wall, {cpu:7.1f} ms CPU")


def pdbench_moran(generations: int, fitness: str) -> Any:
    loaded = loaded_config(
        {
            "run": RUN,
            "game": {"noise": NOISE},
            "horizon": {"type": "fixed", "n_rounds": TURNS},
            "evolution": {
                "process": "moran",
                "fitness": fitness,
                "generations": generations,
                "repetitions": 10,
                "population": [{"player": p, "count": MORAN_SIZE // 6} for p in POLICIES],
            },
        }
    )
    return lambda: simulate_evolution(loaded)


def axelrod_players(axl: Any, copies: int = 1) -> list[Any]:
    return [getattr(axl, name)() for name in AXELROD for _ in range(copies)]


def load_average() -> str:
    """The machine's load average (1, 5, 15 minutes) and CPU count, to read times by."""
    return (
        "load average "
        + ", ".join(f"{x:.1f}" for x in os.getloadavg())
        + (f" on {os.cpu_count()} CPUs")
    )


def report(label: str, ours: float, theirs: float, work: float, unit: str) -> None:
    print(f"  pdbench : {ours * 1000:10.2f} ms  ({work / ours:,.0f} {unit}/s)")
    print(f"  axelrod : {theirs * 1000:10.2f} ms  ({work / theirs:,.0f} {unit}/s)")
    print(f"  {label} speed-up: {theirs / ours:,.0f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="pdbench runs per Axelrod run")
    parser.add_argument("--axelrod-repeats", type=int, default=3, help="Axelrod runs (median)")
    parser.add_argument("--moran-generations", type=int, default=2, help="generations timed")
    parser.add_argument("--whole-only", action="store_true", help="only the whole processes")
    parser.add_argument("--no-whole", action="store_true", help="leave the whole processes out")
    parser.add_argument(
        "--baseline", type=Path, default=None, help="src/ of another pdbench to time beside"
    )
    parser.add_argument(
        "--pdbench-only", action="store_true", help="leave the Axelrod library and Moran out"
    )
    args = parser.parse_args()
    axelrod_repeats = 0 if args.pdbench_only else args.axelrod_repeats
    if args.baseline is not None and not args.whole_only:
        work_against_baseline(args.baseline, args.axelrod_repeats, args.repeats)
    if args.whole_only or args.pdbench_only:
        if not args.no_whole:
            whole_processes(args.repeats, axelrod_repeats, args.baseline)
        return
    try:
        axl = import_axelrod()  # the adapter's import: same module, a faster import on 3.12
    except RunError as exc:
        sys.exit(str(exc))
    warnings.filterwarnings("ignore")
    matches = len(POLICIES) * (len(POLICIES) + 1) // 2 * REPETITIONS
    turns = matches * TURNS
    print(
        f"Tournament: {len(POLICIES)} strategies, {TURNS} turns, {REPETITIONS} repetitions, "
        f"noise {NOISE}, self-play included: {matches} matches, {turns:,} turns"
    )

    def run_axelrod() -> Any:
        tournament = axl.Tournament(
            axelrod_players(axl), turns=TURNS, repetitions=REPETITIONS, noise=NOISE, seed=1
        )
        return tournament.play(processes=1, progress_bar=False)

    ours, theirs, result, results = interleaved(
        pdbench_tournament(), run_axelrod, args.axelrod_repeats, args.repeats
    )
    assert result.manifest["totals"]["rounds"] == turns
    report("tournament", ours, theirs, turns, "turns")
    print(f"  ({load_average()})")
    print(f"  rankings: pdbench {[r['player'] for r in result.leaderboard]}")
    print(f"            axelrod {results.ranked_names}")

    generations = args.moran_generations
    pairs = MORAN_SIZE * (MORAN_SIZE - 1) // 2
    print(
        f"\nMoran process: {MORAN_SIZE} players, {TURNS} turns, noise {NOISE}; per generation "
        f"{pairs} matches ({pairs * TURNS:,} turns) and one birth-death event; "
        f"{generations} generations timed"
    )

    def run_axelrod_moran() -> None:
        players = axelrod_players(axl, MORAN_SIZE // 6)
        process = axl.MoranProcess(players, turns=TURNS, noise=NOISE, seed=1)
        for _ in range(generations):
            next(process)

    ours_total, theirs_total, _, _ = interleaved(
        pdbench_moran(generations, "sampled"), run_axelrod_moran, args.axelrod_repeats, args.repeats
    )
    # pdbench also evaluates the fitness of the final population: generations + 1 evaluations.
    report(
        "Moran per-generation",
        ours_total / (generations + 1),
        theirs_total / generations,
        pairs * TURNS,
        "turns",
    )
    run_expected = pdbench_moran(1000, "expected")
    run_expected()
    expected_total = statistics.median(timed(run_expected)[0] for _ in range(args.repeats))
    print(
        f"  (pdbench `expected` fitness: payoff matrix from 10 matches per pair of types, then "
        f"1000 birth-death events: {expected_total * 1000:.1f} ms in total)"
    )
    if not args.no_whole:
        whole_processes(args.repeats, args.axelrod_repeats, args.baseline)


if __name__ == "__main__":
    main()
