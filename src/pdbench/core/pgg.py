"""The public goods game with contributions and an optional punishment stage (issue 31).

One round: every seat contributes an integer number of tokens to a pot; the pot is multiplied by
r and shared equally by all N seats; then, when punishment is on and the contributions have been
revealed, each seat may spend punishment tokens on others: a token costs the punisher
`punish_cost` and removes `punish_effect` from the target.

Two budgets (`PGGRules.budget`):

- "round" (the laboratory design, Fehr & Gaechter 2000): every round each seat gets E fresh
  tokens and contributes 0..E; its round income is E - c + share - spent - received, added to a
  balance that starts at 0.
- "balance" (PGG-Bench): each seat starts with E and contributes 0..its current balance (floored);
  no new tokens arrive, so balances carry across rounds and cooperation compounds.

PGG-Bench's rules, read from lechmazur/pgg_bench `README.md` (section "Overview") and its game
logs `logs/game_*.jsonl` (735 games, 11,171 punishment acts, commit 4be972b):

- 5 players, 20 tokens each, 10 rounds, contributions 0..current balance, multiplier 1.6.
- "Remainders carry over": the logs' `fund_distribution` rows have pot_after_mult =
  floor((carry_in + total) * 1.6), share = pot_after_mult // 5 and leftover = pot_after_mult % 5,
  which is the next round's carry_in (multiplied again). `integer_shares=True` does exactly that
  (checked on all 7,350 rounds of the logs); `integer_shares=False` shares r * pot / N exactly.
- Punishment: up to 10 tokens a round on exactly one other seat (`punish_max_targets=1`); spending
  X costs the punisher X and the target 3X, "capped at min(50% of target's post-fund balance,
  $100). If the cap reduces the final cost, leftover spend is refunded": the punisher pays
  damage / 3. The cap never binds in the logs (every act has damage = 3 x spend), no punisher
  ever spent more than its balance and no balance went below 0.
- No reward stage is described; the optional one here (off by default) is ours, below.

PGG-Bench's prompt templates (`prompts/template_punishment_*.txt`) work an example that fixes
what its README leaves open: acts apply one by one (P1's, then P2's), each capped at
floor(50%) of the target's balance so far, and a capped act spends whole tokens (floor of the
scaled spend), the rest refunded. `PGGRules.pgg_bench()` uses that rule (`punish_rule:
"sequential"`, in seat order); the default "simultaneous" rule caps every act against the
target's post-fund balance in exact fractions, so the outcome does not depend on an order. Either
way a seat may not commit more punishment than it holds after the fund (ValueError, not a silent
clamp), and a target's balance stops at 0 (damage beyond it is lost; its punishers still pay).

The reward stage (`reward=True`, off by default; the design of Sefton, Shupp & Walker 2007, "The
effect of rewards and sanctions in provision of public goods"): once the contributions are
revealed each seat may give reward tokens to other seats; a token costs the giver `reward_cost`
and gives the target `reward_effect` (1 and 1 in their design), at most `reward_max_tokens`
tokens a round (and `reward_max_targets` seats, None: any). With punishment on too, both are
decided at the same time from the same information (the contributions and the balances after
the fund; nobody sees the others' punishments or rewards before deciding) and applied together:
punishment is capped against the post-fund balance as above (rewards do not raise the cap), a
seat may not commit more to punishment and rewards together than it holds after the fund, it
pays both, then loses the damage (down to 0 at most), then receives its rewards (which
punishment cannot take away). With the reward stage off, a round is computed exactly as before
and its `reward_*` fields are empty.

Pure: no I/O, no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

BUDGETS = ("round", "balance")
VISIBILITIES = ("each", "total")
REWARD_FIELDS = (
    "reward",
    "reward_cost",
    "reward_effect",
    "reward_max_tokens",
    "reward_max_targets",
)

Punishments = Mapping[int, Mapping[int, int]] | Sequence[Sequence[int]] | np.ndarray


@dataclass(frozen=True, slots=True)
class PGGRules:
    """Rules of a public goods game; `pgg_bench()` gives PGG-Bench's.

    `endowment` is E (tokens a round in the "round" budget, the starting balance in "balance"),
    `multiplier` is r. `visibility` is what a seat is shown of the others' contributions after a
    round: "each" (every contribution) or "total" (the group total only).
    """

    n_players: int
    endowment: int = 20
    multiplier: float = 1.6
    budget: Literal["round", "balance"] = "round"
    integer_shares: bool = False
    punishment: bool = False
    punish_cost: float = 1.0
    punish_effect: float = 3.0
    punish_max_tokens: int = 10
    punish_max_targets: int | None = None
    punish_cap_fraction: float = 0.5
    punish_cap_absolute: float = 100.0
    visibility: Literal["each", "total"] = "each"
    # "simultaneous": every act capped against the target's post-fund balance, exact fractions;
    # "sequential": PGG-Bench's worked example (its prompt templates): acts one by one in seat
    # order against the target's balance so far, the cap floored, whole tokens spent (the rest
    # refunded)
    punish_rule: Literal["simultaneous", "sequential"] = "simultaneous"
    # the reward stage (Sefton, Shupp & Walker 2007): a token costs reward_cost, gives
    # reward_effect; at most reward_max_tokens tokens and reward_max_targets seats a round
    reward: bool = False
    reward_cost: float = 1.0
    reward_effect: float = 1.0
    reward_max_tokens: int = 10
    reward_max_targets: int | None = None

    def __post_init__(self) -> None:
        if self.n_players < 2:
            raise ValueError(f"n_players must be at least 2, got {self.n_players}")
        if self.endowment < 1 or int(self.endowment) != self.endowment:
            raise ValueError(f"endowment must be a positive integer, got {self.endowment}")
        if not self.multiplier > 0:
            raise ValueError(f"multiplier must be > 0, got {self.multiplier}")
        if self.budget not in BUDGETS:
            raise ValueError(f"budget must be one of {BUDGETS}, got {self.budget!r}")
        if self.visibility not in VISIBILITIES:
            raise ValueError(f"visibility must be one of {VISIBILITIES}, got {self.visibility!r}")
        if not (self.punish_cost > 0 and self.punish_effect > 0):
            raise ValueError("punish_cost and punish_effect must be > 0")
        if self.punish_max_tokens < 0:
            raise ValueError(f"punish_max_tokens must be >= 0, got {self.punish_max_tokens}")
        if self.punish_max_targets is not None and self.punish_max_targets < 1:
            raise ValueError(
                f"punish_max_targets must be None or >= 1, got {self.punish_max_targets}"
            )
        if not (0 < self.punish_cap_fraction <= 1 and self.punish_cap_absolute > 0):
            raise ValueError("punish_cap_fraction must be in (0, 1] and punish_cap_absolute > 0")
        if not (self.reward_cost > 0 and self.reward_effect > 0):
            raise ValueError("reward_cost and reward_effect must be > 0")
        if self.reward_max_tokens < 0:
            raise ValueError(f"reward_max_tokens must be >= 0, got {self.reward_max_tokens}")
        if self.reward_max_targets is not None and self.reward_max_targets < 1:
            raise ValueError(
                f"reward_max_targets must be None or >= 1, got {self.reward_max_targets}"
            )

    def as_dict(self) -> dict[str, object]:
        """The rules' fields by name; without the reward stage's when it is off (so what is
        written of rules without rewards is what it was before the stage existed)."""
        out = {name: getattr(self, name) for name in type(self).__dataclass_fields__}
        if not self.reward:
            for name in REWARD_FIELDS:
                del out[name]
        return out

    @classmethod
    def pgg_bench(cls, punishment: bool = True) -> PGGRules:
        """PGG-Bench's "Contribute & Punish": 5 seats, 20 tokens, r = 1.6, balances carried,
        integer shares with the remainder carried, 1:3 punishment of one seat, up to 10 tokens."""
        return cls(
            n_players=5,
            endowment=20,
            multiplier=1.6,
            budget="balance",
            integer_shares=True,
            punishment=punishment,
            punish_cost=1.0,
            punish_effect=3.0,
            punish_max_tokens=10,
            punish_max_targets=1,
            punish_rule="sequential",
        )

    def initial_balances(self) -> tuple[float, ...]:
        """Balances before the first round: E each in the "balance" budget, 0 in "round"."""
        start = float(self.endowment) if self.budget == "balance" else 0.0
        return (start,) * self.n_players

    def contribution_limit(self, balance: float) -> int:
        """The most a seat with this balance may contribute this round."""
        if self.budget == "round":
            return self.endowment
        return max(0, math.floor(balance + 1e-9))


@dataclass(frozen=True, slots=True)
class RoundResult:
    """One round. Per-seat tuples are in seat order; `punish_tokens[i][j]` / `damage[i][j]` are
    the tokens seat i spent on seat j and what they removed after the caps.

    `share` is each seat's payoff from the pot; `income` the round's change of each balance
    (with the round's endowment in the "round" budget); `punish_spent` what each punisher paid
    after refunds, `punish_received` what each target lost. With the reward stage on,
    `reward_tokens[i][j]` are the tokens seat i gave seat j, `reward_given` what each giver paid
    and `reward_received` what each target got; all three are empty without the stage.
    """

    start_balances: tuple[float, ...]
    limits: tuple[int, ...]
    contributions: tuple[int, ...]
    pot: float
    share: float
    carry_in: float
    carry_out: float
    post_fund: tuple[float, ...]
    punish_tokens: tuple[tuple[int, ...], ...]
    damage: tuple[tuple[float, ...], ...]
    punish_spent: tuple[float, ...]
    punish_received: tuple[float, ...]
    balances: tuple[float, ...]
    reward_tokens: tuple[tuple[int, ...], ...] = ()
    reward_given: tuple[float, ...] = ()
    reward_received: tuple[float, ...] = ()

    @property
    def income(self) -> tuple[float, ...]:
        """Each seat's change of balance in this round."""
        return tuple(b - s for b, s in zip(self.balances, self.start_balances, strict=True))

    @property
    def total(self) -> int:
        """The group's total contribution."""
        return sum(self.contributions)


def _as_matrix(punishments: Punishments | None, n: int, what: str = "punish") -> list[list[int]]:
    """Punishment (or reward) tokens as an n x n list (row = giver), from a mapping or a
    matrix; `what` names the stage in errors."""
    out = [[0] * n for _ in range(n)]
    if punishments is None:
        return out
    if isinstance(punishments, Mapping):
        rows = punishments.items()
    else:
        rows_list = [list(r) for r in punishments]
        if len(rows_list) != n or any(len(r) != n for r in rows_list):
            raise ValueError(f"{what} tokens must be a {n} x {n} matrix (row = giver)")
        rows = ((i, dict(enumerate(r))) for i, r in enumerate(rows_list))
    for i, targets in rows:
        if not (isinstance(i, int | np.integer) and 0 <= i < n):
            raise ValueError(f"{what}ing seat {i!r} is not a seat 0..{n - 1}")
        for j, t in targets.items():
            if not (isinstance(j, int | np.integer) and 0 <= j < n):
                raise ValueError(f"{what} target {j!r} is not a seat 0..{n - 1}")
            if int(t) != t or t < 0:
                raise ValueError(f"{what} tokens must be integers >= 0, got {t!r} ({i}->{j})")
            out[int(i)][int(j)] = int(t)
    return out


def _punish_in_turn(
    rules: PGGRules,
    tokens: list[list[int]],
    post: list[float],
    damage: list[list[float]],
    spent: list[float],
) -> None:
    """PGG-Bench's punishment, as the worked example of its prompt templates computes it: the
    acts one by one in seat order; a target loses at most floor(fraction x its balance so far)
    (and the absolute cap); when that cuts the damage, the punisher's tokens scale down and are
    floored to whole tokens, the rest refunded. Example (N = 3, after the fund 16, 18, 21): P1
    spends 4 on P3: raw 12 > floor(21 / 2) = 10, so floor(4 x 10/12) = 3 tokens, damage 9,
    refund 1; then P2 spends 2 on P3 (now 12): raw 6 <= 6, damage 6; balances 13, 16, 6."""
    balance = list(post)
    for i, row in enumerate(tokens):
        for j, t in enumerate(row):
            if not t:
                continue
            raw = t * rules.punish_effect
            cap = min(
                math.floor(rules.punish_cap_fraction * balance[j] + 1e-9), rules.punish_cap_absolute
            )
            paid = t if raw <= cap else math.floor(t * max(cap, 0) / raw + 1e-9)
            damage[i][j] = paid * rules.punish_effect
            spent[i] += paid * rules.punish_cost
            balance[i] -= paid * rules.punish_cost
            balance[j] -= damage[i][j]


def _check_rewards(
    rules: PGGRules, gifts: list[list[int]], post: list[float], punish: list[list[int]]
) -> list[list[int]] | None:
    """The reward tokens checked against the rules (None when the rules have no reward stage):
    no reward of oneself, at most `reward_max_tokens` tokens and `reward_max_targets` seats, and
    with the punishment tokens no more committed than the seat holds after the fund."""
    if not rules.reward:
        if any(any(row) for row in gifts):
            raise ValueError("rewards given but the rules have no reward stage")
        return None
    for i, row in enumerate(gifts):
        if row[i]:
            raise ValueError(f"seat {i} rewards itself: targets must be other seats")
        total = sum(row)
        if total > rules.reward_max_tokens:
            raise ValueError(
                f"seat {i} gives {total} reward tokens: at most {rules.reward_max_tokens}"
            )
        targets = sum(1 for t in row if t)
        if rules.reward_max_targets is not None and targets > rules.reward_max_targets:
            raise ValueError(
                f"seat {i} rewards {targets} seats: at most {rules.reward_max_targets} a round"
            )
        cost = total * rules.reward_cost + sum(punish[i]) * rules.punish_cost
        if cost > post[i] + 1e-9:
            raise ValueError(
                f"seat {i} commits {cost:g} to rewards and punishment"
                f" but holds {post[i]:g} after the fund"
            )
    return gifts


def _pot_split(rules: PGGRules, pot: float) -> tuple[float, float]:
    """(share per seat, carry-out) of a pot before multiplication."""
    n = rules.n_players
    if not rules.integer_shares:
        return pot * rules.multiplier / n, 0.0
    grown = math.floor(Fraction(pot) * Fraction(str(rules.multiplier)))
    return float(grown // n), float(grown % n)


def play_round(
    rules: PGGRules,
    balances: Sequence[float],
    contributions: Sequence[int],
    punishments: Punishments | None = None,
    carry_in: float = 0.0,
    rewards: Punishments | None = None,
) -> RoundResult:
    """Play one round from the seats' `balances`; `punishments` maps punisher -> {target: tokens}
    (or is an N x N matrix), `carry_in` is the pot remainder of the last round (integer shares),
    `rewards` maps giver -> {target: tokens} (or is a matrix), given in the same stage as the
    punishments (module docstring)."""
    n = rules.n_players
    if len(balances) != n or len(contributions) != n:
        raise ValueError(f"balances and contributions need {n} entries, one per seat")
    if any(b < 0 for b in balances):
        raise ValueError(f"balances must be >= 0, got {list(balances)}")
    if carry_in and not rules.integer_shares:
        raise ValueError("carry_in is only for integer_shares (exact shares leave no remainder)")
    start = tuple(float(b) for b in balances)
    limits = tuple(rules.contribution_limit(b) for b in start)
    for i, c in enumerate(contributions):
        if int(c) != c or not 0 <= c <= limits[i]:
            what = "E" if rules.budget == "round" else "the balance"
            raise ValueError(
                f"seat {i} contributes {c!r}: must be an integer 0..{limits[i]} ({what})"
            )
    cs = tuple(int(c) for c in contributions)
    pot = float(carry_in) + sum(cs)
    share, carry_out = _pot_split(rules, pot)
    gift = rules.endowment if rules.budget == "round" else 0
    post = [start[i] + gift - cs[i] + share for i in range(n)]

    tokens = _as_matrix(punishments, n)
    damage = [[0.0] * n for _ in range(n)]
    spent = [0.0] * n
    gifts = _check_rewards(rules, _as_matrix(rewards, n, "reward"), post, tokens)
    if any(any(row) for row in tokens):
        if not rules.punishment:
            raise ValueError("punishments given but the rules have no punishment stage")
        for i, row in enumerate(tokens):
            if row[i]:
                raise ValueError(f"seat {i} punishes itself: targets must be other seats")
            total = sum(row)
            if total > rules.punish_max_tokens:
                raise ValueError(
                    f"seat {i} spends {total} punishment tokens: at most {rules.punish_max_tokens}"
                )
            targets = sum(1 for t in row if t)
            if rules.punish_max_targets is not None and targets > rules.punish_max_targets:
                raise ValueError(
                    f"seat {i} punishes {targets} seats: at most {rules.punish_max_targets} a round"
                )
            if total * rules.punish_cost > post[i] + 1e-9:
                raise ValueError(
                    f"seat {i} commits {total * rules.punish_cost:g} to punishment"
                    f" but holds {post[i]:g} after the fund"
                )
        if rules.punish_rule == "sequential":
            _punish_in_turn(rules, tokens, post, damage, spent)
        else:
            for i, row in enumerate(tokens):
                for j, t in enumerate(row):
                    if t:
                        cap = min(rules.punish_cap_fraction * post[j], rules.punish_cap_absolute)
                        damage[i][j] = min(t * rules.punish_effect, cap)
                        spent[i] += damage[i][j] / rules.punish_effect * rules.punish_cost
    after_pay = [post[i] - spent[i] for i in range(n)]
    if gifts is not None:
        given = [sum(row) * rules.reward_cost for row in gifts]
        got = [sum(gifts[i][j] for i in range(n)) * rules.reward_effect for j in range(n)]
        after_pay = [after_pay[i] - given[i] for i in range(n)]
    received = [min(sum(damage[i][j] for i in range(n)), after_pay[j]) for j in range(n)]
    final = tuple(max(0.0, after_pay[j] - received[j]) for j in range(n))
    extra: dict[str, tuple] = {}
    if gifts is not None:
        final = tuple(final[j] + got[j] for j in range(n))
        extra = {
            "reward_tokens": tuple(tuple(r) for r in gifts),
            "reward_given": tuple(given),
            "reward_received": tuple(got),
        }
    return RoundResult(
        start_balances=start,
        limits=limits,
        contributions=cs,
        pot=pot,
        share=share,
        carry_in=float(carry_in),
        carry_out=carry_out,
        post_fund=tuple(post),
        punish_tokens=tuple(tuple(r) for r in tokens),
        damage=tuple(tuple(r) for r in damage),
        punish_spent=tuple(spent),
        punish_received=tuple(received),
        balances=final,
        **extra,
    )


def full_cooperation_total(rules: PGGRules, rounds: int) -> float:
    """The group's total gain under full cooperation (everyone contributes its limit, nobody
    punishes), with exact shares: T N E r in the "round" budget, N E r^T of final balances in the
    "balance" budget (the pot compounds)."""
    n, e, r = rules.n_players, rules.endowment, rules.multiplier
    if rules.budget == "round":
        return rounds * n * e * r
    return n * e * r**rounds
