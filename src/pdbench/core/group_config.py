"""Pydantic models of a groups config: N-player games, each condition a group of seats.

```yaml
group_game: {kind: public_goods, r: 3, c: 1}     # the stage game of every condition
groups:
  replicates: 10
  conditions:
    - name: five_conditional
      seats: [CC, CC, CC, TFT, ALLD]             # one agent per seat; N = len(seats)
      game: {kind: volunteer, b: 2, c: 1}        # optional: this condition's own game
```

A condition's game has as many players as it has seats; `kind: matrix` is the config's 2x2 game
(`game.payoff_matrix`) and needs two seats. The run section, horizon, noise, budget, talk and
metrics mean what they mean in an experiment (`pdbench.core.config`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from pdbench.core.config import (
    MAX_REPEATS,
    AgentConfig,
    AnyAgentConfig,
    HorizonConfig,
    Loc,
    MetricsConfig,
    ModeConfig,
)
from pdbench.core.group_game import MAX_PLAYERS, GroupGame
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.strict import Strict
from pdbench.core.talk import CommunicationConfig, CommunicationOverride

# Which parameters each kind of game reads (setting another is an error), and their defaults.
GAME_PARAMS: dict[str, dict[str, float | None]] = {
    "linear_pd": {},
    "public_goods": {"r": None, "c": 1.0},
    "volunteer": {"b": 2.0, "c": 1.0},
    "stag_hunt": {"threshold": None, "r": None, "c": 1.0},
    "matrix": {},
}


class GroupGameConfig(Strict):
    """A symmetric two-action game of N players (N is the number of seats of a condition)."""

    kind: Literal["linear_pd", "public_goods", "volunteer", "stag_hunt", "matrix"] = "linear_pd"
    r: float | None = Field(default=None, gt=0.0)
    c: float | None = Field(default=None, gt=0.0)
    b: float | None = Field(default=None, gt=0.0)
    threshold: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _params_of_kind(self) -> GroupGameConfig:
        reads = GAME_PARAMS[self.kind]
        for name in ("r", "c", "b", "threshold"):
            value = getattr(self, name)
            if value is not None and name not in reads:
                valid = ", ".join(reads) or "none"
                raise ValueError(
                    f"{name}: a {self.kind} game does not read it (its parameters: {valid}) "
                    f"(got {value!r})"
                )
            if value is None and name in reads and reads[name] is None:
                raise ValueError(f"{name}: a {self.kind} game needs it")
        return self

    def build(self, n_players: int, matrix: PayoffMatrix) -> GroupGame:
        """The game for a group of `n_players`; ValueError (one line) when it cannot be."""
        c = self.c if self.c is not None else 1.0
        if self.kind == "linear_pd":
            return GroupGame.linear_pd(n_players, matrix)
        if self.kind == "public_goods":
            assert self.r is not None
            return GroupGame.public_goods(n_players, self.r, c)
        if self.kind == "volunteer":
            return GroupGame.volunteer(n_players, self.b if self.b is not None else 2.0, c)
        if self.kind == "stag_hunt":
            assert self.r is not None and self.threshold is not None
            return GroupGame.stag_hunt(n_players, self.threshold, self.r, c)
        if n_players != 2:
            raise ValueError(f"a matrix game has two players (got {n_players} seats)")
        return GroupGame.from_matrix(matrix)


class GroupConditionConfig(Strict):
    """One group: its seats (an agent each), or a `pool` of agents from which each game draws
    a group of `size` anew (random matching, "strangers"; seeded by the run seed, the condition
    and the replicate); optionally its own game, horizon, noise, talk."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._+-]+$")
    seats: list[AgentConfig] | None = Field(default=None, min_length=2, max_length=MAX_PLAYERS)
    pool: list[AgentConfig] | None = Field(default=None, min_length=2, max_length=1000)
    size: int | None = Field(default=None, ge=2, le=MAX_PLAYERS)
    game: GroupGameConfig | None = None
    horizon: HorizonConfig | None = None
    noise: float | None = Field(default=None, ge=0.0, le=0.5)
    communication: CommunicationOverride | None = None

    @model_validator(mode="after")
    def _seats_or_pool(self) -> GroupConditionConfig:
        if (self.seats is None) == (self.pool is None):
            raise ValueError("set either seats (a fixed group) or pool and size (random groups)")
        if self.seats is not None and self.size is not None:
            raise ValueError(
                f"size: a fixed group has as many players as seats; set it to null "
                f"(got {self.size})"
            )
        if self.pool is not None:
            if self.size is None:
                raise ValueError("size: random groups drawn from a pool need their size")
            if self.size > len(self.pool):
                raise ValueError(
                    f"size: at most the pool's {len(self.pool)} agents (got {self.size})"
                )
            names = [agent.display_name() for agent in self.pool]
            repeated = sorted({n for n in names if names.count(n) > 1})
            if repeated:
                raise ValueError(
                    f"pool: each agent of a pool needs its own name (give each a `name`; for a "
                    f"ref, inside its `overrides`); repeated: {', '.join(repeated)}"
                )
        return self

    @property
    def n_players(self) -> int:
        """How many seats the group has."""
        return len(self.seats) if self.seats is not None else int(self.size or 0)

    @property
    def matching(self) -> str:
        """fixed (the same seats every game) or random (a group drawn from the pool each game)."""
        return "fixed" if self.seats is not None else "random"

    @property
    def members(self) -> list[Any]:
        """The agents of the condition: its seats, or its pool."""
        return list(self.seats if self.seats is not None else self.pool or [])

    @property
    def members_key(self) -> str:
        """`seats` or `pool`: where its agents are in the config."""
        return "seats" if self.seats is not None else "pool"


class GroupsSection(Strict):
    """Conditions (groups) and how many replicates (games) of each."""

    replicates: int = Field(default=1, ge=1, le=MAX_REPEATS)
    conditions: list[GroupConditionConfig] = Field(min_length=1)

    @field_validator("conditions")
    @classmethod
    def _unique_names(cls, value: list[GroupConditionConfig]) -> list[GroupConditionConfig]:
        seen: set[str] = set()
        for cond in value:
            if cond.name in seen:
                raise ValueError(f"duplicate condition name (got {cond.name!r})")
            seen.add(cond.name)
        return value


class GroupsConfig(ModeConfig):
    """A whole groups config, refs expanded."""

    kind: ClassVar[str] = "groups"
    groups: GroupsSection
    group_game: GroupGameConfig = Field(default_factory=GroupGameConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    communication: CommunicationConfig = Field(default_factory=CommunicationConfig)

    def communication_of(self, cond: GroupConditionConfig) -> CommunicationConfig:
        """The message channel of one condition."""
        if cond.communication is None:
            return self.communication
        return cond.communication.over(self.communication)

    def game_config_of(self, cond: GroupConditionConfig) -> GroupGameConfig:
        """The game section that applies to one condition."""
        return cond.game or self.group_game

    def game_of(self, cond: GroupConditionConfig) -> GroupGame:
        """The stage game of one condition, with as many players as it has seats."""
        return self.game_config_of(cond).build(cond.n_players, self.game.matrix())

    def games_planned(self) -> list[tuple[int, HorizonConfig]]:
        """Replicates of every condition, with the condition's horizon."""
        reps = self.groups.replicates
        return [(reps, cond.horizon or self.horizon) for cond in self.groups.conditions]

    def agent_locations(self) -> list[tuple[Loc, AnyAgentConfig]]:
        """Every seat (or pool member) of every condition, in order."""
        return [
            (("groups", "conditions", i, cond.members_key, j), agent)
            for i, cond in enumerate(self.groups.conditions)
            for j, agent in enumerate(cond.members)
        ]

    def game_warnings(self) -> list[str]:
        """A line for each condition whose public goods game is no dilemma (r >= N: defecting
        does not pay more than cooperating)."""
        out = []
        for i, cond in enumerate(self.groups.conditions):
            try:
                game = self.game_of(cond)
            except ValueError:
                continue  # refused as a problem
            if game.kind == "public_goods" and not game.defection_dominates():
                r = dict(game.params)["r"]
                out.append(
                    f"groups.conditions[{i}] ({cond.name}): r = {r:g} is at least N = "
                    f"{game.n_players}, so defecting pays no more than cooperating: not a "
                    "social dilemma (r < N makes one)"
                )
        return out

    def game_problems(self) -> list[tuple[Loc, str]]:
        """(location, message) for conditions whose game cannot be built for their seats."""
        problems: list[tuple[Loc, str]] = []
        for i, cond in enumerate(self.groups.conditions):
            try:
                self.game_of(cond)
            except ValueError as exc:
                where: Loc = ("groups", "conditions", i, "game") if cond.game else ("group_game",)
                problems.append((where, str(exc)))
        return problems


def is_groups(config: Any) -> bool:
    """Whether a validated config is a groups config."""
    return isinstance(config, GroupsConfig)


__all__ = [
    "GroupConditionConfig",
    "GroupGameConfig",
    "GroupsConfig",
    "GroupsSection",
    "is_groups",
]
