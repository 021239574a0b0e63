"""Unit tests of pdbench.agents.policy, table-driven in the style of Axelrod's `versus_test`.

Every policy is driven exactly as the runner drives it: `reset(seed)`, then one `Observation` per
round built by `pdbench.core.transcript.Transcript`. Expected move tables are written by hand; the
all-pairs check compares against a second implementation written here from the standard
definitions, and against the Axelrod library's own matches.
"""

from __future__ import annotations

import asyncio
import itertools
import math

import pytest

from pdbench.agents.policy import (
    POLICY_REGISTRY,
    AllC,
    AllD,
    GenerousTitForTat,
    Grim,
    PolicyAgent,
    TitForTat,
    WinStayLoseShift,
    make_policy,
    policy_names,
    register_policy,
)
from pdbench.core.config import PolicyParams
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.rng import Purpose, counter_uniform
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action


def versus(
    policy: PolicyAgent,
    opponent: str,
    *,
    player: int = 0,
    history_window: int | None = None,
    seed: int = 0,
    matrix: PayoffMatrix | None = None,
) -> list[tuple[str, str]]:
    """Play `policy` (as A when player=0, as B when player=1) against a scripted move string;
    returns the (mine, theirs) pairs round by round."""
    policy.reset(seed)
    transcript = Transcript(matrix or PayoffMatrix())
    pairs: list[tuple[str, str]] = []
    for theirs in opponent:
        obs = transcript.observation(
            player,
            history_window=history_window,
            include_totals=True,
            horizon_type="fixed",
            total_rounds=len(opponent),
        )
        mine = policy.act(obs)
        assert type(mine) is str and mine in ("C", "D")
        if player == 0:
            transcript.record(Action(mine), Action(theirs))
        else:
            transcript.record(Action(theirs), Action(mine))
        pairs.append((mine, theirs))
    return pairs


def expect(mine: str, theirs: str) -> list[tuple[str, str]]:
    assert len(mine) == len(theirs)
    return list(zip(mine, theirs, strict=True))


# (policy factory, opponent's moves, expected own moves) -- every row worked out by hand.
TABLE = [
    # ALLC: always C, whatever the opponent does.
    ("allc", lambda: AllC(), "DDCDC", "CCCCC"),
    # ALLD: always D.
    ("alld", lambda: AllD(), "CCDCD", "DDDDD"),
    # TFT: C first, then the opponent's previous move.
    ("tft-mixed", lambda: TitForTat(), "CDDCDCC", "CCDDCDC"),
    ("tft-vs-alld", lambda: TitForTat(), "DDDD", "CDDD"),
    ("tft-vs-allc", lambda: TitForTat(), "CCCC", "CCCC"),
    # GRIM: C until the opponent's first D (seen at round 3), then D forever even though the
    # opponent returns to C.
    ("grim-trigger", lambda: Grim(), "CCDCCC", "CCCDDD"),
    ("grim-never", lambda: Grim(), "CCCC", "CCCC"),
    ("grim-first", lambda: Grim(), "DCCC", "CDDD"),
    # WSLS with default payoffs (win iff my payoff >= R = 3):
    #   r0 C (first)      ; r0 CC pays 3  win  -> r1 stay C
    #   r1 CD pays 0 lose -> r2 shift D ; r2 DD pays 1 lose -> r3 shift C
    #   r3 CC win -> r4 C ; r4 CD lose -> r5 D
    #   r5 DC pays 5 win  -> r6 stay D  ; r6 DC win -> r7 D
    #   r7 DD lose -> r8 C
    ("wsls-all-four", lambda: WinStayLoseShift(), "CDDCDCCDC", "CCDCCDDDC"),
    # WSLS with win_threshold 1: DD pays 1 >= 1, so it stays D after DD.
    #   r0 C; CC win -> C; r1 CD lose -> D; r2 DD win -> D; r3 DD win -> D.
    (
        "wsls-threshold-1",
        lambda: WinStayLoseShift(PolicyParams(win_threshold=1)),
        "CDDDC",
        "CCDDD",
    ),
    # WSLS with win_threshold 4: CC pays 3 < 4 is a loss.
    #   r0 C; CC lose -> D; r1 DC pays 5 win -> D; r2 DC win -> D.
    (
        "wsls-threshold-4",
        lambda: WinStayLoseShift(PolicyParams(win_threshold=4)),
        "CCCC",
        "CDDD",
    ),
    # GTFT with generous_prob 0 is TFT.
    ("gtft-0", lambda: GenerousTitForTat(PolicyParams(generous_prob=0.0)), "CDDCDCC", "CCDDCDC"),
    # GTFT with generous_prob 1 never defects.
    ("gtft-1", lambda: GenerousTitForTat(PolicyParams(generous_prob=1.0)), "DDDDDD", "CCCCCC"),
    # GTFT answers C with C regardless of generosity.
    ("gtft-vs-allc", lambda: GenerousTitForTat(), "CCCCC", "CCCCC"),
]


@pytest.mark.parametrize("player", [0, 1])
@pytest.mark.parametrize(("label", "factory", "opponent", "mine"), TABLE, ids=[t[0] for t in TABLE])
def test_versus_table(label, factory, opponent, mine, player):
    assert versus(factory(), opponent, player=player) == expect(mine, opponent)


@pytest.mark.parametrize("seed", [0, 1, 2, 12345])
def test_gtft_zero_is_tft_for_any_seed(seed):
    opponent = "CDDCDDDCCDCDDDDC" * 3
    tft = versus(TitForTat(), opponent, seed=seed)
    assert versus(GenerousTitForTat(PolicyParams(generous_prob=0.0)), opponent, seed=seed) == tft


def test_grim_stays_triggered_after_reset_only_for_its_game():
    g = Grim()
    assert versus(g, "DCC") == expect("CDD", "DCC")
    # A new game (reset) starts clean again.
    assert versus(g, "CCC") == expect("CCC", "CCC")


def test_decide_wraps_the_move():
    t = Transcript(PayoffMatrix())
    t.record(Action.C, Action.D)
    obs = t.observation(0, history_window=None, include_totals=False, horizon_type="fixed")
    tft = TitForTat()
    tft.reset(0)
    decision = asyncio.run(tft.decide(obs))
    assert decision.action is Action.D
    assert decision.parse_failure is False
    assert decision.attempts == []


# --- GTFT randomness ---------------------------------------------------------------------------


def test_gtft_default_forgiveness_rate_against_alld():
    # Against ALLD every round after the first follows an opponent D, so each is an independent
    # forgiveness trial with p = 1/3 (Nowak-Sigmund for the default payoffs).
    # n = 2999 trials: sd of the fraction = sqrt((1/3)(2/3)/2999) = 0.0086; 5 sigma = 0.043.
    n_rounds = 3000
    # GTFT is memory-one; a window of 1 keeps the 3000-round game linear in time.
    pairs = versus(GenerousTitForTat(), "D" * n_rounds, seed=20240607, history_window=1)
    assert pairs[0] == ("C", "D")
    trials = [mine for mine, _ in pairs[1:]]
    frac = trials.count("C") / len(trials)
    p = 1 / 3
    assert abs(frac - p) < 5 * math.sqrt(p * (1 - p) / len(trials))


def test_gtft_uses_the_games_payoffs_for_default_generosity():
    # T=4, R=3, P=2, S=0: min(1 - (4-3)/(3-0), (3-2)/(4-2)) = min(2/3, 1/2) = 1/2.
    matrix = PayoffMatrix(cc=(3, 3), cd=(0, 4), dc=(4, 0), dd=(2, 2))
    n_rounds = 3000
    pairs = versus(GenerousTitForTat(), "D" * n_rounds, seed=99, matrix=matrix, history_window=1)
    frac = [m for m, _ in pairs[1:]].count("C") / (n_rounds - 1)
    # sd = sqrt(.25/2999) = 0.0091; 5 sigma = 0.046.
    assert abs(frac - 0.5) < 5 * math.sqrt(0.25 / (n_rounds - 1))


def test_gtft_forgives_exactly_when_its_policy_draw_is_below_the_generosity():
    # Second implementation: at round t >= 1 after an opponent D, play C iff the agent's POLICY
    # draw for round t is below 1/3.
    seed = 4242
    pairs = versus(GenerousTitForTat(), "D" * 200, seed=seed)
    want = ["C"] + [
        "C" if counter_uniform(seed, t, Purpose.POLICY) < 1 / 3 else "D" for t in range(1, 200)
    ]
    assert [m for m, _ in pairs] == want


def test_gtft_is_reproducible_for_a_seed_and_varies_across_seeds():
    opponent = "D" * 200
    a = versus(GenerousTitForTat(), opponent, seed=7)
    b = versus(GenerousTitForTat(), opponent, seed=7)
    c = versus(GenerousTitForTat(), opponent, seed=8)
    assert a == b
    assert a != c


# --- history window ----------------------------------------------------------------------------


@pytest.mark.parametrize("player", [0, 1])
def test_policies_see_only_their_window(player):
    # With history_window=0 nothing is visible: TFT, WSLS and GTFT see a "first round" every time.
    assert versus(TitForTat(), "DDDD", history_window=0, player=player) == expect("CCCC", "DDDD")
    assert versus(WinStayLoseShift(), "DDDD", history_window=0, player=player) == expect(
        "CCCC", "DDDD"
    )
    assert versus(
        GenerousTitForTat(PolicyParams(generous_prob=0.0)), "DDDD", history_window=0, player=player
    ) == expect("CCCC", "DDDD")
    assert versus(Grim(), "DDDD", history_window=0, player=player) == expect("CCCC", "DDDD")
    # A window of 1 is all a memory-one policy needs: same as full history.
    assert versus(TitForTat(), "CDDCDC", history_window=1, player=player) == expect(
        "CCDDCD", "CDDCDC"
    )
    assert versus(WinStayLoseShift(), "CDDCDCCDC", history_window=1, player=player) == expect(
        "CCDCCDDDC", "CDDCDCCDC"
    )


# --- registry ----------------------------------------------------------------------------------


def test_registry_lookup_is_case_insensitive():
    assert type(make_policy("tft")) is TitForTat
    assert type(make_policy("Tft")) is TitForTat
    assert type(make_policy("allD")) is AllD
    assert type(make_policy("wsls")) is WinStayLoseShift
    assert type(make_policy("gtft")) is GenerousTitForTat
    assert type(make_policy("grim")) is Grim
    assert type(make_policy("allc")) is AllC


def test_make_policy_names_and_params():
    p = make_policy("gtft", PolicyParams(generous_prob=0.25), "Generous")
    assert p.name == "Generous"
    assert p.params.generous_prob == 0.25
    assert make_policy("tft").name == "TFT"


def test_registry_contains_the_spec_policies():
    assert {"ALLC", "ALLD", "TFT", "GRIM", "GTFT", "WSLS"} <= set(policy_names())
    assert policy_names() == sorted(policy_names())


def test_unknown_policy_lists_valid_names():
    with pytest.raises(KeyError) as info:
        make_policy("titfortwotats")
    message = str(info.value)
    assert "titfortwotats" in message
    for name in policy_names():
        assert name in message


def test_duplicate_registration_is_an_error_and_leaves_registry_intact():
    snapshot = dict(POLICY_REGISTRY)
    try:

        class ImpostorTFT(PolicyAgent):
            key = "TFT"

            def choose(self, obs):
                return Action.D

        class ImpostorLower(PolicyAgent):
            key = "tft"  # names are case-insensitive, so this clashes too

            def choose(self, obs):
                return Action.D

        with pytest.raises(ValueError, match="TFT"):
            register_policy(ImpostorTFT)
        with pytest.raises(ValueError):
            register_policy(ImpostorLower)
        assert POLICY_REGISTRY == snapshot
        assert type(make_policy("tft")) is TitForTat
    finally:
        POLICY_REGISTRY.clear()
        POLICY_REGISTRY.update(snapshot)


def test_policy_without_key_cannot_register():
    snapshot = dict(POLICY_REGISTRY)
    try:

        class Nameless(PolicyAgent):
            def choose(self, obs):
                return Action.C

        with pytest.raises(ValueError):
            register_policy(Nameless)
        assert POLICY_REGISTRY == snapshot
    finally:
        POLICY_REGISTRY.clear()
        POLICY_REGISTRY.update(snapshot)


# --- all ordered pairs vs a reference implementation and vs Axelrod -----------------------------

DETERMINISTIC = ["ALLC", "ALLD", "TFT", "GRIM", "WSLS"]
TURNS = 200


def ref_next(name: str, mine: list[str], theirs: list[str]) -> str:
    """Standard definitions over full move lists (Axelrod library semantics)."""
    if name == "ALLC":
        return "C"
    if name == "ALLD":
        return "D"
    if name == "TFT":
        return theirs[-1] if theirs else "C"
    if name == "GRIM":
        return "D" if "D" in theirs else "C"
    if name == "WSLS":
        if not mine:
            return "C"
        # Memory-one (Pavlov): C after CC, D after CD, D after DC, C after DD.
        return {"CC": "C", "CD": "D", "DC": "D", "DD": "C"}[mine[-1] + theirs[-1]]
    raise KeyError(name)


def ref_match(p: str, q: str, turns: int) -> list[tuple[str, str]]:
    a: list[str] = []
    b: list[str] = []
    for _ in range(turns):
        move_a = ref_next(p, a, b)
        move_b = ref_next(q, b, a)
        a.append(move_a)
        b.append(move_b)
    return list(zip(a, b, strict=True))


def pdbench_match(
    p: str, q: str, turns: int, history_window: int | None = None
) -> list[tuple[str, str]]:
    agents = [make_policy(p), make_policy(q)]
    for i, agent in enumerate(agents):
        agent.reset(1000 + i)
    t = Transcript(PayoffMatrix())
    for _ in range(turns):
        moves = [
            Action(
                agent.act(
                    t.observation(
                        i, history_window=history_window, include_totals=True, horizon_type="fixed"
                    )
                )
            )
            for i, agent in enumerate(agents)
        ]
        t.record(moves[0], moves[1])
    return [(a.value, b.value) for a, b in zip(t.actions_a, t.actions_b, strict=True)]


PAIRS = list(itertools.product(DETERMINISTIC, repeat=2))


def test_reference_implementation_sanity():
    # A few hand-known lines of the reference itself.
    assert ref_match("TFT", "ALLD", 3) == [("C", "D"), ("D", "D"), ("D", "D")]
    # WSLS vs ALLD alternates: C (CD lose) -> D (DD lose) -> C ...
    assert ref_match("WSLS", "ALLD", 4) == [("C", "D"), ("D", "D"), ("C", "D"), ("D", "D")]
    assert ref_match("GRIM", "WSLS", 3) == [("C", "C")] * 3


@pytest.mark.parametrize(("p", "q"), PAIRS, ids=[f"{p}-{q}" for p, q in PAIRS])
def test_all_pairs_match_reference(p, q):
    assert pdbench_match(p, q, TURNS) == ref_match(p, q, TURNS)


@pytest.mark.parametrize(("p", "q"), [pq for pq in PAIRS if "GRIM" not in pq])
def test_memory_one_pairs_need_only_one_round_of_history(p, q):
    assert pdbench_match(p, q, 60, history_window=1) == ref_match(p, q, 60)


@pytest.mark.slow
def test_all_pairs_match_axelrod_library():
    # Importing axelrod instantiates its whole strategy zoo (~10-20 s here), hence `slow`.
    import axelrod as axl  # a dev dependency: the oracle runs on every clone

    players = {
        "ALLC": axl.Cooperator,
        "ALLD": axl.Defector,
        "TFT": axl.TitForTat,
        "GRIM": axl.Grudger,
        "WSLS": axl.WinStayLoseShift,
    }
    for p, q in PAIRS:
        played = axl.Match((players[p](), players[q]()), turns=TURNS).play()
        theirs = [(str(a), str(b)) for a, b in played]
        assert len(theirs) == TURNS
        assert pdbench_match(p, q, TURNS) == theirs, (p, q)
        assert ref_match(p, q, TURNS) == theirs, (p, q)
