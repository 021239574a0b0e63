"""Metrics of one public goods game (`pdbench.core.pgg`) from its rounds.

Definitions (PGG-Bench's where it has one, lechmazur/pgg_bench `README.md`, "Visualizations &
Metrics"; its analysis code is not published, so the denominators below are this module's):

- contribution rate: tokens contributed over tokens that could have been (E a round, or the
  balance in the "balance" budget) — per round over the group (PGG-Bench's "total fraction of
  tokens contributed each round"), per seat, and overall.
- free riding: a seat-round where the seat contributes 0 while some other seat contributes > 0;
  the rate is over all seat-rounds.
- punishment spent / received: tokens paid by each punisher (after refunds) and removed from each
  target, totals per seat; the spent fraction is spent over the seat's post-fund balances summed.
- retaliation (PGG-Bench: "how often a model punishes someone who punished them in the previous
  round"): an opportunity is a (seat i, seat j, round t >= 2) with j punishing i in round t-1; it
  is taken when i punishes j in round t. The rate is taken over opportunities (None without one).
- antisocial punishment: a punishment act (i punishes j in a round) with c_j >= c_i; the rate is
  over all acts (None without one).
- reward given (the reward stage, Sefton, Shupp & Walker 2007; rules with `reward` only): what
  each giver paid for its reward tokens, totals per seat, and what each seat received; the given
  fraction is the group's payment over its post-fund balances summed (as punishment's). Without
  the stage both are 0 (empty per-seat tuples are read as zeros).
- efficiency: the group's gain (income summed in the "round" budget, final balances summed in the
  "balance" budget) over the same under full cooperation with exact shares
  (`pgg.full_cooperation_total`).
- Gini of the final balances (`group_metrics.gini`).

Pure: no I/O, no randomness.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pdbench.core.group_metrics import gini
from pdbench.core.pgg import PGGRules, RoundResult, full_cooperation_total


@dataclass(frozen=True, slots=True)
class PGGGameMetrics:
    """The metrics of one game; per-seat tuples are in seat order."""

    rounds: int
    contribution_rate_by_round: tuple[float, ...]
    contribution_rate: float
    contribution_rate_by_seat: tuple[float, ...]
    free_riding_count: int
    free_riding_rate: float
    punish_spent: tuple[float, ...]
    punish_received: tuple[float, ...]
    punish_spent_fraction: float
    retaliation_opportunities: int
    retaliations: int
    retaliation_rate: float | None
    punishment_acts: int
    antisocial_acts: int
    antisocial_rate: float | None
    efficiency: float
    gini_final: float | None
    reward_given: tuple[float, ...] = ()
    reward_received: tuple[float, ...] = ()
    reward_given_fraction: float = 0.0


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def pgg_game_metrics(rules: PGGRules, rounds: Sequence[RoundResult]) -> PGGGameMetrics:
    """The metrics of a game played under `rules` whose rounds, in order, are `rounds`."""
    if not rounds:
        raise ValueError("a game needs at least one round to measure")
    n = rules.n_players
    by_round = []
    seat_c = [0] * n
    seat_lim = [0] * n
    free = 0
    for rr in rounds:
        lim = sum(rr.limits)
        by_round.append(rr.total / lim if lim else 0.0)
        for i in range(n):
            seat_c[i] += rr.contributions[i]
            seat_lim[i] += rr.limits[i]
            if rr.contributions[i] == 0 and rr.total > 0:
                free += 1
    all_lim = sum(seat_lim)
    spent = tuple(sum(rr.punish_spent[i] for rr in rounds) for i in range(n))
    received = tuple(sum(rr.punish_received[i] for rr in rounds) for i in range(n))
    post_total = sum(sum(rr.post_fund) for rr in rounds)
    given = tuple(
        sum((rr.reward_given[i] for rr in rounds if rr.reward_given), 0.0) for i in range(n)
    )
    got = tuple(
        sum((rr.reward_received[i] for rr in rounds if rr.reward_received), 0.0) for i in range(n)
    )

    opportunities = taken = 0
    for prev, cur in zip(rounds, rounds[1:], strict=False):
        for i in range(n):
            for j in range(n):
                if prev.punish_tokens[j][i]:
                    opportunities += 1
                    taken += bool(cur.punish_tokens[i][j])
    acts = antisocial = 0
    for rr in rounds:
        for i in range(n):
            for j in range(n):
                if rr.punish_tokens[i][j]:
                    acts += 1
                    antisocial += rr.contributions[j] >= rr.contributions[i]

    if rules.budget == "round":
        gain = sum(sum(rr.income) for rr in rounds)
    else:
        gain = sum(rounds[-1].balances)
    return PGGGameMetrics(
        rounds=len(rounds),
        contribution_rate_by_round=tuple(by_round),
        contribution_rate=sum(seat_c) / all_lim if all_lim else 0.0,
        contribution_rate_by_seat=tuple(
            c / m if m else 0.0 for c, m in zip(seat_c, seat_lim, strict=True)
        ),
        free_riding_count=free,
        free_riding_rate=free / (n * len(rounds)),
        punish_spent=spent,
        punish_received=received,
        punish_spent_fraction=sum(spent) / post_total if post_total else 0.0,
        retaliation_opportunities=opportunities,
        retaliations=taken,
        retaliation_rate=_ratio(taken, opportunities),
        punishment_acts=acts,
        antisocial_acts=antisocial,
        antisocial_rate=_ratio(antisocial, acts),
        efficiency=gain / full_cooperation_total(rules, len(rounds)),
        gini_final=gini(rounds[-1].balances),
        reward_given=given,
        reward_received=got,
        reward_given_fraction=sum(given) / post_total if post_total else 0.0,
    )
