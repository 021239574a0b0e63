"""Scripted policies of the public goods game with punishment (`pdbench.core.pgg`), registered by
name (case-insensitive), and `play_policies` to play a game of them.

A policy decides from a `PGGView` (what its seat is shown): `contribute(view)` gives the round's
contribution, `punish(view, seen)` the punishment tokens by target once the round's
contributions are revealed, and `reward(view, seen)` (the reward stage, decided at the same time
from the same information) the reward tokens by target. With `visibility="total"` a seat sees only the group's totals, so the
punishers cannot tell who free-rode and punish nobody. Every policy here is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from pdbench.core.pgg import PGGRules, RoundResult, play_round


@dataclass(frozen=True, slots=True)
class PGGView:
    """What seat `seat` is shown: the rules, its balance and contribution limit this round, and
    the past rounds' contributions (each seat's, or None with `visibility="total"`) and totals."""

    rules: PGGRules
    seat: int
    balance: float
    limit: int
    past_contributions: tuple[tuple[int, ...] | None, ...]
    past_totals: tuple[int, ...]


class PGGPolicy:
    """Base class: subclasses set `key` and `description` and override `contribute` (and `punish`
    if they punish); `params` are keyword parameters of the rule."""

    key: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def __init__(self, **params: float) -> None:
        self.params = params

    def contribute(self, view: PGGView) -> int:
        """This round's contribution, 0..view.limit."""
        raise NotImplementedError

    def punish(self, view: PGGView, seen: tuple[int, ...] | None) -> dict[int, int]:
        """Punishment tokens by target seat, once this round's contributions `seen` are revealed
        (None when only the total is shown). The default punishes nobody."""
        return {}

    def reward(self, view: PGGView, seen: tuple[int, ...] | None) -> dict[int, int]:
        """Reward tokens by target seat, shown what `punish` is shown. The default rewards
        nobody."""
        return {}


PGG_POLICY_REGISTRY: dict[str, type[PGGPolicy]] = {}


def register_pgg_policy(cls: type[PGGPolicy]) -> type[PGGPolicy]:
    """Class decorator: register a policy under its `key`; a duplicate name is an error."""
    key = cls.key.upper()
    if not key:
        raise ValueError(f"{cls.__name__} has no key")
    if key in PGG_POLICY_REGISTRY:
        raise ValueError(f"duplicate public goods policy name {key!r}")
    PGG_POLICY_REGISTRY[key] = cls
    return cls


def pgg_policy_names() -> list[str]:
    """Registered public goods policy names, sorted."""
    return sorted(PGG_POLICY_REGISTRY)


def make_pgg_policy(name: str, **params: float) -> PGGPolicy:
    """The policy registered as `name` (any case) with its parameters."""
    cls = PGG_POLICY_REGISTRY.get(name.upper())
    if cls is None:
        raise ValueError(
            f"unknown public goods policy {name!r}; choose one of {pgg_policy_names()}"
        )
    return cls(**params)


def _spread_tokens(
    targets: Sequence[int],
    per_target: int,
    budget: float,
    cost: float,
    max_tokens: int,
    max_targets: int | None,
) -> dict[int, int]:
    """`per_target` tokens on each target in seat order, at most `max_tokens` tokens on at most
    `max_targets` targets, none beyond what `budget` pays at `cost` a token."""
    out: dict[int, int] = {}
    if per_target <= 0:
        return out
    left = min(max_tokens, int(budget // cost))
    for j in targets:
        if max_targets is not None and len(out) >= max_targets:
            break
        t = min(per_target, left)
        if t <= 0:
            break
        out[j] = t
        left -= t
    return out


def _spread(
    rules: PGGRules, targets: Sequence[int], per_target: int, budget: float
) -> dict[int, int]:
    """Punishment tokens spread by `_spread_tokens` within the punishment caps (none when the
    stage is off)."""
    if not rules.punishment:
        return {}
    return _spread_tokens(
        targets,
        per_target,
        budget,
        rules.punish_cost,
        rules.punish_max_tokens,
        rules.punish_max_targets,
    )


def _spread_rewards(
    rules: PGGRules, targets: Sequence[int], per_target: int, budget: float
) -> dict[int, int]:
    """Reward tokens spread by `_spread_tokens` within the reward caps (none when it is off)."""
    if not rules.reward:
        return {}
    return _spread_tokens(
        targets,
        per_target,
        budget,
        rules.reward_cost,
        rules.reward_max_tokens,
        rules.reward_max_targets,
    )


@register_pgg_policy
class FreeRider(PGGPolicy):
    key = "FREE_RIDER"
    description = "Contributes 0 and never punishes."

    def contribute(self, view: PGGView) -> int:
        return 0


@register_pgg_policy
class FullCooperator(PGGPolicy):
    key = "FULL_COOPERATOR"
    description = "Contributes everything it may (E, or its balance) and never punishes."

    def contribute(self, view: PGGView) -> int:
        return view.limit


@register_pgg_policy
class ConditionalCooperator(PGGPolicy):
    key = "CONDITIONAL_COOPERATOR"
    description = (
        "Contributes the group's mean contribution of the last round, rounded half up; in the"
        " first round `first` (default E/2 rounded down); never above its limit."
    )

    def contribute(self, view: PGGView) -> int:
        if not view.past_totals:
            want = int(self.params.get("first", view.rules.endowment // 2))
        else:
            want = int(view.past_totals[-1] / view.rules.n_players + 0.5)
        return max(0, min(want, view.limit))


@register_pgg_policy
class FreeRiderPunisher(PGGPolicy):
    key = "PUNISHER"
    description = (
        "Contributes its limit; punishes with `tokens` (default 2) each seat that contributed 0"
        " while some other seat contributed."
    )

    def contribute(self, view: PGGView) -> int:
        return view.limit

    def punish(self, view: PGGView, seen: tuple[int, ...] | None) -> dict[int, int]:
        if seen is None:
            return {}
        total = sum(seen)
        targets = [j for j, c in enumerate(seen) if j != view.seat and c == 0 and total > 0]
        return _spread(view.rules, targets, int(self.params.get("tokens", 2)), view.balance)


@register_pgg_policy
class AntisocialPunisher(PGGPolicy):
    key = "ANTISOCIAL_PUNISHER"
    description = (
        "Contributes `contribution` (default 0); punishes with `tokens` (default 2) each seat"
        " that contributed more than it."
    )

    def contribute(self, view: PGGView) -> int:
        return max(0, min(int(self.params.get("contribution", 0)), view.limit))

    def punish(self, view: PGGView, seen: tuple[int, ...] | None) -> dict[int, int]:
        if seen is None:
            return {}
        mine = seen[view.seat]
        targets = [j for j, c in enumerate(seen) if c > mine]
        return _spread(view.rules, targets, int(self.params.get("tokens", 2)), view.balance)


@register_pgg_policy
class Rewarder(PGGPolicy):
    key = "REWARDER"
    description = (
        "Contributes its limit; with the reward stage on, gives `tokens` (default 1) reward"
        " tokens to each other seat that contributed at least the group's mean of the round."
    )

    def contribute(self, view: PGGView) -> int:
        return view.limit

    def reward(self, view: PGGView, seen: tuple[int, ...] | None) -> dict[int, int]:
        if seen is None:
            return {}
        n = len(seen)
        targets = [j for j, c in enumerate(seen) if j != view.seat and c * n >= sum(seen)]
        return _spread_rewards(view.rules, targets, int(self.params.get("tokens", 1)), view.balance)


def play_policies(rules: PGGRules, policies: Sequence[PGGPolicy], rounds: int) -> list[RoundResult]:
    """Play `rounds` rounds of the policies (one a seat) and return the rounds in order."""
    n = rules.n_players
    if len(policies) != n:
        raise ValueError(f"{len(policies)} policies for {n} seats: give one a seat")
    balances = rules.initial_balances()
    carry = 0.0
    out: list[RoundResult] = []
    for _ in range(rounds):
        past_c = tuple(rr.contributions if rules.visibility == "each" else None for rr in out)
        past_t = tuple(rr.total for rr in out)
        views = [
            PGGView(rules, i, balances[i], rules.contribution_limit(balances[i]), past_c, past_t)
            for i in range(n)
        ]
        cs = [p.contribute(v) for p, v in zip(policies, views, strict=True)]
        first = play_round(rules, balances, cs, carry_in=carry)
        seen = first.contributions if rules.visibility == "each" else None
        pun: dict[int, dict[int, int]] = {}
        gifts: dict[int, dict[int, int]] = {}
        for i, p in enumerate(policies):
            after = PGGView(rules, i, first.post_fund[i], views[i].limit, past_c, past_t)
            if rules.punishment:
                pun[i] = p.punish(after, seen)
            if rules.reward:
                spent = sum(pun.get(i, {}).values()) * rules.punish_cost
                left = PGGView(rules, i, first.post_fund[i] - spent, views[i].limit, past_c, past_t)
                gifts[i] = p.reward(left, seen)
        if any(pun.values()) or any(gifts.values()):
            rr = play_round(rules, balances, cs, pun, carry_in=carry, rewards=gifts)
        else:
            rr = first
        out.append(rr)
        balances, carry = rr.balances, rr.carry_out
    return out
