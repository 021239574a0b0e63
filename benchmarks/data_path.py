"""The data path at 1M and 10M rounds: wall time and peak memory of each whole process.

Builds the experiment of `run_throughput.py` (10 policy conditions, noise 0.05) at one or more
sizes, 1m = 100 games x 1,000 rounds (1,000,000 rounds) and 10m = 1,000 games x 1,000 rounds,
and measures, each in a fresh process:

  pdbench run CFG --overwrite   (rounds/s of the whole process)
  pdbench aggregate RUN_DIR
  pdbench profile RUN_DIR
  pdbench report RUN_DIR        (which also runs `compare`: profile's file is there, compare's not)
  the app's first chart         a fresh Streamlit server on the run directory (the command
                                `pdbench ui RUN_DIR --print-command` gives), Chromium opens it on
                                View Results; the time from navigation to the first drawn Vega
                                chart, and the server's peak resident memory (VmHWM)
  the app's floor               the same for a trivial page (one 10-point Altair chart) served
                                by plain `streamlit run`: what Streamlit and Chromium alone take
                                on this machine now (`--commands app,floor`)
  the warm floor                that page served as `pdbench ui` serves the app (through
                                `pdbench.ui.serve`: Altair imported and the REPL check done before
                                the server listens, no file watcher): what is left of the floor
                                once the server does before the page what the app does
                                (`--commands floor-warm`)

`--breakdown` also prints, for each page load, when the HTML, the scripts, the websocket, the
first message and the first chart's message arrived, and the CPU the server, Chromium and the
page's renderer thread used until the chart (see `app_phases.py`), then their medians.

Wall time is measured around the child; its CPU time (user + system) and peak memory come from
GNU time (`/usr/bin/time`, wait4's `ru_maxrss`: the child's own peak, or that of any child it
waited for); for the app, the server's CPU time from navigation to the chart and its VmHWM. With
`--baseline SRC` (the `src/` of another checkout, e.g. `git worktree add /tmp/pdb-base <commit>`)
every measurement is also made for that version (this interpreter, `PYTHONPATH=SRC`), on its own
copy of the run, interleaved with this checkout's (the order alternating between repeats) so both
see the same load. It prints each measurement with the load average before and after it, then a
table of medians beside the goals of issue 21, and the size on disk of the rounds files (bytes a
round: rounds.jsonl, and a columnar rounds file when the version writes one: `rounds*.parquet` or
a `rounds/` directory).

    uv run python benchmarks/data_path.py [--sizes 1m,10m] [--repeat 3] [--baseline SRC]
    uv run python benchmarks/data_path.py --quick --no-app      (10 x 10 x 100 rounds: a smoke test)

A 10m run writes about 6 GB of rounds.jsonl per version: check `df -h` of `--workdir` first; and
where a command's memory grows with the rounds (1.2 GB at 1m before issue 21), 10m may need ten
times that: `--commands run,aggregate` measures those alone.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_phases import COUNTS, CPUS, PHASES, PhaseRecorder, Phases  # noqa: E402
from run_throughput import PAIRS, count_lines, write_experiment  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SIZES = {"quick": (10, 100), "1m": (100, 1_000), "10m": (1_000, 1_000)}  # games, rounds
COMMANDS = ("run", "aggregate", "profile", "report")
APPS = ("app", "floor", "floor-warm")  # the app's first chart; a trivial one-chart page
FLOOR_APP = """import altair as alt
import streamlit as st

st.set_page_config(page_title="floor", layout="wide")
data = alt.Data(values=[{"x": i, "y": i % 3} for i in range(10)])
st.altair_chart(alt.Chart(data).mark_line().encode(x="x:Q", y="y:Q"), width="stretch")
"""
COLUMNAR_GOAL = "<= 10 B a policy round"
CHROMIUM = Path("/usr/bin/chromium")
TIME = Path("/usr/bin/time")  # GNU time
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
# A drawn chart: Vega-Lite (canvas or SVG marks), or a Plotly plot should the app switch.
FIRST_CHART = """() => {
  if (document.querySelector('[data-testid="stException"]')) return "error";
  const charts = document.querySelectorAll(
    '[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg.marks, '
    + '[data-testid="stArrowVegaLiteChart"] canvas, .js-plotly-plot .main-svg');
  for (const c of charts) { const r = c.getBoundingClientRect(); if (r.width && r.height) return "chart"; }
  return false;
}"""


@dataclass
class Measure:
    """One measurement: wall seconds, CPU seconds (user + system), peak resident MB, and the load
    average (1 min) before and after."""

    seconds: float
    cpu: float
    peak_mb: float
    load_before: float
    load_after: float


@dataclass
class Side:
    """One version of pdbench: its label, src/ folder and its own copy of the experiment."""

    label: str
    src: Path
    config: Path
    run_dir: Path

    def env(self) -> dict[str, str]:
        """The environment its processes run in (its src/ first on the path)."""
        env = {k: v for k, v in os.environ.items() if k != "PDBENCH_RUN_DIR"}
        env["PYTHONPATH"] = str(self.src)
        return env

    def command(self, name: str) -> list[str]:
        """The pdbench command line of one of COMMANDS."""
        target = [str(self.config), "--overwrite"] if name == "run" else [str(self.run_dir)]
        # this interpreter, the version's src/ first on PYTHONPATH
        return [sys.executable, "-m", "pdbench.cli", name, *target]


def measure(argv: list[str], env: dict[str, str], log: Path) -> Measure:
    """Run `argv` as a fresh child (output to `log`); its wall time, CPU time (user + system) and
    peak RSS as GNU time reports them (wait4's ru_maxrss of the child).

    GNU time stands between: a child spawned straight from this process (vfork, then exec) would
    inherit this process's own peak as its ru_maxrss."""
    if not TIME.exists():
        raise RuntimeError(f"{TIME} is missing (apt-get install -y time)")
    figures = log.with_suffix(".time")
    load = os.getloadavg()[0]
    with open(log, "wb") as out:
        start = time.perf_counter()
        code = subprocess.call(
            [str(TIME), "-f", "%U %S %M", "-o", str(figures), *argv],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        seconds = time.perf_counter() - start
    if code != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{shlex.join(argv)} exited {code}:\n{tail}")
    user, system, peak_kb = figures.read_text().split("\n")[-2].split()
    return Measure(
        seconds, float(user) + float(system), int(peak_kb) / 1024, load, os.getloadavg()[0]
    )


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Wait until the server listens (or fail if it exits)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited early with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"streamlit did not listen on port {port} within {timeout:.0f} s")


def peak_rss_mb(pid: int) -> float:
    """VmHWM (peak resident set) of a live process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a live process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def app_command(side: Side, port: int, kind: str = "app") -> list[str]:
    """The server's command line: `pdbench ui RUN_DIR` as `--print-command` gives it (`kind`
    "app"); for "floor" plain `streamlit run` of FLOOR_APP (written beside the side's run), for
    "floor-warm" the same through `pdbench.ui.serve`, as `pdbench ui` starts the app."""
    if kind in ("floor", "floor-warm"):
        app = side.run_dir.parent / "floor_app.py"
        app.write_text(FLOOR_APP)
        launcher = ["streamlit"] if kind == "floor" else ["pdbench.ui.serve", "streamlit"]
        return [sys.executable, "-m", *launcher, "run", str(app), "--server.headless", "true"] + [
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
        ]
    printed = subprocess.run(
        [sys.executable, "-m", "pdbench.cli", "ui", str(side.run_dir), "--port", str(port)]
        + ["--print-command"],
        env=side.env(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return shlex.split(printed.splitlines()[-1])


def measure_app(
    side: Side, log: Path, timeout_s: float = 300, kind: str = "app", breakdown: bool = False
) -> tuple[Measure, Phases | None]:
    """A fresh server on the run directory (or the trivial page, `kind` "floor" or
    "floor-warm"): seconds from navigation to the first drawn chart in Chromium, and the
    server's peak RSS once the page has finished its first script run; with `breakdown`, the
    moments and CPU of the page load (`app_phases`)."""
    from playwright.sync_api import sync_playwright

    port = free_port()
    command = app_command(side, port, kind)
    phases = None
    with open(log, "wb") as out, sync_playwright() as pw:
        server = subprocess.Popen(
            command,
            cwd=log.parent,
            env=side.env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            wait_for_port(port, server)
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            recorder = PhaseRecorder(server.pid) if breakdown else None
            if recorder:
                recorder.attach(page)
                recorder.start()
            load, cpu = os.getloadavg()[0], cpu_seconds(server.pid)
            start = time.perf_counter()
            page.goto(f"http://127.0.0.1:{port}")
            found = page.wait_for_function(FIRST_CHART, timeout=timeout_s * 1000).json_value()
            seconds = time.perf_counter() - start
            cpu = cpu_seconds(server.pid) - cpu
            if recorder:
                phases = recorder.finish(page, seconds)
            if found != "chart":
                raise RuntimeError(f"{side.label}: the app showed an exception (log: {log})")
            after = os.getloadavg()[0]
            page.wait_for_selector(
                '[data-testid="stApp"][data-test-script-state="notRunning"]',
                timeout=timeout_s * 1000,
            )
            peak = peak_rss_mb(server.pid)
        finally:
            browser.close()
            if server.poll() is None:
                os.killpg(server.pid, 15)
                try:
                    server.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, 9)
                    server.wait()
    return Measure(seconds, cpu, peak, load, after), phases


def rounds_files(run_dir: Path) -> dict[str, int]:
    """Bytes on disk of rounds.jsonl and of a columnar rounds file or directory, if present."""
    sizes: dict[str, int] = {}
    jsonl = run_dir / "rounds.jsonl"
    if jsonl.is_file():
        sizes["rounds.jsonl"] = jsonl.stat().st_size
    for path in sorted(run_dir.glob("rounds*.parquet")):
        sizes[path.name] = path.stat().st_size
    folder = run_dir / "rounds"
    if folder.is_dir():
        sizes["rounds/"] = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return sizes


def goal(command: str, size: str, results: dict[str, dict[str, dict[str, list[Measure]]]]) -> str:
    """Issue 21's goal for a row."""
    if command == "run":
        return ">= 1,000,000 rounds/s"
    if command == "aggregate" and size == "10m":
        at_1m = results.get("1m", {}).get("aggregate", {}).get("this")
        mb = f" ({statistics.median(m.peak_mb for m in at_1m):.0f} MB)" if at_1m else ""
        return f"< 15 s, memory as at 1m{mb}"
    return {
        "aggregate": "<= 1.5 s, <= 300 MB",
        "profile": "<= 3 s, <= 300 MB",
        "app": "< 2 s, < 400 MB",
        "floor": "(Streamlit alone)",
        "floor-warm": "(Streamlit alone, served warm)",
    }.get(command, "")


def cell(measures: list[Measure] | None, rounds: int, command: str) -> str:
    """Median wall seconds (CPU seconds) and MB of a row, and rounds/s for run."""
    if not measures:
        return "-"
    seconds = statistics.median(m.seconds for m in measures)
    cpu = statistics.median(m.cpu for m in measures)
    text = f"{seconds:6.2f} s ({cpu:5.2f}) {statistics.median(m.peak_mb for m in measures):5.0f} MB"
    if command == "run":
        text += f", {rounds / seconds:,.0f}/s"
    return text


def print_table(
    size: str,
    rounds: int,
    results: dict[str, dict[str, dict[str, list[Measure]]]],
    disk: dict[str, dict[str, int]],
    labels: list[str],
) -> None:
    """The medians of one size beside the goals, and bytes a round on disk."""
    rows = [*COMMANDS, *APPS]
    header = f"{'command':<18}" + "".join(f"| {label:<36}" for label in labels) + "| goal"
    print(
        f"\n{size}: {rounds:,} rounds (medians: wall s (CPU s) peak MB)\n{header}\n"
        + "-" * len(header)
    )
    for command in rows:
        by_side = results[size].get(command, {})
        if not by_side:
            continue
        name = {"app": "app first chart", "floor": "app floor", "floor-warm": "app floor, warm"}
        name = name.get(command, f"pdbench {command}")
        cells = "".join(f"| {cell(by_side.get(label), rounds, command):<36}" for label in labels)
        print(f"{name:<18}{cells}| {goal(command, size, results)}")
    files = sorted({name for sizes in disk.values() for name in sizes})
    for name in files:
        cells = ""
        for label in labels:
            size_bytes = disk.get(label, {}).get(name)
            text = "-" if size_bytes is None else f"{size_bytes / rounds:8.1f} B/round"
            cells += f"| {text:<36}"
        target = "" if name == "rounds.jsonl" else COLUMNAR_GOAL
        print(f"{name:<18}{cells}| {target}")
    if files == ["rounds.jsonl"]:
        print(f"{'columnar rounds':<18}" + "".join(f"| {'none':<36}" for _ in labels), end="")
        print(f"| {COLUMNAR_GOAL}")


def print_phases(size: str, phases: dict[tuple[str, str, str], list[Phases]]) -> None:
    """The medians of `--breakdown`'s moments and CPU seconds, one column per page and version."""
    columns = [(c, lab) for (s, c, lab) in phases if s == size]
    if not columns:
        return
    heads = [f"{c} ({lab})" for c, lab in columns]
    print(f"\n{size}: page load, medians (s after page.goto; CPU s until the chart)")
    print(f"{'':<22}" + "".join(f"| {h:<22}" for h in heads))
    for name in (*PHASES, *CPUS, *COUNTS):
        cells = "".join(
            f"| {statistics.median(getattr(p, name) for p in phases[(size, c, lab)]):<22.2f}"
            for c, lab in columns
        )
        print(f"{name:<22}{cells}")


def main() -> None:
    """Build the runs, measure interleaved, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", "--size", default="1m", help="comma-separated: quick, 1m, 10m")
    parser.add_argument("--quick", action="store_true", help="10 x 10 x 100 rounds only")
    parser.add_argument("--repeat", type=int, default=3, help="measurements per command (median)")
    parser.add_argument("--baseline", type=Path, default=None, help="src/ of another pdbench")
    parser.add_argument("--no-app", action="store_true", help="leave out the app's first chart")
    parser.add_argument(
        "--commands",
        default=",".join([*COMMANDS, "app"]),
        help="comma-separated subset of run,aggregate,profile,report,app,floor,floor-warm (run "
        "is always first; floor: a trivial one-chart page, Streamlit's own time; floor-warm: "
        "that page served as pdbench ui serves the app)",
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="print the moments and CPU of each page load (app_phases.py)",
    )
    parser.add_argument(
        "--rounds-log",
        default=None,
        choices=("jsonl", "columns", "both"),
        help="run.rounds_log of this checkout's run (default: the config's default, both)",
    )
    parser.add_argument(
        "--baseline-rounds-log",
        default=None,
        choices=("jsonl", "columns", "both"),
        help="the baseline's run.rounds_log (default: its default; older versions lack it)",
    )
    parser.add_argument("--workdir", type=Path, default=None, help="where the runs go (/tmp)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    sizes = ["quick"] if args.quick else [s.strip().lower() for s in args.sizes.split(",")]
    if unknown := [s for s in sizes if s not in SIZES]:
        parser.error(f"unknown size {unknown[0]!r} (valid: {', '.join(SIZES)})")
    wants_app = any(a in args.commands for a in APPS)
    if not args.no_app and wants_app and not CHROMIUM.exists():
        parser.error(f"{CHROMIUM} is missing (apt-get install -y chromium), or pass --no-app")
    sources = [("this", REPO / "src")]
    if args.baseline is not None:
        if not (args.baseline / "pdbench" / "cli.py").is_file():
            parser.error(f"{args.baseline}: not a pdbench src/ folder")
        sources.append(("baseline", args.baseline.resolve()))
    labels = [label for label, _ in sources]
    wanted = {c.strip() for c in args.commands.split(",")} | {"run"}
    if unknown := sorted(wanted - {*COMMANDS, *APPS}):
        parser.error(f"unknown command {unknown[0]!r}")
    commands = [c for c in (*COMMANDS, *APPS) if c in wanted and not (c in APPS and args.no_app)]
    results: dict[str, dict[str, dict[str, list[Measure]]]] = {}
    phases: dict[tuple[str, str, str], list[Phases]] = {}  # (size, command, label)
    disk: dict[str, dict[str, dict[str, int]]] = {}
    for label, src in sources:
        # Each side's bytecode compiled first, as a machine that keeps bytecode has it after a
        # first run (PYTHONDONTWRITEBYTECODE=1 would make every process compile pdbench again).
        compileall.compile_dir(src, quiet=1)
        print(f"{label}: {src} (bytecode compiled)")
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="data_path_") as tmp:
        for size in sizes:
            games, per_game = SIZES[size]
            rounds = len(PAIRS) * games * per_game
            print(
                f"\n== {size}: {len(PAIRS)} policy conditions x {games} games x {per_game} rounds"
                f" = {rounds:,} rounds, noise 0.05, {args.repeat} repeat(s)"
            )
            sides = []
            for label, src in sources:
                root = Path(tmp) / size / label
                root.mkdir(parents=True)
                # run.rounds_log per side (a baseline before issue 21 lacks the setting)
                log_setting = args.rounds_log if label == "this" else args.baseline_rounds_log
                extra = {"rounds_log": log_setting} if log_setting else None
                sides.append(
                    Side(label, src, write_experiment(root, per_game, games, extra), root / "out")
                )
            results[size] = {c: {s.label: [] for s in sides} for c in commands}
            for repeat in range(args.repeat):
                order = sides if repeat % 2 == 0 else sides[::-1]
                for command in commands:
                    for side in order:
                        log = side.run_dir.parent / f"{command}.log"
                        if command in APPS:
                            m, phase = measure_app(
                                side, log, kind=command, breakdown=args.breakdown
                            )
                            if phase is not None:
                                phases.setdefault((size, command, side.label), []).append(phase)
                                print(f"  {side.label:<8} {command:<10} {phase.line()}")
                        else:
                            m = measure(side.command(command), side.env(), log)
                        results[size][command][side.label].append(m)
                        print(
                            f"  {side.label:<8} {command:<9} {m.seconds:8.2f} s (CPU {m.cpu:6.2f} s)"
                            f" {m.peak_mb:7.0f} MB   load {m.load_before:4.1f} -> {m.load_after:4.1f}",
                            flush=True,
                        )
                        if command == "run" and repeat == 0:
                            jsonl = side.run_dir / "rounds.jsonl"
                            if jsonl.is_file() and count_lines(jsonl) != rounds:
                                raise RuntimeError(f"{side.label}: rounds.jsonl is not {rounds}")
            disk[size] = {s.label: rounds_files(s.run_dir) for s in sides}
            print_table(size, rounds, results, disk[size], labels)
            print_phases(size, phases)
            if size != sizes[-1]:  # free the disk before the next size
                import shutil

                shutil.rmtree(Path(tmp) / size)
    if args.json is not None:
        data = {
            "sizes": {s: len(PAIRS) * SIZES[s][0] * SIZES[s][1] for s in sizes},
            "measures": {
                size: {
                    c: {lab: [asdict(m) for m in ms] for lab, ms in by.items()}
                    for c, by in r.items()
                }
                for size, r in results.items()
            },
            "disk": disk,
        }
        args.json.write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
