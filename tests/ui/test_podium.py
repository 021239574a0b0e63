"""Ties on the Tournament podium (issue 23, point 6): players whose 95% rank intervals overlap
share a podium step and its medal, and the podium says they are not separable. Hand-made
leaderboards (scores and rank intervals as leaderboard.parquet holds them)."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from pdbench.ui import podium, style, tables
from pdbench.ui.style import make_players

NAN = math.nan


def board(*rows: tuple[str, int, float, float, float]) -> pd.DataFrame:
    """A leaderboard: (player, rank, score, rank_ci_low, rank_ci_high) per row."""
    return pd.DataFrame(
        rows, columns=["player", "rank", "mean_score_per_round", "rank_ci_low", "rank_ci_high"]
    )


# (leaderboard, expected steps as (rank, players, low, high))
CASES = {
    "the issue's case: 2.450 and 2.440 both rank 1-2 share gold, bronze next": (
        board(("A", 1, 2.45, 1, 2), ("B", 2, 2.44, 1, 2), ("C", 3, 2.1, 3, 3), ("D", 4, 1.0, 4, 4)),
        [(1, ("A", "B"), 1, 2), (3, ("C",), 3, 3)],
    ),
    "separable players: one each on gold, silver, bronze": (
        board(("A", 1, 3.0, 1, 1), ("B", 2, 2.0, 2, 2), ("C", 3, 1.0, 3, 3), ("D", 4, 0.5, 4, 4)),
        [(1, ("A",), 1, 1), (2, ("B",), 2, 2), (3, ("C",), 3, 3)],
    ),
    "no intervals (one repetition): only an exact tie shares a step": (
        board(
            ("A", 1, 2.0, NAN, NAN),
            ("B", 1, 2.0, NAN, NAN),
            ("C", 3, 1.9, NAN, NAN),
            ("D", 4, 1.0, NAN, NAN),
        ),
        [(1, ("A", "B"), 1, 1), (3, ("C",), 3, 3)],
    ),
    "overlaps chain: 1-2, 1-3 and 2-3 are one step; nothing left for bronze": (
        board(
            ("A", 1, 3.0, 1, 2),
            ("B", 2, 2.9, 1, 3),
            ("C", 3, 2.8, 2, 3),
            ("D", 4, 1.0, 4, 5),
            ("E", 5, 0.9, 4, 5),
        ),
        [(1, ("A", "B", "C"), 1, 3)],
    ),
    "a tie for silver: the step after it would be rank 4, off the podium": (
        board(("A", 1, 3.0, 1, 1), ("B", 2, 2.0, 2, 3), ("C", 3, 1.9, 2, 3), ("D", 4, 1.0, 4, 4)),
        [(1, ("A",), 1, 1), (2, ("B", "C"), 2, 3)],
    ),
    "a tie for bronze reaching below the podium takes every player it overlaps": (
        board(
            ("A", 1, 3.0, 1, 1),
            ("B", 2, 2.5, 2, 2),
            ("C", 3, 2.0, 3, 4),
            ("D", 4, 1.9, 3, 5),
            ("E", 5, 1.8, 4, 5),
            ("F", 6, 1.0, 6, 6),
        ),
        [(1, ("A",), 1, 1), (2, ("B",), 2, 2), (3, ("C", "D", "E"), 3, 5)],
    ),
    "no player separable: one step for all": (
        board(("A", 1, 2.0, 1, 3), ("B", 2, 1.99, 1, 3), ("C", 3, 1.98, 1, 3)),
        [(1, ("A", "B", "C"), 1, 3)],
    ),
    "touching is not overlapping: 1-2 then 3-4": (
        board(("A", 1, 3.0, 1, 2), ("B", 2, 2.9, 1, 2), ("C", 3, 2.0, 3, 4), ("D", 4, 1.9, 3, 4)),
        [(1, ("A", "B"), 1, 2), (3, ("C", "D"), 3, 4)],
    ),
    "two players": (
        board(("A", 1, 3.0, 1, 1), ("B", 2, 1.0, 2, 2)),
        [(1, ("A",), 1, 1), (2, ("B",), 2, 2)],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_podium_steps(name: str) -> None:
    leaderboard, expected = CASES[name]
    steps = podium.podium_steps(leaderboard)
    assert [(s.rank, s.players, s.low, s.high) for s in steps] == expected
    # the rows' order in the file does not matter, the rank does (equal ranks keep file order)
    if not leaderboard["rank"].duplicated().any():
        assert podium.podium_steps(leaderboard.sample(frac=1, random_state=1)) == steps


def test_notes_and_medals_of_shared_steps() -> None:
    leaderboard, _ = CASES[
        "the issue's case: 2.450 and 2.440 both rank 1-2 share gold, bronze next"
    ]
    gold, bronze = podium.podium_steps(leaderboard)
    assert gold.tied and not bronze.tied and bronze.note == ""
    assert "not separable" in gold.note and "ranks 1–2" in gold.note
    assert podium.podium_medals([gold, bronze]) == {"A": "🥇", "B": "🥇", "C": "🥉"}
    exact, _ = podium.podium_steps(
        CASES["no intervals (one repetition): only an exact tie shares a step"][0]
    )
    assert exact.note == "Tied: equal scores (rank 1)."


def test_the_leaderboard_table_gives_a_shared_step_one_medal() -> None:
    players = make_players(
        [(p, {"type": "policy", "policy": p}) for p in ("ALLD", "GRIM", "TFT", "ALLC")]
    )
    names = [p.name for p in players]
    leaderboard = board(
        (names[0], 1, 2.45, 1, 2),
        (names[1], 2, 2.44, 1, 2),
        (names[2], 3, 2.1, 3, 3),
        (names[3], 4, 1.6, 4, 4),
    ).assign(
        ci95_low=NAN, ci95_high=NAN, wins=0, draws=0, losses=0, matches=1, cooperation_rate=0.5
    )
    steps = podium.podium_steps(leaderboard)
    table = tables.leaderboard_table(leaderboard, players, steps)
    assert list(table["rank"]) == ["🥇", "🥇", "🥉", "4"]
    assert list(table["rank_range"]) == ["1–2", "1–2", "3", "4"]


def test_the_podium_draws_a_tie_on_one_card() -> None:
    players = make_players([(p, {"type": "policy", "policy": p}) for p in ("ALLD", "GRIM", "TFT")])
    by = {p.name: p.profile for p in players}
    leaderboard = board(
        (players[0].name, 1, 2.45, 1, 2),
        (players[1].name, 2, 2.44, 1, 2),
        (players[2].name, 3, 2.1, 3, 3),
    )
    steps = podium.podium_steps(leaderboard)
    html = style.podium_html(
        [(s.rank, [(by[n], n, f"{n} score") for n in s.players], s.note) for s in steps]
    )
    cards = re.findall(r'<div class="pdb-podium-card r(\d)( tied)?"', html)
    # the shared gold one card, bronze to its right (no silver: two players are above bronze)
    assert cards == [("1", " tied"), ("3", "")]
    assert html.count("🥇") == 1 and "🥈" not in html and html.count("🥉") == 1
    gold = html[html.index("r1 tied") :]
    assert f"{players[0].name} score" in gold and f"{players[1].name} score" in gold
    assert "not separable" in gold


@pytest.mark.parametrize(
    ("ranks", "drawn"),
    [((1, 2, 3), ["2", "1", "3"]), ((1, 3), ["1", "3"]), ((1, 2), ["2", "1"]), ((1,), ["1"])],
)
def test_the_podium_puts_silver_left_and_bronze_right_of_gold(
    ranks: tuple[int, ...], drawn: list[str]
) -> None:
    (player,) = make_players([("TFT", {"type": "policy", "policy": "TFT"})])
    html = style.podium_html([(r, [(player.profile, "TFT", "")], "") for r in ranks])
    assert re.findall(r'<div class="pdb-podium-card r(\d)', html) == drawn


def test_the_heatmap_follows_the_ranking_not_the_selection() -> None:
    players = make_players([(p, {"type": "policy", "policy": p}) for p in ("ALLC", "ALLD", "TFT")])
    names = [p.name for p in players]
    leaderboard = board(
        (names[2], 1, 2.4, 1, 1), (names[1], 2, 2.3, 2, 2), (names[0], 3, 1.5, 3, 3)
    )
    assert [p.name for p in podium.ranked_players(leaderboard, players)] == [
        names[2],
        names[1],
        names[0],
    ]
