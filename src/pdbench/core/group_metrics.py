"""Metrics of one group game (N seats), and what bounds and kinds them for their intervals.

Moves are the played ones (after noise), True for C; a game is `GroupOutcome.played` (N, T).
Per game (`group_games_metrics`):

- group_cooperation_rate: the share of C among the game's N x T moves; over rounds: per round,
  the share of the N seats that played C.
- per seat (GROUP_SEAT_COLUMNS): cooperation_rate, total_payoff, payoff_per_round,
  partners_payoff_per_round (the mean over the seat's N - 1 co-players of their payoff per
  round), parse_failures and fallback_rate (their share of the seat's moves).
- conditional cooperation, the group analogue of memory-one: for k = 0..N-1, `cases[k]` counts the
  (seat i, round t >= 1) where exactly k of i's co-players played C in round t - 1, and
  `cooperations[k]` those where i played C in round t; P(C | k) = cooperations / cases (None
  without a case). For N = 2, k = 0 is "after the partner's D" and k = 1 "after its C".
- time_to_collapse: the first 0-based round t with t + k <= T such that the C among the N x k
  moves of rounds t..t+k-1 are at most `threshold` of them (CollapseParams' k and threshold; for
  N = 2 exactly `core.metrics.time_to_collapse`); None when there is none. collapsed_fraction:
  1 when the game collapsed, else 0.
- payoff_gini: the population Gini coefficient of the seats' total payoffs,
  G = sum_i sum_j |x_i - x_j| / (2 N^2 mean(x)) (Gini of (0, 0, 0, 1): 6 / 8 = 0.75; at most
  (N - 1) / N), 0 when every seat got the same. A game with negative payoffs (public goods, the
  stag hunt) measures each total from the lowest total the game allows, x_i = total_i - T min(0,
  lowest payoff), so x_i >= 0; a game whose payoffs are all >= 0 uses the totals themselves.
- group_payoff_per_round: the mean payoff of a seat in a round; efficiency: it over the
  all-cooperate payoff (None when that is <= 0; above 1 where unequal play pays more in sum,
  as in the volunteer's dilemma).

Per condition, with intervals (the game as the unit): `core.group_conditions`, which uses
`group_interval_kind` and `group_feasible_range` from here. Pure: no I/O, no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pdbench.core.group_game import GroupGame
from pdbench.core.metrics import CollapseParams, MetricDesign
from pdbench.core.stats import (
    KIND_MEAN,
    KIND_POOLED_RATIO,
    KIND_SHARE,
    Bounds,
)

# Per game and condition (aggregates.parquet), in this order.
GROUP_METRIC_COLUMNS: tuple[str, ...] = (
    "n_rounds",
    "group_cooperation_rate",
    "group_payoff_per_round",
    "efficiency",
    "payoff_gini",
    "time_to_collapse",
    "collapsed_fraction",
    "fallback_rate",
)
# Per game and seat, and per condition and seat (seats.parquet).
GROUP_SEAT_COLUMNS: tuple[str, ...] = (
    "cooperation_rate",
    "total_payoff",
    "payoff_per_round",
    "partners_payoff_per_round",
    "parse_failures",
    "fallback_rate",
)
GROUP_SHARE_COLUMNS = frozenset({"collapsed_fraction"})
P_COOP_GIVEN_K = "p_coop_given_k"  # the pooled ratio of the conditional table


@dataclass(slots=True)
class GroupOutcome:
    """What the metrics need from one played group game: `played` (N, T) bool, True for C
    (after noise); `payoffs` (N, T) float64, or None: the stage game's payoffs for the played
    moves, derived when asked for (`seat_payoffs`), so that a run of policy games keeps one
    byte per seat and round, not nine; `intended` (N, T) bool or None (the moves chosen before
    noise); `parse_failures` per seat; `talk` what the talk metrics read (or None)."""

    condition: str
    replicate: int
    names: tuple[str, ...]
    game: GroupGame
    played: np.ndarray
    payoffs: np.ndarray | None
    intended: np.ndarray | None = None
    parse_failures: tuple[int, ...] = ()
    talk: object | None = None

    def __post_init__(self) -> None:
        n = self.game.n_players
        self.played = np.asarray(self.played, dtype=bool)
        if self.played.ndim != 2 or self.played.shape[0] != n or len(self.names) != n:
            raise ValueError(
                f"a group outcome of {n} players needs {n} names and moves shaped ({n}, rounds)"
                f" (got {len(self.names)} names, moves {self.played.shape})"
            )
        if self.payoffs is not None:
            self.payoffs = np.asarray(self.payoffs, dtype=np.float64)
            if self.payoffs.shape != self.played.shape:
                raise ValueError(
                    f"payoffs {self.payoffs.shape} and moves {self.played.shape} differ in shape"
                )
        if not self.parse_failures:
            self.parse_failures = (0,) * n
        elif len(self.parse_failures) != n:
            raise ValueError(f"parse_failures needs one count per seat ({n})")

    def seat_payoffs(self) -> np.ndarray:
        """(N, T) payoffs: as recorded, or the game's for the played moves."""
        if self.payoffs is not None:
            return self.payoffs
        # C order, as payoffs read from a record are: sums over rounds then add in the same
        # order (NumPy sums a contiguous axis pairwise), so the metrics do not depend on where
        # the payoffs came from
        return np.ascontiguousarray(played_payoffs(self.game, self.played[None])[0])


def played_payoffs(game: GroupGame, played: np.ndarray) -> np.ndarray:
    """The stage game's payoffs of moves shaped (games, N, T): a cooperator gets pay_c[k] and
    a defector pay_d[k], k the co-players who cooperated in that round."""
    others = played.sum(axis=1, keepdims=True, dtype=np.int64) - played
    pay_c = np.asarray(game.pay_c, dtype=np.float64)
    pay_d = np.asarray(game.pay_d, dtype=np.float64)
    return np.where(played, pay_c[others], pay_d[others])


@dataclass(frozen=True, slots=True)
class GroupGameMetrics:
    """The metrics of one group game: `values` keyed by GROUP_METRIC_COLUMNS, `seats` one
    mapping per seat keyed by GROUP_SEAT_COLUMNS, `over_rounds` the per-round share of seats
    that cooperated, and the conditional cooperation counts by k (`cases`, `cooperations`)."""

    condition: str
    replicate: int
    names: tuple[str, ...]
    game: GroupGame
    values: dict[str, Any]
    seats: tuple[dict[str, Any], ...]
    over_rounds: np.ndarray
    cases: tuple[int, ...]
    cooperations: tuple[int, ...]

    def p_coop_given_k(self) -> tuple[float | None, ...]:
        """P(C | k co-players cooperated last round), k = 0..N-1; None where no case."""
        return tuple(
            c / n if n else None for c, n in zip(self.cooperations, self.cases, strict=True)
        )


def gini(values: Sequence[float] | np.ndarray) -> float | None:
    """Population Gini coefficient sum_i sum_j |x_i - x_j| / (2 n^2 mean) of values >= 0; 0
    when all are equal (all zero included); None for no value or a negative one."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0 or (x < 0).any():
        return None
    if (x == x[0]).all():
        return 0.0
    return float(np.abs(x[:, None] - x[None, :]).sum() / (2.0 * x.size * x.sum()))


def payoff_floor(game: GroupGame) -> float:
    """The per-round payoff the Gini measures totals from: the game's lowest payoff when it is
    negative, else 0."""
    return min(0.0, min(game.pay_c), min(game.pay_d))


def group_game_metrics(
    outcome: GroupOutcome, collapse: CollapseParams | None = None
) -> GroupGameMetrics:
    """The metrics of one group game (see the module docstring)."""
    return group_games_metrics([outcome], collapse)[0]


BATCH_PLAYER_ROUNDS = 1 << 20  # at most this many seat-rounds in one batch of metrics


def group_games_metrics(
    outcomes: Sequence[GroupOutcome], collapse: CollapseParams | None = None
) -> list[GroupGameMetrics]:
    """`group_game_metrics` of each game, computed at once for the games of one size and
    length (a (games, N, T) array each)."""
    collapse = collapse or CollapseParams()
    out: list[GroupGameMetrics | None] = [None] * len(outcomes)
    by_shape: dict[tuple[int, int], list[int]] = {}
    for i, outcome in enumerate(outcomes):
        by_shape.setdefault(outcome.played.shape, []).append(i)
    for members in by_shape.values():
        n, t = outcomes[members[0]].played.shape
        step = max(1, BATCH_PLAYER_ROUNDS // max(1, n * t))  # bounds the arrays of a batch
        for start in range(0, len(members), step):
            chunk = members[start : start + step]
            found = _batch([outcomes[i] for i in chunk], collapse)
            for i, metrics in zip(chunk, found, strict=True):
                out[i] = metrics
    return out  # type: ignore[return-value]


def _batch(outcomes: Sequence[GroupOutcome], collapse: CollapseParams) -> list[GroupGameMetrics]:
    """The metrics of games of one shape (N, T)."""
    played = np.stack([o.played for o in outcomes])  # (G, N, T)
    pay = np.ascontiguousarray(np.stack([o.seat_payoffs() for o in outcomes]))
    count, n, t = played.shape
    coops = played.sum(axis=2)  # (G, N)
    per_round = played.sum(axis=1)  # (G, T): cooperators per round
    totals = pay.sum(axis=2)  # (G, N)
    fails = np.array([o.parse_failures for o in outcomes], dtype=np.int64)
    collapse_at = _collapses(per_round, n, collapse)
    cases, cooperations = _conditional(played, per_round)
    out = []
    for g, outcome in enumerate(outcomes):
        game = outcome.game
        seat_totals = totals[g].tolist()
        sum_totals = float(totals[g].sum())
        ac = game.all_cooperate()
        mean_round = sum_totals / (n * t) if t else None
        floor = payoff_floor(game)
        shifted = totals[g] - t * floor if floor else totals[g]
        values = {
            "n_rounds": t,
            "group_cooperation_rate": int(coops[g].sum()) / (n * t) if t else None,
            "group_payoff_per_round": mean_round,
            "efficiency": mean_round / ac if mean_round is not None and ac > 0 else None,
            "payoff_gini": gini(shifted) if t else None,
            "time_to_collapse": collapse_at[g],
            "collapsed_fraction": float(collapse_at[g] is not None) if t else None,
            "fallback_rate": int(fails[g].sum()) / (n * t) if t else None,
        }
        seats = []
        for i in range(n):
            partners = (sum_totals - seat_totals[i]) / (n - 1)
            seats.append(
                {
                    "cooperation_rate": int(coops[g, i]) / t if t else None,
                    "total_payoff": seat_totals[i],
                    "payoff_per_round": seat_totals[i] / t if t else None,
                    "partners_payoff_per_round": partners / t if t else None,
                    "parse_failures": int(fails[g, i]),
                    "fallback_rate": int(fails[g, i]) / t if t else None,
                }
            )
        out.append(
            GroupGameMetrics(
                outcome.condition,
                outcome.replicate,
                tuple(outcome.names),
                game,
                values,
                tuple(seats),
                per_round[g] / n,
                tuple(cases[g].tolist()),
                tuple(cooperations[g].tolist()),
            )
        )
    return out


def _collapses(per_round: np.ndarray, n: int, collapse: CollapseParams) -> list[int | None]:
    """Per game, the first round t whose k-round window t..t+k-1 has at most `threshold` of
    its N k moves C (`core.metrics._collapses` with N seats in place of two)."""
    count, t = per_round.shape
    k = collapse.k
    if k <= 0 or t < k:
        return [None] * count
    csum = np.zeros((count, t + 1), dtype=np.int64)
    np.cumsum(per_round, axis=1, out=csum[:, 1:])
    window = csum[:, k:] - csum[:, :-k]
    # Integer comparison avoids float rounding: count / (N k) <= threshold.
    hits = window <= collapse.threshold * n * k + 1e-9
    first = hits.argmax(axis=1).tolist()
    return [f if hit else None for f, hit in zip(first, hits.any(axis=1).tolist(), strict=True)]


def _conditional(played: np.ndarray, per_round: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cases, cooperations), each (G, N): per game and k, the (seat, round >= 1) with k
    co-players C in the round before, and those where the seat then played C."""
    count, n, t = played.shape
    if t < 2:
        zeros = np.zeros((count, n), dtype=np.int64)
        return zeros, zeros.copy()
    others = per_round[:, None, :-1] - played[:, :, :-1]  # (G, N, T-1): in 0..N-1
    index = np.arange(count)[:, None, None] * n + others
    cases = np.bincount(index.ravel(), minlength=count * n).reshape(count, n)
    now = played[:, :, 1:]
    cooperations = np.bincount(index[now], minlength=count * n).reshape(count, n)
    return cases.astype(np.int64), cooperations.astype(np.int64)


# --------------------------------------------------------------------------------------------
# Conditions


def group_interval_kind(column: str) -> str:
    """The kind of a group metric, which decides its interval method (core/stats.py)."""
    if column in GROUP_SHARE_COLUMNS:
        return KIND_SHARE
    if column == P_COOP_GIVEN_K:
        return KIND_POOLED_RATIO
    return KIND_MEAN


def group_feasible_range(
    column: str, game: GroupGame, design: MetricDesign | None = None
) -> Bounds | None:
    """The values a group metric's condition mean can take: rates and shares in [0, 1];
    payoffs per round between the game's lowest and highest payoff (efficiency: the same over
    the all-cooperate payoff); the Gini in [0, (N - 1) / N]; totals and rounds from the
    design's rounds (None when there is no design)."""
    low = min(min(game.pay_c), min(game.pay_d))
    high = max(max(game.pay_c), max(game.pay_d))
    if column.endswith(("cooperation_rate", "fallback_rate", "fraction")):
        return (0.0, 1.0)
    if column.endswith("payoff_per_round"):
        return (low, high)
    if column == "efficiency":
        ac = game.all_cooperate()
        return (low / ac, high / ac) if ac > 0 else None
    if column == "payoff_gini":
        return (0.0, (game.n_players - 1) / game.n_players)
    if design is None:
        return None
    most = math.inf if design.max_rounds is None else float(design.max_rounds)
    if column == "n_rounds":
        return (float(design.min_rounds), most)
    if column == "time_to_collapse":
        return (0.0, max(0.0, most - 1.0))
    if column == "parse_failures":
        return (0.0, most)
    if column == "total_payoff":
        fewest = float(design.min_rounds)
        return (low * (fewest if low >= 0 else most), high * (most if high >= 0 else fewest))
    return None
