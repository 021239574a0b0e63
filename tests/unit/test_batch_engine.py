"""The vectorized engine plays exactly like the per-round engine (`play_game` with PolicyAgents).

Every ordered pair of the ten built-in policies is one condition; all of a scenario's games run in
ONE batch (mixed policy pairs), and each game's intended moves, played moves and payoffs must be
identical to the per-round engine's for the same seeds: with noise 0.05, with a geometric horizon,
without noise, and with non-default parameters and payoffs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pytest
from tests.support.configs import experiment as experiment_data
from tests.support.configs import load, play_round_by_round, play_vectorized

from pdbench.agents.policy import POLICY_REGISTRY, is_batchable, sided_machines
from pdbench.core.batch import StateMachine, play_batch
from pdbench.core.config import LLMAgentConfig, PolicyAgentConfig, PolicyParams
from pdbench.core.payoff import PayoffMatrix
from pdbench.runners.config.loader import LoadedConfig
from pdbench.runners.engine.engine import MachineTable
from pdbench.runners.science.experiment import plan_games

POLICIES = sorted(POLICY_REGISTRY)  # every registered policy: a new one is checked too


def experiment(
    horizon: dict[str, Any],
    noise: float,
    replicates: int,
    params: dict[str, Any] | None = None,
    matrix: dict[str, Any] | None = None,
    names: list[str] = POLICIES,
) -> LoadedConfig:
    def agent(name: str) -> dict[str, Any]:
        cls = POLICY_REGISTRY[name]
        used = {k: v for k, v in (params or {}).items() if k in cls.reads}
        return {"type": "policy", "policy": name, "params": used}

    game: dict[str, Any] = {} if matrix is None else {"payoff_matrix": matrix}
    data = experiment_data(
        [(f"{a}_vs_{b}", agent(a), agent(b)) for a in names for b in names],
        horizon=horizon,
        replicates=replicates,
        noise=noise,
        **game,
    )
    return load(data)


def assert_identical(loaded: LoadedConfig) -> None:
    plans = plan_games(loaded)
    results = play_round_by_round(loaded, plans)
    records = [[orjson.loads(line) for line in r.lines.splitlines()] for r in results]
    batch = play_vectorized(loaded, plans)
    for i, (plan, recs) in enumerate(zip(plans, records, strict=True)):
        game = batch.game(i)
        where = f"{plan.condition} replicate {plan.replicate}"
        assert int(batch.lengths[i]) == len(recs) == plan.n_rounds, where
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
    beyond = np.arange(batch.played_a.shape[1])[None, :] >= batch.lengths[:, None]
    assert not batch.played_a[beyond].any() and not batch.payoffs_b[beyond].any()


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


def machines(*names: str) -> list[Any]:
    cfgs = [PolicyAgentConfig(type="policy", policy=n) for n in names]
    return [sided_machines(c, PayoffMatrix()) for c in cfgs]


def test_noise_per_game_and_empty_batch() -> None:
    table = machines("TFT", "ALLD")
    seeds = np.arange(1, 7, dtype=np.uint64)
    lengths = np.full(6, 40)
    noisy = play_batch(
        table,
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
        table,
        np.zeros(0, int),
        np.zeros(0, int),
        np.zeros(0, np.uint64),
        np.zeros(0, int),
        PayoffMatrix(),
    )
    assert empty.n_games == 0 and empty.played_a.shape == (0, 0)


def test_certain_noise_flips_every_move_and_short_games_end_in_zeros() -> None:
    # Noise 1 flips every move (the one threshold, 2^53, compared without the shortcut that
    # lower noise takes); games of unequal length: nothing is played after a game ends.
    table = machines("ALLC", "ALLD")
    lengths = np.array([3, 5, 0, 5])
    batch = play_batch(
        table,
        np.zeros(4, int),
        np.ones(4, int),
        np.arange(4, dtype=np.uint64),
        lengths,
        PayoffMatrix(),
        np.array([1.0, 1.0, 0.0, 0.0]),
    )
    # Flipped: ALLC plays D and ALLD plays C, so A earns T = 5 and B the sucker's 0.
    assert batch.played_a[0].tolist() == [False] * 5 and batch.played_b[0, :3].all()
    assert batch.payoffs_a[0].tolist() == [5.0, 5.0, 5.0, 0.0, 0.0]
    assert batch.payoffs_b[1].tolist() == [0.0] * 5 and batch.payoffs_a[1].sum() == 25.0
    assert batch.intended_a[1].all() and not batch.intended_b[1].any()
    assert batch.payoffs_a[2].tolist() == [0.0] * 5 and not batch.played_a[2].any()
    # Without noise: ALLC cooperates, ALLD defects: S = 0 to A, T = 5 to B, every round.
    assert batch.played_a[3].all() and batch.payoffs_b[3].tolist() == [5.0] * 5


def test_is_batchable() -> None:
    def policy(name: str, window: int | None = None) -> PolicyAgentConfig:
        return PolicyAgentConfig(type="policy", policy=name, history_window=window)

    # Each policy's `memory` is its own; tests/unit/test_policy_memory.py measures that it is the
    # history window the rule needs. Here: the engine takes a policy exactly from that window.
    for name, cls in POLICY_REGISTRY.items():
        assert cls.memory is not None, f"{name}: every built-in policy has a state machine"
        assert is_batchable(policy(name))
        assert is_batchable(policy(name.lower(), cls.memory))
        if cls.memory:
            assert not is_batchable(policy(name, cls.memory - 1))
    llm = LLMAgentConfig.model_validate(
        {"type": "llm", "model": "m", "prompts": {"system": "s", "round": "r", "personas_dir": "p"}}
    )
    assert not is_batchable(llm)
    with pytest.raises(ValueError):
        sided_machines(policy("TF2T", 1), PayoffMatrix())


def test_state_machine_is_checked() -> None:
    with pytest.raises(ValueError, match="refers to a state"):
        StateMachine((1.0,), (((0, 1), (0, 0)),))
    with pytest.raises(ValueError, match="states"):
        StateMachine((), ())
    assert StateMachine.constant(0.25).arrays()[0][0] == 0.25


def test_machine_table_shares_equal_policies() -> None:
    loaded = experiment({"type": "fixed", "n_rounds": 5}, 0.0, 1, names=["TFT", "GTFT"])
    table = MachineTable(loaded.matrix())
    specs = [spec for spec in loaded.agents.values()]
    ids = {spec.name: table.index(spec) for spec in specs}
    assert len(table.machines) == 2 and set(ids.values()) == {0, 1}
    assert PolicyParams().coop_prob is None


def test_counter_uniform_block_matches_rng() -> None:
    from pdbench.core.rng import Purpose, counter_uniform_array, counter_uniform_block

    seeds = np.array([0, 1, 2**63 - 1, 123456789, 2**40 + 7], dtype=np.uint64)
    for purpose in (Purpose.POLICY, Purpose.NOISE, Purpose.STOP):
        block = counter_uniform_block(seeds, 3, 70, purpose)
        reference = counter_uniform_array(seeds[None, :], np.arange(3, 70)[:, None], purpose)
        assert np.array_equal(block, reference)
