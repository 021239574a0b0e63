"""Leaderboard and pairwise payoffs of a round-robin tournament, from per-match totals.

Definitions (matches are given as arrays: players' indices, rounds, total scores, C counts):

- A player's per-match score is its total payoff divided by the match's rounds. In a self-play
  match (a player against its own copy) the two sides' per-round scores are averaged into one.
- mean_score_per_round: mean of the player's per-match scores; matches: how many it played.
- Its uncertainty, with the repetition as the unit (matches of one repetition share nothing
  with another's): a player's score in repetition r is the mean of its per-match scores in r;
  `mean_score_se` is the standard error of the mean over repetitions, `ci95_low`/`ci95_high` an
  expanded percentile bootstrap interval over repetitions (core/stats.py), and
  `rank_ci_low`/`rank_ci_high` the 2.5% and 97.5% percentiles of the player's rank when every
  player's score is recomputed on the same resample of repetitions. Null with one repetition.
  (Before, the interval was a normal interval over all matches pooled: it mostly described how
  scores differ between opponents, and was 3-30x wider than the uncertainty of the mean.)
- wins / draws / losses: matches against other players with a higher / equal / lower total than
  the opponent (self-play is not counted).
- cooperation_rate: the player's C moves over all its moves (both sides of self-play count).
- rank: 1 for the highest mean_score_per_round; exact ties share the better rank (1, 1, 3) and
  keep the config order.
- Pairwise payoffs (long form): for each ordered (player, opponent) pair that met, the player's
  mean per-round score against that opponent over all their matches (either side), and the
  number of matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pdbench.core.stats import DEFAULT_RESAMPLES, expanded_tail

LEADERBOARD_COLUMNS = (
    "rank",
    "player",
    "mean_score_per_round",
    "ci95_low",
    "ci95_high",
    "mean_score_se",
    "rank_ci_low",
    "rank_ci_high",
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
    repetition: np.ndarray | None = None  # each match's repetition index

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


def repetition_scores(names: Sequence[str], table: MatchTable) -> np.ndarray:
    """(players, repetitions): each player's mean per-round score in each repetition (NaN where
    it played no match in that repetition)."""
    reps = (
        np.zeros(table.player_a.size, dtype=np.int64)
        if table.repetition is None
        else table.repetition
    )
    n_reps = int(reps.max()) + 1 if reps.size else 0
    out = np.full((len(names), n_reps), np.nan)
    per_a = table.score_a / table.rounds
    per_b = table.score_b / table.rounds
    for player in range(len(names)):
        self_play = (table.player_a == player) & (table.player_b == player)
        as_a = (table.player_a == player) & ~self_play
        as_b = (table.player_b == player) & ~self_play
        values = np.concatenate(
            [per_a[as_a], per_b[as_b], (per_a[self_play] + per_b[self_play]) / 2]
        )
        where = np.concatenate([reps[as_a], reps[as_b], reps[self_play]])
        sums = np.bincount(where, weights=values, minlength=n_reps)
        counts = np.bincount(where, minlength=n_reps)
        with np.errstate(all="ignore"):
            out[player] = np.where(counts > 0, sums / counts, np.nan)
    return out


def _ranks(scores: np.ndarray) -> np.ndarray:
    """Rank (1 = best) of each player per column; ties share the better rank."""
    # rank = 1 + number of players with a strictly higher score
    return 1 + (scores[None, :, :] > scores[:, None, :]).sum(axis=1)


def repetition_uncertainty(
    scores: np.ndarray, rng: np.random.Generator | None, resamples: int = DEFAULT_RESAMPLES
) -> dict[str, np.ndarray]:
    """Per player: standard error of the mean over repetitions, bootstrap interval of the mean
    and rank interval (NaN with fewer than 2 repetitions or without a generator, and for a
    player with an infinite score; NaN is a missing score, and so is an infinite one in the
    others' rank intervals)."""
    scores = np.asarray(scores, dtype=np.float64)
    infinite = np.isinf(scores).any(axis=1) if scores.ndim == 2 else np.zeros(0, dtype=bool)
    if infinite.any():
        out = repetition_uncertainty(np.where(np.isinf(scores), np.nan, scores), rng, resamples)
        out = {key: values.astype(np.float64) for key, values in out.items()}
        for values in out.values():
            values[infinite] = np.nan
        return out
    players, reps = scores.shape
    nan = np.full(players, np.nan)
    out = {
        "se": nan.copy(),
        "low": nan.copy(),
        "high": nan.copy(),
        "rank_low": nan.copy(),
        "rank_high": nan.copy(),
    }
    if reps < 2 or rng is None:
        return out
    with np.errstate(all="ignore"):
        out["se"] = np.nanstd(scores, axis=1, ddof=1) / np.sqrt(np.sum(~np.isnan(scores), axis=1))
    counts = rng.multinomial(reps, np.full(reps, 1.0 / reps), size=resamples)
    missing = np.isnan(scores)
    filled = np.where(missing, 0.0, scores)
    # The resampled repetitions a player has a score in: whole numbers, so counted exactly in
    # integers (all of them, `reps`, when the player played in every repetition).
    defined = np.full((resamples, players), float(reps))
    if missing.any():
        defined = (counts @ (~missing).T.astype(np.int64)).astype(np.float64)
    with np.errstate(all="ignore"):
        means = (counts.astype(np.float64) @ filled.T) / defined  # (resamples, players)
    tail = expanded_tail(reps)
    where = [100 * tail, 100 * (1 - tail)]
    # Without a missing mean, nanpercentile's per-column loop gives exactly percentile's values.
    percentile = np.nanpercentile if np.isnan(means).any() else np.percentile
    out["low"], out["high"] = percentile(means, where, axis=0)
    ranks = _ranks(np.where(np.isnan(means), -np.inf, means).T)  # (players, resamples)
    out["rank_low"], out["rank_high"] = np.percentile(ranks, [2.5, 97.5], axis=1, method="nearest")
    return out


def leaderboard(
    names: Sequence[str], table: MatchTable, rng: np.random.Generator | None = None
) -> list[dict[str, Any]]:
    """One row per player (columns LEADERBOARD_COLUMNS), best first; see the module docstring.
    `rng` draws the bootstrap over repetitions (None: no intervals)."""
    t = table
    rows = []
    spread = repetition_uncertainty(repetition_scores(names, t), rng)

    def num(value: float) -> float | None:
        return None if np.isnan(value) else float(value)

    for index, name in enumerate(names):
        samples = t.player_samples(index)
        mean = float(samples.mean()) if samples.size else None
        low, high = num(spread["low"][index]), num(spread["high"][index])
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
                "mean_score_se": num(spread["se"][index]),
                "rank_ci_low": num(spread["rank_low"][index]),
                "rank_ci_high": num(spread["rank_high"][index]),
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
    scores = [rows[i]["mean_score_per_round"] for i in order]
    ranks: list[int] = []
    for position, score in enumerate(scores):
        tied = position > 0 and score is not None and score == scores[position - 1]
        ranks.append(ranks[-1] if tied else position + 1)  # ties share the better rank: 1, 1, 3
    return [
        {column: ({**rows[i], "rank": rank})[column] for column in LEADERBOARD_COLUMNS}
        for rank, i in zip(ranks, order, strict=True)
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
