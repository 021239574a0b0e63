"""The memory-one profile against the Axelrod library's state-to-action distribution (an
independent implementation) on the same moves, per game and pooled over a condition's games;
Fontana et al.'s five dimensions against values worked out by hand, on short games that take
every branch of their definitions."""

from __future__ import annotations

import numpy as np
import pytest

from pdbench.core.behaviour import STATES, fontana_dimensions, memory_one_profile
from pdbench.core.metrics import GameOutcome, aggregate_rows

axl = pytest.importorskip("axelrod", reason="the Axelrod library is the oracle (dev dependency)")
C, D = axl.Action.C, axl.Action.D


def moves(text: str) -> list[bool]:
    return [ch == "C" for ch in text]


def axelrod_profile(mine: list[bool], theirs: list[bool]) -> dict[str, tuple[int, int]]:
    """Per state (own move, opponent's move): (visits, cooperations after), from axelrod."""
    interactions = [(C if a else D, C if b else D) for a, b in zip(mine, theirs, strict=True)]
    counts = axl.interaction_utils.compute_state_to_action_distribution(interactions)[0]
    out = {}
    for name, state in zip(STATES, [(C, C), (C, D), (D, C), (D, D)], strict=True):
        coops = counts[(state, C)]
        out[name] = (coops + counts[(state, D)], coops)
    return out


def random_game(rng: np.random.Generator) -> tuple[list[bool], list[bool]]:
    n = int(rng.integers(1, 40))
    p, q = rng.uniform(0.1, 0.9, size=2)
    return list(rng.random(n) < p), list(rng.random(n) < q)


def test_memory_one_equals_axelrods_distribution_game_by_game() -> None:
    rng = np.random.default_rng(11)
    for _ in range(300):
        mine, theirs = random_game(rng)
        ours = memory_one_profile(mine, theirs)
        for state, (visits, coops) in axelrod_profile(mine, theirs).items():
            assert ours[f"n_{state}"] == visits
            if visits:
                assert ours[f"p_coop_after_{state}"] == pytest.approx(coops / visits)
            else:
                assert ours[f"p_coop_after_{state}"] is None
        assert ours["first_move_cooperation"] == float(mine[0])


def test_condition_profile_pools_counts_like_axelrod_on_the_same_moves() -> None:
    """The condition row's p_coop_after_* is summed cooperations / summed visits over games,
    for agent A (own = A) and agent B (own = B: the interactions seen from B's side)."""
    rng = np.random.default_rng(5)
    games = [random_game(rng) for _ in range(12)]
    outcomes = [
        GameOutcome(
            "c",
            i,
            "A",
            "B",
            np.array(a),
            np.array(b),
            np.zeros(len(a)),
            np.zeros(len(a)),
        )
        for i, (a, b) in enumerate(games)
    ]
    rows = aggregate_rows("run", outcomes, ["c"])
    condition = next(r for r in rows if r["scope"] == "condition")
    for side, orient in (("a", lambda g: g), ("b", lambda g: (g[1], g[0]))):
        totals = {s: [0, 0] for s in STATES}
        for game in games:
            mine, theirs = orient(game)
            for state, (visits, coops) in axelrod_profile(mine, theirs).items():
                totals[state][0] += visits
                totals[state][1] += coops
        for state, (visits, coops) in totals.items():
            assert condition[f"agent_{side}_n_{state}"] == visits
            expected = coops / visits if visits else None
            assert condition[f"agent_{side}_p_coop_after_{state}"] == pytest.approx(expected)


# (mine, theirs, nice, forgiving, retaliatory, troublemaking, emulative), each worked by hand.
FONTANA_CASES = [
    # The reference's worked example.
    ("CCDC", "CDDC", 1.0, 1.0, 0.5, 0.0, 2 / 3),
    # Nobody defects: nice 1; no provocation: forgiving 0, retaliatory 0; occasions 1+2 = 3,
    # no uncalled D; emulative 2/2.
    ("CCC", "CCC", 1.0, 0.0, 0.0, 0.0, 1.0),
    # The agent defects first (round 0): nice 0. Troublemaking: occasions 1 + (theirs C at 0, 1)
    # = 3, uncalled 1 (round 0) + (mine D at 1 after their C at 0) + (mine D at 2 after C at 1)
    # = 3 -> 1.0. Emulative: mine[1:] = DD vs theirs[:-1] = CC -> 0.
    ("DDD", "CCC", 0.0, 0.0, 0.0, 1.0, 0.0),
    # Both defect at the same round: nice 0 (at the same round counts as before).
    # Opponent D at 0 (provocation, i = 0), answered by mine D at 1: retaliatory 1/1 (i = 1:
    # theirs C). Forgiving: round 0 sets the grudge (1 defection); round 1 nothing (theirs C at
    # 1, flag on, mine at 2 is C: no penalty); round 2 mine C with grudge: 1 forgiveness -> 1/1.
    # Troublemaking: occasions 1 + (theirs C at 1) = 2; uncalled: 1 (D at 0) + (mine at 2 is C)
    # = 1 -> 0.5. Emulative: mine[1:] = DC vs theirs[:-1] = DC -> 2/2.
    ("DDC", "DCC", 0.0, 1.0, 1.0, 0.5, 1.0),
    # Penalties: theirs D at 0 (grudge, 1 defection); theirs C at 1 with the flag on and mine D
    # at 2: a penalty; theirs C at 2, flag on, mine D at 3: another penalty; never forgiven:
    # forgiving 0 / (1 + 2) = 0. Nice: theirs D at 0 while mine C -> 1. Retaliatory: theirs D
    # at 0 (i = 0), answered (mine D at 1) -> 1/1. Troublemaking: occasions 1 + (theirs C at 1,
    # 2) = 3, uncalled 0 + (D at 2) + (D at 3) = 2 -> 2/3. Emulative: mine[1:] = DDD vs
    # theirs[:-1] = DCC -> 1/3.
    ("CDDD", "DCCC", 1.0, 0.0, 1.0, 2 / 3, 1 / 3),
    # A provocation not counted: theirs D at 1 after mine D at 0 (i > 0, mine[i-1] = D), then
    # theirs D at 2 after mine C at 1: a provocation, not answered (mine C at 3): 0/1.
    # Nice: mine D at 0 -> 0. Forgiving: theirs D at 1 sets the grudge (1 defection); at round
    # 2, step (1) first: mine C with the grudge -> 1 forgiveness, flag cleared; then step (3):
    # theirs D with the flag off -> a 2nd defection, flag on; round 3: mine C with the grudge ->
    # a 2nd forgiveness. 2 / 2 = 1. Troublemaking: occasions 1 +
    # (theirs C at 0) = 2; uncalled 1 (D at 0) + (mine at 1 is C) = 1 -> 0.5. Emulative:
    # mine[1:] = CCC vs theirs[:-1] = CDD -> 1/3.
    ("DCCC", "CDDC", 0.0, 1.0, 0.0, 0.5, 1 / 3),
    # One round: emulative 0 (n <= 1); troublemaking occasions 1, uncalled 1 -> 1; nice 0.
    ("D", "C", 0.0, 0.0, 0.0, 1.0, 0.0),
    # One round where only the opponent defects: nice 1; forgiving: 1 defection, no
    # forgiveness -> 0; retaliatory: no i < n-1 -> 0; troublemaking 0/1; emulative 0.
    ("C", "D", 1.0, 0.0, 0.0, 0.0, 0.0),
]


@pytest.mark.parametrize(
    ("mine", "theirs", "nice", "forgiving", "retaliatory", "troublemaking", "emulative"),
    FONTANA_CASES,
)
def test_fontana_dimensions_match_hand_values(
    mine: str,
    theirs: str,
    nice: float,
    forgiving: float,
    retaliatory: float,
    troublemaking: float,
    emulative: float,
) -> None:
    got = fontana_dimensions(moves(mine), moves(theirs))
    assert got == pytest.approx(
        {
            "nice": nice,
            "forgiving": forgiving,
            "retaliatory": retaliatory,
            "troublemaking": troublemaking,
            "emulative": emulative,
        }
    )


def test_condition_fontana_values_are_means_over_games() -> None:
    """The paper reports means over games: the condition row is that mean."""
    games = [("CCDC", "CDDC"), ("DDD", "CCC")]
    outcomes = [
        GameOutcome(
            "c",
            i,
            "A",
            "B",
            np.array(moves(a)),
            np.array(moves(b)),
            np.zeros(len(a)),
            np.zeros(len(a)),
        )
        for i, (a, b) in enumerate(games)
    ]
    condition = aggregate_rows("run", outcomes, ["c"])[-1]
    assert condition["agent_a_fontana_emulative"] == pytest.approx((2 / 3 + 0.0) / 2)
    assert condition["agent_a_fontana_nice"] == pytest.approx(0.5)


def literal_fontana(mine: list[bool], theirs: list[bool]) -> dict[str, float]:
    """A second implementation: the reference's definitions read literally, round by round."""
    n = len(mine)
    nice = 1.0
    for me, them in zip(mine, theirs, strict=True):
        if not me:
            nice = 0.0
            break
        if not them:
            break
    grudge, forgiven, penalties, provoked = False, 0, 0, 0
    for i in range(n):
        if mine[i] and grudge:
            forgiven, grudge = forgiven + 1, False
        if i < n - 1 and theirs[i] and grudge and not mine[i + 1]:
            penalties += 1
        if not theirs[i] and not grudge:
            provoked, grudge = provoked + 1, True
    provocations = answered = 0
    for i in range(n - 1):
        if not theirs[i] and (i == 0 or mine[i - 1]):
            provocations += 1
            answered += not mine[i + 1]
    occasions, uncalled = 1, (0 if not n or mine[0] else 1)
    for i in range(n - 1):
        if theirs[i]:
            occasions += 1
            uncalled += not mine[i + 1]
    same = sum(mine[i + 1] == theirs[i] for i in range(n - 1))
    return {
        "nice": nice,
        "forgiving": forgiven / (provoked + penalties) if provoked + penalties else 0.0,
        "retaliatory": answered / provocations if provocations else 0.0,
        "troublemaking": uncalled / occasions if n else 0.0,
        "emulative": same / (n - 1) if n > 1 else 0.0,
    }


def test_vectorized_fontana_equals_the_literal_reading_on_random_games() -> None:
    rng = np.random.default_rng(8)
    for _ in range(2000):
        n = int(rng.integers(1, 14))
        p, q = rng.uniform(0.05, 0.95, size=2)
        mine = [bool(x) for x in rng.random(n) < p]
        theirs = [bool(x) for x in rng.random(n) < q]
        assert fontana_dimensions(mine, theirs) == pytest.approx(literal_fontana(mine, theirs))
