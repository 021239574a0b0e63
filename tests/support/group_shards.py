"""A small groups config for the scale tests (shards and merge, Ray, budgets, the cache): a
vectorized policy group with noise, a talking group of mock LLM seats (invalid replies) and a
talking policy, and groups drawn from a pool of policies; two replicates of six rounds each, so
the full plan is, in order: policies 0, 1; talking 0, 1; strangers 0, 1 (plan indexes 0..5).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import yaml

REPO_CONFIGS = Path(__file__).resolve().parents[2] / "configs"
N_ROUNDS = 6
REPLICATES = 2
CONDITIONS = ("policies", "talking", "strangers")
PLAN = [(c, r) for c in CONDITIONS for r in range(REPLICATES)]  # by plan index
GROUP_TABLES = (
    "aggregates.parquet",
    "seats.parquet",
    "group_rounds.parquet",
    "group_conditional.parquet",
)


def llm_seat(persona: str, invalid_rate: float = 0.1) -> dict[str, Any]:
    """A mock LLM seat of the group prompts."""
    mock = {"invalid_rate": invalid_rate}
    return {"ref": "agents/llm_group.yaml", "overrides": {"persona": persona, "mock": mock}}


def write_group_config(
    root: Path, budget: dict[str, Any] | None = None, seed: int = 31, run_id: str = "gscale"
) -> Path:
    """root/cfg (a copy of configs/) with the groups config; its path."""
    cfg_dir = root / "cfg"
    if not cfg_dir.exists():
        shutil.copytree(REPO_CONFIGS, cfg_dir)
    body: dict[str, Any] = {
        "run": {
            "run_id": run_id,
            "seed": seed,
            "output_dir": str(root / "out-not-used"),
            "rounds_log": "jsonl",
            "budget": budget or {"max_calls": None, "max_tokens": None, "max_cost_usd": None},
        },
        "horizon": {"type": "fixed", "n_rounds": N_ROUNDS},
        "group_game": {"kind": "public_goods", "r": 2.5, "c": 1.0},
        "communication": {"mode": "every_round", "order": "round_robin"},
        "groups": {
            "replicates": REPLICATES,
            "conditions": [
                {
                    "name": "policies",
                    "seats": ["CC", "TFT", "ALLD", "WSLS", "RANDOM"],
                    "noise": 0.05,
                    "communication": {"mode": "none"},
                },
                {
                    "name": "talking",
                    "seats": [
                        llm_seat("cooperative"),
                        llm_seat("liar"),
                        {"type": "policy", "policy": "TFT", "talk": "honest"},
                        llm_seat("tit_for_tat"),
                    ],
                },
                {
                    "name": "strangers",
                    "pool": [
                        {"type": "policy", "policy": "CC", "name": "cc1"},
                        {"type": "policy", "policy": "CC", "name": "cc2"},
                        "ALLD",
                        "TFT",
                        "GRIM",
                    ],
                    "size": 3,
                    "communication": {"mode": "none"},
                },
            ],
        },
    }
    path = cfg_dir / "gscale.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def set_budget(path: Path, budget: dict[str, Any]) -> None:
    """Edit only run.budget of the config file."""
    body = yaml.safe_load(path.read_text(encoding="utf-8"))
    body["run"]["budget"] = budget
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON Lines file."""
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def rounds_without_timestamps(run_dir: Path) -> list[dict[str, Any]]:
    """rounds.jsonl's records in file order, without their timestamps."""
    return [
        {k: v for k, v in r.items() if k != "timestamp_utc"}
        for r in read_jsonl(run_dir / "rounds.jsonl")
    ]


def calls_facts(run_dir: Path) -> list[tuple[Any, ...]]:
    """What each call of llm_calls.jsonl was (game, seat, round, purpose, attempt, tokens),
    sorted: equal for runs that made the same calls, whatever their order and timing."""
    path = run_dir / "llm_calls.jsonl"
    if not path.is_file():
        return []
    keys = ("condition", "replicate", "agent", "round_index", "purpose", "attempt")
    keys += ("input_tokens", "output_tokens", "ok")
    return sorted(tuple(r.get(k) for k in keys) for r in read_jsonl(path))


def group_tables(run_dir: Path) -> dict[str, Any]:
    """The group tables of a run directory (pyarrow Tables by file name)."""
    return {name: pq.read_table(run_dir / name) for name in GROUP_TABLES}


def manifest(run_dir: Path) -> dict[str, Any]:
    """groups_manifest.json."""
    return json.loads((run_dir / "groups_manifest.json").read_text(encoding="utf-8"))
