"""The resource games (issue 31) against groups, the same command, side by side: `pdbench run`
of a public goods run and of a commons run against a groups run of the same seats and rounds,
seat-rounds per second as a user waits for them (the whole process, command to summary).

Run: `uv run python benchmarks/resources.py` (from the repository root; about a minute).

Two comparisons, interleaved so both sides see the same load, medians of `--repeat`:

1. Mock LLM seats (five seats, the MockProvider, no talk, cache off): a `pgg` run (PGG-Bench's
   rules, punishment on: two calls a seat a round) and a `commons` run (a harvest and a
   reflection: two calls a seat a season; the seats are cooperative so the lake lasts) against a
   `groups` public goods run of the same seats (one call a seat a round). Calls per second is
   the fair unit here; seat-rounds per second is printed too.
2. Policies (five seats): a `pgg` run against a `groups` run (which the vectorized engine plays:
   the resource games are played round by round, so this shows what that costs).

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
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent


def llm(kind: str, persona: str) -> dict[str, Any]:
    return {"ref": f"agents/llm_{kind}.yaml", "overrides": {"persona": persona}}


def configs(tmp: Path, games: int, rounds: int) -> dict[str, tuple[Path, int]]:
    """name -> (config path, provider calls or 0); the configs sit in a copy of configs/ (refs
    stay under the config root)."""
    import shutil

    shutil.copytree(ROOT / "configs", tmp / "cfg")
    personas = ["cooperative", "tit_for_tat", "cooperative", "exploitative", "liar"]
    run = {"seed": 1, "store_prompts": False, "store_raw_responses": False}
    horizon = {"type": "fixed", "n_rounds": rounds}
    bodies: dict[str, tuple[dict[str, Any], int]] = {
        "pgg_llm": (
            {
                "pgg": {
                    "replicates": games,
                    "game": {"preset": "pgg_bench"},
                    "conditions": [{"name": "c", "seats": [llm("pgg", p) for p in personas]}],
                }
            },
            games * rounds * 5 * 2,
        ),
        "commons_llm": (
            {
                "commons": {
                    "replicates": games,
                    "conditions": [{"name": "c", "seats": [llm("commons", "cooperative")] * 5}],
                }
            },
            0,  # counted from the run's calls (a lake that collapses ends early)
        ),
        "groups_llm": (
            {
                "group_game": {"kind": "public_goods", "r": 3.0},
                "groups": {
                    "replicates": games,
                    "conditions": [
                        {
                            "name": "c",
                            "seats": [
                                {
                                    "ref": "agents/llm_group.yaml",
                                    "overrides": {"persona": p},
                                }
                                for p in personas
                            ],
                        }
                    ],
                },
            },
            games * rounds * 5,
        ),
        "pgg_policies": (
            {
                "pgg": {
                    "replicates": games * 20,
                    "game": {"preset": "pgg_bench"},
                    "conditions": [
                        {
                            "name": "c",
                            "seats": [
                                "FULL_COOPERATOR",
                                "CONDITIONAL_COOPERATOR",
                                "PUNISHER",
                                "FREE_RIDER",
                                "ANTISOCIAL_PUNISHER",
                            ],
                        }
                    ],
                }
            },
            0,
        ),
        "groups_policies": (
            {
                "group_game": {"kind": "public_goods", "r": 3.0},
                "groups": {
                    "replicates": games * 20,
                    "conditions": [{"name": "c", "seats": ["CC", "TFT", "WSLS", "ALLD", "GRIM"]}],
                },
            },
            0,
        ),
    }
    out = {}
    for name, (body, calls) in bodies.items():
        body["run"] = {"run_id": name, "output_dir": str(tmp / name), **run}
        if name.startswith("groups"):
            body["run"]["rounds_log"] = "jsonl"
        body["horizon"] = horizon
        path = tmp / "cfg" / f"{name}.yaml"
        path.write_text(yaml.safe_dump(body, sort_keys=False))
        out[name] = (path, calls)
    return out


def timed(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pdbench.cli", "run", str(path), "--overwrite", "--no-cache"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def seat_rounds(run_dir: Path) -> int:
    """Seat-rounds actually played (a commons ends at its collapse), from rounds.jsonl."""
    import json

    total = 0
    for line in (run_dir / "rounds.jsonl").read_bytes().splitlines():
        record = json.loads(line)
        seats = record.get("seats")
        total += len(seats) if seats else 5
    return total


def calls_made(run_dir: Path) -> int:
    path = run_dir / "llm_calls.jsonl"
    return len(path.read_bytes().splitlines()) if path.is_file() else 0


def main() -> None:
    """Print the medians side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        cfgs = configs(tmp, args.games, args.rounds)
        times: dict[str, list[float]] = {name: [] for name in cfgs}
        for _ in range(args.repeat):
            for name, (path, _) in cfgs.items():
                times[name].append(timed(path))
        print(f"load average: {os.getloadavg()[0]:.1f}; medians of {args.repeat}")
        print(f"{'run':<16} {'seconds':>8} {'seat-rounds/s':>14} {'calls/s':>9}")
        for name, (_, _) in cfgs.items():
            wall = statistics.median(times[name])
            played = seat_rounds(tmp / name)
            calls = calls_made(tmp / name)
            rate = f"{calls / wall:9.0f}" if calls else f"{'-':>9}"
            print(f"{name:<16} {wall:8.2f} {played / wall:14.0f} {rate}")


if __name__ == "__main__":
    main()
