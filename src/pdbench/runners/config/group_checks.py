"""What pydantic cannot check about a seat of a group: group policies by name and parameters
(`pdbench.agents.group_policy`), and which kinds of agent play groups at all. A person plays a
group only in the app's Play tab, whose config is loaded with `human_seats` (one recorded game,
see `_check_human_seat`); a config file may not seat one."""

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
from pdbench.core.group_config import GroupsConfig
from pdbench.core.group_game import GroupGame
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.talk import order_problem
from pdbench.errors import ConfigIssue
from pdbench.runners.config.agent_checks import check_agent
from pdbench.runners.config.resolve import Resolved

if TYPE_CHECKING:
    from pdbench.runners.config.loader import LoadedConfig


def check_seat(
    agent: AnyAgentConfig,
    loc: Loc,
    resolved: Resolved,
    matrix: PayoffMatrix,
    loaded: LoadedConfig,
    issues: list[ConfigIssue],
    human_seats: bool = False,
) -> AgentSpec | None:
    """One seat of a group; its AgentSpec when it is usable. Policies are the group policies;
    LLM agents are checked as everywhere; Axelrod strategies play pairs only; a person sits in a
    group only when `human_seats` allows it (the app's Play tab) and the config is groups."""
    if isinstance(agent, PolicyAgentConfig):
        spec = _check_group_policy(agent, loc, resolved, issues)
        game = _game_of_seat(loaded, loc) if spec is not None else None
        if spec is not None and game is not None:
            from pdbench.agents.group_policy import make_group_policy

            try:  # its parameters for this group's size (CC's m is 1..N-1)
                make_group_policy(agent.policy, agent.params).machine(game.n_players, game)
            except ValueError as exc:
                issues.append(resolved.issue(loc + ("params",), str(exc)))
                return None
        return spec
    if isinstance(agent, AxelrodAgentConfig):
        issues.append(
            resolved.issue(
                loc,
                "Axelrod strategies play pairs only (the library has no N-player games); "
                f"seat a group policy or an LLM agent (got axelrod:{agent.strategy})",
            )
        )
        return None
    if isinstance(agent, HumanAgentConfig):
        if human_seats and isinstance(loaded.config, GroupsConfig):
            return _check_human_seat(agent, loc, resolved, loaded.config, issues)
        issues.append(
            resolved.issue(
                loc, "a person plays a group in the app's Play tab, not from a config (got human)"
            )
        )
        return None
    game = _game_of_seat(loaded, loc)
    if game is None:  # the condition's game is refused on its own
        return check_agent(agent, loc, resolved, matrix, loaded, issues)

    def group_templates(llm: LLMAgentConfig, templates: PromptTemplates) -> tuple[str, str] | None:
        from pdbench.agents.group_prompts import group_template_problem

        return group_template_problem(templates, game, llm.output_format)

    return check_agent(agent, loc, resolved, matrix, loaded, issues, group_templates)


def _check_human_seat(
    agent: HumanAgentConfig,
    loc: Loc,
    resolved: Resolved,
    config: GroupsConfig,
    issues: list[ConfigIssue],
) -> AgentSpec | None:
    """A person's seat is one recorded game, as a human agent of an experiment is: a fixed
    group, one replicate, a fixed horizon of exactly as many rounds as it has moves, and (for
    now) no message channel."""
    index = loc[2]
    assert isinstance(index, int)
    cond = config.groups.conditions[index]
    horizon = cond.horizon or config.horizon
    problems: list[tuple[Loc, str]] = []
    if cond.matching != "fixed":
        problems.append((loc, "a person sits in a fixed group (seats), not in a pool"))
    if config.groups.replicates != 1:
        problems.append(
            (
                loc,
                "a human seat is one recorded game, so groups.replicates must be 1 "
                f"(got {config.groups.replicates})",
            )
        )
    if agent.amounts or agent.punishments:
        problems.append(
            (loc, "amounts and punishments are a resource game's; a person here has moves")
        )
    if horizon.type != "fixed":
        problems.append((loc, "a human seat needs a fixed horizon (its moves are one game's)"))
    elif horizon.n_rounds != len(agent.moves):
        problems.append(
            (
                loc + ("moves",),
                f"a human seat needs one move per round: {len(agent.moves)} moves for a game "
                f"of {horizon.n_rounds} rounds",
            )
        )
    if config.communication_of(cond).enabled:
        problems.append((loc, "a person plays a group without talk (valid mode: none)"))
    for where, message in problems:
        issues.append(resolved.node_issue(where, message))
    return None if problems else AgentSpec(agent)


def _game_of_seat(loaded: LoadedConfig, loc: Loc) -> GroupGame | None:
    """The stage game the seat plays in: its condition's (groups) or the config's one game
    (group tournaments and evolutions); None when it cannot be built."""
    config = loaded.config
    try:
        if isinstance(config, GroupsConfig):
            index = loc[2]
            assert isinstance(index, int)
            return config.game_of(config.groups.conditions[index])
        return config.stage_game()
    except ValueError:
        return None


def channel_problems(config: GroupsConfig) -> list[tuple[Loc, str]]:
    """(location, message) for conditions whose talk order cannot seat their group."""
    problems: list[tuple[Loc, str]] = []
    for i, cond in enumerate(config.groups.conditions):
        channel = config.communication_of(cond)
        if not channel.enabled:
            continue
        problem = order_problem(channel.order, cond.n_players)
        if problem is not None:
            where: Loc = ("groups", "conditions", i, "communication", "order")
            if cond.communication is None or cond.communication.order is None:
                where = ("communication", "order")
            problems.append((where, problem.removeprefix("communication.order ")))
    return problems


def _check_group_policy(
    agent: PolicyAgentConfig, loc: Loc, resolved: Resolved, issues: list[ConfigIssue]
) -> AgentSpec | None:
    from pdbench.agents.group_policy import group_policy_names, group_policy_problem

    names = group_policy_names()
    if agent.policy.upper() not in names:
        issues.append(
            resolved.issue(
                loc + ("policy",),
                f"unknown group policy (valid: {', '.join(names)}) (got {agent.policy!r})",
            )
        )
        return None
    problem = group_policy_problem(agent.policy, agent.params)
    if problem is not None:
        where, message = problem
        issues.append(resolved.issue(loc + where, message))
        return None
    return AgentSpec(agent)
