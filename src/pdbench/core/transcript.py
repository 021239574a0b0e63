"""A game's transcript and the windowed observation each agent gets from it."""

from __future__ import annotations

from dataclasses import dataclass, field

from pdbench.core.payoff import PayoffMatrix
from pdbench.core.types import Action, HistoryEntry, Observation


@dataclass(slots=True)
class Transcript:
    """The rounds played so far in one game, as played (after any noise)."""

    payoff_matrix: PayoffMatrix
    actions_a: list[Action] = field(default_factory=list)
    actions_b: list[Action] = field(default_factory=list)
    payoffs_a: list[float] = field(default_factory=list)
    payoffs_b: list[float] = field(default_factory=list)
    total_a: float = 0.0
    total_b: float = 0.0
    coops_a: int = 0
    coops_b: int = 0
    # Each agent's view of every round, built as rounds are recorded (an observation then only
    # slices it, so a long game with the whole history shown stays linear in its length).
    seen_by_a: list[HistoryEntry] = field(default_factory=list)
    seen_by_b: list[HistoryEntry] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.actions_a)

    def record(self, action_a: Action, action_b: Action) -> tuple[float, float]:
        """Append a round; returns its payoffs (to A, to B)."""
        pay_a, pay_b = self.payoff_matrix.payoffs(action_a, action_b)
        self.actions_a.append(action_a)
        self.actions_b.append(action_b)
        self.payoffs_a.append(pay_a)
        self.payoffs_b.append(pay_b)
        self.total_a += pay_a
        self.total_b += pay_b
        self.coops_a += action_a == Action.C
        self.coops_b += action_b == Action.C
        self.seen_by_a.append(HistoryEntry(action_a, action_b, pay_a, pay_b))
        self.seen_by_b.append(HistoryEntry(action_b, action_a, pay_b, pay_a))
        return pay_a, pay_b

    def observation(
        self,
        agent_index: int,
        *,
        history_window: int | None,
        include_totals: bool,
        horizon_type: str,
        total_rounds: int | None = None,
        stop_prob: float | None = None,
    ) -> Observation:
        """What agent 0 (A) or 1 (B) sees before the next round.

        `history_window` None shows every past round; 0 shows none.
        """
        n = len(self.actions_a)
        start = 0 if history_window is None else max(0, n - history_window)
        seen = self.seen_by_a if agent_index == 0 else self.seen_by_b
        my_total, their_total = (
            (self.total_a, self.total_b) if agent_index == 0 else (self.total_b, self.total_a)
        )
        my_coops, their_coops = (
            (self.coops_a, self.coops_b) if agent_index == 0 else (self.coops_b, self.coops_a)
        )
        history = tuple(seen[start:])
        return Observation(
            round_index=n,
            history=history,
            payoff_matrix=self.payoff_matrix.seen_by(agent_index),
            horizon_type=horizon_type,
            total_rounds=total_rounds,
            stop_prob=stop_prob,
            my_cumulative_payoff=my_total if include_totals else None,
            opponent_cumulative_payoff=their_total if include_totals else None,
            my_cooperations=my_coops if include_totals else None,
            opponent_cooperations=their_coops if include_totals else None,
        )
