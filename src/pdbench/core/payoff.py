"""The payoff matrix: validation, lookup and the Prisoner's Dilemma conditions."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdbench.core.types import Action

MAX_PAYOFF = 1e6  # |payoff|; with at most 10**7 rounds a game's total stays below 2**53
DEFAULT_MATRIX: dict[str, dict[str, list[float]]] = {
    "C": {"C": [3, 3], "D": [0, 5]},
    "D": {"C": [5, 0], "D": [1, 1]},
}


class PayoffError(ValueError):
    """A payoff matrix that cannot be used; `path` says which cell."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


@dataclass(frozen=True, slots=True)
class PayoffMatrix:
    """Payoffs (to A, to B) for each pair of moves; R, S, T, P are A's payoffs for CC, CD, DC, DD."""

    cc: tuple[float, float] = (3.0, 3.0)
    cd: tuple[float, float] = (0.0, 5.0)
    dc: tuple[float, float] = (5.0, 0.0)
    dd: tuple[float, float] = (1.0, 1.0)

    @classmethod
    def from_nested(cls, table: object) -> PayoffMatrix:
        """Build from `{C: {C: [a, b], D: [a, b]}, D: {...}}`; PayoffError names a bad cell."""
        if not isinstance(table, dict):
            raise PayoffError(
                "", f"must be a mapping of C/D to C/D to [payoff_a, payoff_b] (got {table!r})"
            )
        extra = sorted(set(map(str, table)) - {"C", "D"})
        if extra:
            raise PayoffError(extra[0], f"unknown move (valid: C, D) (got {extra[0]!r})")
        cells: dict[str, tuple[float, float]] = {}
        for mine in ("C", "D"):
            row = table.get(mine)
            if not isinstance(row, dict):
                raise PayoffError(mine, f"missing row or not a mapping (got {row!r})")
            extra = sorted(set(map(str, row)) - {"C", "D"})
            if extra:
                raise PayoffError(
                    f"{mine}.{extra[0]}", f"unknown move (valid: C, D) (got {extra[0]!r})"
                )
            for theirs in ("C", "D"):
                path = f"{mine}.{theirs}"
                cell = row.get(theirs)
                if not isinstance(cell, list | tuple) or len(cell) != 2:
                    raise PayoffError(path, f"must be a pair [payoff_a, payoff_b] (got {cell!r})")
                pair: list[float] = []
                for value in cell:
                    if isinstance(value, bool) or not isinstance(value, int | float):
                        raise PayoffError(path, f"payoffs must be numbers (got {value!r})")
                    if not math.isfinite(value) or abs(value) > MAX_PAYOFF:
                        raise PayoffError(
                            path,
                            f"payoffs must be finite and at most {MAX_PAYOFF:g} in size, so that "
                            f"totals stay exact (got {value!r})",
                        )
                    pair.append(float(value))
                cells[mine + theirs] = (pair[0], pair[1])
        return cls(cc=cells["CC"], cd=cells["CD"], dc=cells["DC"], dd=cells["DD"])

    def payoffs(self, a: Action | str, b: Action | str) -> tuple[float, float]:
        """(payoff to A, payoff to B) when A plays `a` and B plays `b`."""
        key = f"{a}{b}"
        if key == "CC":
            return self.cc
        if key == "CD":
            return self.cd
        if key == "DC":
            return self.dc
        if key == "DD":
            return self.dd
        raise ValueError(f"not a pair of actions: {a!r}, {b!r}")

    @property
    def reward(self) -> float:
        """R: A's payoff for mutual cooperation."""
        return self.cc[0]

    @property
    def sucker(self) -> float:
        """S: A's payoff for cooperating against a defector."""
        return self.cd[0]

    @property
    def temptation(self) -> float:
        """T: A's payoff for defecting against a cooperator."""
        return self.dc[0]

    @property
    def punishment(self) -> float:
        """P: A's payoff for mutual defection."""
        return self.dd[0]

    def is_symmetric(self) -> bool:
        """True when B's payoffs mirror A's (the usual game)."""
        return (
            self.cc[0] == self.cc[1]
            and self.dd[0] == self.dd[1]
            and self.cd == (self.dc[1], self.dc[0])
        )

    def pd_warnings(self) -> list[str]:
        """Reasons this matrix is not a Prisoner's Dilemma (empty when it is one)."""
        t, r, p, s = self.temptation, self.reward, self.punishment, self.sucker
        problems: list[str] = []
        if not (t > r > p > s):
            problems.append(
                f"not a Prisoner's Dilemma: needs T > R > P > S (got T={t:g}, R={r:g}, P={p:g}, S={s:g})"
            )
        if not (2 * r > t + s):
            problems.append(
                f"not an iterated Prisoner's Dilemma: needs 2R > T + S (got 2R={2 * r:g}, T+S={t + s:g})"
            )
        if not self.is_symmetric():
            problems.append("matrix is not symmetric: A and B face different games")
        return problems

    def nowak_sigmund_generosity(self) -> float:
        """Generous TFT's forgiveness probability: min(1 - (T-R)/(R-S), (R-P)/(T-P)), clipped to [0, 1]."""
        t, r, p, s = self.temptation, self.reward, self.punishment, self.sucker
        try:
            value = min(1 - (t - r) / (r - s), (r - p) / (t - p))
        except ZeroDivisionError:
            return 0.0
        return min(1.0, max(0.0, value))

    def seen_by(self, side: int) -> PayoffMatrix:
        """The game from one side's seat: side 0 (A) is this matrix; side 1 (B) has B as the row
        player, so R, S, T, P and every `(mine, theirs)` pair are B's."""
        if side == 0:
            return self
        return PayoffMatrix(
            cc=(self.cc[1], self.cc[0]),
            cd=(self.dc[1], self.dc[0]),
            dc=(self.cd[1], self.cd[0]),
            dd=(self.dd[1], self.dd[0]),
        )

    def scaled(self, factor: float) -> PayoffMatrix:
        """Every payoff multiplied by `factor` (a positive factor leaves the game unchanged)."""
        return PayoffMatrix(
            cc=(self.cc[0] * factor, self.cc[1] * factor),
            cd=(self.cd[0] * factor, self.cd[1] * factor),
            dc=(self.dc[0] * factor, self.dc[1] * factor),
            dd=(self.dd[0] * factor, self.dd[1] * factor),
        )

    def as_nested(self) -> dict[str, dict[str, list[float]]]:
        """The `{C: {C: [a, b], ...}}` form used in configs and prompts."""
        return {
            "C": {"C": list(self.cc), "D": list(self.cd)},
            "D": {"C": list(self.dc), "D": list(self.dd)},
        }

    def as_array(self) -> tuple[tuple[tuple[float, float], tuple[float, float]], ...]:
        """Payoffs indexed [a_defects][b_defects] -> (payoff_a, payoff_b), for vectorized lookups."""
        return ((self.cc, self.cd), (self.dc, self.dd))
