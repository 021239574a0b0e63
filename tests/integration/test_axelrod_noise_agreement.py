"""With noise 0.05, pdbench's matches agree with the Axelrod library's within sampling error.

For every pairing of TFT, WSLS, GRIM and GTFT (self-pairings included), both engines play the
same number of 100-turn matches (independent seeds); the mean per-turn score and the mean
cooperation rate of each side must agree within 4 standard errors of the difference of means
(computed from the two samples' standard deviations).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pdbench.agents.axelrod_adapter import import_axelrod
from pdbench.agents.factory import AgentSpec
from pdbench.core.config import PolicyAgentConfig
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.rng import derive_seed
from pdbench.runners.engine.engine import MachineTable

axl = import_axelrod()

TURNS, MATCHES, NOISE = 100, 40, 0.05
TWINS = {"TFT": "TitForTat", "WSLS": "WinStayLoseShift", "GRIM": "Grudger", "GTFT": "GTFT"}


def pdbench_stats(a: str, b: str) -> np.ndarray:
    """Per match: (score/turn A, score/turn B, coop rate A, coop rate B)."""
    seeds = np.array([derive_seed(1, "agree", a, b, r) for r in range(MATCHES)], dtype=np.uint64)
    spec_a, spec_b = (AgentSpec(PolicyAgentConfig(type="policy", policy=p)) for p in (a, b))
    result = MachineTable(PayoffMatrix()).play(
        [spec_a] * MATCHES, [spec_b] * MATCHES, seeds, np.full(MATCHES, TURNS), NOISE
    )
    score_a, score_b = result.totals()
    coop_a, coop_b = result.cooperations()
    return np.stack([score_a, score_b, coop_a, coop_b], axis=1) / TURNS


def axelrod_stats(a: str, b: str) -> np.ndarray:
    rows = []
    for seed in range(MATCHES):
        players = (getattr(axl, TWINS[a])(), getattr(axl, TWINS[b])())
        match = axl.Match(players, turns=TURNS, noise=NOISE, seed=1000 + seed)
        match.play()
        score_a, score_b = match.final_score_per_turn()
        coop_a, coop_b = match.normalised_cooperation()
        rows.append((score_a, score_b, coop_a, coop_b))
    return np.array(rows)


@pytest.mark.parametrize(("a", "b"), list(itertools.combinations_with_replacement(list(TWINS), 2)))
def test_means_agree_with_axelrod(a: str, b: str) -> None:
    ours, theirs = pdbench_stats(a, b), axelrod_stats(a, b)
    for column, label in enumerate(("score A", "score B", "coop A", "coop B")):
        x, y = ours[:, column], theirs[:, column]
        se = math.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)
        assert abs(x.mean() - y.mean()) <= 4 * se + 1e-9, (
            f"{a} vs {b} {label}: pdbench {x.mean():.3f}, axelrod {y.mean():.3f}, se {se:.3f}"
        )
