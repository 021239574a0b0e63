"""The totals-only path (`play_totals`) gives the totals of the vectorized engine's rounds.

Independent method: `play_batch` plays the same games round by round in arrays (itself checked
against the per-round engine in test_batch_engine.py); its payoffs summed per game and its C moves
counted must equal `play_totals`'s, bit for bit, for every ordered pair of registered policies,
with noise, geometric horizons (short and empty games), non-default parameters, whole and
fractional payoffs, and when the joint table is too large and `play_batch` plays instead. Two
games are also counted by hand.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pdbench.agents.policy import POLICY_REGISTRY, is_batchable, sided_machines
from pdbench.core import batch_totals
from pdbench.core.batch import SidedMachines, play_batch
from pdbench.core.batch_totals import GameTotals, play_totals
from pdbench.core.config import PolicyAgentConfig, PolicyParams
from pdbench.core.payoff import PayoffMatrix

FRACTIONAL = PayoffMatrix((3.3, 2.9), (0.1, 5.0), (5.0, 0.0), (1.0, 1.7))


def machines(matrix: PayoffMatrix, params: dict[str, float] | None = None) -> list[SidedMachines]:
    """Every registered batchable policy's machines (with `params` where a policy reads them)."""
    out = []
    for name in sorted(POLICY_REGISTRY):
        used = {k: v for k, v in (params or {}).items() if k in POLICY_REGISTRY[name].reads}
        cfg = PolicyAgentConfig(type="policy", policy=name, params=PolicyParams(**used))
        if is_batchable(cfg):
            out.append(sided_machines(cfg, matrix))
    return out


def assert_same_totals(
    table: list[SidedMachines],
    lengths_of: str,
    noise: float | str,
    matrix: PayoffMatrix,
    per_pair: int = 12,
) -> None:
    rng = np.random.default_rng(11)
    pa, pb = np.array(list(itertools.product(range(len(table)), repeat=2))).T
    pa, pb = np.repeat(pa, per_pair), np.repeat(pb, per_pair)
    n = pa.size
    seeds = rng.integers(0, 2**63, n, dtype=np.uint64)
    lengths = {
        "fixed": np.full(n, 60),
        "geometric": rng.geometric(0.08, n) - 1,  # some games have no round at all
    }[lengths_of]
    noise_arg = rng.uniform(0.0, 0.3, n) if noise == "per game" else noise
    expected = play_batch(table, pa, pb, seeds, lengths, matrix, noise_arg)
    got = play_totals(table, pa, pb, seeds, lengths, matrix, noise_arg)
    score_a, score_b = expected.totals()
    coop_a, coop_b = expected.cooperations()
    assert np.array_equal(got.score_a, score_a)
    assert np.array_equal(got.score_b, score_b)
    assert np.array_equal(got.coop_a, coop_a)
    assert np.array_equal(got.coop_b, coop_b)


@pytest.mark.parametrize("lengths_of", ["fixed", "geometric"])
@pytest.mark.parametrize("noise", [0.0, 0.05, "per game", 1.0])
def test_every_pair_equals_the_batch_engine(lengths_of: str, noise: float | str) -> None:
    assert_same_totals(machines(PayoffMatrix()), lengths_of, noise, PayoffMatrix())


def test_parameters_and_other_payoffs() -> None:
    params = {"generous_prob": 0.6, "win_threshold": 5.5, "coop_prob": 0.2}
    negative = PayoffMatrix((4.0, 4.0), (-1.0, 6.0), (6.0, -1.0), (0.0, 0.0))
    for matrix in (PayoffMatrix(), negative, FRACTIONAL):
        assert_same_totals(machines(matrix, params), "geometric", 0.1, matrix)


def test_large_joint_table_falls_back_to_the_batch_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_totals, "MAX_TABLE", 16)
    assert_same_totals(machines(PayoffMatrix()), "fixed", 0.05, PayoffMatrix(), per_pair=3)


def test_hand_counted_games_and_empty_batch() -> None:
    table = machines(PayoffMatrix())
    batchable = [
        n
        for n in sorted(POLICY_REGISTRY)
        if is_batchable(PolicyAgentConfig(type="policy", policy=n))
    ]
    index = {name: i for i, name in enumerate(batchable)}
    # ALLC vs ALLD, 10 rounds: 10 x (0, 5), A cooperates 10 times. TFT vs ALLD, 10 rounds:
    # CD then 9 x DD: TFT 0 + 9 = 9, ALLD 5 + 9 = 14; TFT cooperates once.
    got = play_totals(
        table,
        np.array([index["ALLC"], index["TFT"]]),
        np.array([index["ALLD"], index["ALLD"]]),
        np.array([1, 2], dtype=np.uint64),
        np.array([10, 10]),
        PayoffMatrix(),
    )
    assert got.score_a.tolist() == [0.0, 9.0] and got.score_b.tolist() == [50.0, 14.0]
    assert got.coop_a.tolist() == [10, 1] and got.coop_b.tolist() == [0, 0]
    empty = play_totals(
        table, np.array([]), np.array([]), np.array([]), np.array([]), PayoffMatrix()
    )
    assert isinstance(empty, GameTotals) and empty.score_a.size == 0
