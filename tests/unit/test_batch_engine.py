"""The vectorized engine plays exactly like the per-round engine (`play_game` with PolicyAgents).

Every ordered pair of the ten built-in policies is one condition; all of a scenario's games run in
ONE batch (mixed policy pairs), and each game's intended moves, played moves and payoffs must be
identical to the per-round engine's for the same seeds: with noise 0.05, with a geometric horizon,
without noise, and with non-default parameters and payoffs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from pdbench.core.batch import (
    BATCH_POLICY_MEMORY,
    PolicySpec,
    is_batchable,
    play_batch,
    policy_spec,
)
from pdbench.core.config import ExperimentConfig, LLMAgentConfig, PolicyAgentConfig
from pdbench.core.payoff import PayoffMatrix
from pdbench.runners.registry import LoadedExperiment, build_agent

try:  # the per-round engine moved from run_experiment to game; accept either
    from pdbench.runners.game import plan_games, play_game
except ImportError:  # pragma: no cover
    from pdbench.runners.run_experiment import plan_games, play_game  # type: ignore[no-redef]

POLICIES = ["ALLC", "ALLD", "TFT", "GRIM", "GTFT", "WSLS", "RANDOM", "STFT", "TF2T", "ALTERNATOR"]


def experiment(
    horizon: dict[str, Any],
    noise: float,
    replicates: int,
    params: dict[str, Any] | None = None,
    matrix: dict[str, Any] | None = None,
    names: list[str] = POLICIES,
) -> LoadedExperiment:
    def agent(name: str) -> dict[str, Any]:
        return {"type": "policy", "policy": name, "params": params or {}}

    game: dict[str, Any] = {"noise": noise}
    if matrix is not None:
        game["payoff_matrix"] = matrix
    config = ExperimentConfig.model_validate(
        {
            "run": {"run_id": "batch_test", "seed": 4242, "output_dir": "unused"},
            "game": game,
            "horizon": horizon,
            "experiment": {
                "replicates": replicates,
                "conditions": [
                    {"name": f"{a}_vs_{b}", "agent_a": agent(a), "agent_b": agent(b)}
                    for a in names
                    for b in names
                ],
            },
        }
    )
    return LoadedExperiment(config, Path("test.yaml"), Path("."), config.model_dump(mode="json"))


def per_round_records(loaded: LoadedExperiment) -> tuple[list[Any], list[list[dict]]]:
    plans = plan_games(loaded)

    async def play_all() -> list[Any]:
        out = []
        for plan in plans:
            agents = (
                build_agent(loaded, plan.condition.name, "agent_a"),
                build_agent(loaded, plan.condition.name, "agent_b"),
            )
            out.append(await play_game(plan, agents, loaded))
        return out

    results = asyncio.run(play_all())
    return plans, [[orjson.loads(line) for line in r.blob.splitlines()] for r in results]


def batch_for(loaded: LoadedExperiment, plans: list[Any]) -> Any:
    specs: list[PolicySpec] = []
    index: dict[PolicySpec, int] = {}

    def spec_id(agent: PolicyAgentConfig) -> int:
        spec = policy_spec(agent)
        if spec not in index:
            index[spec] = len(specs)
            specs.append(spec)
        return index[spec]

    pa = np.array([spec_id(p.condition.agent_a) for p in plans])
    pb = np.array([spec_id(p.condition.agent_b) for p in plans])
    seeds = np.array([p.seed for p in plans], dtype=np.uint64)
    lengths = np.array([p.n_rounds for p in plans])
    noise = np.array([p.noise for p in plans])
    return play_batch(specs, pa, pb, seeds, lengths, loaded.config.game.matrix(), noise)


def assert_identical(loaded: LoadedExperiment) -> None:
    plans, records = per_round_records(loaded)
    result = batch_for(loaded, plans)
    for i, (plan, recs) in enumerate(zip(plans, records, strict=True)):
        game = result.game(i)
        where = f"{plan.condition.name} replicate {plan.replicate}"
        assert int(result.lengths[i]) == len(recs) == plan.n_rounds, where
        for key, field in (
            ("played_a", "agent_a_action"),
            ("played_b", "agent_b_action"),
            ("intended_a", "agent_a_intended_action"),
            ("intended_b", "agent_b_intended_action"),
        ):
            assert game[key].tolist() == [r[field] == "C" for r in recs], f"{where}: {key}"
        assert game["payoffs_a"].tolist() == [r["agent_a_payoff"] for r in recs], where
        assert game["payoffs_b"].tolist() == [r["agent_b_payoff"] for r in recs], where
    # Beyond each game's length: no moves, no payoffs.
    beyond = np.arange(result.played_a.shape[1])[None, :] >= result.lengths[:, None]
    assert not result.played_a[beyond].any() and not result.payoffs_b[beyond].any()


def test_all_pairs_fixed_horizon_with_noise() -> None:
    assert_identical(experiment({"type": "fixed", "n_rounds": 30}, noise=0.05, replicates=3))


def test_all_pairs_geometric_horizon_with_noise() -> None:
    loaded = experiment({"type": "geometric", "stop_prob": 0.05}, noise=0.05, replicates=3)
    assert len({p.n_rounds for p in plan_games(loaded)}) > 10  # lengths really vary
    assert_identical(loaded)


def test_all_pairs_without_noise() -> None:
    assert_identical(experiment({"type": "fixed", "n_rounds": 25}, noise=0.0, replicates=2))


def test_parameters_and_payoffs() -> None:
    # Non-default GTFT generosity, WSLS threshold and RANDOM probability; a matrix whose
    # Nowak-Sigmund generosity and R differ from the defaults; heavy noise; capped geometric.
    matrix = {"C": {"C": [4, 4], "D": [-1, 6]}, "D": {"C": [6, -1], "D": [0.5, 0.5]}}
    names = ["GTFT", "WSLS", "RANDOM", "TF2T", "GRIM"]
    for params in ({}, {"generous_prob": 0.6, "win_threshold": 5.5, "coop_prob": 0.2}):
        assert_identical(
            experiment(
                {"type": "geometric", "stop_prob": 0.08, "max_rounds": 20},
                noise=0.2,
                replicates=3,
                params=params,
                matrix=matrix,
                names=names,
            )
        )


def test_noise_per_game_and_empty_batch() -> None:
    specs = [PolicySpec("TFT"), PolicySpec("ALLD")]
    seeds = np.arange(1, 7, dtype=np.uint64)
    lengths = np.full(6, 40)
    noisy = play_batch(
        specs,
        np.zeros(6, int),
        np.ones(6, int),
        seeds,
        lengths,
        PayoffMatrix(),
        np.array([0.0, 0.0, 0.0, 0.3, 0.3, 0.3]),
    )
    # No noise: TFT vs ALLD is C then D forever; with noise 0.3 some moves are flipped.
    assert (noisy.played_a[:3, 1:] == False).all() and noisy.played_a[:3, 0].all()  # noqa: E712
    assert (noisy.played_a[3:] != noisy.intended_a[3:]).any()
    empty = play_batch(
        specs,
        np.zeros(0, int),
        np.zeros(0, int),
        np.zeros(0, np.uint64),
        np.zeros(0, int),
        PayoffMatrix(),
    )
    assert empty.n_games == 0 and empty.played_a.shape == (0, 0)


def test_is_batchable() -> None:
    def policy(name: str, window: int | None = None) -> PolicyAgentConfig:
        return PolicyAgentConfig(type="policy", policy=name, history_window=window)

    for name, memory in BATCH_POLICY_MEMORY.items():
        assert is_batchable(policy(name))
        assert is_batchable(policy(name.lower(), memory))
        if memory:
            assert not is_batchable(policy(name, memory - 1))
    assert not is_batchable({"type": "policy", "policy": "TFT"})  # not a config object
    llm = LLMAgentConfig.model_validate(
        {"type": "llm", "model": "m", "prompts": {"system": "s", "round": "r", "personas_dir": "p"}}
    )
    assert not is_batchable(llm)
    with pytest.raises(ValueError):
        policy_spec(policy("TF2T", 1))


def test_counter_uniform_block_matches_rng() -> None:
    from pdbench.core.batch import counter_uniform_block
    from pdbench.core.rng import Purpose, counter_uniform_array

    seeds = np.array([0, 1, 2**63 - 1, 123456789, 2**40 + 7], dtype=np.uint64)
    for purpose in (Purpose.POLICY, Purpose.NOISE, Purpose.STOP):
        block = counter_uniform_block(seeds, 3, 70, purpose)
        reference = counter_uniform_array(seeds[None, :], np.arange(3, 70)[:, None], purpose)
        assert np.array_equal(block, reference)
