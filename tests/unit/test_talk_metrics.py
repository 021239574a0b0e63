"""Said versus declared, and how long a statement binds (core/talk_metrics.py), on small games
worked by hand. Readings the rule reader does not give yet (conditional C, standing, unread)
are given by a stand-in reader that maps hand-built texts to hand-built Readings."""

from __future__ import annotations

import pytest

from pdbench.core import talk_metrics
from pdbench.core.talk_metrics import TALK_POOLED_COLUMNS, talk_columns, talk_tracks
from pdbench.core.talk_reader import Reading
from pdbench.core.types import Action, Message

C, D = Action.C, Action.D
READINGS = {
    "always C": Reading("C", standing=True),
    "always D": Reading("D", standing=True),
    "C": Reading("C"),
    "D": Reading("D"),
    "if you do": Reading("conditional_C"),
    "always if you do": Reading("conditional_C", standing=True),
    "hello": Reading("none"),
    "hallo": Reading("unread", reason="language: de"),
}


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """Texts read by the table READINGS (the labels are ignored)."""
    monkeypatch.setattr(talk_metrics, "read_message", lambda text, labels: READINGS[text])


def moves(text: str) -> list[bool]:
    return [m == "C" for m in text]


def said(side: int, by_round: dict[int, str]) -> list[Message]:
    return [Message(r, 0, side, text) for r, text in by_round.items()]


def test_always_cooperate_then_cccddd_binds_six_moves_under_the_standing_reading(
    reader: None,
) -> None:
    """ "I will always cooperate" before round 1 only, then C C C D D D.
    Next move: the statement binds round 1 only: 1 promise, kept (1/1), deception 0/1.
    Standing: it binds all 6 moves: kept at rounds 1-3, broken at 4-6: 3/6, deception 3/6."""
    a, b = talk_tracks(said(0, {0: "always C"}), moves("CCCDDD"), moves("CCCCCC"))
    got = talk_columns((a, b))
    assert got["agent_a_said_promises"] == 1 and got["agent_a_said_promise_kept_rate"] == 1.0
    assert got["agent_a_said_deception_rate"] == 0.0
    assert got["agent_a_said_standing_promises"] == 6
    assert got["agent_a_said_standing_kept_rate"] == pytest.approx(3 / 6)
    assert got["agent_a_said_standing_deception_rate"] == pytest.approx(3 / 6)
    # B saw one promise (round 1) and cooperated after it: trust 1/1 (next-move reading)
    assert got["agent_b_said_promises_received"] == 1 and got["agent_b_said_trust_rate"] == 1.0


def test_a_pregame_promise_stands_for_the_whole_game() -> None:
    """Pregame channel, the real reader: "I will cooperate." before round 1, then C C D D.
    Next move: round 1 only, kept 1/1. Standing (every pregame statement stands): 4 moves,
    kept 2/4, deception 2/4. Without `pregame` the statement binds round 1 only either way."""
    messages = [Message(0, 0, 0, "I will cooperate.")]
    got = talk_columns(talk_tracks(messages, moves("CCDD"), moves("CCCC"), pregame=True))
    assert got["agent_a_said_promise_kept_rate"] == 1.0 and got["agent_a_said_promises"] == 1
    assert got["agent_a_said_standing_promises"] == 4
    assert got["agent_a_said_standing_deception_rate"] == pytest.approx(2 / 4)
    got = talk_columns(talk_tracks(messages, moves("CCDD"), moves("CCCC")))
    assert got["agent_a_said_standing_promises"] == 1
    assert got["agent_a_said_standing_kept_rate"] == 1.0


def test_a_later_statement_withdraws_a_standing_one_and_a_restatement_keeps_it(
    reader: None,
) -> None:
    """Rounds 1-6, A says: always C, -, C (restates), -, D (withdraws), -; A plays C C C D D D.
    Standing binds: C C C C D none -> promises at rounds 1-4: kept 3 (rounds 1-3), broken 1
    (round 4): 3/4. The D at round 5 is a statement (agreement), not a promise; round 6 is
    bound by nothing (the D was not standing). A new standing statement replaces it: with
    "always D" at round 5, round 6 is bound by D (no promise either)."""
    text = {0: "always C", 1: "hello", 2: "C", 4: "D"}
    a, _ = talk_tracks(said(0, text), moves("CCCDDD"), moves("CCCCCC"))
    assert a.standing.tolist() == [1, 1, 1, 1, 0, -1]
    got = talk_columns(talk_tracks(said(0, text), moves("CCCDDD"), moves("CCCCCC")))
    assert got["agent_a_said_standing_promises"] == 4
    assert got["agent_a_said_standing_kept_rate"] == pytest.approx(3 / 4)
    # next move: promises at rounds 1 and 3, both kept
    assert got["agent_a_said_promises"] == 2 and got["agent_a_said_promise_kept_rate"] == 1.0
    a, _ = talk_tracks(said(0, {**text, 4: "always D"}), moves("CCCDDD"), moves("CCCCCC"))
    assert a.standing.tolist() == [1, 1, 1, 1, 0, 0]


def test_a_conditional_promise_is_kept_broken_or_void(reader: None) -> None:
    """A says "I'll cooperate if you do" before each of 4 rounds. Condition: B cooperates in
    the same round. A: C D C D; B: C C D D.
    Round 1: both C -> kept. Round 2: B C, A D -> broken. Round 3: B D -> void (A's C not
    counted). Round 4: B D -> void (A's D is no deception).
    said_promises 2 (kept 1, broken 1): kept 1/2, deception 1/2; void 2. Agreement: the 2
    non-void moves, A chose C once: 1/2. Every message says a conditional promise: promise
    rate 4/4. B's trust: B saw 4 promises (conditional ones count: the condition is B's own
    move) and cooperated twice: 2/4."""
    got = talk_columns(talk_tracks(said(0, dict.fromkeys(range(4), "if you do")),
                                   moves("CDCD"), moves("CCDD")))  # fmt: skip
    assert got["agent_a_said_promise_rate"] == 1.0
    assert got["agent_a_said_promises"] == 2 and got["agent_a_said_void_promises"] == 2
    assert got["agent_a_said_promise_kept_rate"] == pytest.approx(1 / 2)
    assert got["agent_a_said_deception_rate"] == pytest.approx(1 / 2)
    assert got["agent_a_said_statements"] == 2
    assert got["agent_a_said_agreement_rate"] == pytest.approx(1 / 2)
    assert got["agent_b_said_promises_received"] == 4
    assert got["agent_b_said_trust_rate"] == pytest.approx(2 / 4)


def test_a_void_conditional_promise_is_never_deception(reader: None) -> None:
    """ "I'll always cooperate if you do" before round 1; B defects throughout, A too: every
    move is void under both readings: no promise counted, deception None (not 1)."""
    got = talk_columns(talk_tracks(said(0, {0: "always if you do"}), moves("DDD"), moves("DDD")))
    assert got["agent_a_said_promises"] == 0 and got["agent_a_said_void_promises"] == 1
    assert got["agent_a_said_deception_rate"] is None
    assert got["agent_a_said_standing_promises"] == 0
    assert got["agent_a_said_standing_deception_rate"] is None


def test_unread_messages_are_counted_and_state_nothing(reader: None) -> None:
    """A writes 4 messages over 3 rounds: "C" and "hallo" (unread) before round 1, "hallo"
    before round 2, "hello" before round 3. Unread: 2 of 4 = 1/2. The unread message after
    "C" does not withdraw it: round 1 is bound by C (kept: A played C). Nothing binds rounds
    2 and 3: 1 statement."""
    messages = [Message(0, 0, 0, "C"), Message(0, 1, 0, "hallo")]
    messages += [Message(1, 0, 0, "hallo"), Message(2, 0, 0, "hello")]
    got = talk_columns(talk_tracks(messages, moves("CDD"), moves("CCC")))
    assert got["agent_a_messages"] == 4 and got["agent_a_unread_messages"] == 2
    assert got["agent_a_unread_rate"] == pytest.approx(1 / 2)
    assert got["agent_a_said_statements"] == 1 and got["agent_a_said_promise_kept_rate"] == 1.0
    assert got["agent_a_said_promise_rate"] == pytest.approx(1 / 4)


def test_said_and_declared_are_read_apart() -> None:
    """The issue's example: {"message": "I will defect this round.", "intention": "C"} three
    times, and a liar's "I will cooperate." with intention D twice; A plays C C C D D, B
    plays C C C C C. Said (the text, as B read it): D D D C C. Declared: C C C D D.
    Said promises: rounds 4, 5, both broken: kept 0/2, deception 2/2; said promise rate
    2/5; said agreement 0/5. Declared promises: rounds 1-3, all kept: 3/3, deception 0/3;
    declared promise rate 3/5; declared agreement 5/5. B's trust rests on what it read:
    promises at rounds 4, 5, B cooperated: 2/2."""
    messages = [Message(r, 0, 0, "I will defect this round.", C, "declared") for r in range(3)]
    messages += [Message(r, 0, 0, "I will cooperate.", D, "declared") for r in (3, 4)]
    got = talk_columns(talk_tracks(messages, moves("CCCDD"), moves("CCCCC")))
    assert got["agent_a_said_promise_rate"] == pytest.approx(2 / 5)
    assert got["agent_a_said_promises"] == 2 and got["agent_a_said_deception_rate"] == 1.0
    assert got["agent_a_said_agreement_rate"] == 0.0
    assert got["agent_a_declared_promise_rate"] == pytest.approx(3 / 5)
    assert got["agent_a_declared_promises"] == 3
    assert got["agent_a_declared_promise_kept_rate"] == 1.0
    assert got["agent_a_declared_deception_rate"] == 0.0
    assert got["agent_a_declared_agreement_rate"] == 1.0
    assert got["agent_b_said_promises_received"] == 2 and got["agent_b_said_trust_rate"] == 1.0


def test_the_writer_s_labels_are_read_as_move_words() -> None:
    """An agent shown J/F writes "I'll play J": read as a promise of C in its labels, as no
    statement in C/D."""
    messages = [Message(0, 0, 0, "I'll play J.")]
    got = talk_columns(talk_tracks(messages, [True], [True], (("J", "F"), ("C", "D"))))
    assert got["agent_a_said_promises"] == 1
    got = talk_columns(talk_tracks(messages, [True], [True]))
    assert got["agent_a_said_promises"] == 0


def test_every_rate_is_pooled_over_a_count_column_of_the_same_game() -> None:
    """Each pooled rate's denominator is a count the game reports, and the rate is None
    exactly when that count is 0 (checked on a game where every count is 0)."""
    got = talk_columns(talk_tracks([Message(0, 0, 0, "hello")], [True], [True]))
    for rate, count in TALK_POOLED_COLUMNS.items():
        assert count in got
        assert (got[rate] is None) == (got[count] == 0), rate
