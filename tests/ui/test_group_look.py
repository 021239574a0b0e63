"""The HTML of a group game (`ui.group_look`): a card per seat around the ring with the move as
a token and a word, payoffs as recorded, the round's messages with their addressees and
intentions, and the per-seat timeline; texts from the run are escaped."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from tests.support.group_run import (
    FIVE_MOVES,
    ConditionSpec,
    GameSpec,
    write_group_run,
)

from pdbench.ui import group_data, group_look


@pytest.fixture(scope="module")
def five(tmp_path_factory: pytest.TempPathFactory) -> group_data.GroupGameRounds:
    run = write_group_run(tmp_path_factory.mktemp("look"))
    return group_data.load_game(run, group_data.load_manifest(run), "five_talking", 0)


def _cards(html: str) -> list[tuple[str, str]]:
    return re.findall(r'class="pdb-gseat [cd]" data-seat="(\w)" data-move="(\w)"', html)


def test_the_ring_has_a_card_per_seat_with_its_move(five: group_data.GroupGameRounds) -> None:
    html = group_look.ring_html(five, 2)
    assert _cards(html) == [(s, m[2]) for s, m in zip("ABCDE", FIVE_MOVES, strict=True)]
    assert "Round 3 of 6" in html and "2 of 5 cooperated" in html
    # The move is a letter in a token and a word, not a colour alone.
    assert html.count('<span class="pdb-gtoken c">C</span>') == 2
    assert html.count('<span class="pdb-gtoken d">D</span>') == 3
    assert html.count("cooperated</span>") == 2 and html.count("defected</span>") == 3
    # A's payoff this round (k = 2: 0.6 * 2 - 1) and total (1.4 + 0.8 + 0.2).
    assert "this round <b>0.2</b></span><span>total <b>2.4</b>" in html
    assert "💬 2 messages" in html


def test_a_flip_and_a_fallback_are_said_on_the_card(five: group_data.GroupGameRounds) -> None:
    assert "meant C, flipped by noise" in group_look.seat_card(five, 3, 3)
    assert "fallback after invalid replies" in group_look.seat_card(five, 3, 5)
    assert "pdb-gseat-note" not in group_look.seat_card(five, 0, 3)


@pytest.mark.parametrize("n", [2, 3, 5, 8, 10, 12])
def test_seats_go_round_clockwise_from_the_top(n: int) -> None:
    places = group_look.seat_positions(n)
    assert places[0] == (0.0, -1.0)
    assert all(abs(x * x + y * y - 1) < 1e-3 for x, y in places)
    assert places[1][0] > 0 or n == 2  # the second seat is right of the first
    assert len(set(places)) == n


def test_messages_name_writer_and_addressee(five: group_data.GroupGameRounds) -> None:
    html = group_look.messages_html(five, 2, True, 500)
    assert "Messages before round 3's moves" in html
    assert re.findall(r'data-writer="(\w)" data-to="(\w?)"', html) == [("C", "D"), ("A", "")]
    assert "“Defect with me, D.”" in html and "announced D" in html
    assert 'class="pdb-gmsg-all">everyone' in html
    # Round 1: E promised C and chose D, a broken promise; A promised C and cooperated.
    first = group_look.messages_html(five, 0, True, 500)
    assert first.count("promised C") == 3  # two tags and the broken-promise note
    assert first.count(group_look.BROKEN) == 1
    assert "No messages this round." in group_look.messages_html(five, 1, True, 500)
    assert "This group does not talk." in group_look.messages_html(five, 1, False, 500)


def test_texts_from_the_run_are_escaped(tmp_path: Path) -> None:
    names = ("<b>x</b>", "B&B", "c", "d", "e")
    said = {0: [(0, "<script>alert(1)</script>", "C", 1)]}
    cond = ConditionSpec("escapes", names, [GameSpec(0, ("C", "C", "C", "D", "D"), messages=said)])
    run = write_group_run(tmp_path, [cond])
    game = group_data.load_game(run, group_data.load_manifest(run), "escapes", 0)
    html = group_look.ring_html(game, 0) + group_look.messages_html(game, 0, True, 400)
    html += group_look.timeline_html(game, 0)
    assert "<script>" not in html and "<b>x</b>" not in html
    assert "&lt;script&gt;" in html and "B&amp;B" in html


def test_the_timeline_has_a_row_per_seat(five: group_data.GroupGameRounds) -> None:
    html = group_look.timeline_html(five, 2)
    rows = re.findall(r'<div class="pdb-gtl-row" data-seat="(\w)">(.*?)</div>', html)
    assert [seat for seat, _ in rows] == list("ABCDE")
    for (_, row), moves in zip(rows, FIVE_MOVES, strict=True):
        assert "".join(re.findall(r'class="pdb-cell [^"]*"[^>]*>([CD])</span>', row)) == moves
    assert html.count(" now") == 5  # round 3's cell of every seat
    assert "Round 4: D · mock-gpt-4o-mini[tit_for_tat] played D (Defect), 1.2; meant C" in html


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.4000000000000004, "1.4"), (-0.25, "-0.25"), (3.0, "3"), (-0.001, "0"), (float("nan"), "—")],
)
def test_numbers(value: float, text: str) -> None:
    assert group_look.number(value) == text


def test_names_break_between_words_only() -> None:
    assert group_look.breakable("mock-gpt[coop]") == "mock-<wbr>gpt<wbr>[coop]"
    assert group_look.breakable("a<b") == "a&lt;b"


def test_a_declared_intention_is_told_apart_from_words(five: group_data.GroupGameRounds) -> None:
    declared = tuple(replace(m, source="declared") for m in five.messages[0])
    game = replace(five, messages=(declared, *five.messages[1:]))
    html = group_look.messages_html(game, 0, True, 500)
    assert html.count("meant C (declared, unseen)") == 2 and "promised C" not in html
    assert html.count(group_look.BROKEN_DECLARED) == 1  # E meant C and chose D
