"""The strategy card's goodness-of-fit test (core/strategy_gof.py).

- The memory-three history states of a short game, numbered by hand.
- Deterministic rules outside the built-in library that look two or three rounds back, 20 games
  x 100 rounds against RANDOM(0.5) (written here, not taken from pdbench): the best built-in
  strategy and the memory-one model are rejected; given the rule itself as prescribed moves
  (how `--library all` adds the Axelrod library's strategies), it ranks first and fits.
- The words of the card when nothing fits.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from pdbench.agents.strategy_library import MEMORY_ONE, builtin_candidates
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.strategy_fit import Candidate, fit_each, game_stats
from pdbench.core.strategy_gof import (
    GOF_ALPHA,
    card_verdict,
    gof_test,
    history_states,
    round_design,
)

Rule = Callable[[np.ndarray, np.ndarray], bool]  # (own moves so far, opponent's) -> C?


def two_tits_for_tat(own: np.ndarray, opp: np.ndarray) -> bool:
    """Memory two: defect twice after each defection (D if the opponent defected in either of
    the last two rounds)."""
    return bool(opp[-2:].all())


def hard_tit_for_tat(own: np.ndarray, opp: np.ndarray) -> bool:
    """Memory three: D if the opponent defected in any of the last three rounds."""
    return bool(opp[-3:].all())


def copy_two_back(own: np.ndarray, opp: np.ndarray) -> bool:
    """Memory two: play the opponent's move of two rounds ago (C in rounds 1 and 2)."""
    return True if opp.size < 2 else bool(opp[-2])


RULES: dict[str, Rule] = {
    "two_tits_for_tat": two_tits_for_tat,
    "hard_tit_for_tat": hard_tit_for_tat,
    "copy_two_back": copy_two_back,
}


def play(rule: Rule, rng: np.random.Generator, games: int = 20, rounds: int = 100) -> list:
    """Games of `rule` against RANDOM(0.5); also the rule's own prescription per round."""
    out = []
    for _ in range(games):
        opp = rng.random(rounds) < 0.5
        own = np.zeros(rounds, dtype=bool)
        for t in range(rounds):
            own[t] = rule(own[:t], opp[:t])
        out.append((own, opp, None, None))
    return out


def test_history_states_of_a_short_game_by_hand() -> None:
    # Rounds (own, opp): (C,D) (D,D) (C,C) (C,D) (D,C); digit = 2*own_D + opp_D.
    own = np.array([True, False, True, True, False])
    opp = np.array([False, False, True, False, True])
    # Round 1: state 0. Round 2: offset 1 + digit(C,D)=1 -> 2. Round 3: offset 5 + 4*3 + 1 = 18.
    # Round 4: offset 21 + 16*0 + 4*3 + 1 = 34. Round 5: 21 + 16*1 + 4*0 + 3 = 40.
    assert history_states(own, opp).tolist() == [0, 2, 18, 34, 40]


@pytest.mark.parametrize("name", sorted(RULES))
def test_rules_outside_the_library_are_judged_not_adequate(name: str) -> None:
    rule = RULES[name]
    games = play(rule, np.random.default_rng(19))
    candidates = builtin_candidates(PayoffMatrix(), 0)
    fits = fit_each(game_stats(games, candidates), candidates)
    best = min((f.rank, j) for j, f in enumerate(fits) if candidates[j].in_mixture)[1]
    memory_one = next(j for j, c in enumerate(candidates) if c.name == MEMORY_ONE)
    named = gof_test(round_design(games, candidates[best]), np.random.default_rng(1))
    m1 = gof_test(round_design(games, candidates[memory_one]), np.random.default_rng(2))
    # Every move follows from the last three rounds: memory-three predicts each one (log-
    # likelihood ~ 0), while no built-in (at most memory one, or GRIM's trigger) can.
    assert named.p_value < GOF_ALPHA and m1.p_value < GOF_ALPHA
    assert named.n_moves == 2000
    if name == "copy_two_back":
        # The opponent's move two rounds back is independent of the last round: every memory-
        # one state has P(C) = 1/2, log L = -n ln 2 on the 19 x 20 rounds after the second;
        # memory-three fits them exactly (up to the 0.001 floor). LR ~ 2 x 1960 ln 2.
        assert m1.statistic == pytest.approx(2 * 1960 * math.log(2), rel=0.05)

    # The rule itself as prescribed moves (the --library all route): best and adequate.
    prescribed = []
    for own, opp, _, _ in games:
        prescribed.append(np.array([float(rule(own[:t], opp[:t])) for t in range(own.size)]))
    truth = Candidate(f"rule:{name}", prescribed=prescribed)
    with_truth = [*candidates, truth]
    fits = fit_each(game_stats(games, with_truth), with_truth)
    assert min(fits, key=lambda f: f.rank).strategy == truth.name
    # No noise: both models give every move probability 0.999, so LR = 0 and every resample's
    # LR* >= 0: p = 1.
    result = gof_test(round_design(games, truth), np.random.default_rng(3))
    assert result.statistic == pytest.approx(0.0, abs=1e-6)
    assert result.p_value == 1.0


def test_the_card_says_in_words_that_nothing_fits() -> None:
    rows = [
        {"strategy": "GTFT", "rank": 1, "adequate": False, "gof_p_value": 0.005,
         "moves_explained": 0.62},
        {"strategy": MEMORY_ONE, "rank": 2, "adequate": False, "gof_p_value": 0.2,
         "moves_explained": 0.7},
        {"strategy": "TFT", "rank": 3, "adequate": False, "gof_p_value": None,
         "moves_explained": 0.6},
    ]  # fmt: skip
    text = card_verdict(rows)
    assert text is not None
    assert "no strategy in the library fits; closest: GTFT, which explains 62% of moves" in text
    assert "memory-one model fits (p = 0.200)" in text
    assert card_verdict([{**r, "adequate": True} for r in rows]) is None
    assert card_verdict([{k: v for k, v in r.items() if k != "adequate"} for r in rows]) is None


def test_the_statistic_equals_a_direct_count_over_histories() -> None:
    """LR computed a second way: per round, keyed by the tuple of the last three rounds (no
    state numbering), TFT's tremble from its mismatches."""
    rng = np.random.default_rng(4)
    games = [(rng.random(30) < 0.6, rng.random(30) < 0.5, None, None) for _ in range(5)]
    tft = next(c for c in builtin_candidates(PayoffMatrix(), 0) if c.name == "TFT")
    counts: dict[tuple, list[int]] = {}
    mismatches = 0
    for own, opp, _, _ in games:
        for t in range(own.size):
            key = tuple(zip(own[max(0, t - 3) : t], opp[max(0, t - 3) : t], strict=True))
            cell = counts.setdefault(key, [0, 0])
            cell[0] += int(own[t])
            cell[1] += 1
            mismatches += int(own[t] != (True if t == 0 else opp[t - 1]))

    def xlogy(x: float, y: float) -> float:
        return 0.0 if x == 0 else x * math.log(y)

    rich = 0.0
    for c, n in counts.values():
        q = min(max(c / n, 0.001), 0.999)
        rich += xlogy(c, q) + xlogy(n - c, 1 - q)
    eps = min(max(mismatches / 150, 0.001), 0.5)
    null = xlogy(mismatches, eps) + xlogy(150 - mismatches, 1 - eps)
    result = gof_test(round_design(games, tft), np.random.default_rng(0), resamples=19)
    assert result.statistic == pytest.approx(2 * (rich - null))
