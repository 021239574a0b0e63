"""Pydantic models of the two group-science configs: tournaments of a field in groups, and the
evolution of strategies whose fitness comes from group compositions.

```yaml
group_game: {kind: linear_pd}                    # the stage game of every group (groups configs)
group_tournament:
  players: [ALLC, ALLD, TFT, CC, WSLS]           # the field: group policies or LLM agents
  group_size: 3                                  # N: every group of N of the field plays
  with_replacement: false                        # true: every multiset (a player in several seats)
  repetitions: 5                                 # games per group
```

```yaml
group_game: {kind: public_goods, r: 3}
group_evolution:
  population: [{player: ALLC, count: 20}, {player: ALLD, count: 20}]   # Z = 40
  group_size: 4                                  # N
  process: moran                                 # moran | wright_fisher | pairwise_comparison
  beta: 1.0                                      # selection intensity; null: fitness-proportional
  generations: 5000
  seeds: 20                                      # independent runs of the process
  repetitions: 3                                 # games per group composition
```

Noise is `game.noise` and the horizon the top-level `horizon`, as in pairwise tournaments. The
runners are `pdbench.runners.science.group_tournament` and `...group_evolve`.
"""

from __future__ import annotations

import math
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from pdbench.core.config import (
    CONFIG_MODELS,
    MAX_GENERATIONS,
    MAX_POPULATION,
    MAX_REPEATS,
    AgentConfig,
    AnyAgentConfig,
    HorizonConfig,
    Loc,
    ModeConfig,
    PopulationMember,
)
from pdbench.core.group_config import GroupGameConfig
from pdbench.core.group_game import MAX_PLAYERS, GroupGame
from pdbench.core.strict import Strict

GROUP_PROCESSES = ("moran", "wright_fisher", "pairwise_comparison")


def tournament_groups(n_players: int, group_size: int, with_replacement: bool) -> int:
    """How many groups a field of `n_players` forms in groups of `group_size`: combinations of
    distinct players, or multisets with replacement."""
    if with_replacement:
        return math.comb(n_players + group_size - 1, group_size)
    return math.comb(n_players, group_size)


class GroupTournamentSection(Strict):
    """A field of players and how they meet: every group of `group_size` of them (combinations of
    distinct players, or multisets `with_replacement`) plays `repetitions` games. `log_rounds`
    writes every game's rounds to rounds.jsonl (games with an LLM seat always are)."""

    players: list[AgentConfig] = Field(min_length=2)
    group_size: int = Field(default=3, ge=2, le=MAX_PLAYERS)
    with_replacement: bool = False
    repetitions: int = Field(default=5, ge=1, le=MAX_REPEATS)
    log_rounds: bool = False

    @model_validator(mode="after")
    def _size_fits(self) -> GroupTournamentSection:
        n = len(self.players)
        if not self.with_replacement and self.group_size > n:
            raise ValueError(
                f"group_size: groups of distinct players need at most as many seats as players "
                f"({n}); lower it or set with_replacement: true (got {self.group_size})"
            )
        return self

    @property
    def n_groups(self) -> int:
        """How many groups play."""
        return tournament_groups(len(self.players), self.group_size, self.with_replacement)


class GroupTournamentConfig(ModeConfig):
    """A whole group tournament config, refs expanded."""

    kind: ClassVar[str] = "group_tournament"
    group_tournament: GroupTournamentSection
    group_game: GroupGameConfig = Field(default_factory=GroupGameConfig)

    def stage_game(self) -> GroupGame:
        """The game every group plays (N = group_size)."""
        return self.group_game.build(self.group_tournament.group_size, self.game.matrix())

    def games_planned(self) -> list[tuple[int, HorizonConfig]]:
        """Groups x repetitions."""
        section = self.group_tournament
        return [(section.n_groups * section.repetitions, self.horizon)]

    def agent_locations(self) -> list[tuple[Loc, AnyAgentConfig]]:
        """Every player with its location."""
        return [
            (("group_tournament", "players", i), p)
            for i, p in enumerate(self.group_tournament.players)
        ]

    def game_problems(self) -> list[tuple[Loc, str]]:
        """(location, message) when the stage game cannot be built for the group size."""
        try:
            self.stage_game()
        except ValueError as exc:
            return [(("group_game",), str(exc))]
        return []


class GroupEvolutionSection(Strict):
    """A well-mixed population of Z individuals of several types that meet in groups of N.

    Fitness comes from group compositions: every composition of N among the types plays
    `repetitions` games; then the process (`moran`, `wright_fisher`, `pairwise_comparison`)
    runs `seeds` times for at most `generations` steps (one Moran or pairwise-comparison step is
    one event; one Wright-Fisher step a whole generation). `beta` is the selection intensity
    (exponential fitness, or the Fermi rule of pairwise comparison); null is the
    fitness-proportional rule of the pairwise evolution (moran and wright_fisher only)."""

    population: list[PopulationMember] = Field(min_length=2)
    group_size: int = Field(default=3, ge=2, le=MAX_PLAYERS)
    process: Literal["moran", "wright_fisher", "pairwise_comparison"] = "moran"
    beta: float | None = Field(default=None, ge=0.0, le=1e6)
    generations: int = Field(default=1000, ge=0, le=MAX_GENERATIONS)
    mutation_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    seeds: int = Field(default=1, ge=1, le=10_000)
    repetitions: int = Field(default=3, ge=1, le=MAX_REPEATS)

    @model_validator(mode="after")
    def _fits(self) -> GroupEvolutionSection:
        if self.process == "pairwise_comparison" and self.beta is None:
            raise ValueError(
                "beta: the pairwise_comparison process needs a selection intensity >= 0 "
                "(null is fitness-proportional selection, for moran and wright_fisher) (got None)"
            )
        total = self.population_size
        if total > MAX_POPULATION:
            raise ValueError(
                f"population: at most {MAX_POPULATION} individuals in all (got {total})"
            )
        if total < self.group_size:
            raise ValueError(
                f"population: {total} individuals cannot form groups of {self.group_size}; "
                f"add individuals or lower group_size (got {total})"
            )
        return self

    @property
    def population_size(self) -> int:
        """Z: the individuals of all types."""
        return sum(m.count for m in self.population)

    @property
    def n_compositions(self) -> int:
        """How many group compositions of N among the types play."""
        s = len(self.population)
        return math.comb(self.group_size + s - 1, s - 1)


class GroupEvolutionConfig(ModeConfig):
    """A whole group evolution config, refs expanded."""

    kind: ClassVar[str] = "group_evolution"
    group_evolution: GroupEvolutionSection
    group_game: GroupGameConfig = Field(default_factory=GroupGameConfig)

    def stage_game(self) -> GroupGame:
        """The game every group plays (N = group_size)."""
        return self.group_game.build(self.group_evolution.group_size, self.game.matrix())

    def games_planned(self) -> list[tuple[int, HorizonConfig]]:
        """Compositions x repetitions."""
        section = self.group_evolution
        return [(section.n_compositions * section.repetitions, self.horizon)]

    def agent_locations(self) -> list[tuple[Loc, AnyAgentConfig]]:
        """Every type's player with its location."""
        return [
            (("group_evolution", "population", i, "player"), m.player)
            for i, m in enumerate(self.group_evolution.population)
        ]

    def game_problems(self) -> list[tuple[Loc, str]]:
        """(location, message) when the stage game cannot be built for the group size."""
        try:
            self.stage_game()
        except ValueError as exc:
            return [(("group_game",), str(exc))]
        return []


GROUP_SCIENCE_MODELS: dict[str, type[ModeConfig]] = {
    "group_tournament": GroupTournamentConfig,
    "group_evolution": GroupEvolutionConfig,
}
CONFIG_MODELS.update(GROUP_SCIENCE_MODELS)  # the config kinds `pdbench.core.config` knows

__all__ = [
    "GROUP_PROCESSES",
    "GROUP_SCIENCE_MODELS",
    "GroupEvolutionConfig",
    "GroupEvolutionSection",
    "GroupTournamentConfig",
    "GroupTournamentSection",
    "tournament_groups",
]
