"""What each kind of agent says in a game with a message channel (see `pdbench.core.talk`).

A policy speaks by its message rule (`talk`), knowing the move it is about to choose; an LLM
agent asks its provider (`pdbench.agents.llm_talk`); a human player's messages are the ones it
typed (`messages` of its config, one per exchange); an Axelrod strategy is silent. The intention
of a message that declares none is read from its text (`read_intent`, in the agent's labels).
"""

from __future__ import annotations

from pdbench.agents.base import Agent
from pdbench.agents.llm import LLMAgent
from pdbench.agents.policy import PolicyAgent
from pdbench.core.config import AnyAgentConfig, HumanAgentConfig, PolicyAgentConfig
from pdbench.core.talk import clip_text, read_intent, rule_message
from pdbench.core.types import Observation, Utterance


async def speak(
    agent: Agent, config: AnyAgentConfig, obs: Observation, turn: int, max_chars: int
) -> Utterance | None:
    """The agent's message in this turn of the exchange before `obs`'s move (None: silent)."""
    labels: tuple[str, str] = ("C", "D")
    said: Utterance | None = None
    if isinstance(agent, LLMAgent):
        from pdbench.agents.llm_talk import speak as llm_speak

        labels = agent.labels
        said = await llm_speak(agent, obs, turn, max_chars)
    elif isinstance(agent, PolicyAgent) and isinstance(config, PolicyAgentConfig):
        found = rule_message(config.talk, agent.choose(obs), config.talk_text)
        if found is not None:
            said = Utterance(clip_text(found[0], max_chars), found[1], found[2])
    elif isinstance(config, HumanAgentConfig) and turn == 0:
        # The exchange before round r is the person's message r (pregame: round 0 only).
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
