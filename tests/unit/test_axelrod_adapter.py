"""The Axelrod adapter, and pdbench's policies checked against the Axelrod library.

The Axelrod library is an independent implementation: its TitForTat, SuspiciousTitForTat,
TitFor2Tats, Alternator, Grudger, WinStayLoseShift, Cooperator and Defector must make exactly
the moves of pdbench's TFT, STFT, TF2T, ALTERNATOR, GRIM, WSLS, ALLC and ALLD against the same
opponent, with noise (history holds played moves in both); and strategies played through the
adapter must make the moves they make in Axelrod's own Match.
"""

from __future__ import annotations

import sys

import pytest
from tests.support.configs import play_pair

from pdbench.agents.axelrod_adapter import (
    INSTALL_HINT,
    AxelrodAgent,
    import_axelrod,
    strategy_class,
    strategy_problem,
)
from pdbench.agents.factory import AgentSpec
from pdbench.core.config import AxelrodAgentConfig, PolicyAgentConfig
from pdbench.errors import RunError

axl = import_axelrod()

TWINS = [
    ("TitForTat", "TFT"),
    ("SuspiciousTitForTat", "STFT"),
    ("TitFor2Tats", "TF2T"),
    ("Alternator", "ALTERNATOR"),
    ("Grudger", "GRIM"),
    ("WinStayLoseShift", "WSLS"),
    ("Cooperator", "ALLC"),
    ("Defector", "ALLD"),
]


def policy(name: str) -> AgentSpec:
    return AgentSpec(PolicyAgentConfig(type="policy", policy=name))


def axelrod(name: str) -> AgentSpec:
    return AgentSpec(AxelrodAgentConfig(type="axelrod", strategy=name))


@pytest.mark.parametrize(("strategy", "name"), TWINS)
def test_axelrod_twins_make_the_same_moves(strategy: str, name: str) -> None:
    for opponent in ("RANDOM", "TFT", "GTFT"):
        for seed in (1, 2, 3):
            ours = play_pair(policy(name), policy(opponent), seed)
            theirs = play_pair(axelrod(strategy), policy(opponent), seed)
            assert ours == theirs, (strategy, opponent, seed)


@pytest.mark.parametrize(
    "strategy", ["Prober", "Gradual", "FirstByTidemanAndChieruzzi", "OmegaTFT", "HardProber"]
)
def test_adapter_matches_axelrod_match(strategy: str) -> None:
    # Against deterministic Axelrod opponents, without noise: the adapter (fed pdbench's
    # observations) plays the same sequence as Axelrod's own Match.
    for opponent, twin in (
        ("Alternator", "ALTERNATOR"),
        ("TitForTat", "TFT"),
        ("Defector", "ALLD"),
    ):
        match = axl.Match((strategy_class(strategy)(), getattr(axl, opponent)()), turns=40)
        expected = [(a == axl.Action.C, b == axl.Action.C) for a, b in match.play()]
        got = play_pair(axelrod(strategy), policy(twin), seed=5, n=40, noise=0.0)
        assert list(zip(got["played_a"], got["played_b"], strict=True)) == expected, (
            strategy,
            opponent,
        )


def test_stochastic_strategies_are_seeded_from_the_agent_seed() -> None:
    runs = [play_pair(axelrod("Random"), policy("TFT"), seed) for seed in (11, 11, 12)]
    assert runs[0] == runs[1]
    assert runs[0]["played_a"] != runs[2]["played_a"]


def test_names_and_refusals() -> None:
    assert strategy_class("Tit For 2 Tats") is axl.TitFor2Tats
    assert AxelrodAgent("Prober").name == "axelrod:Prober"
    assert "close: Prober" in strategy_problem("Probber")
    assert "inspects" in strategy_problem("Darwin") or "manipulates" in strategy_problem("Darwin")
    assert strategy_problem("Prober") is None


def test_missing_extra_gives_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "axelrod", None)
    with pytest.raises(RunError, match="uv sync --extra axelrod"):
        import_axelrod()
    with pytest.raises(RunError, match="uv sync --extra axelrod"):
        AxelrodAgent("Prober")
    assert INSTALL_HINT in strategy_problem("Prober")
