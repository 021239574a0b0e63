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


def _arrays(*values: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in values]


def player_samples(
    player: int,
    player_a: np.ndarray,
    player_b: np.ndarray,
    rounds: np.ndarray,
    score_a: np.ndarray,
    score_b: np.ndarray,
) -> np.ndarray:
    """The player's per-match per-round scores (self-play: the mean of both sides)."""
    per_a = score_a / rounds
    per_b = score_b / rounds
    self_play = (player_a == player) & (player_b == player)
    as_a = (player_a == player) & ~self_play
    as_b = (player_b == player) & ~self_play
    return np.concatenate([per_a[as_a], per_b[as_b], (per_a[self_play] + per_b[self_play]) / 2])


def leaderboard(
    names: Sequence[str],
    player_a: Sequence[int] | np.ndarray,
    player_b: Sequence[int] | np.ndarray,
    rounds: Sequence[int] | np.ndarray,
    score_a: Sequence[float] | np.ndarray,
    score_b: Sequence[float] | np.ndarray,
    coop_a: Sequence[int] | np.ndarray,
    coop_b: Sequence[int] | np.ndarray,
) -> list[dict[str, Any]]:
    """One row per player (columns LEADERBOARD_COLUMNS), best first; see the module docstring."""
    pa, pb, n, sa, sb, ca, cb = _arrays(
        player_a, player_b, rounds, score_a, score_b, coop_a, coop_b
    )
    n = n.astype(np.float64)
    rows = []
    for index, name in enumerate(names):
        samples = player_samples(index, pa, pb, n, sa, sb)
        mean, low, high = mean_and_ci95(samples.tolist())
        others_a = (pa == index) & (pb != index)
        others_b = (pb == index) & (pa != index)
        mine = np.concatenate([sa[others_a], sb[others_b]])
        theirs = np.concatenate([sb[others_a], sa[others_b]])
        moves = n[pa == index].sum() + n[pb == index].sum()
        coops = ca[pa == index].sum() + cb[pb == index].sum()
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
    ranked = []
    for rank, i in enumerate(order, start=1):
        ranked.append(
            {column: ({**rows[i], "rank": rank})[column] for column in LEADERBOARD_COLUMNS}
        )
    return ranked


def pairwise_payoffs(
    names: Sequence[str],
    player_a: Sequence[int] | np.ndarray,
    player_b: Sequence[int] | np.ndarray,
    rounds: Sequence[int] | np.ndarray,
    score_a: Sequence[float] | np.ndarray,
    score_b: Sequence[float] | np.ndarray,
) -> list[dict[str, Any]]:
    """Long-form mean pairwise payoff matrix (columns PAIRWISE_COLUMNS), row-major by player."""
    pa, pb, n, sa, sb = _arrays(player_a, player_b, rounds, score_a, score_b)
    k = len(names)
    sums = np.zeros((k, k))
    counts = np.zeros((k, k), dtype=np.int64)
    np.add.at(sums, (pa, pb), sa / n)
    np.add.at(counts, (pa, pb), 1)
    np.add.at(sums, (pb, pa), sb / n)
    np.add.at(counts, (pb, pa), 1)
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
