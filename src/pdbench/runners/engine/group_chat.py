"""A group game's message channel: runs each exchange in its speaking order for N seats and says
what each seat can see (see `pdbench.core.talk`; `chat.Chat` is the pairwise one).

Broadcast (the channel's `audience`, the default): each speaker writes one message per turn, read
by every seat. Directed: each speaker writes one message to each co-player per turn (in seat
order), read only by its addressee (and its writer); its `Message.to` is the addressee's seat.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pdbench.agents.factory import AgentSpec
from pdbench.agents.group_llm import group_speak
from pdbench.core.group_game import GroupObservation
from pdbench.core.talk import CommunicationConfig, order_problem, speaking_groups
from pdbench.core.types import Message, SeenMessage, Utterance


class GroupChat:
    """The messages of one group game so far, and the exchange under way."""

    def __init__(
        self, channel: CommunicationConfig, specs: Sequence[AgentSpec], n_players: int
    ) -> None:
        problem = order_problem(channel.order, n_players)
        if problem is not None:
            raise ValueError(problem)
        if len(specs) != n_players:
            raise ValueError(f"one agent spec per seat needed ({n_players}, got {len(specs)})")
        self.channel = channel
        self.specs = specs
        self.n_players = n_players
        self.messages: list[Message] = []  # every message written, in order
        self._start = 0  # where the current exchange's messages begin

    def addressees(self, seat: int) -> list[int | None]:
        """Whom `seat` writes to in one turn: everyone (None), or, directed, each co-player."""
        if self.channel.audience == "directed":
            return [j for j in range(self.n_players) if j != seat]
        return [None]

    async def exchange(
        self,
        round_index: int,
        agents: Sequence[Any],
        obs: Sequence[GroupObservation],
        groups: int | None = None,
    ) -> list[tuple[Message, Utterance]]:
        """The exchange before round `round_index`, if the channel has one: each group of
        writers (`speaking_groups`) is shown what it may see (never a message of its own group's
        turn), then writes; returns what was said (fallbacks included), in order. `groups`: only
        the first that many groups write."""
        self._start = len(self.messages)
        if not self.channel.exchange_before(round_index):
            return []
        n = self.n_players
        order = speaking_groups(self.channel.order, round_index, self.channel.turns, n)
        per_turn = 1 if self.channel.order == "simultaneous" else n
        out: list[tuple[Message, Utterance]] = []
        for g, group in enumerate(order[:groups]):
            turn = g // per_turn
            calls = [
                (seat, to, self.shown(seat, obs[seat]))
                for seat in group
                for to in self.addressees(seat)
            ]
            said = await asyncio.gather(
                *(
                    group_speak(
                        agents[seat],
                        self.specs[seat].config,
                        view,
                        turn,
                        self.channel.max_chars,
                        to,
                    )
                    for seat, to, view in calls
                )
            )
            for (seat, to, _), utterance in zip(calls, said, strict=True):
                if utterance is None:
                    continue
                message = Message(
                    round_index,
                    turn,
                    seat,
                    utterance.text,
                    utterance.intent,
                    utterance.source,
                    to,
                )
                if utterance.text:
                    self.messages.append(message)
                out.append((message, utterance))
        return out

    @staticmethod
    def visible(message: Message, seat: int) -> bool:
        """Whether `seat` may read `message`: its own, one to everyone, or one written to it."""
        return message.side == seat or message.to is None or message.to == seat

    def shown(self, seat: int, obs: GroupObservation) -> GroupObservation:
        """`obs` with the messages seat `seat` can see now: the last `history` of the messages of
        earlier exchanges it may read and every one of the current exchange it may read written
        so far."""
        earlier = [m for m in self.messages[: self._start] if self.visible(m, seat)]
        keep = self.channel.history
        earlier = earlier[-keep:] if keep else []
        now = [m for m in self.messages[self._start :] if self.visible(m, seat)]
        seen = tuple(
            SeenMessage(m.round_index, m.turn, m.side == seat, m.text, m.side, m.to)
            for m in (*earlier, *now)
        )
        return replace(obs, messages=seen)
