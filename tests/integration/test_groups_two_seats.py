"""A group of two seats is today's pairwise game, byte for byte: the same config's conditions run
as an experiment and as groups (the 2x2 game as `kind: matrix`, and the linear PD, which is the
same game at N = 2) write the same rounds.jsonl for the same seed, timestamps aside."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from tests.support.cli import run_process

PAIRS = [("TFT", "WSLS"), ("GRIM", "RANDOM"), ("ALLD", "TFT"), ("WSLS", "WSLS"), ("ALLC", "GRIM")]


def _lines(path: Path) -> list[dict]:
    return [
        {k: v for k, v in json.loads(line).items() if k != "timestamp_utc"}
        for line in path.read_bytes().splitlines()
    ]


def _raw_without_timestamps(path: Path) -> list[bytes]:
    out = []
    for line in path.read_bytes().splitlines():
        head, _, tail = line.partition(b',"timestamp_utc":')
        out.append(head + tail[tail.index(b'"', 1) + 1 :])
    return out


TALK = {"mode": "every_round", "order": "alternate", "turns": 2}


@pytest.mark.parametrize(
    ("kind", "talk"), [("matrix", None), ("linear_pd", None), ("matrix", TALK)]
)
def test_two_seats_write_todays_records(tmp_path: Path, kind: str, talk: dict | None) -> None:
    # Without talk both play on their vectorized engines; with talk (policies announcing their
    # moves, a liar promising) both play round by round, messages recorded in each round.
    common: dict = {
        "horizon": {"type": "geometric", "stop_prob": 0.05, "max_rounds": 60},
        "game": {"noise": 0.05},
    }
    if talk is not None:
        common["communication"] = talk

    def seat(name: str, i: int) -> dict | str:
        if talk is None:
            return name
        rule = "always_promise" if name == "ALLD" else "honest"
        return {"type": "policy", "policy": name, "talk": rule}

    experiment = {
        "run": {
            "run_id": "same",
            "seed": 11,
            "output_dir": str(tmp_path / "pairs"),
            "rounds_log": "jsonl",
        },
        **common,
        "experiment": {
            "replicates": 4,
            "conditions": [
                {"name": f"{a}_{b}", "agent_a": seat(a, 0), "agent_b": seat(b, 1)} for a, b in PAIRS
            ],
        },
    }
    groups = {
        "run": {
            "run_id": "same",
            "seed": 11,
            "output_dir": str(tmp_path / "groups"),
            "rounds_log": "jsonl",
        },
        **common,
        "group_game": {"kind": kind},
        "groups": {
            "replicates": 4,
            "conditions": [
                {"name": f"{a}_{b}", "seats": [seat(a, 0), seat(b, 1)]} for a, b in PAIRS
            ],
        },
    }
    for name, body in (("pairs", experiment), ("groups", groups)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(body))
        done = run_process(["run", str(path)], tmp_path)
        assert done.returncode == 0, done.stderr
    pairs, grouped = tmp_path / "pairs" / "rounds.jsonl", tmp_path / "groups" / "rounds.jsonl"
    assert _raw_without_timestamps(grouped) == _raw_without_timestamps(pairs)
    records = _lines(grouped)
    assert all(("exchange" in r) == (talk is not None) for r in records)
    assert len(records) > 100 and {r["condition"] for r in records} == {
        f"{a}_{b}" for a, b in PAIRS
    }
