"""Symmetric two-action games of N players, and what a seat of a group game is shown.

A `GroupGame` is two payoff vectors: `pay_c[k]` is a cooperator's payoff and `pay_d[k]` a
defector's when k of its N-1 co-players cooperate (egttools' layout for two strategies). Every
game of the issue is built from it:

- `linear_pd`: the N-player Prisoner's Dilemma of Hauert & Schuster (1997), each payoff linear in
  the share of cooperating co-players between the 2x2 game's cells: P_C(k) = S + (R-S) k/(N-1),
  P_D(k) = P + (T-P) k/(N-1). N = 2 is the 2x2 game itself.
- `public_goods`: the binary public goods game, cooperators pay c into a pot multiplied by r and
  shared by all N: P_C(k) = r c (k+1)/N - c, P_D(k) = r c k/N. Switching C to D changes one's
  own payoff by c (1 - r/N), so defection dominates exactly when r < N (`defection_dominates`).
- `volunteer`: everyone gets b when at least one volunteers; a volunteer pays c.
- `stag_hunt`: the N-person stag hunt of Pacheco et al. (2009): the pot is produced only when at
  least M players cooperate.
- `from_matrix`: a symmetric 2x2 `PayoffMatrix` as the case N = 2 (P_C = [S, R], P_D = [P, T]).

`GroupRound` and `GroupObservation` are what round-by-round group agents (policies, LLM agents,
the mock, a person) are shown; `pdbench.core.group_batch` plays policies' machines vectorized.
Pure: no I/O, no randomness.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pdbench.core.payoff import PayoffMatrix
from pdbench.core.types import Action, SeenMessage

MAX_PLAYERS = 26  # seats are lettered a..z in the record (storage.record.group_fields)
GAME_KINDS = ("linear_pd", "public_goods", "volunteer", "stag_hunt", "matrix")


@dataclass(frozen=True, slots=True)
class GroupGame:
    """A symmetric two-action game of `n_players`: payoffs by the number of cooperating others.

    `pay_c[k]` / `pay_d[k]` (k = 0..N-1): a cooperator's / a defector's payoff when k of its
    co-players cooperate. `kind` names how it was built (one of GAME_KINDS) and `params` the
    numbers it was built from, for labels and the manifest.
    """

    n_players: int
    pay_c: tuple[float, ...]
    pay_d: tuple[float, ...]
    kind: str = "custom"
    params: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        n = self.n_players
        if not 2 <= n <= MAX_PLAYERS:
            raise ValueError(f"a group game has 2..{MAX_PLAYERS} players (got {n})")
        if len(self.pay_c) != n or len(self.pay_d) != n:
            raise ValueError(
                f"pay_c and pay_d need one payoff per number of cooperating co-players, 0..{n - 1}"
                f" (got {len(self.pay_c)} and {len(self.pay_d)})"
            )

    # ------------------------------------------------------------------------------------
    # Constructors

    @classmethod
    def linear_pd(cls, n: int, matrix: PayoffMatrix | None = None) -> GroupGame:
        """Hauert & Schuster's linear N-player PD from a symmetric 2x2 game (default 3,0,5,1)."""
        r, s, t, p = _cells(matrix or PayoffMatrix())
        frac = [k / (n - 1) for k in range(n)]
        return cls(
            n,
            tuple(s + (r - s) * f for f in frac),
            tuple(p + (t - p) * f for f in frac),
            "linear_pd",
            (("R", r), ("S", s), ("T", t), ("P", p)),
        )

    @classmethod
    def public_goods(cls, n: int, r: float, c: float = 1.0) -> GroupGame:
        """Binary public goods: cooperators pay c, the pot times r is shared by all n."""
        return cls(
            n,
            tuple((r * c * (k + 1) - n * c) / n for k in range(n)),
            tuple(r * c * k / n for k in range(n)),
            "public_goods",
            (("r", float(r)), ("c", float(c))),
        )

    @classmethod
    def volunteer(cls, n: int, b: float = 2.0, c: float = 1.0) -> GroupGame:
        """Volunteer's dilemma: b to all when at least one volunteers (C); a volunteer pays c."""
        return cls(
            n,
            tuple(float(b - c) for _ in range(n)),
            tuple(float(b) if k >= 1 else 0.0 for k in range(n)),
            "volunteer",
            (("b", float(b)), ("c", float(c))),
        )

    @classmethod
    def stag_hunt(cls, n: int, threshold: int, r: float, c: float = 1.0) -> GroupGame:
        """N-person stag hunt (Pacheco et al. 2009): cooperators pay c; when at least
        `threshold` players cooperate the pot times r is shared by all n, else nothing is."""
        if not 1 <= threshold <= n:
            raise ValueError(f"threshold must be 1..{n} (got {threshold})")
        return cls(
            n,
            tuple((r * c * (k + 1) / n if k + 1 >= threshold else 0.0) - c for k in range(n)),
            tuple(r * c * k / n if k >= threshold else 0.0 for k in range(n)),
            "stag_hunt",
            (("M", float(threshold)), ("r", float(r)), ("c", float(c))),
        )

    @classmethod
    def from_matrix(cls, matrix: PayoffMatrix) -> GroupGame:
        """A symmetric 2x2 game as the group game of N = 2; an asymmetric one is refused."""
        if not is_symmetric(matrix):
            raise ValueError("only a symmetric 2x2 game is a group game of two players")
        r, s, t, p = _cells(matrix)
        return cls(2, (s, r), (p, t), "matrix", (("R", r), ("S", s), ("T", t), ("P", p)))

    # ------------------------------------------------------------------------------------
    # Payoffs

    def payoff(self, cooperates: bool, k_others: int) -> float:
        """One seat's payoff given its move and how many of its co-players cooperated."""
        return self.pay_c[k_others] if cooperates else self.pay_d[k_others]

    def payoffs(self, cooperates: Sequence[bool]) -> tuple[float, ...]:
        """Every seat's payoff for one round's moves (True for C), in seat order."""
        if len(cooperates) != self.n_players:
            raise ValueError(f"{self.n_players} moves needed (got {len(cooperates)})")
        total = sum(bool(c) for c in cooperates)
        return tuple(self.pay_c[total - 1] if c else self.pay_d[total] for c in cooperates)

    def all_cooperate(self) -> float:
        """Each seat's payoff when everyone cooperates."""
        return self.pay_c[self.n_players - 1]

    def all_defect(self) -> float:
        """Each seat's payoff when everyone defects."""
        return self.pay_d[0]

    def aspiration(self) -> float:
        """The win/lose line of win-stay lose-shift on the group payoff: halfway between
        all-cooperate and all-defect (for the 2x2 PD, (R + P) / 2: R and T win, S and P lose)."""
        return (self.all_cooperate() + self.all_defect()) / 2.0

    def defection_dominates(self) -> bool:
        """D pays strictly more than C whatever the others do (for every k)."""
        return all(d > c for c, d in zip(self.pay_c, self.pay_d, strict=True))

    def describe(self) -> str:
        """A short label: the kind, N and its parameters ("public_goods N=5 r=3 c=1")."""
        parts = [f"{name}={value:g}" for name, value in self.params]
        return " ".join([self.kind, f"N={self.n_players}", *parts])


def is_symmetric(matrix: PayoffMatrix) -> bool:
    """Both players get the same payoff in the same position (cc, dd equal; cd mirrors dc)."""
    return (
        matrix.cc[0] == matrix.cc[1]
        and matrix.dd[0] == matrix.dd[1]
        and matrix.cd == (matrix.dc[1], matrix.dc[0])
    )


def _cells(matrix: PayoffMatrix) -> tuple[float, float, float, float]:
    """(R, S, T, P) of the row player of a 2x2 game."""
    return (
        float(matrix.cc[0]),
        float(matrix.cd[0]),
        float(matrix.dc[0]),
        float(matrix.dd[0]),
    )


def pairwise_payoffs(matrix: PayoffMatrix, moves: Sequence[Sequence[bool]]) -> tuple[float, ...]:
    """Pairwise play inside a group (TextArena's ThreePlayerIPD): `moves[i][j]` is seat i's move
    toward seat j (True for C; the diagonal is ignored); seat i's payoff is the sum over its
    co-players j of the 2x2 payoff of (moves[i][j], moves[j][i])."""
    n = len(moves)
    out: list[float] = []
    for i in range(n):
        total = 0.0
        for j in range(n):
            if i == j:
                continue
            mine, theirs = bool(moves[i][j]), bool(moves[j][i])
            cell = {
                (True, True): matrix.cc,
                (True, False): matrix.cd,
                (False, True): matrix.dc,
                (False, False): matrix.dd,
            }[(mine, theirs)]
            total += float(cell[0])
        out.append(total)
    return tuple(out)


# ----------------------------------------------------------------------------------------------
# What a seat is shown


@dataclass(frozen=True, slots=True)
class GroupRound:
    """One past round of a group game: every seat's played move and payoff, in seat order."""

    actions: tuple[Action, ...]
    payoffs: tuple[float, ...]

    def cooperators_other_than(self, seat: int) -> int:
        """How many of `seat`'s co-players cooperated."""
        return sum(a is Action.C for i, a in enumerate(self.actions) if i != seat)


@dataclass(frozen=True, slots=True)
class GroupObservation:
    """Everything one seat is shown before it moves in one round of a group game.

    `round_index` is 0-based; `history` holds at most the seat's history window of the most recent
    rounds, oldest first, with every seat's moves (seat order; `seat` is this agent's). `names`
    are the seats' agent names, `labels` how the seats are called to each other ("Player 1"...).
    Totals are None when the agent is not told them; `messages` what it can see of the talk.
    """

    seat: int
    n_players: int
    round_index: int
    history: tuple[GroupRound, ...]
    game: GroupGame
    horizon_type: str
    names: tuple[str, ...] = ()
    total_rounds: int | None = None
    stop_prob: float | None = None
    my_cumulative_payoff: float | None = None
    cumulative_payoffs: tuple[float, ...] | None = None
    messages: tuple[SeenMessage, ...] = ()

    @property
    def round_number(self) -> int:
        """The 1-based round number shown to people and LLMs."""
        return self.round_index + 1

    def others_cooperated_last(self) -> int | None:
        """How many co-players cooperated in the last round shown (None in round 1)."""
        if not self.history:
            return None
        return self.history[-1].cooperators_other_than(self.seat)

    def my_last(self) -> Action | None:
        """This seat's move in the last round shown (None in round 1)."""
        return self.history[-1].actions[self.seat] if self.history else None

    def my_last_payoff(self) -> float | None:
        """This seat's payoff in the last round shown (None in round 1)."""
        return self.history[-1].payoffs[self.seat] if self.history else None
