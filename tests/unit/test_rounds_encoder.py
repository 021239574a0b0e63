"""The one rounds encoder: a batched game's lines are exactly the round-by-round engine's.

The reference is the round-by-round engine (`Engine.play_game` with the policies' own rules,
one orjson record per round), an independent route to the same lines. Games are long enough
for round indexes and cumulative payoffs to cross several digit counts; matrices cover the
exact-width fast path (all payoffs print with the same width), the padded fast path (they do
not), and the per-record fallback (negative or fractional payoffs).
"""

from __future__ import annotations

import io
import re
from typing import Any

import orjson
import pytest
from tests.support.configs import experiment, load, play_round_by_round, play_vectorized, policy

from pdbench.core.payoff import PayoffMatrix
from pdbench.core.types import Action, Attempt, Decision
from pdbench.runners.science.experiment import plan_games
from pdbench.storage.record.jsonl import RoundsEncoder, game_key
from pdbench.storage.schema import ROUND_FIELDS, SCHEMA_VERSION, RoundValues

STAMP = re.compile(rb'"timestamp_utc":"[^"]*"')
PAIRS = (("GTFT", "WSLS"), ("TFT", "RANDOM"), ("ALTERNATOR", "GRIM"))


@pytest.mark.parametrize(
    ("horizon", "matrix", "fast"),
    [
        ({"type": "fixed", "n_rounds": 1200}, None, True),
        ({"type": "geometric", "stop_prob": 0.01, "max_rounds": 700}, None, True),
        # Payoffs of different print widths ("12.0" vs "0.0"): the padded fast path.
        (
            {"type": "fixed", "n_rounds": 300},
            {"C": {"C": [3, 3], "D": [0, 12]}, "D": {"C": [12, 0], "D": [1, 1]}},
            True,
        ),
        # Negative and fractional payoffs: one orjson record per round.
        (
            {"type": "geometric", "stop_prob": 0.05, "max_rounds": 40},
            {"C": {"C": [3, 3], "D": [-0.5, 5.25]}, "D": {"C": [5.25, -0.5], "D": [0.1, 0.1]}},
            False,
        ),
    ],
)
def test_batched_lines_equal_round_by_round(
    horizon: dict[str, Any], matrix: dict | None, fast: bool
) -> None:
    game = {} if matrix is None else {"payoff_matrix": matrix}
    conditions = [
        # A short window keeps the round-by-round reference fast (these rules need one round).
        (f"{a}_vs_{b}", policy(a, history_window=2), policy(b, name=f"{b} (b)", history_window=2))
        for a, b in PAIRS
    ]
    loaded = load(experiment(conditions, horizon=horizon, replicates=2, noise=0.1, **game))
    encoder = RoundsEncoder(loaded.matrix())
    assert encoder.fast_path is fast
    plans = plan_games(loaded)
    references = play_round_by_round(loaded, plans)
    batch = play_vectorized(loaded, plans)
    for i, (plan, reference) in enumerate(zip(plans, references, strict=True)):
        key = game_key(
            "test", plan.condition, plan.replicate, plan.seed, plan_names(plan), plan.horizon
        )
        out = io.BytesIO()
        written = encoder.write_game(out, key, batch.game(i), "T")
        blob = out.getvalue()
        assert written == len(blob)
        assert blob.count(b"\n") == plan.n_rounds
        assert STAMP.sub(b"", blob) == STAMP.sub(b"", reference.lines)
        assert blob.endswith(b'"timestamp_utc":"T"}\n')
        assert encoder.game_bytes(key, batch.game(i), "T") == blob


def plan_names(plan: Any) -> tuple[str, str]:
    return plan.agents[0].name, plan.agents[1].name


def test_fast_path_only_for_non_negative_integer_payoffs() -> None:
    assert RoundsEncoder(PayoffMatrix()).fast_path
    assert not RoundsEncoder(PayoffMatrix(cd=(-1.0, 5.0), dc=(5.0, -1.0))).fast_path
    assert not RoundsEncoder(PayoffMatrix(cc=(2.5, 2.5))).fast_path


def test_record_fields_come_from_the_schema() -> None:
    from pdbench.core.horizon import GeometricHorizon

    key = game_key("r", "c", 2, 7, ("A", "B"), GeometricHorizon(0.1))
    values = RoundValues(0, "C", "D", "C", "C", 0.0, 5.0, 0.0, 5.0, False, True, None, 0.25, "t")
    record = orjson.loads(RoundsEncoder(PayoffMatrix()).round_line(key, values))
    assert tuple(record) == ROUND_FIELDS
    assert record["schema_version"] == SCHEMA_VERSION
    assert (record["fixed_n"], record["stop_prob"]) == (None, 0.1)
    assert record["agent_b_parse_failure"] is True
    assert (record["agent_a_p_cooperate"], record["agent_b_p_cooperate"]) == (None, 0.25)


@pytest.mark.parametrize(("prompts", "raw"), [(True, True), (False, True), (True, False)])
def test_llm_fields_follow_store_settings(prompts: bool, raw: bool) -> None:
    from pdbench.core.horizon import FixedHorizon

    key = game_key("r", "c", 0, 1, ("llm", "TFT"), FixedHorizon(3))
    values = RoundValues(0, "D", "C", "D", "C", 5.0, 0.0, 5.0, 0.0, True, False, None, None, "t")
    attempts = [Attempt(0, "abc", "maybe", False, "bad"), Attempt(1, "def", "hmm", False, "bad")]
    llm = Decision(Action.D, True, attempts, "SYSTEM", "ROUND")
    line = RoundsEncoder(PayoffMatrix(), store_prompts=prompts, store_raw=raw).round_line(
        key, values, (llm, Decision(Action.C))
    )
    record = orjson.loads(line)
    assert ("prompts" in record) is prompts
    if prompts:
        assert record["prompts"] == {"agent_a": {"system": "SYSTEM", "round": "ROUND"}}
    replies = record["raw_responses"]["agent_a"]
    assert [r["prompt_sha256"] for r in replies] == ["abc", "def"]
    assert [r["raw"] for r in replies] == (["maybe", "hmm"] if raw else [None, None])
    assert "agent_b" not in record["raw_responses"]  # a policy makes no calls
