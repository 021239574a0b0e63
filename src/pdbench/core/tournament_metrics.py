"""Leaderboard and pairwise payoffs of a round-robin tournament, from per-match totals.

Definitions (matches are given as arrays: players' indices, rounds, total scores, C counts):

- A player's per-match score is its total payoff divided by the match's rounds. In a self-play
  match (a player against its own copy) the two sides' per-round scores are averaged into one.
- mean_score_per_round: mean of the player's per-match scores, with a normal 95% CI
  (`pdbench.core.metrics.mean_and_ci95`); matches: how many matches it played.
- wins / draws / losses: matches against other players with a higher / equal / lower total than
  the opponent (self-play is not counted).
- cooperation_rate: the player's C moves over all its moves (both sides of self-play count).
- rank: 1 for the highest mean_score_per_round; ties keep the config order.
- Pairwise payoffs (long form): for each ordered (player, opponent) pair that met, the player's
  mean per-round score against that opponent over all their matches (either side), and the
  number of matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pdbench.core.metrics import mean_and_ci95

LEADERBOARD_COLUMNS = (
    "rank",
    "player",
    "mean_score_per_round",
    "ci95_low",
    "ci95_high",
    "matches",
    "wins",
    "draws",
    "losses",
    "cooperation_rate",
)
PAIRWISE_COLUMNS = ("player", "opponent", "mean_score_per_round", "matches")


@dataclass(frozen=True)
class MatchTable:
    """Every match of a tournament as arrays: the two players' indices, the rounds played, each
    side's total score and number of C moves."""

    player_a: np.ndarray
    player_b: np.ndarray
    rounds: np.ndarray
    score_a: np.ndarray
    score_b: np.ndarray
    coop_a: np.ndarray
    coop_b: np.ndarray

    @classmethod
    def of(cls, **columns: Sequence[float] | np.ndarray) -> MatchTable:
        """From sequences; `rounds` becomes float so per-round scores divide exactly."""
        arrays = {k: np.asarray(v) for k, v in columns.items()}
        arrays["rounds"] = arrays["rounds"].astype(np.float64)
        return cls(**arrays)

    def player_samples(self, player: int) -> np.ndarray:
        """The player's per-match per-round scores (self-play: the mean of both sides)."""
        per_a = self.score_a / self.rounds
        per_b = self.score_b / self.rounds
        self_play = (self.player_a == player) & (self.player_b == player)
        as_a = (self.player_a == player) & ~self_play
        as_b = (self.player_b == player) & ~self_play
        return np.concatenate([per_a[as_a], per_b[as_b], (per_a[self_play] + per_b[self_play]) / 2])


def leaderboard(names: Sequence[str], table: MatchTable) -> list[dict[str, Any]]:
    """One row per player (columns LEADERBOARD_COLUMNS), best first; see the module docstring."""
    t = table
    rows = []
    for index, name in enumerate(names):
        samples = t.player_samples(index)
        mean, low, high = mean_and_ci95(samples.tolist())
        others_a = (t.player_a == index) & (t.player_b != index)
        others_b = (t.player_b == index) & (t.player_a != index)
        mine = np.concatenate([t.score_a[others_a], t.score_b[others_b]])
        theirs = np.concatenate([t.score_b[others_a], t.score_a[others_b]])
        moves = t.rounds[t.player_a == index].sum() + t.rounds[t.player_b == index].sum()
        coops = t.coop_a[t.player_a == index].sum() + t.coop_b[t.player_b == index].sum()
        rows.append(
            {
                "player": name,
                "mean_score_per_round": mean,
                "ci95_low": low,
                "ci95_high": high,
                "matches": int(samples.size),
                "wins": int((mine > theirs).sum()),
                "draws": int((mine == theirs).sum()),
                "losses": int((mine < theirs).sum()),
                "cooperation_rate": float(coops / moves) if moves else None,
            }
        )
    order = sorted(
        range(len(rows)),
        key=lambda i: (
            rows[i]["mean_score_per_round"] is None,
            -(rows[i]["mean_score_per_round"] or 0.0),
            i,
        ),
    )
    return [
        {column: ({**rows[i], "rank": rank})[column] for column in LEADERBOARD_COLUMNS}
        for rank, i in enumerate(order, start=1)
    ]


def pairwise_payoffs(names: Sequence[str], table: MatchTable) -> list[dict[str, Any]]:
    """Long-form mean pairwise payoff matrix (columns PAIRWISE_COLUMNS), row-major by player."""
    t = table
    k = len(names)
    sums = np.zeros((k, k))
    counts = np.zeros((k, k), dtype=np.int64)
    np.add.at(sums, (t.player_a, t.player_b), t.score_a / t.rounds)
    np.add.at(counts, (t.player_a, t.player_b), 1)
    np.add.at(sums, (t.player_b, t.player_a), t.score_b / t.rounds)
    np.add.at(counts, (t.player_b, t.player_a), 1)
    rows = []
    for i in range(k):
        for j in range(k):
            if counts[i, j]:
                rows.append(
                    {
                        "player": names[i],
                        "opponent": names[j],
                        "mean_score_per_round": float(sums[i, j] / counts[i, j]),
                        "matches": int(counts[i, j]) if i != j else int(counts[i, j] // 2),
                    }
                )
    return rows


def payoff_table(names: Sequence[str], pairwise: Sequence[dict[str, Any]]) -> np.ndarray:
    """The pairwise rows as a square array [player, opponent] (NaN where they never met)."""
    index = {name: i for i, name in enumerate(names)}
    table = np.full((len(names), len(names)), np.nan)
    for row in pairwise:
        table[index[row["player"]], index[row["opponent"]]] = row["mean_score_per_round"]
    return table
