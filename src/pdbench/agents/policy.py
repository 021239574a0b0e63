"""Scripted policies, registered once by name (case-insensitive).

Each policy sees only its `Observation` (the history window applies) and may keep its own state
across rounds within a game. Randomness comes from the counter-based stream keyed by the agent's
seed and the round, so a policy's draws never depend on what other games do.
"""

from __future__ import annotations

from typing import ClassVar

from pdbench.agents.base import Decision
from pdbench.core.config import PolicyParams
from pdbench.core.rng import Purpose, counter_uniform
from pdbench.core.types import Action, Observation

C, D = Action.C, Action.D


class PolicyAgent:
    """Base class: subclasses implement `choose`; `reset` clears per-game state."""

    key: ClassVar[str] = ""
    description: ClassVar[str] = ""
    stochastic: ClassVar[bool] = False

    def __init__(self, params: PolicyParams | None = None, name: str | None = None) -> None:
        self.params = params or PolicyParams()
        self.name = name or self.key
        self.seed = 0

    def reset(self, seed: int | None = None) -> None:
        """Start a new game with the agent's stream seed."""
        self.seed = int(seed or 0)

    def choose(self, obs: Observation) -> Action:
        """The move for this observation."""
        raise NotImplementedError

    def decide(self, obs: Observation) -> Decision:
        """The move wrapped as a Decision (policies never fail to parse)."""
        return Decision(self.choose(obs))

    def act(self, obs: Observation) -> str:
        """Return "C" or "D"."""
        return self.choose(obs).value

    def draw(self, obs: Observation) -> float:
        """This agent's uniform draw for this round (purpose POLICY)."""
        return counter_uniform(self.seed, obs.round_index, Purpose.POLICY)


POLICY_REGISTRY: dict[str, type[PolicyAgent]] = {}


def register_policy(cls: type[PolicyAgent]) -> type[PolicyAgent]:
    """Class decorator: register a policy under its `key`; a duplicate name is an error."""
    key = cls.key.upper()
    if not key:
        raise ValueError(f"{cls.__name__} has no key")
    if key in POLICY_REGISTRY:
        raise ValueError(
            f"duplicate policy name {key!r} ({cls.__name__} and {POLICY_REGISTRY[key].__name__})"
        )
    POLICY_REGISTRY[key] = cls
    return cls


def policy_names() -> list[str]:
    """Registered policy names, sorted."""
    return sorted(POLICY_REGISTRY)


def make_policy(
    name: str, params: PolicyParams | None = None, display_name: str | None = None
) -> PolicyAgent:
    """Instantiate a registered policy by name (case-insensitive); KeyError lists the valid names."""
    cls = POLICY_REGISTRY.get(name.upper())
    if cls is None:
        raise KeyError(f"unknown policy {name!r} (valid: {', '.join(policy_names())})")
    return cls(params, display_name)


@register_policy
class AllC(PolicyAgent):
    """ALLC: always cooperates."""

    key = "ALLC"
    description = "Always cooperates."

    def choose(self, obs: Observation) -> Action:
        return C


@register_policy
class AllD(PolicyAgent):
    """ALLD: always defects."""

    key = "ALLD"
    description = "Always defects."

    def choose(self, obs: Observation) -> Action:
        return D


@register_policy
class TitForTat(PolicyAgent):
    """TFT: cooperates first, then copies the opponent's last move."""

    key = "TFT"
    description = "Cooperates first, then copies the opponent's last move."

    def choose(self, obs: Observation) -> Action:
        return obs.history[-1].opp_action if obs.history else C


@register_policy
class Grim(PolicyAgent):
    """GRIM: cooperates until the opponent's first D, then defects forever."""

    key = "GRIM"
    description = "Cooperates until the opponent defects once, then defects forever."
    triggered: bool = False  # also before the first reset()

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.triggered = False

    def choose(self, obs: Observation) -> Action:
        if obs.history and obs.history[-1].opp_action is D:
            self.triggered = True
        return D if self.triggered else C


@register_policy
class GenerousTitForTat(PolicyAgent):
    """GTFT: TFT that answers an opponent's D with C with probability `generous_prob`.

    `generous_prob` None uses the Nowak-Sigmund value min(1 - (T-R)/(R-S), (R-P)/(T-P)), 1/3 for
    the default payoffs.
    """

    key = "GTFT"
    description = "Copies the opponent's last move, but forgives a defection now and then."
    stochastic = True

    def forgiveness(self, obs: Observation) -> float:
        """The probability of answering a D with C under this game's payoffs."""
        if self.params.generous_prob is not None:
            return self.params.generous_prob
        return obs.payoff_matrix.nowak_sigmund_generosity()

    def choose(self, obs: Observation) -> Action:
        if not obs.history or obs.history[-1].opp_action is C:
            return C
        return C if self.draw(obs) < self.forgiveness(obs) else D


@register_policy
class WinStayLoseShift(PolicyAgent):
    """WSLS (Pavlov): cooperates first; repeats its last move when its last payoff >= the win
    threshold (default R), otherwise switches."""

    key = "WSLS"
    description = "Repeats its last move after a good payoff, switches after a bad one."

    def choose(self, obs: Observation) -> Action:
        if not obs.history:
            return C
        last = obs.history[-1]
        threshold = self.params.win_threshold
        if threshold is None:
            threshold = obs.payoff_matrix.reward
        return last.my_action if last.my_payoff >= threshold else last.my_action.flipped


@register_policy
class RandomPolicy(PolicyAgent):
    """RANDOM: cooperates with probability `coop_prob` (default 0.5) each round, independently.

    The round's draw is `counter_uniform(seed, round, Purpose.POLICY)`; a draw below `coop_prob`
    means C.
    """

    key = "RANDOM"
    description = "Cooperates at random with probability coop_prob (default one half)."
    stochastic = True

    def choose(self, obs: Observation) -> Action:
        return C if self.draw(obs) < self.params.coop_prob else D


@register_policy
class SuspiciousTitForTat(PolicyAgent):
    """STFT (suspicious tit for tat): defects first, then copies the opponent's last move."""

    key = "STFT"
    description = "Defects first, then copies the opponent's last move."

    def choose(self, obs: Observation) -> Action:
        return obs.history[-1].opp_action if obs.history else D


@register_policy
class TitForTwoTats(PolicyAgent):
    """TF2T (tit for two tats): defects only right after two consecutive opponent defections.

    Like Axelrod's TitFor2Tats; needs a history window of at least 2 to see the two rounds.
    """

    key = "TF2T"
    description = "Cooperates unless the opponent defected in each of the last two rounds."

    def choose(self, obs: Observation) -> Action:
        last_two = obs.history[-2:]
        if len(last_two) == 2 and all(h.opp_action is D for h in last_two):
            return D
        return C


@register_policy
class Alternator(PolicyAgent):
    """ALTERNATOR: C, D, C, D, ...: cooperates first, then plays the opposite of its own last
    (played) move, like Axelrod's Alternator."""

    key = "ALTERNATOR"
    description = "Cooperates first, then plays the opposite of its own last move."

    def choose(self, obs: Observation) -> Action:
        return obs.history[-1].my_action.flipped if obs.history else C
