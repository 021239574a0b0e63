"""Seats of the resource games (issue 31): what a seat is asked each round and the scripted seats.

A seat of a public goods game (`pdbench.core.pgg`) is asked, each round, for a public message
(when the group talks), a contribution, and (when punishment is on) punishment tokens once the
contributions are revealed, and (when the reward stage is on) reward tokens, shown the same. A
seat of a commons (`pdbench.core.commons`) is asked for a harvest each season and, when the
group talks, a message after the harvest. Every answer is a `Choice`:
the value used, and how it was read (parse failures, the fallback, the calls made).

Scripted seats: the public goods policies of `pdbench.agents.pgg_policy` (by name) and the
harvest policies registered here (by name, case-insensitive, a duplicate name is an error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from pdbench.core.commons import CommonsRules, SeasonResult, sustainable_catch
from pdbench.core.pgg import PGGRules, RoundResult

# ---------------------------------------------------------------------------------------------
# What a seat is shown, and what it answers


@dataclass(frozen=True)
class Said:
    """A message (or a reflection) with the calls that produced it."""

    text: str
    calls: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Choice:
    """A seat's integer answer (a contribution, a harvest) or punishment tokens by target.

    `parse_failures`: replies that could not be read before the value was settled; `fallback`:
    no reply was readable, so `value` is the stated fallback; `calls`: one record per provider
    call (prompt and reply when the run stores them)."""

    value: int = 0
    tokens: dict[int, int] = field(default_factory=dict)
    parse_failures: int = 0
    fallback: bool = False
    clamped: bool = False
    calls: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Message:
    """A message said in a game: the round (season) it was said in, the seat, the text."""

    round_index: int
    seat: int
    text: str


@dataclass(frozen=True)
class PGGContext:
    """What seat `seat` of a public goods game knows when it is asked in round `round_index`:
    the rules, the seats' names, the rounds so far, every message so far, its balance and limit,
    and, in the punishment stage, this round's contributions and its balance after the fund."""

    rules: PGGRules
    seat: int
    names: tuple[str, ...]
    round_index: int
    n_rounds: int
    history: tuple[RoundResult, ...]
    messages: tuple[Message, ...]
    balance: float
    limit: int
    contributions: tuple[int, ...] | None = None
    post_fund: float | None = None


@dataclass(frozen=True)
class CommonsContext:
    """What seat `seat` of a commons knows in season `season`: the rules, names, the seasons so
    far, messages, the stock now, whether prompts carry universalization, and whether this seat
    is an outsider (`outsider`) who has arrived (`present`)."""

    rules: CommonsRules
    seat: int
    names: tuple[str, ...]
    season: int
    n_seasons: int
    history: tuple[SeasonResult, ...]
    messages: tuple[Message, ...]
    stock: int
    universalization: bool = False
    outsider: bool = False
    present: bool = True
    system_prompt: str = "v3"
    # how many agents GovSim's sustainable share divides by: the configured agents, so the
    # outsider is not counted (4 of 5 in its perturbation run)
    sharing: int = 0

    @property
    def sustainable_share(self) -> int:
        """GovSim's sustainable catch per agent at this season's stock."""
        return sustainable_catch(self.stock, self.sharing or self.rules.n_agents)


# ---------------------------------------------------------------------------------------------
# Harvest policies


class HarvestPolicy:
    """Base class: subclasses set `key` and `description` and override `harvest`."""

    key: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def harvest(self, ctx: CommonsContext) -> int:
        """This season's request, 0..max_catch."""
        raise NotImplementedError


HARVEST_POLICIES: dict[str, type[HarvestPolicy]] = {}


def register_harvest_policy(cls: type[HarvestPolicy]) -> type[HarvestPolicy]:
    """Class decorator: register a harvest policy under its `key`; a duplicate is an error."""
    key = cls.key.upper()
    if not key:
        raise ValueError(f"{cls.__name__} has no key")
    if key in HARVEST_POLICIES:
        raise ValueError(f"duplicate harvest policy name {key!r}")
    HARVEST_POLICIES[key] = cls
    return cls


def harvest_policy_names() -> list[str]:
    """Registered harvest policy names, sorted."""
    return sorted(HARVEST_POLICIES)


def make_harvest_policy(name: str) -> HarvestPolicy:
    """The harvest policy registered as `name` (any case)."""
    cls = HARVEST_POLICIES.get(name.upper())
    if cls is None:
        raise ValueError(f"unknown harvest policy {name!r}; choose one of {harvest_policy_names()}")
    return cls()


@register_harvest_policy
class Sustainable(HarvestPolicy):
    key = "SUSTAINABLE"
    description = (
        "Asks GovSim's sustainable share, (stock // 2) // N, N the agents sharing the lake"
        " (an outsider's arrival does not change N, as in GovSim)."
    )

    def harvest(self, ctx: CommonsContext) -> int:
        return min(ctx.rules.max_catch, ctx.sustainable_share)


@register_harvest_policy
class Greedy(HarvestPolicy):
    key = "GREEDY"
    description = "Asks for as much as it may: min(max_catch, stock)."

    def harvest(self, ctx: CommonsContext) -> int:
        return min(ctx.rules.max_catch, ctx.stock)


@register_harvest_policy
class Moderate(HarvestPolicy):
    key = "MODERATE"
    description = (
        "Asks a fifth more than the sustainable share (at least one ton more): a little more"
        " than the lake renews, so a group of them runs the stock down over a few seasons."
    )

    def harvest(self, ctx: CommonsContext) -> int:
        share = ctx.sustainable_share
        return min(ctx.rules.max_catch, share + max(1, share // 5))


def policy_kind(name: str) -> str | None:
    """ "pgg" or "commons" for a registered policy name (any case), None for neither."""
    from pdbench.agents.pgg_policy import PGG_POLICY_REGISTRY

    if name.upper() in PGG_POLICY_REGISTRY:
        return "pgg"
    if name.upper() in HARVEST_POLICIES:
        return "commons"
    return None


# ---------------------------------------------------------------------------------------------
# Scripted seats


class PolicySeat:
    """A scripted seat: a public goods policy or a harvest policy by name. It says nothing."""

    def __init__(self, name: str, policy: str) -> None:
        from pdbench.agents.pgg_policy import PGGView, make_pgg_policy

        self.name = name
        self.kind = policy_kind(policy)
        if self.kind is None:
            raise ValueError(f"{policy!r} is neither a public goods nor a harvest policy")
        self._view = PGGView
        self._pgg = make_pgg_policy(policy) if self.kind == "pgg" else None
        self._harvest = make_harvest_policy(policy) if self.kind == "commons" else None

    def _pgg_view(self, ctx: PGGContext, balance: float) -> Any:
        shown = ctx.rules.visibility == "each"
        return self._view(
            ctx.rules,
            ctx.seat,
            balance,
            ctx.limit,
            tuple(r.contributions if shown else None for r in ctx.history),
            tuple(r.total for r in ctx.history),
        )

    async def message(self, ctx: PGGContext | CommonsContext) -> Said | None:
        """Policies do not talk."""
        return None

    async def reflect(self, ctx: CommonsContext) -> Said | None:
        """Policies do not reflect."""
        return None

    async def contribute(self, ctx: PGGContext) -> Choice:
        """The policy's contribution."""
        assert self._pgg is not None
        return Choice(self._pgg.contribute(self._pgg_view(ctx, ctx.balance)))

    async def punish(self, ctx: PGGContext) -> Choice:
        """The policy's punishment tokens, once the contributions are revealed."""
        assert self._pgg is not None and ctx.post_fund is not None
        seen = ctx.contributions if ctx.rules.visibility == "each" else None
        tokens = self._pgg.punish(self._pgg_view(ctx, ctx.post_fund), seen)
        return Choice(tokens={j: t for j, t in tokens.items() if t})

    async def reward(self, ctx: PGGContext) -> Choice:
        """The policy's reward tokens, shown what the punishment stage is shown."""
        assert self._pgg is not None and ctx.post_fund is not None
        seen = ctx.contributions if ctx.rules.visibility == "each" else None
        tokens = self._pgg.reward(self._pgg_view(ctx, ctx.post_fund), seen)
        return Choice(tokens={j: t for j, t in tokens.items() if t})

    async def harvest(self, ctx: CommonsContext) -> Choice:
        """The policy's request."""
        assert self._harvest is not None
        return Choice(self._harvest.harvest(ctx))
