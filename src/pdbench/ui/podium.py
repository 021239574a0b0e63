"""The Tournament podium, from leaderboard.parquet: which players share a step (their 95% rank
intervals overlap, as the library computed them; nothing is recomputed here) and the order the
pages show players in. Pure pandas, no file read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pdbench.ui.style import Player, medal

PODIUM_STEPS = 3  # gold, silver and bronze


@dataclass(frozen=True, slots=True)
class PodiumStep:
    """One step of the podium: its rank (1 + the players on the steps above it), the players on
    it (leaderboard names, best estimate first) and the ranks their 95% intervals span together
    (`low`-`high`; the exact ranks without intervals)."""

    rank: int
    players: tuple[str, ...]
    low: int
    high: int

    @property
    def tied(self) -> bool:
        """Several players share the step: the data do not separate them."""
        return len(self.players) > 1

    @property
    def note(self) -> str:
        """What a shared step means ('' for one player)."""
        if not self.tied:
            return ""
        if self.low == self.high:
            return f"Tied: equal scores (rank {self.low})."
        return (
            f"Tied: not separable, their 95% rank intervals overlap (ranks {self.low}–{self.high})."
        )


def _rank_bounds(row: Mapping[str, Any]) -> tuple[int, int]:
    """A leaderboard row's 95% rank interval (leaderboard.parquet's rank_ci_low/high); its exact
    rank at both ends when there is none (one repetition)."""
    low, high = row.get("rank_ci_low"), row.get("rank_ci_high")
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return int(row["rank"]), int(row["rank"])
    return int(low), int(high)


def podium_steps(board: pd.DataFrame, steps: int = PODIUM_STEPS) -> list[PodiumStep]:
    """The podium of leaderboard.parquet (best first): in rank order, a player whose 95% rank
    interval overlaps the interval the current step's players span shares that step, else it
    starts the next one. Without intervals only exact ties (equal ranks) share a step. A step's
    rank counts the players above it (two players tied for gold put the next step on bronze);
    steps ranked beyond `steps` are left off. The intervals are the library's; nothing is
    recomputed here."""
    out: list[PodiumStep] = []
    members: list[str] = []
    span = (0, 0)
    placed = 0
    for row in board.sort_values("rank", kind="stable").to_dict("records"):
        low, high = _rank_bounds(row)
        if members and low <= span[1]:
            members.append(str(row["player"]))
            span = (min(span[0], low), max(span[1], high))
            continue
        if members:
            out.append(PodiumStep(placed + 1, tuple(members), *span))
            placed += len(members)
        if placed + 1 > steps:
            members = []
            break
        members, span = [str(row["player"])], (low, high)
    if members:
        out.append(PodiumStep(placed + 1, tuple(members), *span))
    return out


def podium_medals(steps: Sequence[PodiumStep]) -> dict[str, str]:
    """Each podium player's medal: its step's (players on one step share it)."""
    return {name: medal(step.rank) for step in steps for name in step.players}


def ranked_players(board: pd.DataFrame, players: Sequence[Player]) -> list[Player]:
    """The players in leaderboard order (best first); any not on the board keep their order
    after them."""
    by_name = {p.name: p for p in players}
    ranked = [by_name[str(n)] for n in board.sort_values("rank", kind="stable")["player"]]
    return ranked + [p for p in players if p not in ranked]
