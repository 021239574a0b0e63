"""RoundsEncoder writes exactly the per-round engine's rounds.jsonl bytes (timestamps aside).

The reference is the per-round engine itself (`play_game` with policy agents, records through
orjson), an independent route to the same lines; games are long enough for round indexes and
cumulative payoffs to cross several digit counts, and matrices cover both the exact-width path
(all payoffs print with the same width) and the padded path (they do not).
"""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pdbench.core.batch import play_batch, policy_spec
from pdbench.core.config import ExperimentConfig
from pdbench.core.payoff import PayoffMatrix
from pdbench.runners.game import plan_games, play_game
from pdbench.runners.registry import LoadedExperiment, build_agent
from pdbench.storage.jsonl_template import RoundsEncoder, supports

STAMP = re.compile(rb'"timestamp_utc":"[^"]*"')
PAIRS = (("GTFT", "WSLS"), ("TFT", "RANDOM"), ("ALLD", "ALLC"))


def loaded_for(horizon: dict[str, Any], matrix: dict[str, Any] | None) -> LoadedExperiment:
    game: dict[str, Any] = {"noise": 0.1}
    if matrix:
        game["payoff_matrix"] = matrix
    conditions = [
        {
            "name": f"{a}_vs_{b}",
            # A short window keeps the per-round reference fast (these rules need one round).
            "agent_a": {"type": "policy", "policy": a, "history_window": 2},
            "agent_b": {"type": "policy", "policy": b, "name": f"{b} (b)", "history_window": 2},
        }
        for a, b in PAIRS
    ]
    config = ExperimentConfig.model_validate(
        {
            "run": {"run_id": "encoder", "seed": 5, "output_dir": "unused"},
            "game": game,
            "horizon": horizon,
            "experiment": {"replicates": 2, "conditions": conditions},
        }
    )
    return LoadedExperiment(config, Path("x.yaml"), Path("."), config.model_dump(mode="json"))


@pytest.mark.parametrize(
    ("horizon", "matrix"),
    [
        ({"type": "fixed", "n_rounds": 1200}, None),
        ({"type": "geometric", "stop_prob": 0.01, "max_rounds": 700}, None),
        # Payoffs of different print widths ("12.0" vs "0.0"): the padded path.
        (
            {"type": "fixed", "n_rounds": 300},
            {"C": {"C": [3, 3], "D": [0, 12]}, "D": {"C": [12, 0], "D": [1, 1]}},
        ),
    ],
)
def test_encoder_bytes_equal_per_round_engine(horizon: dict[str, Any], matrix: dict | None) -> None:
    loaded = loaded_for(horizon, matrix)
    pay = loaded.config.game.matrix()
    assert supports(pay)
    encoder = RoundsEncoder(pay)
    for plan in plan_games(loaded):
        cond = plan.condition
        agents = (
            build_agent(loaded, cond.name, "agent_a"),
            build_agent(loaded, cond.name, "agent_b"),
        )
        reference = asyncio.run(play_game(plan, agents, loaded)).blob
        result = play_batch(
            [policy_spec(cond.agent_a), policy_spec(cond.agent_b)],
            np.array([0]),
            np.array([1]),
            np.array([plan.seed], dtype=np.uint64),
            np.array([plan.n_rounds]),
            pay,
            plan.noise,
        )
        base = {
            "run_id": "encoder",
            "condition": cond.name,
            "replicate": plan.replicate,
            "seed": plan.seed,
            "agent_a_name": cond.agent_a.display_name(),
            "agent_b_name": cond.agent_b.display_name(),
            "horizon_type": plan.horizon.type,
            "fixed_n": getattr(plan.horizon, "n_rounds", None),
            "stop_prob": getattr(plan.horizon, "stop_prob", None),
        }
        out = io.BytesIO()
        written = encoder.write_game(
            out, result.game(0), base=base, horizon=plan.horizon, timestamp="T"
        )
        assert written == len(out.getvalue())
        assert out.getvalue().count(b"\n") == plan.n_rounds
        assert STAMP.sub(b"", out.getvalue()) == STAMP.sub(b"", reference)
        assert out.getvalue().endswith(b'"timestamp_utc":"T"}\n')


def test_supports_only_non_negative_integer_payoffs() -> None:
    assert supports(PayoffMatrix())
    assert not supports(PayoffMatrix(cd=(-1.0, 5.0), dc=(5.0, -1.0)))
    assert not supports(PayoffMatrix(cc=(2.5, 2.5)))
