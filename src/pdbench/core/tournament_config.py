"""Pydantic models of tournament and evolution configs (after refs are resolved).

A player is written as a policy name (`TFT`), an Axelrod strategy (`axelrod:Prober`, needs the
axelrod extra), or a full agent mapping: `{type: policy, ...}`, `{type: axelrod, strategy: ...}`,
or an LLM agent, usually `{ref: agents/llm_default.yaml, overrides: {...}}`. Names (display names)
must be unique, because match seeds derive from them. Every model forbids unknown keys.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from pdbench.core.config import (
    GameConfig,
    HorizonConfig,
    LLMAgentConfig,
    PolicyAgentConfig,
    RunConfig,
    Strict,
)

AXELROD_PREFIX = "axelrod:"
PLAYER_TYPES = ("policy", "llm", "axelrod")


class AxelrodAgentConfig(Strict):
    """A strategy of the Axelrod library, by class name (e.g. Prober) or display name."""

    type: Literal["axelrod"]
    strategy: str = Field(min_length=1)
    name: str | None = None

    def display_name(self) -> str:
        """Name used in artifacts."""
        return self.name or f"{AXELROD_PREFIX}{self.strategy}"


PlayerConfig = Annotated[
    PolicyAgentConfig | LLMAgentConfig | AxelrodAgentConfig, Field(discriminator="type")
]


def expand_player(value: Any) -> Any:
    """Turn the string shorthands into agent mappings; anything else passes through unchanged."""
    if isinstance(value, str):
        text = value.strip()
        if text.lower().startswith(AXELROD_PREFIX):
            return {"type": "axelrod", "strategy": text[len(AXELROD_PREFIX) :]}
        return {"type": "policy", "policy": text}
    return value


class TournamentSection(Strict):
    """Who plays (round robin over every pair), how often, and what is logged."""

    players: list[PlayerConfig] = Field(min_length=2)
    repetitions: int = Field(default=10, ge=1)
    self_play: bool = False
    log_rounds: bool = False

    @field_validator("players", mode="before")
    @classmethod
    def _shorthands(cls, value: Any) -> Any:
        return [expand_player(v) for v in value] if isinstance(value, list) else value


class TournamentConfig(Strict):
    """A whole tournament config, refs expanded."""

    run: RunConfig
    game: GameConfig = Field(default_factory=GameConfig)
    horizon: HorizonConfig
    tournament: TournamentSection


class PopulationMember(Strict):
    """One strategy type of an evolving population and its initial number of individuals."""

    player: PlayerConfig
    count: int = Field(ge=0)

    @field_validator("player", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return expand_player(value)


class EvolutionSection(Strict):
    """Population dynamics: the process, the initial population and how long to run.

    `fitness`: `expected` uses the mean pairwise payoff matrix estimated once from
    `repetitions` matches per pair of types; `sampled` plays every pair of individuals anew each
    generation (members that are not scripted policies draw their matches from a pool of
    `repetitions` played matches per pair). None picks `sampled` for eliminate_clone and
    `expected` for moran and wright_fisher.
    """

    process: Literal["moran", "wright_fisher", "eliminate_clone"] = "eliminate_clone"
    population: list[PopulationMember] = Field(min_length=1)
    generations: int = Field(default=50, ge=0)
    mutation_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    eliminate: int = Field(default=5, ge=1)
    fitness: Literal["expected", "sampled"] | None = None
    repetitions: int = Field(default=10, ge=1)

    def fitness_mode(self) -> str:
        """`expected` or `sampled` (the default depends on the process)."""
        if self.fitness is not None:
            return self.fitness
        return "sampled" if self.process == "eliminate_clone" else "expected"

    def size_problems(self) -> list[tuple[tuple[str, ...], str]]:
        """(location inside this section, message) for sizes that do not fit together."""
        total = sum(m.count for m in self.population)
        problems: list[tuple[tuple[str, ...], str]] = []
        if total < 2:
            problems.append((("population",), f"needs at least 2 individuals (got {total})"))
        elif self.process == "eliminate_clone" and 2 * self.eliminate > total:
            problems.append(
                (
                    ("eliminate",),
                    f"must be at most half the population, {total // 2} (got {self.eliminate})",
                )
            )
        return problems


class EvolutionConfig(Strict):
    """A whole evolution config, refs expanded."""

    run: RunConfig
    game: GameConfig = Field(default_factory=GameConfig)
    horizon: HorizonConfig
    evolution: EvolutionSection
