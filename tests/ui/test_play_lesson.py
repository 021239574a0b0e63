"""The Play tab's lesson and words (ui/lesson.py, ui/play_look.py): the sentence chosen from
what happened, table-driven from hand-made games; the strategy card and the memory-one profile
read back; one vocabulary (Cooperate / Defect) in every text the tab shows."""

from __future__ import annotations

import math
import re

import pytest

from pdbench.ui import lesson, play_look
from pdbench.ui.style import ACTION_WORD

# (the person's moves, the opponent's, what happened), reasoned by hand from lesson_key's rules
GAMES = [
    ("C", "C", "trust"),
    ("CCCCC", "CCCCC", "trust"),
    ("D", "C", "exploited_naive"),
    ("DDD", "CCC", "exploited_naive"),
    ("D", "D", "all_defect"),
    ("DDD", "CDD", "all_defect"),  # against Copycat
    ("CCCD", "CCCC", "endgame"),  # the first defection in the last round
    ("CDCC", "CCCC", "unanswered"),  # against Always Cooperate
    ("CDCC", "CCDC", "feud_mended"),  # Copycat answers, then both cooperate again
    ("DCCC", "CDCC", "feud_mended"),  # defected in round 1, answered in round 2
    ("CDDD", "CCDD", "feud"),
    ("CDCD", "CCDC", "feud"),  # answered, and the last round is not mutual cooperation
    ("CCCC", "CCCD", "betrayed_at_end"),  # no round left to answer in
    ("C", "D", "betrayed_at_end"),
    ("CCCC", "CDCC", "forgave_once"),
    ("CDCC", "CDCC", "forgave_once"),  # both defected in round 2: no one started it alone
    ("CCCC", "DDDD", "turned_cheek"),  # against Always Defect, three defections answered by C
    ("CCDC", "CDCC", "retaliate_forgive"),
    ("CCDCC", "CDDCC", "retaliate_forgive"),
    ("CCDD", "CDCC", "grudge"),
    ("CCDDD", "CDCDC", "grudge"),
]


@pytest.mark.parametrize(("mine", "theirs", "key"), GAMES)
def test_the_lesson_is_chosen_from_what_happened(mine: str, theirs: str, key: str) -> None:
    assert lesson.lesson_key(mine, theirs) == key
    assert lesson.lesson(mine, theirs) == lesson.LESSONS[key]


def test_every_lesson_can_happen_and_says_something_different() -> None:
    assert {key for *_, key in GAMES} == set(lesson.LESSONS)
    assert len(set(lesson.LESSONS.values())) == len(lesson.LESSONS)


@pytest.mark.parametrize(("mine", "theirs"), [("", ""), ("CC", "C"), ("C", "")])
def test_a_lesson_needs_two_move_strings_of_one_length(mine: str, theirs: str) -> None:
    with pytest.raises(ValueError):
        lesson.lesson_key(mine, theirs)


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z]+", text)}


TEXTS = [
    *lesson.LESSONS.values(),
    *play_look.OUTCOMES.values(),
    *play_look.MOVE_LABEL.values(),
    *lesson.STATE_WORDS.values(),
    play_look.result_card("You played", "D", "C", 5, True, 0),
    play_look.result_card("You played", "C", "C", 3, False, 0),
]


@pytest.mark.parametrize("text", TEXTS)
def test_one_vocabulary_cooperate_and_defect(text: str) -> None:
    words = _words(text)
    assert not words & {"cheat", "cheats", "cheated", "cheating", "cheater", "betray"}, text
    assert any(w.startswith(("cooperat", "defect")) for w in words), text


def test_the_buttons_and_the_result_cards_use_the_apps_words() -> None:
    assert ACTION_WORD == {"C": "Cooperate", "D": "Defect"}
    assert play_look.MOVE_LABEL == {"C": "🤝 Cooperate", "D": "🗡️ Defect"}
    card = play_look.result_card("Copycat played", "D", "D", 1, False, 0.25)
    assert '<div class="pdb-res-word">Defect</div>' in card
    assert 'data-move="D"' in card and 'data-payoff="1"' in card
    # the payoff counts up to its own value (shown at once without animation)
    assert '+<span class="count" style="--pdb-n: 1">' in card
    # a payoff that is not a whole number is written out
    assert ">+2.5<small>" in play_look.result_card("x", "C", "C", 2.5, False, 0)
    assert "meant to cooperate, flipped by noise" in play_look.result_card(
        "x", "D", "C", 5, False, 0
    )


def test_the_animations_stop_for_reduced_motion() -> None:
    reduced = play_look.CSS.split("@media (prefers-reduced-motion: reduce)")[1]
    for animated in re.findall(r"\.([\w-]+)[^{}]*\{[^{}]*animation: pdb-", play_look.CSS):
        assert animated in reduced, animated


def _row(strategy: str, rank: int, ll: float, n_params: int = 1, **extra: object) -> dict:
    return {
        "strategy": strategy,
        "rank": rank,
        "log_likelihood": ll,
        "n_params": n_params,
        "moves_explained": extra.pop("moves_explained", None),
        "adequate": extra.pop("adequate", True),
        "gof_p_value": extra.pop("gof_p_value", None),
        **extra,
    }


def test_played_like_is_the_best_named_strategy_with_its_ties() -> None:
    rows = [
        _row("GRIM", 3, -0.01),
        _row("MEMORY_ONE", 1, -0.001, 5),  # the free family is not a strategy to play like
        _row("TFT", 2, -0.01, moves_explained=1.0, n_moves=9),
        _row("GTFT", 4, -0.01, 2),  # as likely, but one parameter more
        _row("ALLD", 5, -6.9),
    ]
    like = lesson.played_like(rows)
    assert like == lesson.PlayedLike("TFT", ("GRIM",), 1.0, None, 9)
    assert lesson.played_like([]) is None


def test_played_like_carries_the_cards_verdict_when_no_strategy_fits() -> None:
    rows = [
        _row("ALTERNATOR", 1, -3.0, adequate=False, gof_p_value=0.01, moves_explained=0.6),
        _row("TFT", 2, -4.0, adequate=False),
    ]
    like = lesson.played_like(rows)
    assert like is not None and like.strategy == "ALTERNATOR" and like.ties == ()
    assert like.verdict is not None and "closest: ALTERNATOR" in like.verdict
    assert "explains 60% of moves" in like.verdict


def test_memory_one_reads_counts_from_the_aggregates_row() -> None:
    # CDDCC against Copycat's CCDDC: the person's states before rounds 2-5 are CC, DC, DD, CD
    row = {
        "agent_a_p_coop_after_cc": 0.0,
        "agent_a_n_cc": 1,
        "agent_a_p_coop_after_cd": 1.0,
        "agent_a_n_cd": 1,
        "agent_a_p_coop_after_dc": 0.0,
        "agent_a_n_dc": 1,
        "agent_a_p_coop_after_dd": 1.0,
        "agent_a_n_dd": 1,
        "agent_b_p_coop_after_cc": 2 / 3,
        "agent_b_n_cc": 3,
        "agent_b_p_coop_after_cd": math.nan,
        "agent_b_n_cd": 0,
        "agent_b_p_coop_after_dc": None,
        "agent_b_n_dc": 0,
        "agent_b_p_coop_after_dd": 0.0,
        "agent_b_n_dd": 1,
    }
    assert [(s.state, s.cooperations, s.visits) for s in lesson.memory_one(row, "a")] == [
        ("CC", 0, 1),
        ("CD", 1, 1),
        ("DC", 0, 1),
        ("DD", 1, 1),
    ]
    theirs = lesson.memory_one(row, "b")
    assert [(s.cooperations, s.visits) for s in theirs] == [(2, 3), (0, 0), (0, 0), (0, 1)]
    assert theirs[1].rate is None
    card = play_look.lesson_html(
        "A sentence.",
        lesson.PlayedLike("TFT", ("GRIM",), 0.8, None, 10),
        [lesson.memory_one(row, "a"), theirs],
        ["🧑 You", "🪞 Copycat"],
    )
    assert "2 of 3 · 67%" in card and "never came up" in card
    assert "🪞 Copycat (TFT)" in card and "💀 Grudger (GRIM)" in card
    assert "which explains 80% of your 10 moves" in card


def test_the_css_holds_nothing_the_sanitiser_would_take_for_markup() -> None:
    # Streamlit's st.html drops a style element whose text has "<" followed by a letter or "/"
    body = play_look.CSS.removeprefix("<style>").removesuffix("</style>")
    assert not re.search(r"<[/\w]", body)
