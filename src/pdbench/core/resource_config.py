"""Pydantic models of the two resource games' configs (issue 31): a public goods game with
contributions and punishment (kind `pgg`, PGG-Bench's design) and a commons (kind `commons`,
GovSim's fishery). Both are run by `pdbench run`.

```yaml
pgg:
  replicates: 20
  game: {preset: pgg_bench}          # or endowment, multiplier, budget, punishment, reward, ...
  talk: true                         # a public message from every seat before it contributes
  conditions:
    - name: mixed
      seats: [FULL_COOPERATOR, CONDITIONAL_COOPERATOR, PUNISHER, FREE_RIDER, FREE_RIDER]
horizon: {type: fixed, n_rounds: 10}  # rounds (seasons in a commons)

commons:
  replicates: 10
  game: {capacity: 100, collapse_below: 5}
  talk: true                         # a discussion after each season's harvest
  conditions:
    - name: sustainable
      seats: [SUSTAINABLE, SUSTAINABLE, SUSTAINABLE, SUSTAINABLE, SUSTAINABLE]
    - name: outsider
      seats: [SUSTAINABLE, SUSTAINABLE, SUSTAINABLE, SUSTAINABLE, GREEDY]
      outsider_arrival: 3           # the last seat arrives in season 4 (index 3), GovSim's
      universalization: true
  published: ../studies/govsim_fishery.published.yaml  # optional, beside the config
```

A seat is a contribution (or harvest) policy by name (`pdbench.agents.resource_policy`) or an
LLM agent (its prompts are the game's own, `pdbench.agents.pgg_prompts` and `commons_prompts`).
The horizon is fixed: a game's rounds (seasons). Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from pdbench.core.commons import ALLOCATIONS, CommonsRules
from pdbench.core.config import (
    CONFIG_MODELS,
    MAX_REPEATS,
    AgentConfig,
    AnyAgentConfig,
    HorizonConfig,
    Loc,
    ModeConfig,
)
from pdbench.core.pgg import PGGRules
from pdbench.core.strict import Strict

MAX_SEATS = 26  # seats are lettered a..z in the record, as in groups


class PGGGameConfig(Strict):
    """A public goods game's rules (`pdbench.core.pgg.PGGRules`); `preset: pgg_bench` starts
    from PGG-Bench's and the keys given here replace its values."""

    preset: Literal["pgg_bench"] | None = None
    endowment: int | None = Field(default=None, ge=1, le=1_000_000)
    multiplier: float | None = Field(default=None, gt=0.0)
    budget: Literal["round", "balance"] | None = None
    integer_shares: bool | None = None
    punishment: bool | None = None
    punish_cost: float | None = Field(default=None, gt=0.0)
    punish_effect: float | None = Field(default=None, gt=0.0)
    punish_max_tokens: int | None = Field(default=None, ge=0)
    punish_max_targets: int | None = Field(default=None, ge=1)
    punish_cap_fraction: float | None = Field(default=None, gt=0.0, le=1.0)
    punish_cap_absolute: float | None = Field(default=None, gt=0.0)
    punish_rule: Literal["simultaneous", "sequential"] | None = None
    visibility: Literal["each", "total"] | None = None
    reward: bool | None = None
    reward_cost: float | None = Field(default=None, gt=0.0)
    reward_effect: float | None = Field(default=None, gt=0.0)
    reward_max_tokens: int | None = Field(default=None, ge=0)
    reward_max_targets: int | None = Field(default=None, ge=1)

    def rules(self, n_players: int) -> PGGRules:
        """The rules for a group of `n_players` (ValueError, one line, when they cannot be)."""
        values: dict[str, Any] = {}
        if self.preset == "pgg_bench":
            base = PGGRules.pgg_bench()
            values = {name: getattr(base, name) for name in PGGRules.__dataclass_fields__}
        values["n_players"] = n_players
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name != "preset" and value is not None:
                values[name] = value
        return PGGRules(**values)


class CommonsGameConfig(Strict):
    """A commons' rules (`pdbench.core.commons.CommonsRules`, GovSim's fishery by default)."""

    capacity: int = Field(default=100, ge=1, le=1_000_000)
    growth: int = Field(default=2, ge=1, le=100)
    collapse_below: int = Field(default=5, ge=0)
    max_catch: int = Field(default=100, ge=0)
    initial_stock: int | None = Field(default=None, ge=0)
    allocation: Literal["stochastic", "proportional"] = "stochastic"

    def rules(self, n_agents: int, n_seasons: int) -> CommonsRules:
        """The rules for `n_agents` and `n_seasons` (ValueError, one line, when they cannot be)."""
        assert self.allocation in ALLOCATIONS
        return CommonsRules(
            n_agents=n_agents,
            capacity=self.capacity,
            n_seasons=n_seasons,
            collapse_below=self.collapse_below,
            max_catch=self.max_catch,
            growth=self.growth,
            initial_stock=self.initial_stock,
            allocation=self.allocation,
        )


class ResourceConditionConfig(Strict):
    """One condition: a group of seats (one agent each) and what differs from the section's
    settings. `outsider_arrival` (commons) makes the last seat an outsider who arrives in that
    season (0-based) and fishes for money only; `universalization` (commons) adds GovSim's
    universalization sentence to every prompt."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._+-]+$")
    seats: list[AgentConfig] = Field(min_length=2, max_length=MAX_SEATS)
    talk: bool | None = None
    outsider_arrival: int | None = Field(default=None, ge=0)
    universalization: bool | None = None

    @property
    def n_players(self) -> int:
        """The number of seats."""
        return len(self.seats)


class _ResourceSection(Strict):
    replicates: int = Field(default=1, ge=1, le=MAX_REPEATS)
    talk: bool = False
    max_chars: int = Field(default=400, ge=1, le=4000)
    # a file of published numbers beside the recipe (`pdbench.core.resource_published`), read
    # and checked at load; the manifest keeps it and the run's summary prints it
    published: str | None = Field(default=None, min_length=1)
    conditions: list[ResourceConditionConfig] = Field(min_length=1)

    @field_validator("conditions")
    @classmethod
    def _unique_names(cls, value: list[ResourceConditionConfig]) -> list[ResourceConditionConfig]:
        seen: set[str] = set()
        for cond in value:
            if cond.name in seen:
                raise ValueError(f"condition names must be unique (got {cond.name!r} twice)")
            seen.add(cond.name)
        return value


class PGGSection(_ResourceSection):
    """The `pgg` section: the game, talk and the conditions."""

    game: PGGGameConfig = Field(default_factory=PGGGameConfig)


class CommonsSection(_ResourceSection):
    """The `commons` section: the fishery, talk (a discussion after each season), GovSim's
    universalization for every condition, and the conditions."""

    game: CommonsGameConfig = Field(default_factory=CommonsGameConfig)
    universalization: bool = False
    # GovSim's persona_v3 system prompt version ("v3" in its baseline experiments)
    system_prompt: Literal["v3", "v1"] = "v3"


class _ResourceConfig(ModeConfig):
    section_name: ClassVar[str] = ""

    @property
    def section(self) -> PGGSection | CommonsSection:
        """The game's section (`pgg` or `commons`)."""
        return getattr(self, self.section_name)

    def agent_locations(self) -> list[tuple[Loc, AnyAgentConfig]]:
        """Every seat of every condition with its location."""
        name = self.section_name
        return [
            ((name, "conditions", i, "seats", j), agent)
            for i, cond in enumerate(self.section.conditions)
            for j, agent in enumerate(cond.seats)
        ]

    def games_planned(self) -> list[tuple[int, HorizonConfig]]:
        """Every condition plays `replicates` games of the horizon."""
        section = self.section
        return [(section.replicates * len(section.conditions), self.horizon)]

    def talk_of(self, cond: ResourceConditionConfig) -> bool:
        """Whether the condition's group talks."""
        return self.section.talk if cond.talk is None else cond.talk

    @model_validator(mode="after")
    def _fixed_horizon(self) -> _ResourceConfig:
        if self.horizon.type != "fixed":
            raise ValueError(
                f"horizon.type: {self.kind} games have a fixed number of "
                f"{'seasons' if self.kind == 'commons' else 'rounds'} (valid: fixed) "
                f"(got {self.horizon.type!r})"
            )
        return self

    def game_problems(self) -> list[tuple[Loc, str]]:
        """Rules that cannot be built for a condition's group, as (location, message)."""
        raise NotImplementedError


class PGGConfig(_ResourceConfig):
    """A public goods game with contributions (and punishment): kind `pgg`."""

    kind: ClassVar[str] = "pgg"
    section_name: ClassVar[str] = "pgg"
    pgg: PGGSection

    def rules_of(self, cond: ResourceConditionConfig) -> PGGRules:
        """The condition's rules (its group's size)."""
        return self.pgg.game.rules(cond.n_players)

    def game_problems(self) -> list[tuple[Loc, str]]:
        """Rules that cannot be built, and settings only a commons reads."""
        problems: list[tuple[Loc, str]] = []
        for i, cond in enumerate(self.pgg.conditions):
            where: Loc = ("pgg", "conditions", i)
            try:
                self.rules_of(cond)
            except ValueError as exc:
                problems.append((("pgg", "game"), str(exc)))
            for key in ("outsider_arrival", "universalization"):
                if getattr(cond, key) is not None:
                    problems.append((where + (key,), "a commons setting; a pgg game has none"))
        return problems


class CommonsConfig(_ResourceConfig):
    """A commons (GovSim's fishery): kind `commons`."""

    kind: ClassVar[str] = "commons"
    section_name: ClassVar[str] = "commons"
    commons: CommonsSection

    def rules_of(self, cond: ResourceConditionConfig) -> CommonsRules:
        """The condition's rules (its group's size, the horizon's seasons)."""
        assert self.horizon.n_rounds is not None
        return self.commons.game.rules(cond.n_players, self.horizon.n_rounds)

    def universalization_of(self, cond: ResourceConditionConfig) -> bool:
        """Whether the condition's prompts carry GovSim's universalization sentence."""
        if cond.universalization is None:
            return self.commons.universalization
        return cond.universalization

    def game_problems(self) -> list[tuple[Loc, str]]:
        """Rules that cannot be built, and an outsider who would arrive after the last season."""
        problems: list[tuple[Loc, str]] = []
        for i, cond in enumerate(self.commons.conditions):
            try:
                self.rules_of(cond)
            except ValueError as exc:
                problems.append((("commons", "game"), str(exc)))
            arrival = cond.outsider_arrival
            n = self.horizon.n_rounds or 0
            if arrival is not None and arrival >= n:
                problems.append(
                    (
                        ("commons", "conditions", i, "outsider_arrival"),
                        f"the outsider would arrive after the last season (0..{n - 1}) "
                        f"(got {arrival})",
                    )
                )
        return problems


RESOURCE_MODELS: tuple[type[_ResourceConfig], ...] = (PGGConfig, CommonsConfig)
CONFIG_MODELS["pgg"] = PGGConfig
CONFIG_MODELS["commons"] = CommonsConfig


def is_resource(config: Any) -> bool:
    """Whether `config` is a pgg or commons config."""
    return isinstance(config, RESOURCE_MODELS)
