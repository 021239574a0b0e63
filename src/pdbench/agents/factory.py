"""The one agent factory: a configured agent (policy, LLM agent, Axelrod strategy or a person's
recorded moves) in, a fresh agent for one game out, with what it is shown of the game.

Every mode (experiments, tournaments, evolutions) builds its agents here, so an agent config means
the same wherever it appears.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from pdbench.agents.base import Agent
from pdbench.agents.llm import LLMAgent, PromptTemplates
from pdbench.agents.policy import is_batchable, make_policy
from pdbench.agents.providers.base import Provider
from pdbench.core.config import (
    AnyAgentConfig,
    HumanAgentConfig,
    LLMAgentConfig,
    PolicyAgentConfig,
)
from pdbench.core.horizon import Horizon
from pdbench.core.payoff import PayoffMatrix

ProviderFor = Callable[[LLMAgentConfig], Provider]


@dataclass(frozen=True, slots=True)
class View:
    """What an agent is shown each round: history window, totals, and the disclosed horizon."""

    history_window: int | None
    include_totals: bool
    total_rounds: int | None
    stop_prob: float | None


@dataclass(frozen=True)
class AgentSpec:
    """One configured agent: its config and, for an LLM agent, its prompt texts (read once).

    A spec is shared by every game its agent plays, so what the engine asks of it per game is
    computed once.
    """

    config: AnyAgentConfig
    templates: PromptTemplates | None = None

    @cached_property
    def name(self) -> str:
        """The display name used in artifacts."""
        return self.config.display_name()

    @cached_property
    def is_llm(self) -> bool:
        """Whether the agent calls a provider."""
        return isinstance(self.config, LLMAgentConfig)

    @cached_property
    def batchable(self) -> bool:
        """Whether the vectorized engine can play it (see `pdbench.agents.policy.is_batchable`)."""
        return is_batchable(self.config)

    @cached_property
    def message_labels(self) -> tuple[str, str]:
        """The move labels its messages are written in, read in (an LLM's action labels; C and
        D for the others, as `agents.talk.speak` reads them)."""
        return self.config.labels() if isinstance(self.config, LLMAgentConfig) else ("C", "D")

    def horizon_disclosure(self, horizon: Horizon) -> str:
        """exact, stop_prob or hidden: the configured mode, else the horizon type's default."""
        mode = getattr(self.config, "horizon_disclosure", None)
        if mode is None:
            mode = "exact" if horizon.type == "fixed" else "stop_prob"
        return mode

    def view(self, horizon: Horizon, n_rounds: int) -> View:
        """What this agent sees in a game of `n_rounds` rounds under `horizon`."""
        mode = self.horizon_disclosure(horizon)
        total = n_rounds if mode == "exact" else None
        stop = getattr(horizon, "stop_prob", None) if mode == "stop_prob" else None
        cfg = self.config
        include = cfg.include_totals if isinstance(cfg, LLMAgentConfig) else True
        return View(getattr(cfg, "history_window", None), include, total, stop)


def make_agent(
    spec: AgentSpec, *, side: int, matrix: PayoffMatrix, noise: float, provider_for: ProviderFor
) -> Agent:
    """A fresh agent for one game, playing side 0 (A) or 1 (B) of `matrix`; `provider_for`
    gives an LLM agent its provider client. An LLM agent's prompts show the payoffs from its
    own seat."""
    cfg = spec.config
    if isinstance(cfg, PolicyAgentConfig):
        return make_policy(cfg.policy, cfg.params, cfg.display_name())
    if isinstance(cfg, LLMAgentConfig):
        assert spec.templates is not None, "LLM agents are loaded with their prompt templates"
        return LLMAgent(cfg, provider_for(cfg), spec.templates, matrix.seen_by(side))
    if isinstance(cfg, HumanAgentConfig):
        from pdbench.agents.human import HumanAgent

        return HumanAgent(cfg.moves, cfg.display_name())
    from pdbench.agents.axelrod_adapter import AxelrodAgent

    return AxelrodAgent(cfg.strategy, cfg.display_name(), noise)
