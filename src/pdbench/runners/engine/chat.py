"""A game's message channel: runs each exchange in its speaking order and says what each agent
can see (see `pdbench.core.talk`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

from pdbench.agents.base import Agent
from pdbench.agents.factory import AgentSpec
from pdbench.agents.talk import speak
from pdbench.core.talk import CommunicationConfig, speaking_groups
from pdbench.core.types import Message, Observation, SeenMessage, Utterance


class Chat:
    """The messages of one game so far, and the exchange under way."""

    def __init__(self, channel: CommunicationConfig, specs: Sequence[AgentSpec]) -> None:
        self.channel = channel
        self.specs = specs
        self.messages: list[Message] = []  # every message written, in order
        self._start = 0  # where the current exchange's messages begin

    async def exchange(
        self,
        round_index: int,
        agents: Sequence[Agent],
        obs: Sequence[Observation],
        groups: int | None = None,
    ) -> list[tuple[Message, Utterance]]:
        """The exchange before round `round_index`, if the channel has one: each group of
        writers is shown what it may see (never a message of its own group's turn), then
        writes; returns what was said (fallbacks included), in order. `groups`: only the
        first that many groups write (live play stops before the person's turn)."""
        self._start = len(self.messages)
        if not self.channel.exchange_before(round_index):
            return []
        simultaneous = self.channel.order == "simultaneous"
        out: list[tuple[Message, Utterance]] = []
        order = speaking_groups(self.channel.order, round_index, self.channel.turns)
        for g, group in enumerate(order[:groups]):
            turn = g if simultaneous else g // 2
            shown = [self.shown(side, obs[side]) for side in group]
            said = await asyncio.gather(
                *(
                    speak(agents[side], self.specs[side].config, view, turn, self.channel.max_chars)
                    for side, view in zip(group, shown, strict=True)
                )
            )
            for side, utterance in zip(group, said, strict=True):
                if utterance is None:
                    continue
                message = Message(
                    round_index, turn, side, utterance.text, utterance.intent, utterance.source
                )
                if utterance.text:
                    self.messages.append(message)
                out.append((message, utterance))
        return out

    def shown(self, side: int, obs: Observation) -> Observation:
        """`obs` with the messages seat `side` can see now: the last `history` messages of
        earlier exchanges and every message of the current one written so far."""
        earlier = self.messages[: self._start]
        keep = self.channel.history
        earlier = earlier[-keep:] if keep else []
        seen = tuple(
            SeenMessage(m.round_index, m.turn, m.side == side, m.text)
            for m in (*earlier, *self.messages[self._start :])
        )
        return replace(obs, messages=seen)
