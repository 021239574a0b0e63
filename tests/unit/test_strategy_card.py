"""What the strategy card names (core/strategy_card.py): candidates the games cannot tell apart,
and RANDOM(p) for a player who cooperates at random.

Expected outcomes are worked out by hand from which strategies prescribe which moves on the
histories played (see each test), not read from the code under test. The games are simulated
here with a plain round-by-round loop (an independent implementation of the rules)."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pytest

from pdbench.agents.strategy_library import builtin_candidates
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.strategy_card import (
    EVIDENCE,
    NOISE_LIMIT,
    card_ranking,
    card_ties,
    row_ties,
    strategy_label,
    tied,
)
from pdbench.core.strategy_fit import Candidate, StrategyFit, fit_each, game_stats

Rule = Callable[[list[bool], list[bool], np.random.Generator], bool]  # (own, opp so far) -> C?


def tft(own: list[bool], opp: list[bool], rng: np.random.Generator) -> bool:
    return opp[-1] if opp else True


def allc(own: list[bool], opp: list[bool], rng: np.random.Generator) -> bool:
    return True


def defect_once(own: list[bool], opp: list[bool], rng: np.random.Generator) -> bool:
    return bool(own)


def random_p(p: float) -> Rule:
    return lambda own, opp, rng: bool(rng.random() < p)


def prober(own: list[bool], opp: list[bool]) -> bool:
    """Axelrod's Prober, from its description: D, C, C; then, if the opponent cooperated in
    rounds 2 and 3, defect for ever, otherwise play tit for tat."""
    t = len(own)
    if t < 3:
        return (False, True, True)[t]
    return False if opp[1] and opp[2] else opp[-1]


def play(
    agent: Rule, opponent: Rule, games: int, rounds: int, seed: int, noise: float = 0.0
) -> list[tuple[np.ndarray, np.ndarray, None, None]]:
    """Games of `agent` (its moves flipped with probability `noise`) against `opponent`."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(games):
        own: list[bool] = []
        opp: list[bool] = []
        for _ in range(rounds):
            a = agent(own, opp, rng)
            if noise and rng.random() < noise:
                a = not a
            b = opponent(opp, own, rng)
            own.append(a)
            opp.append(b)
        out.append((np.array(own), np.array(opp), None, None))
    return out


CANDIDATES = builtin_candidates(PayoffMatrix(), 0)


def card(games: list, candidates: list[Candidate] = CANDIDATES) -> list[StrategyFit]:
    """The card's fits, best first."""
    fits = card_ranking(fit_each(game_stats(games, candidates), candidates), candidates)
    return sorted(fits, key=lambda f: f.rank)


def test_an_all_c_player_against_tft_fits_every_rule_that_says_c_when_all_is_c() -> None:
    """ALLC against TFT: both cooperate in every round. On an all-C history ALLC, TFT, GRIM,
    TF2T, WSLS (C after CC) and GTFT (its forgiving state, after a D, never comes up) all
    prescribe C in every round: one tremble each, no mismatch. RANDOM's P(C) is fitted to 1,
    the same clipped probability as the floored tremble. DEFECT_ONCE and STFT say D in round 1,
    ALTERNATOR D in round 2, ALLD always: each has mismatches. The memory-one family has two
    visited free states (first, cc): a different number of parameters."""
    fits = card(play(allc, tft, 5, 30, seed=1))
    best = fits[0]
    expected = {"ALLC", "TFT", "GRIM", "TF2T", "WSLS", "GTFT", "RANDOM"}
    assert {best.strategy, *best.indistinguishable_from} == expected
    # ALLC leads (library order; its tremble, 0.001, is noise, so RANDOM does not pass it) and
    # every member of the group lists the others.
    assert best.strategy == "ALLC"
    for fit in fits:
        if fit.strategy in expected:
            assert set(fit.indistinguishable_from) == expected - {fit.strategy}
        else:
            assert not set(fit.indistinguishable_from) & expected


def test_defect_once_and_prober_against_tft_are_indistinguishable() -> None:
    """DEFECT_ONCE against TFT: own D, C, C, C, ...; TFT answers C, D, C, C, .... Prober plays
    D, C, C, and since the opponent did not cooperate in both rounds 2 and 3 (D in round 2) it
    then plays tit for tat: C from round 4 on (the opponent's C of round 3 onwards). So both
    prescribe the agent's moves exactly; no other built-in does (TFT says C in round 1, STFT D
    in round 3)."""
    games = play(defect_once, tft, 4, 25, seed=2)
    probe = Candidate(
        "PROBER",
        prescribed=[
            np.array([prober(list(own[:t]), list(opp[:t])) for t in range(len(own))], dtype=float)
            for own, opp, _, _ in games
        ],
    )
    fits = card(games, [*CANDIDATES, probe])
    assert fits[0].strategy == "DEFECT_ONCE"
    assert fits[0].indistinguishable_from == ("PROBER",)
    assert fits[0].tremble == pytest.approx(1e-3)  # no mismatch: the floor


def test_defect_once_and_prober_against_allc_are_told_apart() -> None:
    """The variant where the data can tell: against ALLC the opponent cooperates in rounds 2
    and 3, so Prober defects from round 4 on while DEFECT_ONCE cooperates: not tied. Here
    another pair cannot be told apart: STFT (D first, then the opponent's last move, always C)
    prescribes D, C, C, ... too, and comes first in library order."""
    games = play(defect_once, allc, 4, 25, seed=3)
    probe = Candidate(
        "PROBER",
        prescribed=[
            np.array([prober(list(own[:t]), list(opp[:t])) for t in range(len(own))], dtype=float)
            for own, opp, _, _ in games
        ],
    )
    fits = card(games, [*CANDIDATES, probe])
    assert fits[0].strategy == "STFT"
    assert fits[0].indistinguishable_from == ("DEFECT_ONCE",)


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
@pytest.mark.parametrize("opponent", ["TFT", "RANDOM"])
def test_a_random_player_is_named_random_p(p: float, opponent: str) -> None:
    """RANDOM(p), 20 games x 100 rounds (2,000 moves), against TFT (which echoes its moves) and
    against RANDOM(0.5) (which ignores them). Its fitted P(C) is its share of cooperation
    (within 0.04: 3.6 standard errors at p = 0.5). A rule with tremble e that prescribes one
    move throughout is the same model as RANDOM(1 - e): at p = 0.8 ALLC ties it with tremble
    ~0.2, at p = 0.2 ALLD does; both trembles exceed NOISE_LIMIT, so RANDOM(p) leads. Every
    other rule mismatches about as often as chance or more (at p = 0.5 all of them, about
    half the rounds), which a few nats of luck cannot turn into EVIDENCE."""
    opp_rule = tft if opponent == "TFT" else random_p(0.5)
    games = play(random_p(p), opp_rule, 20, 100, seed=int(100 * p) + len(opponent))
    fits = card(games)
    best = fits[0]
    assert best.strategy == "RANDOM"
    share = np.mean(np.concatenate([own for own, *_ in games]))
    (fitted,) = best.free_probabilities.values()
    assert fitted == pytest.approx(share)
    assert fitted == pytest.approx(p, abs=0.04)
    if p == 0.8:
        assert "ALLC" in best.indistinguishable_from
    if p == 0.2:
        assert "ALLD" in best.indistinguishable_from


@pytest.mark.parametrize(
    ("rule", "opponent", "name"),
    [(tft, random_p(0.5), "TFT"), (allc, tft, "ALLC"), (defect_once, tft, "DEFECT_ONCE")],
)
def test_a_rule_with_5_percent_noise_is_not_named_random(
    rule: Rule, opponent: Rule, name: str
) -> None:
    """A rule with 5% execution noise, 20 games x 100 rounds: its fitted tremble is about 0.05
    (below NOISE_LIMIT), so it keeps its name. ALLC's noisy moves are the same Bernoulli model
    as RANDOM(0.95): that tie is named, with ALLC first. TFT against RANDOM(0.5) and
    DEFECT_ONCE against TFT explain the moves far better than any coin."""
    fits = card(play(rule, opponent, 20, 100, seed=5, noise=0.05))
    assert fits[0].strategy == name
    assert fits[0].tremble is not None and fits[0].tremble < NOISE_LIMIT
    assert ("RANDOM" in fits[0].indistinguishable_from) == (name == "ALLC")


def test_a_noisy_rule_that_beats_chance_keeps_its_place() -> None:
    """TFT with 25% noise against RANDOM(0.5), 2,000 moves: its tremble (~0.25) is above
    NOISE_LIMIT, but its log-likelihood, 2000 x (0.25 ln 0.25 + 0.75 ln 0.75) ~ -1125, beats
    RANDOM(~0.5)'s, 2000 ln 0.5 ~ -1386, by far more than EVIDENCE / 2: TFT stays first."""
    fits = card(play(tft, random_p(0.5), 20, 100, seed=6, noise=0.25))
    assert fits[0].strategy == "TFT"
    random = next(f for f in fits if f.strategy == "RANDOM")
    assert random.bic - fits[0].bic > EVIDENCE


def test_tied_means_same_parameters_and_likelihood() -> None:
    row = {"n_params": 1, "log_likelihood": -1000.0}
    assert tied(row, {"n_params": 1, "log_likelihood": -1000.0 * (1 + 1e-12)})
    assert not tied(row, {"n_params": 1, "log_likelihood": -1000.001})
    assert not tied(row, {"n_params": 2, "log_likelihood": -1000.0})
    assert not tied(row, {"n_params": 1, "log_likelihood": None})


def test_the_cards_words_from_rows_old_and_new() -> None:
    """The card names the tied set with RANDOM's fitted P(C); rows of a file written before the
    `indistinguishable_from` column get the same words from their likelihoods."""
    rows = [
        {"strategy": "RANDOM", "rank": 1, "n_params": 1, "log_likelihood": -50.0,
         "parameters": json.dumps({"every_round": 0.8})},
        {"strategy": "ALLC", "rank": 2, "n_params": 1, "log_likelihood": -50.0,
         "parameters": "{}"},
        {"strategy": "MEMORY_ONE", "rank": 3, "n_params": 5, "log_likelihood": -49.0,
         "parameters": "{}"},
        {"strategy": "TFT", "rank": 4, "n_params": 1, "log_likelihood": -60.0,
         "parameters": "{}"},
    ]  # fmt: skip
    assert strategy_label("RANDOM", rows[0]["parameters"]) == "RANDOM(0.80)"
    assert strategy_label("TFT", "{}") == "TFT"
    old = card_ties(rows)
    assert old is not None and old.startswith("RANDOM(0.80) = ALLC: indistinguishable")
    new = [{**r, "indistinguishable_from": "[]"} for r in rows]
    new[0]["indistinguishable_from"] = json.dumps(["ALLC"])
    new[1]["indistinguishable_from"] = json.dumps(["RANDOM"])
    assert card_ties(new) == old
    assert row_ties(new, new[1]) == ["RANDOM(0.80)"]
    assert card_ties(new[2:]) is None  # TFT alone (MEMORY_ONE is never named)
    # A hand-edited cell that is not a JSON list of names: recomputed from the rows.
    broken = [{**r, "indistinguishable_from": "not json"} for r in rows]
    assert card_ties(broken) == old
    # A long tie (the Axelrod library has dozens of all-C rules) is cut in the words.
    many = [{**rows[1], "strategy": f"S{i}", "rank": i + 2} for i in range(12)]
    words = card_ties([rows[1], *many])
    assert words is not None and words.startswith("ALLC = S0 = S1 = S2 = S3 = S4 = S5 = S6 = S7 ")
    assert " and 4 more " in words
