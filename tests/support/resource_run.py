"""Resource runs for the app's tests (issue 31): a commons and a public goods run made by
`pdbench run` (rule-based seats, offline, in this process), and talk added by hand to one game's
records (messages, reflections and a reading problem), as LLM seats would write them.

The commons run has conditions that collapse (`moderate`: five MODERATE seats, the lake shrinks
season by season; `greedy`: a GREEDY seat empties it in the first season) and one that lasts
(`sustainable`). Where a game collapses is read from its record by the tests, not assumed here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import yaml

from pdbench.storage.schema import ROUNDS_FILE


def commons_config(run_dir: Path) -> dict[str, Any]:
    """Two commons conditions, three games each, 12 seasons."""
    return {
        "run": {"run_id": "commons_ui", "seed": 3, "output_dir": str(run_dir)},
        "horizon": {"type": "fixed", "n_rounds": 12},
        "commons": {
            "replicates": 3,
            "conditions": [
                {"name": "sustainable", "seats": ["SUSTAINABLE"] * 5},
                {"name": "moderate", "seats": ["MODERATE"] * 5},
                {"name": "greedy", "seats": ["GREEDY", *["SUSTAINABLE"] * 4]},
            ],
        },
    }


def pgg_config(run_dir: Path) -> dict[str, Any]:
    """One public goods condition with five different seats, two games of 10 rounds."""
    return {
        "run": {"run_id": "pgg_ui", "seed": 3, "output_dir": str(run_dir)},
        "horizon": {"type": "fixed", "n_rounds": 10},
        "pgg": {
            "replicates": 2,
            "game": {"preset": "pgg_bench"},
            "conditions": [
                {
                    "name": "mixed",
                    "seats": [
                        "FULL_COOPERATOR",
                        "CONDITIONAL_COOPERATOR",
                        "PUNISHER",
                        "FREE_RIDER",
                        "ANTISOCIAL_PUNISHER",
                    ],
                }
            ],
        },
    }


def make_resource_run(base: Path, name: str, config: dict[str, Any]) -> Path:
    """Run `config` with `pdbench run` (in this process) into `base/data/runs/NAME`."""
    from tests.support.cli import run_uncaptured

    run_dir = base / "data" / "runs" / name
    config["run"]["output_dir"] = str(run_dir)
    path = base / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    code, err = run_uncaptured(["run", str(path), "-o", str(run_dir)])
    if code != 0:
        raise RuntimeError(f"pdbench run failed ({code}): {err.strip()[-400:]}")
    return run_dir


def game_records(run_dir: Path, condition: str, replicate: int) -> list[dict[str, Any]]:
    """One game's rounds.jsonl records, read directly, in order."""
    out = []
    for line in (run_dir / ROUNDS_FILE).read_bytes().splitlines():
        record = orjson.loads(line)
        if record["condition"] == condition and record["replicate"] == replicate:
            out.append(record)
    return sorted(out, key=lambda r: r["round_index"])


def add_talk(
    run_dir: Path,
    condition: str,
    replicate: int,
    messages: Mapping[int, Sequence[tuple[int, str]]],
    reflections: Mapping[int, Sequence[tuple[int, str]]] = {},  # noqa: B006 - read only
    problems: Mapping[tuple[int, int], Mapping[str, Any]] = {},  # noqa: B006 - read only
) -> None:
    """Rewrite one game's lines with messages ({"from", "text"}) and reflections by round
    index, and reading problems on decisions ((round index, seat) -> fields to set)."""
    lines = (run_dir / ROUNDS_FILE).read_bytes().splitlines()
    out = []
    for line in lines:
        record = orjson.loads(line)
        if record["condition"] == condition and record["replicate"] == replicate:
            t = record["round_index"]
            record["messages"] = [{"from": s, "text": x} for s, x in messages.get(t, [])]
            if "reflections" in record or reflections:
                record["reflections"] = [{"from": s, "text": x} for s, x in reflections.get(t, [])]
            for decision in record["decisions"]:
                decision.update(problems.get((t, decision["seat"]), {}))
        out.append(orjson.dumps(record))
    (run_dir / ROUNDS_FILE).write_bytes(b"\n".join(out) + b"\n")
