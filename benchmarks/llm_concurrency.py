"""How well LLM calls overlap, and how much the response cache saves.

Builds a temporary experiment: N conditions of one MockProvider agent (`latency_ms` per call,
`invalid_rate: 0`, so the number of calls is exact: conditions x replicates x rounds) against a
policy, and runs it in-process (`load_config` + `run_experiment`):

  1. concurrency 1 with a fresh cache dir, which it fills;
  2. concurrency 8 and 32 without the cache (`use_cache=False`);
  3. concurrency 32 again with the cache of run 1: no provider call at all.

For each it prints the provider calls (from the manifest's usage totals), the wall time, the ideal
time `calls x latency / concurrency`, and wall / ideal. `--concurrency` bounds calls in flight;
games in flight may be 4x that (1 at concurrency 1), and a game's rounds are sequential, so a run
also cannot beat `ceil(games / games_in_flight) x rounds x latency`; the "bound" column is the
larger of that and the ideal.

    uv run python benchmarks/llm_concurrency.py [--conditions 10 --replicates 4 --rounds 25]
        [--latency-ms 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from pdbench.runners.config.loader import load_config
from pdbench.runners.lifecycle.session import RunOptions
from pdbench.runners.science.experiment import run_experiment

REPO = Path(__file__).resolve().parents[1]

PERSONAS = ("cooperative", "exploitative", "tit_for_tat", "grim_trigger", "generous_tft", "wsls")
POLICIES = ("TFT", "ALLD", "GRIM", "WSLS", "ALLC", "GTFT")


def write_experiment(
    root: Path,
    *,
    conditions: int,
    replicates: int,
    rounds: int,
    latency_ms: float,
    max_concurrency: int,
    run_id: str = "llm_concurrency",
) -> Path:
    """A copy of configs/ in root plus the benchmark experiment; returns the experiment path."""
    cfg_dir = root / "cfg"
    if not cfg_dir.exists():
        shutil.copytree(REPO / "configs", cfg_dir)
    conds = []
    for i in range(conditions):
        persona, policy = PERSONAS[i % len(PERSONAS)], POLICIES[i % len(POLICIES)]
        conds.append(
            {
                "name": f"LLM{i:02d}_{persona}_vs_{policy}",
                "agent_a": {
                    "ref": "agents/llm_default.yaml",
                    "overrides": {
                        "persona": persona,
                        "max_concurrency": max_concurrency,
                        "mock": {"invalid_rate": 0.0, "latency_ms": latency_ms},
                    },
                },
                "agent_b": {"ref": "agents/policies.yaml", "overrides": {"policy": policy}},
            }
        )
    body = {
        "run": {
            "run_id": run_id,
            "seed": 7,
            "output_dir": str(root / "unused"),
            "store_prompts": True,
            "store_raw_responses": True,
        },
        "horizon": {"type": "fixed", "n_rounds": rounds},
        "experiment": {"replicates": replicates, "conditions": conds},
    }
    path = cfg_dir / f"{run_id}.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def timed_run(
    loaded: Any, out: Path, *, concurrency: int, cache_dir: Path, use_cache: bool
) -> tuple[float, dict[str, Any]]:
    """(wall seconds, usage totals) of one run into a fresh output dir."""
    start = time.perf_counter()
    summary = run_experiment(
        loaded,
        RunOptions(
            output_dir=out, concurrency=concurrency, cache_dir=cache_dir, use_cache=use_cache
        ),
    )
    wall = time.perf_counter() - start
    assert summary.manifest["status"] == "completed"
    return wall, summary.manifest["usage"]["total"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conditions", type=int, default=10)
    parser.add_argument("--replicates", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--max-concurrency", type=int, default=64, help="per provider")
    parser.add_argument(
        "--concurrency", default="8,32", help="uncached runs after the first run (comma list)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="repeats of the c>1 and cached runs")
    parser.add_argument(
        "--first-concurrency",
        type=int,
        default=1,
        help="concurrency of the first run, which fills the cache (default 1)",
    )
    args = parser.parse_args(argv)

    games = args.conditions * args.replicates
    expected_calls = games * args.rounds
    latency = args.latency_ms / 1000.0
    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    top = max(levels + [1])

    with tempfile.TemporaryDirectory(prefix="pdbench-bench-") as tmp:
        root = Path(tmp)
        config = write_experiment(
            root,
            conditions=args.conditions,
            replicates=args.replicates,
            rounds=args.rounds,
            latency_ms=args.latency_ms,
            max_concurrency=args.max_concurrency,
        )
        loaded = load_config(config, "experiment")
        # Warm-up (imports, first-run costs), not timed.
        warm_cfg = write_experiment(
            root,
            conditions=1,
            replicates=1,
            rounds=2,
            latency_ms=0,
            max_concurrency=1,
            run_id="warmup",
        )
        run_experiment(
            load_config(warm_cfg, "experiment"),
            RunOptions(output_dir=root / "warm", cache_dir=root / "wc", use_cache=False),
        )

        print(
            f"experiment: {args.conditions} conditions x {args.replicates} replicates x "
            f"{args.rounds} rounds = {games} games, {expected_calls} LLM calls; MockProvider "
            f"latency {args.latency_ms:g} ms, max_concurrency {args.max_concurrency}"
        )
        header = (
            f"{'run':<34} {'calls':>6} {'cached':>6} {'wall s':>8} {'ideal s':>8} "
            f"{'wall/ideal':>10} {'bound s':>8} {'wall/bound':>10}"
        )
        print(header)
        print("-" * len(header))

        def report(label: str, walls: list[float], usage: dict[str, Any], c: int) -> float:
            calls = int(usage.get("llm_calls", 0))
            cached = int(usage.get("cached_calls", 0))
            wall = statistics.median(walls)
            ideal = calls * latency / c
            in_flight = 1 if c <= 1 else 4 * c
            waves = math.ceil(games / in_flight) * args.rounds * latency
            bound = max(waves, calls * latency / c) if calls else 0.0
            ratio = f"{wall / ideal:10.2f}" if ideal else f"{'-':>10}"
            bratio = f"{wall / bound:10.2f}" if bound else f"{'-':>10}"
            runs = f" (median of {len(walls)})" if len(walls) > 1 else ""
            print(
                f"{label + runs:<34} {calls:>6} {cached:>6} {wall:8.3f} {ideal:8.3f} {ratio} "
                f"{bound:8.3f} {bratio}"
            )
            return wall

        cache = root / "cache"
        c1 = args.first_concurrency
        wall1, usage1 = timed_run(
            loaded, root / "first", concurrency=c1, cache_dir=cache, use_cache=True
        )
        assert usage1["llm_calls"] == expected_calls, usage1
        first = report(f"c={c1} (fills cache)", [wall1], usage1, c1)

        uncached: dict[int, float] = {}
        for c in levels:
            walls, usage = [], {}
            for i in range(args.repeat):
                wall, usage = timed_run(
                    loaded, root / f"c{c}_{i}", concurrency=c, cache_dir=cache, use_cache=False
                )
                assert usage["llm_calls"] == expected_calls, usage
                walls.append(wall)
            uncached[c] = report(f"c={c} (no cache)", walls, usage, c)

        walls, usage = [], {}
        for i in range(args.repeat):
            wall, usage = timed_run(
                loaded, root / f"cached_{i}", concurrency=top, cache_dir=cache, use_cache=True
            )
            walls.append(wall)
        cached_wall = report(f"c={top} cached re-run", walls, usage, top)
        provider_calls = int(usage.get("llm_calls", 0))
        print()
        print(
            f"cached re-run: {provider_calls} provider calls, {usage.get('cached_calls', 0)} from cache"
        )
        print(f"cached re-run speed-up vs the first (c={c1}) run: {first / cached_wall:8.1f}x")
        if top in uncached:
            print(
                f"cached re-run speed-up vs the uncached c={top} run: {uncached[top] / cached_wall:8.1f}x"
            )
        return 0 if provider_calls == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
