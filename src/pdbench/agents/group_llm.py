"""An LLM agent in one seat of a group game, the group agent factory, and what each kind of group
agent says when its group talks.

`GroupLLMAgent` is the pairwise `LLMAgent`'s group form: the same config, provider (the engine's
broker-bound client), per-call seeds, answer formats, parser, re-prompts and fallbacks
(`llm.ProviderAgent.ask_move`), with the group prompts of `pdbench.agents.group_prompts` (what
each co-player did, by label, in the game's own words). It speaks through the pairwise message
call (`llm_talk.ask_message`) with the group message prompt, to everyone or, directed, to one
co-player.

`make_group_agent` builds a seat's agent from its spec: a `GroupLLMAgent` for an LLM agent, a
`pdbench.agents.group_policy.GroupPolicyAgent` for a policy, the person's recorded moves for a
human; `group_speak` is `agents.talk.speak` for group seats.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pdbench.agents.factory import AgentSpec
from pdbench.agents.group_prompts import (
    DEFAULT_GROUP_MESSAGE_TEMPLATE,
    group_message_values,
    render_group_round,
    render_group_system,
)
from pdbench.agents.llm import PromptTemplates, ProviderAgent
from pdbench.agents.llm_talk import ask_message
from pdbench.agents.providers.base import Provider
from pdbench.core.config import HumanAgentConfig, LLMAgentConfig, PolicyAgentConfig
from pdbench.core.group_game import GroupGame, GroupObservation
from pdbench.core.rng import Purpose, counter_bits
from pdbench.core.talk import clip_text, read_intent, rule_message
from pdbench.core.types import Action, Decision, Utterance

GroupProviderFor = Callable[[LLMAgentConfig], Provider]


class GroupLLMAgent(ProviderAgent):
    """An LLM agent playing seat `seat` of `game`; see the module docstring."""

    def __init__(
        self,
        config: LLMAgentConfig,
        provider: Provider,
        templates: PromptTemplates,
        game: GroupGame,
        seat: int,
        name: str | None = None,
    ) -> None:
        if not 0 <= seat < game.n_players:
            raise ValueError(f"seat must be 0..{game.n_players - 1} (got {seat})")
        self.config = config
        self.provider = provider
        self.templates = templates
        self.game = game
        self.seat = seat
        self.name = name or config.display_name()
        self.labels = config.labels()
        self.system_prompt = render_group_system(
            templates, game, seat, config.output_format, self.labels, config.payoff_scale
        )
        self.seed = 0

    @property
    def n_players(self) -> int:
        """The number of seats of the group."""
        return self.game.n_players

    def round_prompt(
        self,
        obs: GroupObservation,
        template: str | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> str:
        """The round prompt this seat is shown for `obs` (another `template`, with `extra`
        values: the message prompt)."""
        cfg = self.config
        return render_group_round(
            template or self.templates.round,
            obs,
            cfg.history_window,
            cfg.output_format,
            self.labels,
            cfg.payoff_scale,
            self.templates,
            self.swap_options(obs.round_index),
            extra,
        )

    async def decide(self, obs: GroupObservation) -> Decision:  # type: ignore[override]
        """Ask the provider for a move (`ProviderAgent.ask_move`)."""
        return await self.ask_move(obs.round_index, obs.round_number, self.round_prompt(obs))

    def message_seed(self, round_index: int, turn: int, attempt: int, to: int | None) -> int:
        """The seed of one message call: a message to everyone as the pairwise one
        (`llm_talk.call_seed`), a directed one keyed apart by its addressee."""
        key = turn * 64 + attempt if to is None else ((to + 1) * 16 + turn) * 64 + attempt
        return counter_bits(self.seed, round_index, Purpose.MESSAGE, key) >> 1

    async def speak(
        self, obs: GroupObservation, turn: int, max_chars: int, to: int | None = None
    ) -> Utterance | None:
        """Ask the provider for this seat's message of this turn, to everyone or (`to`) to one
        co-player: the group message prompt (the agent's `prompts.message`, else
        `DEFAULT_GROUP_MESSAGE_TEMPLATE`), the structured reply read as for pairs
        (`llm_talk.read_reply`); a fallback Utterance when no reply was usable."""
        template = self.templates.message or DEFAULT_GROUP_MESSAGE_TEMPLATE
        values = group_message_values(obs, self.labels, max_chars, to)
        prompt = self.round_prompt(obs, template=template, extra=values)
        return await ask_message(
            self,
            prompt,
            obs.round_index,
            turn,
            max_chars,
            lambda attempt: self.message_seed(obs.round_index, turn, attempt, to),
        )


def make_group_agent(
    spec: AgentSpec,
    seat: int,
    n_players: int,
    game: GroupGame,
    provider_for: GroupProviderFor,
) -> Any:
    """A fresh agent for seat `seat` of a group game of `n_players`: a GroupLLMAgent for an LLM
    agent (its provider from `provider_for`), a GroupPolicyAgent for a policy (its group policy
    from `make_group_policy`), the person's recorded moves for a human."""
    if n_players != game.n_players:
        raise ValueError(f"the game has {game.n_players} players (got n_players={n_players})")
    if not 0 <= seat < n_players:
        raise ValueError(f"seat must be 0..{n_players - 1} (got {seat})")
    cfg = spec.config
    if isinstance(cfg, LLMAgentConfig):
        assert spec.templates is not None, "LLM agents are loaded with their prompt templates"
        return GroupLLMAgent(cfg, provider_for(cfg), spec.templates, game, seat)
    if isinstance(cfg, PolicyAgentConfig):
        from pdbench.agents.group_policy import GroupPolicyAgent, make_group_policy

        return GroupPolicyAgent(cfg.display_name(), make_group_policy(cfg.policy, cfg.params), seat)
    if isinstance(cfg, HumanAgentConfig):
        from pdbench.agents.human import HumanAgent

        return HumanAgent(cfg.moves, cfg.display_name())
    raise ValueError(
        f"{spec.name}: a group seat is an LLM agent, a policy or a person "
        f"(got an Axelrod strategy, {cfg.strategy!r}, which plays pairs only)"
    )


async def planned_move(agent: Any, obs: GroupObservation) -> Action:
    """The move a policy agent will make for `obs`: its `choose(obs)` when it has one, else the
    move of its `decide` (a policy's move is a function of its seed and the observation, so the
    message announces the move it then plays)."""
    choose = getattr(agent, "choose", None)
    if callable(choose):
        return choose(obs)
    return (await agent.decide(obs)).action


async def group_speak(
    agent: Any,
    config: Any,
    obs: GroupObservation,
    turn: int,
    max_chars: int,
    to: int | None = None,
) -> Utterance | None:
    """A seat's message in this turn of the exchange before `obs`'s move, to everyone or to
    seat `to` (None: silent), as `agents.talk.speak` for pairs: an LLM agent asks its provider,
    a policy speaks by its message rule (`talk`) knowing the move it is about to choose, a
    person's typed message of that round is sent (to each co-player when directed). An intention
    not declared is read from the text in the writer's labels."""
    labels: tuple[str, str] = ("C", "D")
    said: Utterance | None = None
    if isinstance(agent, GroupLLMAgent):
        labels = agent.labels
        said = await agent.speak(obs, turn, max_chars, to)
    elif isinstance(config, PolicyAgentConfig):
        if config.talk != "silent":
            planned = await planned_move(agent, obs)
            found = rule_message(config.talk, planned, config.talk_text)
            if found is not None:
                said = Utterance(clip_text(found[0], max_chars), found[1], found[2])
    elif isinstance(config, HumanAgentConfig) and turn == 0:
        r = obs.round_index
        typed = config.messages[r] if r < len(config.messages) else ""
        if typed.strip():
            said = Utterance(clip_text(typed, max_chars))
    if said is None or not said.text:
        return said if said is not None and said.fallback else None
    if said.intent is None:
        read = read_intent(said.text, labels)
        said.intent, said.source = read, ("phrases" if read is not None else "none")
    return said
