"""What pydantic cannot check about a seat of a resource game (issue 31): a policy must be one
of the game's own (public goods policies in a `pgg` config, harvest policies in a `commons`
config); an LLM agent is checked as everywhere (its prompts in a resource game are the game's
own, `pdbench.agents.pgg_prompts` and `commons_prompts`, so its templates are not used); Axelrod
strategies and people do not play these games (a person plays in the app's Play tab)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdbench.agents.factory import AgentSpec, PromptTemplates
from pdbench.core.config import (
    AnyAgentConfig,
    AxelrodAgentConfig,
    HumanAgentConfig,
    LLMAgentConfig,
    Loc,
    PolicyAgentConfig,
)
from pdbench.core.payoff import PayoffMatrix
from pdbench.errors import ConfigIssue
from pdbench.runners.config.agent_checks import check_agent
from pdbench.runners.config.resolve import Resolved

if TYPE_CHECKING:
    from pdbench.runners.config.loader import LoadedConfig


def check_resource_seat(
    agent: AnyAgentConfig,
    loc: Loc,
    resolved: Resolved,
    matrix: PayoffMatrix,
    loaded: LoadedConfig,
    issues: list[ConfigIssue],
) -> AgentSpec | None:
    """One seat of a public goods game or a commons; its AgentSpec when it is usable."""
    from pdbench.agents.resource_policy import harvest_policy_names, policy_kind

    kind = loaded.config.kind
    if isinstance(agent, PolicyAgentConfig):
        from pdbench.agents.pgg_policy import pgg_policy_names

        valid = pgg_policy_names() if kind == "pgg" else harvest_policy_names()
        if policy_kind(agent.policy) != kind:
            what = "public goods" if kind == "pgg" else "harvest"
            issues.append(
                resolved.issue(
                    loc,
                    f"unknown {what} policy; choose one of {', '.join(valid)} "
                    f"(got {agent.policy!r})",
                )
            )
            return None
        if agent.params.model_fields_set:
            issues.append(resolved.issue(loc + ("params",), f"{agent.policy} takes no params here"))
            return None
        return AgentSpec(agent)
    if isinstance(agent, AxelrodAgentConfig | HumanAgentConfig):
        what = "Axelrod strategies" if isinstance(agent, AxelrodAgentConfig) else "a person"
        issues.append(
            resolved.issue(
                loc,
                f"{what} cannot sit in a {kind} game; seat a policy or an LLM agent",
            )
        )
        return None

    def own_prompts(llm: LLMAgentConfig, templates: PromptTemplates) -> tuple[str, str] | None:
        return None  # the game's own prompts are used, not the agent's templates

    return check_agent(agent, loc, resolved, matrix, loaded, issues, own_prompts)
