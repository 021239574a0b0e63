"""Which conditions are exact (core/exact.py), each policy's declaration that it never draws,
what an exact side does to `compare`'s interval, and where the intervals are known to cover
less than 95% (core/coverage_advice.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdbench.agents.factory import AgentSpec
from pdbench.agents.policy import POLICY_REGISTRY, PolicyAgent, make_policy, register_policy
from pdbench.core.compare import contrast
from pdbench.core.config import HumanAgentConfig, PolicyAgentConfig
from pdbench.core.coverage_advice import coverage_warning
from pdbench.core.exact import Exactness, condition_exactness, games_identical, identical_note
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action

# An opponent that plays both moves in no simple pattern (the digits of pi, odd = D).
OPPONENT = "".join("D" if int(d) % 2 else "C" for d in "31415926535897932384626433832795028841")


def moves(name: str, seed: int) -> str:
    """A policy's moves against OPPONENT, as agent A, with this seed."""
    agent = make_policy(name)
    agent.reset(seed)
    transcript = Transcript(PayoffMatrix())
    out = ""
    for theirs in OPPONENT:
        obs = transcript.observation(
            0,
            history_window=None,
            include_totals=True,
            horizon_type="fixed",
            total_rounds=len(OPPONENT),
        )
        mine = agent.act(obs)
        transcript.record(Action(mine), Action(theirs))
        out += mine
    return out


@pytest.mark.parametrize("name", sorted(POLICY_REGISTRY))
def test_each_policy_declares_truly_whether_its_moves_depend_on_its_seed(name: str) -> None:
    played = {moves(name, seed) for seed in range(1, 9)}
    assert POLICY_REGISTRY[name].deterministic is (len(played) == 1), played


def test_a_policy_that_does_not_declare_whether_it_draws_cannot_register() -> None:
    snapshot = dict(POLICY_REGISTRY)
    try:

        class Undeclared(PolicyAgent):
            key = "UNDECLARED"

            def choose(self, obs):
                return Action.C

        with pytest.raises(ValueError, match="deterministic"):
            register_policy(Undeclared)
        assert POLICY_REGISTRY == snapshot
    finally:
        POLICY_REGISTRY.clear()
        POLICY_REGISTRY.update(snapshot)


@pytest.mark.parametrize(
    ("agents", "horizon", "noise", "expected"),
    [
        ((None, None), "fixed", 0.0, Exactness(True)),
        ((None, None), "geometric", 0.0, Exactness(False, ("a geometric horizon (each game's length is drawn)",))),
        ((None, None), "fixed", 0.05, Exactness(False, ("execution noise 0.05",))),
        (("GTFT draws", None), "fixed", 0.0, Exactness(False, ("GTFT draws",))),
        (("x, an LLM agent", "y"), "geometric", 0.1, Exactness(False, ("x, an LLM agent", "y", "a geometric horizon (each game's length is drawn)", "execution noise 0.1"))),
    ],
)  # fmt: skip
def test_a_condition_is_exact_only_when_nothing_in_it_draws(agents, horizon, noise, expected):
    assert condition_exactness(agents, horizon, noise) == expected


def test_a_message_reader_that_could_vary_makes_a_condition_not_exact() -> None:
    found = condition_exactness((None, None), "fixed", 0.0, "an LLM judge reads the messages")
    assert found == Exactness(False, ("an LLM judge reads the messages",))


def test_what_could_make_an_agent_vary() -> None:
    assert AgentSpec(PolicyAgentConfig(type="policy", policy="tft")).could_vary is None
    assert (
        "draws at random" in AgentSpec(PolicyAgentConfig(type="policy", policy="RANDOM")).could_vary
    )
    assert "a person" in AgentSpec(HumanAgentConfig(type="human", moves="CD")).could_vary


@pytest.mark.slow  # imports the Axelrod library (tens of seconds on a loaded machine)
def test_axelrod_strategies_vary_when_the_library_says_they_are_stochastic() -> None:
    from pdbench.core.config import AxelrodAgentConfig

    def spec(name: str) -> AgentSpec:
        return AgentSpec(AxelrodAgentConfig(type="axelrod", strategy=name))

    assert spec("TitForTat").could_vary is None
    assert spec("Random").could_vary == "axelrod:Random, a stochastic Axelrod strategy"


def test_games_are_identical_when_every_metric_agrees_usage_aside() -> None:
    a = {
        "rate": 0.5,
        "gap": None,
        "agent_a_input_tokens": 10.0,
        "cooperation_rate_over_time": "[1]",
    }
    assert games_identical(
        [a, {**a, "agent_a_input_tokens": 12.0}], ["rate", "gap", "agent_a_input_tokens"]
    )
    assert not games_identical([a, {**a, "rate": 0.6}], ["rate"])
    assert not games_identical([a, {**a, "cooperation_rate_over_time": "[0]"}], ["rate"])
    nan = {"rate": math.nan}
    assert games_identical([nan, {"rate": math.nan}], ["rate"])


def test_the_note_on_identical_games_names_what_could_have_varied() -> None:
    row = {"exact": False, "identical_games": np.bool_(True), "n_replicates": 3}
    assert identical_note(row, ["GTFT, a policy that draws at random"]) == (
        "every game identical; the interval is wide because the games could have differed "
        "(GTFT, a policy that draws at random)"
    )
    assert identical_note({**row, "exact": True}) is None
    assert identical_note({**row, "identical_games": False}) is None


def test_compare_takes_an_exact_side_as_a_point() -> None:
    """Baseline exact at 0.1 (3 games); the condition's 4 games 0.2, 0.4, 0.6, 0.8: mean 0.5,
    SD sqrt(1/15) = 0.258199, SE 0.129099, t(0.975, 3) = 3.182446, half-width 0.410850. MOVER
    with the baseline a point is the condition's t interval shifted by 0.1: [-0.010850,
    0.810850]; the bootstrap lies inside it (differences from 0.1 to 0.7), so the hull is it."""
    base, cond = [0.1, 0.1, 0.1], [0.2, 0.4, 0.6, 0.8]
    half = 3.182446 * math.sqrt(1 / 15) / 2
    found = contrast(base, cond, np.random.default_rng(1), exact=(True, False))
    assert found.difference == pytest.approx(0.4)
    assert found.ci_low == pytest.approx(0.4 - half, abs=1e-5)
    assert found.ci_high == pytest.approx(0.4 + half, abs=1e-5)
    assert not found.exact and found.p_value is not None
    # both exact: the difference itself, no p-value
    both = contrast(base, [0.3, 0.3], np.random.default_rng(1), exact=(True, True))
    assert (both.ci_low, both.ci_high, both.p_value, both.exact) == (
        pytest.approx(0.2),
        pytest.approx(0.2),
        None,
        True,
    )


@pytest.mark.parametrize(
    ("games", "horizon", "exact", "says"),
    [
        (6, "geometric", False, "88.9% at 6 games"),
        (8, "geometric", False, "91.1% at 8"),
        (4, "geometric", False, "87-91% for payoff totals and rounds at 4 games"),
        (10, "geometric", False, None),
        (6, "fixed", False, None),
        (6, "geometric", True, None),
        (1, "geometric", False, None),
    ],
)
def test_the_warning_says_where_coverage_was_measured_short(games, horizon, exact, says):
    warning = coverage_warning(games, horizon, exact)
    if says is None:
        assert warning is None
    else:
        assert says in warning and "use 10 or more games" in warning
