"""The group tournament's and evolution's texts (`ui.group_science_tables`): shared ranks, values
with their intervals, each stage game in words, thinned generations. Expected texts are written
by hand from the inputs."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from pdbench.ui import group_science_charts, group_science_tables


@pytest.mark.parametrize(
    ("ranks", "shown"),
    [
        ([1, 2, 3], ["1", "2", "3"]),
        ([1, 1, 3], ["=1", "=1", "3"]),
        ([1, 2, 2, 2, 5], ["1", "=2", "=2", "=2", "5"]),
    ],
)
def test_shared_ranks_are_marked(ranks: list[int], shown: list[str]) -> None:
    assert group_science_tables.rank_texts(ranks) == shown


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        ((0.98591, 0.90664, 1.06519, False), "0.986 [0.907, 1.065]"),
        ((-0.0004, None, None, False), "0.000"),  # no interval, no minus zero
        ((0.96, 0.865399, 0.988961, True), "96.0% [86.5%, 98.9%]"),
        ((2.0, 2.0, 2.0, False, True), "2.000 (exact: deterministic)"),
        ((math.nan, 0.1, 0.2, True), "—"),
    ],
)
def test_values_with_their_intervals(args: tuple, shown: str) -> None:
    assert group_science_tables.with_interval(*args) == shown


@pytest.mark.parametrize(
    ("game", "words"),
    [
        (
            {"kind": "public_goods", "n_players": 5, "params": [["r", 6.0], ["c", 2.0]]},
            "a public goods game of 5 players: each cooperator pays c = 2 into a pot, the pot is "
            "multiplied by r = 6 and shared equally among all 5. Since r ≥ N, cooperating pays at "
            "least as much as defecting",
        ),
        (
            {"kind": "volunteer", "n_players": 4, "params": [["b", 2.0], ["c", 0.5]]},
            "a volunteer's dilemma of 4 players: everyone gets b = 2 when at least one volunteers "
            "(cooperates), and each volunteer pays c = 0.5",
        ),
        (
            {"kind": "stag_hunt", "n_players": 6, "params": [["M", 4.0], ["r", 3.0], ["c", 1.0]]},
            "a stag hunt of 6 players: each cooperator pays c = 1; when at least M = 4 cooperate, "
            "the pot multiplied by r = 3 is shared among all 6, else it is lost",
        ),
        (
            {
                "kind": "linear_pd",
                "n_players": 3,
                "params": [["R", 3.0], ["S", 0.0], ["T", 5.0], ["P", 1.0]],
            },
            "the 3-player Prisoner's Dilemma (Hauert & Schuster): each payoff is linear in the "
            "share of co-players who cooperate, from the 2×2 game's R = 3, S = 0, T = 5, P = 1",
        ),
    ],
)
def test_each_stage_game_in_words(game: dict, words: str) -> None:
    assert group_science_tables.game_words(game) == words


def test_a_player_holding_several_seats_shows_each_seats_payoff() -> None:
    games = pd.DataFrame(
        {
            "game": [0, 1],
            "members": [("TFT", "TFT", "ALLD"), ("ALLC", "ALLD", "ALLD")],
            "repetition": [0, 0],
            "rounds": [10, 10],
            "payoff_per_round": [(1.0, 1.25, 2.0), (0.0, 1.5, 1.75)],
            "group_cooperation": [0.5, 0.25],
            "group_payoff_per_round": [1.5, 1.0],
        }
    )
    rows = group_science_tables.games_rows(games, "TFT")
    assert rows[["game", "player_payoff"]].values.tolist() == [[0, "1.000, 1.250"]]
    rows = group_science_tables.games_rows(games, "ALLD")
    assert list(rows["player_payoff"]) == ["2.000", "1.500, 1.750"]


def test_long_runs_are_drawn_evenly_spaced_with_the_first_and_last_generations() -> None:
    generations = pd.DataFrame({"generation": range(10_001), "share": 1.0})
    kept = group_science_charts.thinned(generations, most=101)["generation"].tolist()
    assert kept == list(range(0, 10_001, 100))
    assert len(group_science_charts.thinned(generations.head(50), most=101)) == 50
