"""Scripted policies of group games, each defined once and registered by name (case-insensitive).

A group policy class holds its decision rule round by round (`choose(obs, u)`, from the seat's
`GroupObservation` and the round's POLICY uniform u) and the same rule as a finite-state machine
for the vectorized engine (`machine(n, game)`, see `pdbench.core.group_batch`); the tests check
that both play the same moves. `memory` is the history window the rule needs, `reads` the
`PolicyParams` it uses. The names are the config's `policy:` values in a group game; they are a
registry of their own, beside the pairwise one of `pdbench.agents.policy` (TFT here is the group
TFT, which at N = 2 is exactly the pairwise TFT).

`GroupPolicyAgent` is the round-by-round agent of a seat: it draws its uniform with
`counter_uniform(agent_seed, round, Purpose.POLICY)` as the pairwise policy agents do, so the
round-by-round path plays exactly like the vectorized one.
"""

from __future__ import annotations

import copy
import math
from typing import ClassVar

from pdbench.core.config import Loc, PolicyAgentConfig, PolicyParams
from pdbench.core.group_batch import GroupMachine
from pdbench.core.group_game import GroupGame, GroupObservation
from pdbench.core.rng import Purpose, counter_uniform
from pdbench.core.types import Action, Decision

C, D = Action.C, Action.D


class GroupPolicy:
    """Base class: subclasses set the class attributes and implement `machine` and `choose`.

    An instance belongs to one seat: a rule with state (GRIM) keeps it between rounds and
    forgets it in `reset()`.
    """

    key: ClassVar[str] = ""
    description: ClassVar[str] = ""
    reads: ClassVar[tuple[str, ...]] = ()  # the PolicyParams it uses
    memory: ClassVar[int] = 1  # rounds of history its rule needs (with its own state)
    deterministic: ClassVar[bool | None] = None  # whether its rule never uses u

    def __init__(self, params: PolicyParams | None = None) -> None:
        self.params = params or PolicyParams()

    def reset(self) -> None:
        """Start a new game (forget any state of the last one)."""

    def machine(self, n: int, game: GroupGame) -> GroupMachine:
        """The rule as a state machine of a seat in a group of n playing `game`."""
        raise NotImplementedError

    def choose(self, obs: GroupObservation, u: float) -> Action:
        """The move for this observation; `u` is the round's POLICY uniform."""
        raise NotImplementedError


GROUP_POLICY_REGISTRY: dict[str, type[GroupPolicy]] = {}


def register_group_policy(cls: type[GroupPolicy]) -> type[GroupPolicy]:
    """Class decorator: register a group policy under its `key`; a duplicate name is an error."""
    key = cls.key.upper()
    if not key:
        raise ValueError(f"{cls.__name__} has no key")
    if key in GROUP_POLICY_REGISTRY:
        raise ValueError(
            f"duplicate group policy name {key!r}"
            f" ({cls.__name__} and {GROUP_POLICY_REGISTRY[key].__name__})"
        )
    if cls.deterministic is None:
        raise ValueError(f"{cls.__name__} does not declare whether it is deterministic")
    GROUP_POLICY_REGISTRY[key] = cls
    return cls


def group_policy_names() -> list[str]:
    """Registered group policy names, sorted."""
    return sorted(GROUP_POLICY_REGISTRY)


def group_policy_class(name: str) -> type[GroupPolicy]:
    """The registered class of a group policy name (case-insensitive); KeyError lists the
    valid names."""
    cls = GROUP_POLICY_REGISTRY.get(name.upper())
    if cls is None:
        raise KeyError(f"unknown group policy {name!r} (valid: {', '.join(group_policy_names())})")
    return cls


def make_group_policy(name: str, params: PolicyParams | None = None) -> GroupPolicy:
    """A new instance of a registered group policy (case-insensitive name)."""
    return group_policy_class(name)(params)


class GroupPolicyAgent:
    """The round-by-round agent of one seat playing a group policy.

    `reset(seed)` takes the seat's stream seed (`agent_seed(game_seed, seat)`); `decide` draws
    the round's uniform `counter_uniform(seed, round_index, Purpose.POLICY)` and asks the policy.
    The agent keeps its own copy of the policy, so a policy with state is never shared by seats.
    """

    def __init__(self, name: str, policy: GroupPolicy, seat: int) -> None:
        self.name = name
        self.policy = copy.deepcopy(policy)
        self.seat = seat
        self.seed = 0

    def reset(self, seed: int | None = None) -> None:
        """Start a new game with the seat's stream seed."""
        self.seed = int(seed or 0)
        self.policy.reset()

    async def decide(self, obs: GroupObservation) -> Decision:
        """The policy's move for this observation (policies never fail to parse)."""
        if obs.seat != self.seat:
            raise ValueError(
                f"observation of seat {obs.seat} given to the agent of seat {self.seat}"
            )
        u = counter_uniform(self.seed, obs.round_index, Purpose.POLICY)
        return Decision(self.policy.choose(obs, u))


# --------------------------------------------------------------------------------------------
# The policies


@register_group_policy
class GroupAllC(GroupPolicy):
    """ALLC: always cooperates."""

    key = "ALLC"
    description = "Always cooperates."
    memory = 0
    deterministic = True

    def machine(self, n: int, game: GroupGame) -> GroupMachine:
        return GroupMachine.constant(1.0, n)

    def choose(self, obs: GroupObservation, u: float) -> Action:
        return C


@register_group_policy
class GroupAllD(GroupPolicy):
    """ALLD: always defects."""

    key = "ALLD"
    description = "Always defects."
    memory = 0
    deterministic = True

    def machine(self, n: int, game: GroupGame) -> GroupMachine:
        return GroupMachine.constant(0.0, n)

    def choose(self, obs: GroupObservation, u: float) -> Action:
        return D


@register_group_policy
class GroupRandom(GroupPolicy):
    """RANDOM: cooperates with probability `coop_prob` (default 0.5) each round: C when the
    round's uniform u < coop_prob."""

    key = "RANDOM"
    description = "Cooperates at random with probability coop_prob (default one half)."
    reads = ("coop_prob",)
    memory = 0
    deterministic = False

    def probability(self) -> float:
        """P(C) each round."""
        return 0.5 if self.params.coop_prob is None else self.params.coop_prob

    def machine(self, n: int, game: GroupGame) -> GroupMachine:
        return GroupMachine.constant(self.probability(), n)

    def choose(self, obs: GroupObservation, u: float) -> Action:
        return C if u < self.probability() else D


@register_group_policy
class ConditionalCooperator(GroupPolicy):
    """CC (conditional cooperator): C in round 1, then C when at least `m` of the others
    cooperated in the last round. `m` is 1..N-1; None is ceil((N-1)/2), half of the others
    rounded up (at N = 2 that is 1: TFT)."""

    key = "CC"
    description = "Cooperates first, then when at least m of the others cooperated last round."
    reads = ("m",)
    memory = 1
    deterministic = True

    def threshold(self, n: int) -> int:
        """m for a group of n (ValueError when it is not 1..n-1)."""
        m = self.params.m
        if m is None:
            return math.ceil((n - 1) / 2)
        if not 1 <= m <= n - 1:
            raise ValueError(f"CC's m must be 1..{n - 1} in a group of {n} (got {m})")
        return m

    def machine(self, n: int, game: GroupGame) -> GroupMachine:
        m = self.threshold(n)
        return GroupMachine.reacting(n, lambda my_c, k: k >= m)

    def choose(self, obs: GroupObservation, u: float) -> Action:
        m = self.threshold(obs.n_players)
        k = obs.others_cooperated_last()
        return C if k is None or k >= m else D


@register_group_policy
class GroupTitForTat(GroupPolicy):
    """TFT (group tit for tat): C in round 1, then C exactly when all the others cooperated in
    the last round (at N = 2: the pairwise TFT)."""

    key = "TFT"
    description = "Cooperates first, then only when every other player cooperated last round."
    memory = 1
    deterministic = True

    def machine(self, n: int, game: GroupGame) -> GroupMachine:
        return GroupMachine.reacting(n, lambda my_c, k: k == n - 1)

    def choose(self, obs: GroupObservation, u: float) -> Action:
        k = obs.others_cooperated_last()
        return C if k is None or k == obs.n_players - 1 else D


@register_group_policy
class GroupGrim(GroupPolicy):
    """GRIM: cooperates until a co-player has defected once, then defects for good."""

    key = "GRIM"
    description = "Cooperates until any other player defects once, then defects forever."
    memory = 1
    deterministic = True

    def __init__(self, params: PolicyParams | None = None) -> None:
        super().__init__(params)
        self.triggered = False

    def reset(self) -> None:
        self.triggered = False

    def machine(self, n: int, game: GroupGame) -> GroupMachine:
        # 0: calm (a co-player's D triggers), 1: triggered for good
        calm = tuple(0 if k == n - 1 else 1 for k in range(n))
        return GroupMachine((1.0, 0.0), ((calm, calm), ((1,) * n, (1,) * n)))

    def choose(self, obs: GroupObservation, u: float) -> Action:
        others = obs.n_players - 1
        if any(r.cooperators_other_than(obs.seat) < others for r in obs.history):
            self.triggered = True
        return D if self.triggered else C


@register_group_policy
class GroupWinStayLoseShift(GroupPolicy):
    """WSLS on the group payoff: C in round 1; then repeats its last move when its last payoff
    was at least the aspiration (`win_threshold`, default `game.aspiration()`, halfway between
    all-cooperate and all-defect), else switches. At N = 2 in the default PD: Pavlov."""

    key = "WSLS"
    description = "Repeats its last move after a good group payoff, switches after a bad one."
    reads = ("win_threshold",)
    memory = 1
    deterministic = True

    def aspiration(self, game: GroupGame) -> float:
        """The payoff at and above which it stays."""
        threshold = self.params.win_threshold
        return game.aspiration() if threshold is None else threshold

    def machine(self, n: int, game: GroupGame) -> GroupMachine:
        line = self.aspiration(game)
        return GroupMachine.reacting(n, lambda my_c, k: (game.payoff(my_c, k) >= line) == my_c)

    def choose(self, obs: GroupObservation, u: float) -> Action:
        last, payoff = obs.my_last(), obs.my_last_payoff()
        if last is None or payoff is None:
            return C
        return last if payoff >= self.aspiration(obs.game) else last.flipped


def group_policy_problem(name: str, params: PolicyParams) -> tuple[Loc, str] | None:
    """(location under the agent, message) for a parameter set that this group policy does
    not read; None when the parameters are fine (`name` must be registered)."""
    cls = group_policy_class(name)
    for key, value in params.model_dump().items():
        if value is not None and key not in cls.reads:
            readers = [k for k, c in sorted(GROUP_POLICY_REGISTRY.items()) if key in c.reads]
            used = ", ".join(readers) or "no group policy"
            return ("params", key), (
                f"{cls.key} does not use it (used by: {used}); set it to null (got {value!r})"
            )
    return None


def is_group_batchable(cfg: PolicyAgentConfig) -> bool:
    """The vectorized engine plays this group policy exactly as the round-by-round agent: its
    history window is None or at least the policy's memory."""
    cls = GROUP_POLICY_REGISTRY.get(cfg.policy.upper())
    if cls is None or cls.memory is None:
        return False
    return cfg.history_window is None or cfg.history_window >= cls.memory
