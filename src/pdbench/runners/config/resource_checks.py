"""What pydantic cannot check about a seat of a resource game (issue 31): a policy must be one
of the game's own (public goods policies in a `pgg` config, harvest policies in a `commons`
config); an LLM agent is checked as everywhere (its prompts in a resource game are the game's
own, `pdbench.agents.pgg_prompts` and `commons_prompts`, so its templates are not used); Axelrod
strategies do not play these games, and a person only in the app's Play tab, whose config is
loaded with `human_seats` (one recorded game, see `_check_human_seat`)."""

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
from pdbench.core.resource_config import PGGConfig
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
    human_seats: bool = False,
) -> AgentSpec | None:
    """One seat of a public goods game or a commons; its AgentSpec when it is usable. A person
    sits only when `human_seats` allows it (the app's Play tab, `_check_human_seat`)."""
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
    if isinstance(agent, HumanAgentConfig) and human_seats:
        return _check_human_seat(agent, loc, resolved, loaded, issues)
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

    problem = _prompt_problem(loaded, loc)
    if problem is not None:
        issues.append(resolved.node_issue(loc, problem))
        return None

    return check_agent(agent, loc, resolved, matrix, loaded, issues, own_prompts)


def _check_human_seat(
    agent: HumanAgentConfig,
    loc: Loc,
    resolved: Resolved,
    loaded: LoadedConfig,
    issues: list[ConfigIssue],
) -> AgentSpec | None:
    """A person's seat is one recorded game, as in a group: one replicate, no talk, one amount
    (contribution or harvest) per round, no C/D moves, and punishment tokens only in a public
    goods game with punishment, at most one list a round. A commons may end early when the lake
    collapses, so it may hold fewer amounts than seasons (at least one); a season it has no
    amount for stops the run."""
    config = loaded.config
    index = loc[2]
    assert isinstance(index, int)
    cond = config.section.conditions[index]
    n = config.horizon.n_rounds or 0
    word = "seasons" if config.kind == "commons" else "rounds"
    problems: list[tuple[Loc, str]] = []
    if config.section.replicates != 1:
        problems.append(
            (
                loc,
                f"a human seat is one recorded game, so {config.section_name}.replicates must be 1 "
                f"(got {config.section.replicates})",
            )
        )
    if config.talk_of(cond):
        problems.append((loc, "a person plays a resource game without talk (talk: false)"))
    if agent.moves or agent.messages:
        problems.append((loc + ("moves",), "a resource game's person has amounts, not moves"))
    count = len(agent.amounts)
    if count != n and not (config.kind == "commons" and 1 <= count < n):
        problems.append(
            (
                loc + ("amounts",),
                f"a human seat needs one amount per round: {count} amounts for a game of "
                f"{n} {word}",
            )
        )
    try:
        rules = config.rules_of(cond) if isinstance(config, PGGConfig) else None
    except ValueError:  # the rules are refused on their own
        rules = None
    punishment = rules is not None and rules.punishment
    if rules is not None and rules.reward:
        problems.append((loc, "a person plays a public goods game without the reward stage"))
    if agent.punishments and not punishment:
        problems.append((loc + ("punishments",), "punishment is off in this game"))
    elif len(agent.punishments) > count:
        problems.append(
            (
                loc + ("punishments",),
                f"more punishment rounds ({len(agent.punishments)}) than amounts ({count})",
            )
        )
    for where, message in problems:
        issues.append(resolved.node_issue(where, message))
    return None if problems else AgentSpec(agent)


def _prompt_problem(loaded: LoadedConfig, loc: Loc) -> str | None:
    """Why an LLM seat's prompts (the authors' words) would misdescribe its condition's rules."""
    config = loaded.config
    index = loc[2]
    assert isinstance(index, int)
    try:
        rules = config.rules_of(config.section.conditions[index])
    except ValueError:  # the rules are refused on their own
        return None
    if config.kind == "commons":
        from pdbench.agents.commons_prompts import govsim_rules_problem

        problem = govsim_rules_problem(rules)
        return None if problem is None else f"an LLM seat is asked in GovSim's words: {problem}"
    from pdbench.agents.pgg_prompts import pgg_bench_rules_problem

    return pgg_bench_rules_problem(rules)
