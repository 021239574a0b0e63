"""Scripted policies, each defined once and registered by name (case-insensitive).

A policy class holds everything about one policy: its decision rule (`choose`, round by round,
from the agent's `Observation`, so the history window applies), its finite-state machine for the
vectorized engine (`machine`, with `memory`, the history window its rule needs, which tells the
engine the windows its machine plays exactly; a policy without a machine leaves `memory = None`
and plays round by round), the parameters it reads, its description, and its look in the app
(emoji, nickname, colours, after Nicky Case's The Evolution of Trust). Adding a policy is one
class here plus its table-driven test, and its name in the README's two lists of policies
(`tests/unit/test_readme_lists.py` fails without); then `tests/unit/test_batch_engine.py` checks
by itself that its machine plays exactly like its rule, and `tests/unit/test_policy_memory.py`
that its `memory` is the window its rule really needs.

Randomness comes from the counter-based stream keyed by the agent's seed and the round, so a
policy's draws never depend on what other games do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pdbench.agents.base import AgentBase
from pdbench.core.batch import SidedMachines, StateMachine
from pdbench.core.config import AnyAgentConfig, PolicyAgentConfig, PolicyParams
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.rng import Purpose, counter_uniform
from pdbench.core.types import Action, Decision, Observation

C, D = Action.C, Action.D


@dataclass(frozen=True, slots=True)
class Look:
    """How a policy appears in the app: emoji, nickname, chart colour and card gradient."""

    emoji: str
    nickname: str
    color: str
    card: tuple[str, str]


class PolicyAgent(AgentBase):
    """Base class: subclasses set the class attributes and implement `choose` (and `machine`)."""

    key: ClassVar[str] = ""
    description: ClassVar[str] = ""
    look: ClassVar[Look] = Look("❔", "", "#7f7f7f", ("#f2f2f2", "#d2d2d2"))
    reads: ClassVar[tuple[str, ...]] = ()  # the PolicyParams it uses
    memory: ClassVar[int | None] = None  # rounds of history its rule needs; None: no machine
    # Whether its rule ever draws (`draw`): a deterministic policy plays the same moves against
    # the same moves whatever its seed. Every policy declares it (`register_policy` checks);
    # a condition of deterministic agents is exact (`core.exact`).
    deterministic: ClassVar[bool | None] = None

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

    async def decide(self, obs: Observation) -> Decision:
        """The move wrapped as a Decision (policies never fail to parse)."""
        return Decision(self.choose(obs))

    def draw(self, obs: Observation) -> float:
        """This agent's uniform draw for this round (purpose POLICY)."""
        return counter_uniform(self.seed, obs.round_index, Purpose.POLICY)

    @classmethod
    def machine(cls, params: PolicyParams, matrix: PayoffMatrix) -> StateMachine:
        """The policy as a state machine, with the payoffs seen from its own seat (`matrix` is
        `PayoffMatrix.seen_by(side)`: R, S, T, P are its own)."""
        raise NotImplementedError(f"{cls.key} has no state machine")


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
    if cls.deterministic is None:
        raise ValueError(f"{cls.__name__} does not declare whether it is deterministic")
    POLICY_REGISTRY[key] = cls
    return cls


def policy_names() -> list[str]:
    """Registered policy names, sorted."""
    return sorted(POLICY_REGISTRY)


def policy_class(name: str) -> type[PolicyAgent]:
    """The registered class of a policy name (case-insensitive); KeyError lists the valid names."""
    cls = POLICY_REGISTRY.get(name.upper())
    if cls is None:
        raise KeyError(f"unknown policy {name!r} (valid: {', '.join(policy_names())})")
    return cls


def make_policy(
    name: str, params: PolicyParams | None = None, display_name: str | None = None
) -> PolicyAgent:
    """Instantiate a registered policy by name (case-insensitive)."""
    return policy_class(name)(params, display_name)


def unused_params(cfg: PolicyAgentConfig) -> list[str]:
    """Parameters set (not null) that this policy does not read."""
    cls = policy_class(cfg.policy)
    return [k for k, v in cfg.params.model_dump().items() if v is not None and k not in cls.reads]


def is_batchable(cfg: AnyAgentConfig) -> bool:
    """True when the vectorized engine plays this agent exactly like the round-by-round one:
    a registered policy with a state machine whose history window is None or at least the
    machine's memory (LLM agents and Axelrod strategies: False)."""
    if not isinstance(cfg, PolicyAgentConfig):
        return False
    cls = POLICY_REGISTRY.get(cfg.policy.upper())
    if cls is None or cls.memory is None:
        return False
    return cfg.history_window is None or cfg.history_window >= cls.memory


def sided_machines(cfg: PolicyAgentConfig, matrix: PayoffMatrix) -> SidedMachines:
    """The machines of a batchable policy config on side A and side B."""
    if not is_batchable(cfg):
        raise ValueError(f"not a batchable policy config: {cfg!r}")
    cls = policy_class(cfg.policy)
    return (cls.machine(cfg.params, matrix.seen_by(0)), cls.machine(cfg.params, matrix.seen_by(1)))


# --------------------------------------------------------------------------------------------
# The policies


@register_policy
class AllC(PolicyAgent):
    """ALLC: always cooperates."""

    key = "ALLC"
    description = "Always cooperates."
    look = Look("🕊️", "Always Cooperate", "#3fb866", ("#e3f9e9", "#a9e4bd"))
    memory = 0
    deterministic = True

    def choose(self, obs: Observation) -> Action:
        return C

    @classmethod
    def machine(cls, params: PolicyParams, matrix: PayoffMatrix) -> StateMachine:
        return StateMachine.constant(1.0)


@register_policy
class AllD(PolicyAgent):
    """ALLD: always defects."""

    key = "ALLD"
    description = "Always defects."
    look = Look("😈", "Always Cheat", "#d64545", ("#ffe1e1", "#f4a3a3"))
    memory = 0
    deterministic = True

    def choose(self, obs: Observation) -> Action:
        return D

    @classmethod
    def machine(cls, params: PolicyParams, matrix: PayoffMatrix) -> StateMachine:
        return StateMachine.constant(0.0)


@register_policy
class TitForTat(PolicyAgent):
    """TFT: cooperates first, then copies the opponent's last move."""

    key = "TFT"
    description = "Cooperates first, then copies the opponent's last move."
    look = Look("🪞", "Copycat", "#3b78d8", ("#e2eefe", "#a9c9f6"))
    memory = 1
    deterministic = True

    def choose(self, obs: Observation) -> Action:
        return obs.history[-1].opp_action if obs.history else C

    @classmethod
    def machine(cls, params: PolicyParams, matrix: PayoffMatrix) -> StateMachine:
        return StateMachine.reacting_to_opponent(1.0, 1.0, 0.0)


@register_policy
class Grim(PolicyAgent):
    """GRIM: cooperates until the opponent's first D, then defects forever."""

    key = "GRIM"
    description = "Cooperates until the opponent defects once, then defects forever."
    look = Look("💀", "Grudger", "#6b7280", ("#ececec", "#bdbdbd"))
    memory = 1
    deterministic = True
    triggered: bool = False  # also before the first reset()

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.triggered = False

    def choose(self, obs: Observation) -> Action:
        if obs.history and obs.history[-1].opp_action is D:
            self.triggered = True
        return D if self.triggered else C

    @classmethod
    def machine(cls, params: PolicyParams, matrix: PayoffMatrix) -> StateMachine:
        # 0: calm (an opponent's D triggers), 1: triggered for good
        return StateMachine((1.0, 0.0), (((0, 1), (0, 1)), ((1, 1), (1, 1))))


@register_policy
class GenerousTitForTat(PolicyAgent):
    """GTFT: TFT that answers an opponent's D with C with probability `generous_prob`.

    `generous_prob` None uses the Nowak-Sigmund value min(1 - (T-R)/(R-S), (R-P)/(T-P)), 1/3 for
    the default payoffs.
    """

    key = "GTFT"
    description = "Copies the opponent's last move, but forgives a defection now and then."
    look = Look("😇", "Generous Copycat", "#f2b705", ("#fff7d6", "#ffe08a"))
    reads = ("generous_prob",)
    memory = 1
    deterministic = False

    @staticmethod
    def forgiveness(params: PolicyParams, matrix: PayoffMatrix) -> float:
        """The probability of answering a D with C under this game's payoffs."""
        if params.generous_prob is not None:
            return params.generous_prob
        return matrix.nowak_sigmund_generosity()

    def choose(self, obs: Observation) -> Action:
        if not obs.history or obs.history[-1].opp_action is C:
            return C
        return C if self.draw(obs) < self.forgiveness(self.params, obs.payoff_matrix) else D

    @classmethod
    def machine(cls, params: PolicyParams, matrix: PayoffMatrix) -> StateMachine:
        return StateMachine.reacting_to_opponent(1.0, 1.0, cls.forgiveness(params, matrix))


@register_policy
class WinStayLoseShift(PolicyAgent):
    """WSLS (Pavlov): cooperates first; repeats its last move when its last payoff >= the win
    threshold (default R), otherwise switches."""

    key = "WSLS"
    description = "Repeats its last move after a good payoff, switches after a bad one."
    look = Look("🔄", "Simpleton", "#9b6bd6", ("#f0e6fd", "#cdb3f2"))
    reads = ("win_threshold",)
    memory = 1
    deterministic = True

    def choose(self, obs: Observation) -> Action:
        if not obs.history:
            return C
        last = obs.history[-1]
        threshold = self.params.win_threshold
        if threshold is None:
            threshold = obs.payoff_matrix.reward
        return last.my_action if last.my_payoff >= threshold else last.my_action.flipped

    @classmethod
    def machine(cls, params: PolicyParams, matrix: PayoffMatrix) -> StateMachine:
        # state 1 + 2 * my_D + opp_D: the last round's outcome
        threshold = matrix.reward if params.win_threshold is None else params.win_threshold
        probs = [1.0]
        for my in (0, 1):
            for opp in (0, 1):
                stay = matrix.as_array()[my][opp][0] >= threshold
                probs.append(1.0 if (my == 0) == stay else 0.0)
        to_outcome = ((1, 2), (3, 4))
        return StateMachine(tuple(probs), (to_outcome,) * 5)


@register_policy
class RandomPolicy(PolicyAgent):
    """RANDOM: cooperates with probability `coop_prob` (default 0.5) each round, independently.

    The round's draw is `counter_uniform(seed, round, Purpose.POLICY)`; a draw below `coop_prob`
    means C.
    """

    key = "RANDOM"
    description = "Cooperates at random with probability coop_prob (default one half)."
    look = Look("🎲", "Random", "#a89a3c", ("#f5f5dc", "#dcd6a8"))
    reads = ("coop_prob",)
    memory = 0
    deterministic = False

    @staticmethod
    def probability(params: PolicyParams) -> float:
        """P(C) each round."""
        return 0.5 if params.coop_prob is None else params.coop_prob

    def choose(self, obs: Observation) -> Action:
        return C if self.draw(obs) < self.probability(self.params) else D

    @classmethod
    def machine(cls, params: PolicyParams, matrix: PayoffMatrix) -> StateMachine:
        return StateMachine.constant(cls.probability(params))


@register_policy
class SuspiciousTitForTat(PolicyAgent):
    """STFT (suspicious tit for tat): defects first, then copies the opponent's last move."""

    key = "STFT"
    description = "Defects first, then copies the opponent's last move."
    look = Look("🤨", "Suspicious Copycat", "#e8853b", ("#fdebd8", "#f4c08e"))
    memory = 1
    deterministic = True

    def choose(self, obs: Observation) -> Action:
        return obs.history[-1].opp_action if obs.history else D

    @classmethod
    def machine(cls, params: PolicyParams, matrix: PayoffMatrix) -> StateMachine:
        return StateMachine.reacting_to_opponent(0.0, 1.0, 0.0)


@register_policy
class TitForTwoTats(PolicyAgent):
    """TF2T (tit for two tats): defects only right after two consecutive opponent defections.

    Like Axelrod's TitFor2Tats; needs a history window of at least 2 to see the two rounds.
    """

    key = "TF2T"
    description = "Cooperates unless the opponent defected in each of the last two rounds."
    look = Look("🐱", "Copykitten", "#4fc3f7", ("#e6f4ff", "#b3dcf7"))
    memory = 2
    deterministic = True

    def choose(self, obs: Observation) -> Action:
        last_two = obs.history[-2:]
        if len(last_two) == 2 and all(h.opp_action is D for h in last_two):
            return D
        return C

    @classmethod
    def machine(cls, params: PolicyParams, matrix: PayoffMatrix) -> StateMachine:
        # state = the opponent's trailing run of D, capped at 2
        return StateMachine(
            (1.0, 1.0, 0.0),
            (((0, 1), (0, 1)), ((0, 2), (0, 2)), ((0, 2), (0, 2))),
        )


@register_policy
class Alternator(PolicyAgent):
    """ALTERNATOR: C, D, C, D, ...: cooperates first, then plays the opposite of its own last
    (played) move, like Axelrod's Alternator."""

    key = "ALTERNATOR"
    description = "Cooperates first, then plays the opposite of its own last move."
    look = Look("🔀", "Alternator", "#2bb3a0", ("#e8f8f5", "#a9dfd3"))
    memory = 1
    deterministic = True

    def choose(self, obs: Observation) -> Action:
        return obs.history[-1].my_action.flipped if obs.history else C

    @classmethod
    def machine(cls, params: PolicyParams, matrix: PayoffMatrix) -> StateMachine:
        # state 1: own last move C (now D), 2: it was D (now C)
        by_own_move = ((1, 1), (2, 2))
        return StateMachine((1.0, 0.0, 1.0), (by_own_move,) * 3)


@register_policy
class DefectOnce(PolicyAgent):
    """DEFECT_ONCE: defects in the first round, then cooperates whatever happens (the opponent
    Akata et al. 2023 used to test forgiveness: F in round 1, then J)."""

    key = "DEFECT_ONCE"
    description = "Defects in the first round, then always cooperates."
    look = Look("🥊", "Defect Once", "#c2185b", ("#fde4ee", "#f3a6c4"))
    memory = 0
    deterministic = True

    def choose(self, obs: Observation) -> Action:
        return D if obs.round_index == 0 else C

    @classmethod
    def machine(cls, params: PolicyParams, matrix: PayoffMatrix) -> StateMachine:
        # 0: the first round (D), 1: every later round (C)
        return StateMachine((0.0, 1.0), (((1, 1), (1, 1)), ((1, 1), (1, 1))))
