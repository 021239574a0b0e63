"""The synchronous engine (`pdbench.runners.engine.direct`) against two independent references.

1. The round-by-round engine (`Engine.play_game`, asyncio, observations, the adapter's
   `choose`): for the same plan the synchronous engine must give the same moves, payoffs and
   rounds.jsonl lines (timestamps aside), with noise, stochastic strategies, a meta player, a
   transformed strategy, Axelrod strategies against policies and a geometric horizon with an
   asymmetric payoff matrix; and a whole tournament run through the CLI's runner must equal
   the tournament played round by round.
2. The Axelrod library's own `axelrod.Match`: without noise, two Axelrod players started by
   the adapter with the seeds Match would give them play Match's moves, stochastic ones
   included (so seeding a generator at its first use changes no draw), and a dual-transformed
   strategy (which replaces its history object while it moves) too.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from tests.support.configs import (
    RUN,
    in_memory_engine,
    load,
    play_round_by_round,
)

from pdbench.agents.axelrod_adapter import (
    AxelrodAgent,
    _memoized_inspect,
    import_axelrod,
    play_axelrod_pair,
    playable_strategies,
)
from pdbench.agents.factory import AgentSpec
from pdbench.core.config import AxelrodAgentConfig, BudgetConfig, PolicyAgentConfig
from pdbench.core.horizon import FixedHorizon, GeometricHorizon
from pdbench.core.payoff import PayoffMatrix
from pdbench.runners.engine.broker import Budget, CallBroker
from pdbench.runners.engine.direct import noise_flips, play_direct
from pdbench.runners.engine.engine import Engine, GamePlan
from pdbench.runners.lifecycle.session import RunOptions
from pdbench.runners.science.tournament import plan_matches, play_tournament, run_tournament
from pdbench.storage.record.jsonl import RoundsEncoder

axl = import_axelrod()
REPO = Path(__file__).resolve().parents[2]
TIMESTAMP = re.compile(rb'"timestamp_utc":"[^"]*"')


def axelrod(name: str) -> AgentSpec:
    return AgentSpec(AxelrodAgentConfig(type="axelrod", strategy=name))


def policy(key: str, **extra: Any) -> AgentSpec:
    return AgentSpec(PolicyAgentConfig(type="policy", policy=key, **extra))


def direct(plan: GamePlan, matrix: PayoffMatrix) -> dict[str, np.ndarray]:
    """One plan through the synchronous engine, with the agents the engine would make."""
    engine = in_memory_engine()
    agents = tuple(engine._agent(plan, side, None) for side in (0, 1))
    return play_direct(
        (agents[0], agents[1]),  # type: ignore[arg-type]
        [spec.view(plan.horizon, plan.n_rounds) for spec in plan.agents],
        seed=plan.seed,
        n_rounds=plan.n_rounds,
        noise=plan.noise,
        horizon_type=plan.horizon.type,
        matrix=matrix,
    )


PAIRS = [
    ("Random", "Prober"),  # stochastic against deterministic
    ("ZDGTFT2", "GTFT"),  # two stochastic memory-one players
    ("FirstByJoss", "Gradual"),
    ("FirstByTidemanAndChieruzzi", "BackStabber"),  # transformed class; reads the length
    ("Calculator", "SecondByHarrington"),  # own set_seed; stochastic and length-aware
    ("MetaMajorityMemoryOne", "OmegaTFT"),  # a meta player (its own set_seed and update)
    ("Random", "Random"),
]


@pytest.mark.parametrize(("a", "b"), PAIRS)
@pytest.mark.parametrize("noise", [0.0, 0.1])
def test_axelrod_pairs_equal_the_round_by_round_engine(a: str, b: str, noise: float) -> None:
    plan = GamePlan(
        0, "a_vs_b", 0, (axelrod(a), axelrod(b)), 987 + len(a), FixedHorizon(80), noise, 80
    )
    (old,) = play_round_by_round(None, [plan])
    new = direct(plan, PayoffMatrix())
    assert new["played_a"].tolist() == old.outcome.a_coop.tolist()
    assert new["played_b"].tolist() == old.outcome.b_coop.tolist()
    assert new["payoffs_a"].tolist() == old.outcome.a_payoffs.tolist()
    assert new["payoffs_b"].tolist() == old.outcome.b_payoffs.tolist()
    if noise:  # the moves were flipped somewhere, and intended moves differ from played ones
        assert (new["played_a"] != new["intended_a"]).any() or (
            new["played_b"] != new["intended_b"]
        ).any()


MATRIX = PayoffMatrix(cc=(3.0, 2.5), cd=(0.0, 6.0), dc=(4.0, 0.5), dd=(1.0, 1.5))


def engine_for(matrix: PayoffMatrix) -> Engine:
    """An in-memory engine that encodes records, for this payoff matrix."""
    return Engine(
        run_id="test",
        matrix=matrix,
        broker=CallBroker(None, Budget(BudgetConfig()), None, 8),
        encoder=RoundsEncoder(matrix),
        writer=None,
        on_result=lambda result: None,
    )


@pytest.mark.parametrize(
    ("spec_a", "spec_b"),
    [
        (axelrod("Gradual"), axelrod("Random")),
        (axelrod("Prober"), policy("GTFT")),  # an Axelrod player fed rounds, a policy observing
        (policy("WSLS"), axelrod("SecondByHarrington")),
        (policy("TF2T", history_window=1, name="tf2t-w1"), policy("TFT")),  # not batchable
    ],
)
def test_logged_lines_equal_the_round_by_round_engine(spec_a: AgentSpec, spec_b: AgentSpec) -> None:
    # Unknown length (geometric horizon) and an asymmetric matrix: each side's Game and
    # match length come from its own seat, as in the observation it would be shown.
    horizon = GeometricHorizon(stop_prob=0.03, max_rounds=150)
    plan = GamePlan(3, "x_vs_y", 1, (spec_a, spec_b), 4242, horizon, 0.1, 90, True)
    assert not plan.batchable and not plan.has_llm
    engine = engine_for(MATRIX)
    agents = tuple(engine._agent(plan, side, None) for side in (0, 1))
    old = asyncio.run(engine.play_game(plan, (agents[0], agents[1])))
    arrays = direct(plan, MATRIX)
    new_lines = engine.encoder.game_bytes(engine._key(plan), arrays, "t")
    assert new_lines.count(b"\n") == 90
    assert TIMESTAMP.sub(b"", new_lines) == TIMESTAMP.sub(b"", old.lines)
    assert arrays["played_a"].tolist() == old.outcome.a_coop.tolist()


def test_a_tournament_equals_the_round_by_round_engine(tmp_path: Path) -> None:
    data = {
        "run": {**RUN, "output_dir": str(tmp_path / "run")},
        "game": {"noise": 0.05},
        "horizon": {"type": "fixed", "n_rounds": 30},
        "tournament": {
            "players": [
                "axelrod:TitForTat",
                "axelrod:Random",
                "axelrod:Gradual",
                "TFT",
                {"type": "policy", "policy": "TF2T", "history_window": 1, "name": "tf2t-w1"},
            ],
            "repetitions": 2,
            "self_play": True,
            "log_rounds": True,
        },
    }
    loaded = load(data, tmp_path)
    result = run_tournament(loaded, RunOptions(output_dir=tmp_path / "run"))
    plans = plan_matches(loaded)
    slow = [p for p in plans if not p.batchable]
    assert slow and all(not p.has_llm for p in slow)
    old = {r.plan.index: r for r in play_round_by_round(loaded, slow)}
    lines = (tmp_path / "run" / "rounds.jsonl").read_bytes().splitlines(keepends=True)
    by_game: dict[tuple[str, int], list[bytes]] = {}
    for line in lines:
        record = yaml.safe_load(line)  # JSON is YAML
        by_game.setdefault((record["condition"], record["replicate"]), []).append(line)
    for plan in slow:
        written = TIMESTAMP.sub(b"", b"".join(by_game[plan.key]))
        assert written == TIMESTAMP.sub(b"", old[plan.index].lines), plan.key
        row = plan.index  # matches.parquet has one row per plan, in plan order
        assert result.matches["score_a"][row] == old[plan.index].outcome.totals[0]
        assert result.matches["score_b"][row] == old[plan.index].outcome.totals[1]
    in_memory = play_tournament(loaded)
    assert in_memory.leaderboard == result.leaderboard


def match_seeds_for(players: tuple[Any, Any], seed: int) -> list[int]:
    """The seeds `axelrod.Match(..., seed=seed).play()` gives its players (stochastic ones draw
    one each from the match's generator, in order; deterministic ones get none: 0 here)."""
    generator = axl.RandomGenerator(seed=seed)
    stochastic = axl.Classifiers["stochastic"]
    return [int(generator.random_seed_int()) if stochastic(p) else 0 for p in players]


def adapter_pair(cls_a: type, cls_b: type, turns: int, seeds: list[int]) -> list[tuple[bool, bool]]:
    """Moves of two adapter agents (of these classes, with these seeds) via play_axelrod_pair."""
    agents = []
    for cls, seed in zip((cls_a, cls_b), seeds, strict=True):
        agent = AxelrodAgent("TitForTat")
        agent.cls = cls
        agent.reset(seed)
        agent.start(PayoffMatrix(), turns, linked=True)
        agents.append(agent)
    no_noise = [False] * turns
    _, _, played_a, played_b = play_axelrod_pair(agents[0], agents[1], no_noise, no_noise)
    return list(zip(played_a, played_b, strict=True))


MATCH_PAIRS = [
    ("Prober", "Gradual"),
    ("FirstByTidemanAndChieruzzi", "BackStabber"),
    ("OmegaTFT", "Alternator"),
    ("Random", "TitForTat"),
    ("ZDGTFT2", "Alternator"),
    ("Calculator", "SecondByHarrington"),
    ("MetaMajorityMemoryOne", "Random"),
]


@pytest.mark.parametrize(("a", "b"), MATCH_PAIRS)
def test_axelrod_pairs_play_axelrods_own_match(a: str, b: str) -> None:
    turns = 120
    for match_seed in (3, 17):
        players = (getattr(axl, a)(), getattr(axl, b)())
        seeds = match_seeds_for(players, match_seed)
        match = axl.Match(players, turns=turns, seed=match_seed)
        expected = [(x == axl.Action.C, y == axl.Action.C) for x, y in match.play()]
        assert adapter_pair(getattr(axl, a), getattr(axl, b), turns, seeds) == expected, (
            a,
            b,
            match_seed,
        )


def test_a_dual_strategy_replacing_its_history_is_read_live() -> None:
    # The dual transformer swaps in a new history object on every move: the opponent's
    # stand-in must read the current one, or Gradual would stop seeing the dual's moves.
    dual = axl.strategy_transformers.DualTransformer()(axl.Prober)
    players = (axl.Gradual(), dual())
    match = axl.Match(players, turns=100)
    expected = [(x == axl.Action.C, y == axl.Action.C) for x, y in match.play()]
    got = adapter_pair(axl.Gradual, dual, 100, [0, 0])
    assert got == expected
    assert len({b for _, b in got}) == 2  # both moves occur: the test can tell stale from live


def test_noise_flips_are_the_round_by_round_draws() -> None:
    from pdbench.core.rng import Purpose, counter_uniform

    for seed, noise in ((5, 0.05), (2**62 + 7, 0.3), (9, 0.0)):
        expected = [
            noise > 0 and counter_uniform(seed, r, Purpose.NOISE) < noise for r in range(300)
        ]
        assert noise_flips(seed, 300, noise).tolist() == expected


def test_memoized_source_changes_no_classification() -> None:
    plain = axl.FirstByTidemanAndChieruzzi().classifier
    with _memoized_inspect():
        memo = [axl.FirstByTidemanAndChieruzzi().classifier for _ in range(2)]
    assert memo[0] == memo[1] == plain
    made_now = type("MadeAtRunTime", (), {})
    import inspect

    for _ in range(2):  # the OSError of a class without source is kept and raised again
        with _memoized_inspect(), pytest.raises(OSError):
            inspect.getsource(made_now)


def test_library_config_lists_the_librarys_short_run_time_strategies() -> None:
    playable = set(playable_strategies())
    assert "Darwin" not in playable and "TitForTat" in playable
    expected = [
        f"axelrod:{cls.__name__}"
        for cls in axl.short_run_time_strategies
        if cls.__name__ in playable
    ]
    data = yaml.safe_load((REPO / "configs" / "axelrod_library.yaml").read_text(encoding="utf-8"))
    assert data["tournament"]["players"] == expected
