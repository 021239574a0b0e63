"""batch_to_jsonl writes the per-round engine's rounds.jsonl records (timestamps aside).

For several conditions the per-round engine (`play_game`) and the batch engine play the same
seeds; the batch's lines must parse to the same records with the same key order, and be
byte-identical once the timestamp values are removed.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from pdbench.core.batch import PolicySpec, play_batch, policy_spec
from pdbench.core.config import ExperimentConfig
from pdbench.core.horizon import FixedHorizon
from pdbench.core.payoff import PayoffMatrix
from pdbench.runners.registry import LoadedExperiment, build_agent
from pdbench.storage.fast_rounds import batch_to_jsonl, batch_to_jsonl_games

try:
    from pdbench.runners.game import plan_games, play_game
except ImportError:  # pragma: no cover
    from pdbench.runners.run_experiment import plan_games, play_game  # type: ignore[no-redef]

STAMP = re.compile(rb'"timestamp_utc":"[^"]*"')


def loaded_for(
    horizon: dict[str, Any], matrix: dict[str, Any] | None, noise: float
) -> LoadedExperiment:
    game: dict[str, Any] = {"noise": noise}
    if matrix:
        game["payoff_matrix"] = matrix
    conditions = [
        {
            "name": f"{a}_vs_{b}",
            "agent_a": {"type": "policy", "policy": a, "name": f"{a}-a"},
            "agent_b": {"type": "policy", "policy": b},
        }
        for a, b in (("GTFT", "WSLS"), ("TFT", "RANDOM"), ("ALTERNATOR", "GRIM"))
    ]
    config = ExperimentConfig.model_validate(
        {
            "run": {"run_id": "fast_rounds", "seed": 99, "output_dir": "unused"},
            "game": game,
            "horizon": horizon,
            "experiment": {"replicates": 4, "conditions": conditions},
        }
    )
    return LoadedExperiment(config, Path("x.yaml"), Path("."), config.model_dump(mode="json"))


@pytest.mark.parametrize(
    ("horizon", "matrix"),
    [
        ({"type": "fixed", "n_rounds": 30}, None),
        ({"type": "geometric", "stop_prob": 0.1}, None),
        (
            {"type": "geometric", "stop_prob": 0.05, "max_rounds": 40},
            {"C": {"C": [3, 3], "D": [-0.5, 5.25]}, "D": {"C": [5.25, -0.5], "D": [0.1, 0.1]}},
        ),
    ],
)
def test_lines_equal_per_round_engine(horizon: dict[str, Any], matrix: dict | None) -> None:
    loaded = loaded_for(horizon, matrix, noise=0.1)
    plans = plan_games(loaded)
    for cond in loaded.config.experiment.conditions:
        mine = [p for p in plans if p.condition.name == cond.name]
        agents = [
            (build_agent(loaded, cond.name, "agent_a"), build_agent(loaded, cond.name, "agent_b"))
            for _ in mine
        ]
        reference = [
            asyncio.run(play_game(p, a, loaded)).blob for p, a in zip(mine, agents, strict=True)
        ]
        specs = [policy_spec(cond.agent_a), policy_spec(cond.agent_b)]
        n = len(mine)
        result = play_batch(
            specs,
            np.zeros(n, int),
            np.ones(n, int),
            np.array([p.seed for p in mine], dtype=np.uint64),
            np.array([p.n_rounds for p in mine]),
            loaded.config.game.matrix(),
            0.1,
        )
        common = dict(
            run_id="fast_rounds",
            condition=cond.name,
            replicates=[p.replicate for p in mine],
            seeds=[p.seed for p in mine],
            agent_a_name=cond.agent_a.display_name(),
            agent_b_name=cond.agent_b.display_name(),
            horizon=mine[0].horizon,
        )
        stamps = [f"2024-01-0{i + 1}T00:00:00+00:00" for i in range(n)]
        blob = batch_to_jsonl(result, timestamps=stamps, **common)
        ref = b"".join(reference)
        ours = [orjson.loads(line) for line in blob.splitlines()]
        theirs = [orjson.loads(line) for line in ref.splitlines()]
        assert [list(r) for r in ours] == [list(r) for r in theirs]  # same keys, same order
        for record in ours + theirs:
            record.pop("timestamp_utc")
        assert ours == theirs
        assert STAMP.sub(b"", blob) == STAMP.sub(b"", ref)
        assert orjson.loads(blob.splitlines()[-1])["timestamp_utc"] == stamps[-1]
        per_game = batch_to_jsonl_games(result, timestamps="same", **common)
        assert [STAMP.sub(b"", g) for g in per_game] == [STAMP.sub(b"", r) for r in reference]


def test_game_selection_and_floats() -> None:
    specs = [PolicySpec("RANDOM", coop_prob=0.5)]
    result = play_batch(
        specs,
        np.zeros(3, int),
        np.zeros(3, int),
        np.array([5, 6, 7], dtype=np.uint64),
        np.array([3, 0, 2]),
        PayoffMatrix(),
        0.0,
    )
    kw = dict(
        run_id="r",
        condition="c",
        replicates=[0, 1, 2],
        seeds=[5, 6, 7],
        agent_a_name="A",
        agent_b_name="B",
        horizon=FixedHorizon(3),
        timestamps="t",
    )
    picked = batch_to_jsonl(result, games=[2, 0], **kw)
    records = [orjson.loads(line) for line in picked.splitlines()]
    assert [(r["replicate"], r["round_index"]) for r in records] == [
        (2, 0),
        (2, 1),
        (0, 0),
        (0, 1),
        (0, 2),
    ]
    assert all(isinstance(r["agent_a_payoff"], float) for r in records)
    assert b'"agent_a_payoff":3.0' in picked or b'"agent_a_payoff":0.0' in picked
    assert b'"fixed_n":3,"stop_prob":null' in picked
    assert batch_to_jsonl(result, games=[1], **kw) == b""
    assert batch_to_jsonl_games(result, **kw)[1] == b""
