"""A person's seat in a resource game (issue 31): it answers from the values the person gave.

The app's Play tab records a person's contributions (a public goods game) or harvests (a commons)
as the `amounts` of a `type: human` agent, and their punishment tokens as its `punishments`
(per round, [target seat, tokens] pairs). The resource engine asks this seat as it asks any
other, so a saved game's config replays the person's answers exactly and every co-player, with
the same seed and history, answers as it did in the live game. A person says nothing (no talk)
and writes no reflections.
"""

from __future__ import annotations

from collections.abc import Sequence

from pdbench.agents.resource_policy import Choice, CommonsContext, PGGContext, Said


class HumanAnswersExhausted(RuntimeError):
    """The game asked a person's seat for a round it has no recorded answer for."""


class HumanSeat:
    """Answers round t with `amounts[t]` (a contribution or a harvest) and, in the punishment
    stage, `punishments[t]` (no punishment when the list is shorter); see the module docstring.
    The engine clamps and cuts what is out of range, as for every seat."""

    def __init__(
        self,
        name: str,
        amounts: Sequence[int],
        punishments: Sequence[Sequence[Sequence[int]]] = (),
    ) -> None:
        self.name = name
        self.amounts = tuple(int(a) for a in amounts)
        self.punishments = tuple(
            {int(pair[0]): int(pair[1]) for pair in one} for one in punishments
        )

    def _amount(self, t: int) -> int:
        if t >= len(self.amounts):
            raise HumanAnswersExhausted(
                f"{self.name}: no answer for round {t + 1} (the person gave {len(self.amounts)})"
            )
        return self.amounts[t]

    async def message(self, ctx: PGGContext | CommonsContext) -> Said | None:
        """A person says nothing in a resource game (yet)."""
        return None

    async def reflect(self, ctx: CommonsContext) -> Said | None:
        """A person writes no reflections."""
        return None

    async def contribute(self, ctx: PGGContext) -> Choice:
        """The person's contribution of this round."""
        return Choice(self._amount(ctx.round_index))

    async def punish(self, ctx: PGGContext) -> Choice:
        """The person's punishment tokens of this round (none when not recorded)."""
        t = ctx.round_index
        tokens = self.punishments[t] if t < len(self.punishments) else {}
        return Choice(tokens={j: n for j, n in tokens.items() if n})

    async def harvest(self, ctx: CommonsContext) -> Choice:
        """The person's harvest request of this season."""
        return Choice(self._amount(ctx.season))
