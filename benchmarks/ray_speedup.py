"""The Ray backend: speed-up of a CPU-bound study from 1 to 2 workers, and the cluster-wide
concurrency limit measured at a server.

Run: `uv run python benchmarks/ray_speedup.py [--repetitions 10 --rounds 200 --repeat 3]`
(needs the `ray` and `axelrod` extras; offline: a local Ray instance, a local fake server).

1. In-process: a round-robin tournament of Axelrod-library strategies (played round by round in
   Python, so CPU-bound), run with `backend="local"` in this process, and on local Ray instances
   with `num_cpus=1` and `num_cpus=2`, each in a helper process (`--serve`) that keeps its
   instance and warm workers (one untimed warm-up run each). Runs are interleaved (local, 1, 2,
   local, ...) so that other load on the machine falls on all three alike; medians over
   `--repeat` runs; every run's matches.parquet is checked equal to the local one.
2. The whole command: `pdbench tournament CONFIG --backend ray` as a fresh process (which starts
   its own Ray instance, 1 or 2 CPUs via Ray's RAY_OVERRIDE_RESOURCES), beside `--backend local`,
   interleaved too.
3. Concurrency: 32 LLM-vs-LLM games (openai provider against a local fake OpenAI-compatible
   server with 50 ms latency, `max_concurrency: 4`) on Ray with 2 workers; the server records the
   most requests it was answering at once.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.support.openai_server: the fake server

from tests.support.openai_server import FakeOpenAIServer  # noqa: E402

from pdbench.runners.config.loader import load_config  # noqa: E402
from pdbench.runners.lifecycle.session import RunOptions  # noqa: E402
from pdbench.runners.start import start as start_run  # noqa: E402

STRATEGIES = [
    "axelrod:TitForTat",
    "axelrod:Grudger",
    "axelrod:Prober",
    "axelrod:FirstByDavis",
    "axelrod:FirstByJoss",
    "axelrod:FirstByShubik",
    "axelrod:FirstByTidemanAndChieruzzi",
    "axelrod:FirstByFeld",
    "axelrod:FirstByTullock",
    "axelrod:FirstBySteinAndRapoport",
]
KEY_ENV = "PDBENCH_BENCH_RAY_KEY"


def write_tournament(root: Path, repetitions: int, rounds: int) -> Path:
    """The CPU-bound study: every pair of STRATEGIES, `repetitions` matches of `rounds`."""
    root.mkdir(parents=True, exist_ok=True)
    body = {
        "run": {"run_id": "ray_speedup", "seed": 3, "output_dir": str(root / "unused")},
        "game": {"noise": 0.02},
        "horizon": {"type": "fixed", "n_rounds": rounds},
        "tournament": {"repetitions": repetitions, "players": STRATEGIES},
    }
    path = root / "tournament.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def timed_run(config: Path, out: Path, **options: Any) -> float:
    """Seconds for one in-process run of `config` into `out`."""
    loaded = load_config(config)
    start = time.perf_counter()
    start_run(loaded, RunOptions(output_dir=out, overwrite=True, use_cache=False, **options))
    return time.perf_counter() - start


def ray_init(num_cpus: int, temp: Path) -> Any:
    """A local Ray instance with `num_cpus` CPUs (offline, no dashboard)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    import ray

    ray.init(num_cpus=num_cpus, _temp_dir=str(temp), include_dashboard=False, logging_level=30)
    return ray


def same_matches(a: Path, b: Path) -> bool:
    import pyarrow.parquet as pq

    return pq.read_table(a / "matches.parquet").equals(pq.read_table(b / "matches.parquet"))


def serve(num_cpus: int, config: Path, out: Path) -> None:
    """`--serve N`: a Ray instance with N CPUs in this process, warmed up by one run; then one
    timed run per "run" line on stdin, its seconds printed after "@@ " (other output may come
    from Ray)."""
    ray = ray_init(num_cpus, Path(tempfile.mkdtemp(prefix="pdb", dir="/tmp")))
    try:
        first = timed_run(config, out, backend="ray")
        print(f"@@ ready {first:.4f}", flush=True)
        for line in sys.stdin:
            if line.strip() != "run":
                break
            print(f"@@ {timed_run(config, out, backend='ray'):.4f}", flush=True)
    finally:
        ray.shutdown()


def _answer(proc: subprocess.Popen[str]) -> str:
    """The next "@@ " line of a `--serve` process."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("@@ "):
            return line[3:].strip()
    raise SystemExit(f"the --serve process ended (exit {proc.wait()})")


def in_process(config: Path, work: Path, repeat: int) -> dict[str, float]:
    """Median seconds of in-process runs: the local backend (in this process) and Ray with 1
    and with 2 CPUs (each a warmed-up `--serve` process), interleaved run by run so that load
    from elsewhere on the machine falls on all three alike."""
    timed_run(config, work / "local")  # imports (axelrod) before anything is timed
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_ENABLE_UV_RUN_RUNTIME_ENV="0")
    servers = {
        cpus: subprocess.Popen(
            [sys.executable, __file__, "--serve", str(cpus), "--config", str(config)]
            + ["--out", str(work / f"ray{cpus}")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        for cpus in (1, 2)
    }
    times: dict[str, list[float]] = {"local": [], "ray1": [], "ray2": []}
    try:
        for cpus, proc in servers.items():
            first = float(_answer(proc).split()[1])
            print(f"  ray, num_cpus={cpus}: first run (starts the workers) {first:.2f} s")
        for _ in range(repeat):
            times["local"].append(timed_run(config, work / "local"))
            for cpus, proc in servers.items():
                assert proc.stdin is not None
                proc.stdin.write("run\n")
                proc.stdin.flush()
                times[f"ray{cpus}"].append(float(_answer(proc)))
    finally:
        for proc in servers.values():
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=120)
    medians = {label: statistics.median(values) for label, values in times.items()}
    for label, values in times.items():
        same = label == "local" or same_matches(work / "local", work / label)
        name = {"local": "local backend", "ray1": "ray, num_cpus=1", "ray2": "ray, num_cpus=2"}
        print(
            f"  {name[label]:22} median {medians[label]:7.2f} s   (runs "
            f"{', '.join(f'{t:.2f}' for t in values)}; matches equal to local: {same})",
            flush=True,
        )
    return medians


def whole_command(config: Path, work: Path, repeat: int) -> dict[str, float]:
    """Median wall seconds of `pdbench tournament ... --backend X` as a fresh process."""
    settings = (("local", "local", None), ("ray1", "ray", 1), ("ray2", "ray", 2))
    times: dict[str, list[float]] = {label: [] for label, _, _ in settings}
    for _ in range(repeat):  # interleaved, as in `in_process`
        for label, backend, cpus in settings:
            env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_ENABLE_UV_RUN_RUNTIME_ENV="0")
            if cpus is not None:
                env["RAY_OVERRIDE_RESOURCES"] = json.dumps({"CPU": cpus})
            command = [sys.executable, "-m", "pdbench.cli", "tournament", str(config)]
            command += ["-o", str(work / f"cli_{label}"), "--overwrite", "--no-cache"]
            command += ["--backend", backend]
            start = time.perf_counter()
            proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
            times[label].append(time.perf_counter() - start)
            if proc.returncode != 0:
                raise SystemExit(f"{' '.join(command)} failed: {proc.stderr.strip()[-500:]}")
    out = {label: statistics.median(values) for label, values in times.items()}
    for label, backend, cpus in settings:
        print(
            f"  pdbench tournament --backend {backend:5}"
            + (f" (Ray CPUs {cpus})" if cpus else "            ")
            + f"  median {out[label]:7.2f} s   (runs "
            + ", ".join(f"{t:.2f}" for t in times[label])
            + ")",
            flush=True,
        )
    return out


def peak_concurrency(work: Path, limit: int = 4) -> tuple[int, int]:
    """(peak requests in flight at the server, requests) for 32 LLM games on 2 Ray workers."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        os.environ.pop(name, None)
    os.environ[KEY_ENV] = "sk-bench-ray"
    ray = ray_init(2, Path(tempfile.mkdtemp(prefix="pdb", dir="/tmp")))
    try:
        with FakeOpenAIServer(latency_s=0.05) as server:
            shutil.copytree(REPO / "configs" / "agents", work / "peak" / "agents")
            shutil.copytree(REPO / "configs" / "prompts", work / "peak" / "prompts")

            def agent(persona: str) -> dict[str, Any]:
                overrides = {
                    "provider": "openai",
                    "model": "test-model",
                    "base_url": server.base_url,
                    "api_key_env": KEY_ENV,
                    "persona": persona,
                    "max_concurrency": limit,
                }
                return {"ref": "agents/llm_default.yaml", "overrides": overrides}

            body = {
                "run": {"run_id": "ray_peak", "seed": 1, "output_dir": str(work / "peak_out")},
                "horizon": {"type": "fixed", "n_rounds": 5},
                "experiment": {
                    "replicates": 4,
                    "conditions": [
                        {
                            "name": f"llm_{i}",
                            "agent_a": agent("tit_for_tat"),
                            "agent_b": agent("wsls"),
                        }
                        for i in range(8)
                    ],
                },
            }
            path = work / "peak" / "experiment.yaml"
            path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
            timed_run(path, work / "peak_out", backend="ray")
            return server.peak_in_flight, server.chat_count
    finally:
        ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=10, help="matches per pair")
    parser.add_argument("--rounds", type=int, default=200, help="rounds per match")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per setting")
    parser.add_argument("--skip-cli", action="store_true", help="skip the whole-command timing")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # internal: see serve()
    parser.add_argument("--config", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.config, args.out)
        return
    with tempfile.TemporaryDirectory(prefix="pdbench-ray-bench-") as tmp:
        work = Path(tmp)
        config = write_tournament(work, args.repetitions, args.rounds)
        n = len(STRATEGIES)
        matches = n * (n - 1) // 2 * args.repetitions
        print(
            f"study: Axelrod tournament, {n} strategies, {matches} matches of {args.rounds} "
            f"rounds ({os.cpu_count()} CPUs on this machine)"
        )
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        print("1. in process (median of", args.repeat, "runs, interleaved):")
        medians = in_process(config, work, args.repeat)
        print(
            f"   speed-up from 1 to 2 Ray workers: {medians['ray1'] / medians['ray2']:.2f}x; "
            f"2 workers vs the local backend: {medians['local'] / medians['ray2']:.2f}x"
        )
        if not args.skip_cli:
            print("2. the whole command, fresh process each (Ray start included), interleaved:")
            cli = whole_command(config, work, args.repeat)
            print(f"   speed-up from 1 to 2 Ray workers: {cli['ray1'] / cli['ray2']:.2f}x")
        print(f"load average now: {os.getloadavg()[0]:.2f} (2 would be this benchmark alone)")
        print("3. cluster-wide max_concurrency 4, 2 Ray workers, 32 LLM-vs-LLM games:")
        peak, requests = peak_concurrency(work)
        print(f"   peak concurrent requests at the server: {peak} (of {requests} requests)")


if __name__ == "__main__":
    main()
