"""Unit tests of pdbench.core.parse: exact and lenient token/JSON parsing, answer patterns,
correction messages, and the decision probability read from token log-probabilities."""

from __future__ import annotations

import math

import pytest

from pdbench.core.parse import (
    TokenLogprobs,
    correction_message,
    decision_probability,
    parse_action,
)
from pdbench.core.types import Action


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("C", Action.C),
        ("D", Action.D),
        (" c\n", Action.C),
        ("d ", Action.D),
        ("\t\nD\n\n", Action.D),
        ("c", Action.C),
    ],
)
def test_token_valid(reply, expected):
    result = parse_action(reply, "token")
    assert result.ok
    assert result.action is expected
    assert result.error is None


@pytest.mark.parametrize(
    "reply",
    [
        "CD",
        "C.",
        "Cooperate",
        "Defect",
        "",
        "   ",
        None,
        "C D",
        "'C'",
        '{"action": "C"}',  # JSON is not the token format
        "Action: C",
        "X",
    ],
)
def test_token_invalid_when_exact(reply):
    result = parse_action(reply, "token", "exact")
    assert not result.ok
    assert result.action is None
    assert isinstance(result.error, str) and result.error


def test_token_is_the_default_format():
    assert parse_action(" d\n").action is Action.D
    assert not parse_action("Cooperate").ok


def test_invalid_token_error_quotes_the_reply():
    assert "Cooperate" in parse_action("Cooperate", "token").error


def test_long_invalid_reply_is_shortened_in_the_error():
    reply = "I will cooperate " * 50
    error = parse_action(reply, "token").error
    assert error is not None
    assert len(error) < 150


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"action": "C"}', Action.C),
        ('{"action":"d"}', Action.D),
        ('  {"action": "D"}\n', Action.D),
        ('{"action": " c "}', Action.C),
    ],
)
def test_json_valid(reply, expected):
    result = parse_action(reply, "json")
    assert result.ok
    assert result.action is expected


@pytest.mark.parametrize(
    "reply",
    [
        '{"action": "C", "reason": "trust"}',  # extra key
        '["C"]',  # not an object
        '"C"',  # not an object
        "C",  # the token format is not JSON
        '{"action": "C"',  # invalid JSON
        "{'action': 'C'}",  # invalid JSON (single quotes)
        '{"action": "X"}',
        '{"action": "Cooperate"}',
        '{"action": 1}',
        '{"action": null}',
        '{"Action": "C"}',  # key is case-sensitive
        "{}",
        "",
        None,
    ],
)
def test_json_invalid_when_exact(reply):
    result = parse_action(reply, "json", "exact")
    assert not result.ok
    assert result.action is None
    assert isinstance(result.error, str) and result.error


def test_unknown_format_is_an_error():
    with pytest.raises(ValueError):
        parse_action("C", "xml")  # type: ignore[arg-type]


def test_correction_message_token_names_allowed_form_and_error():
    msg = correction_message("token", "expected exactly C or D (got 'CD')")
    assert "C or D" in msg
    assert "expected exactly C or D (got 'CD')" in msg
    assert "{" not in msg  # does not ask for JSON


def test_correction_message_json_names_allowed_form_and_error():
    msg = correction_message("json", "not valid JSON (got 'x')")
    assert '{"action": "C"}' in msg
    assert '{"action": "D"}' in msg
    assert "not valid JSON (got 'x')" in msg


# --- the default: the last answer in the reply --------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected", "span"),
    [
        ("C.", Action.C, (0, 1)),
        ("C D", Action.D, (2, 3)),  # the last one counts
        ("Action: C", Action.C, (8, 9)),
        ("I think... they defected, so D.\nFinal answer: C", Action.C, (46, 47)),
        ('{"action": "C"}', Action.C, (12, 13)),  # the letter between quotes is standalone
        ("C: 1\nD: 2", Action.D, (5, 6)),
    ],
)
def test_token_default_takes_the_last_standalone_letter(reply, expected, span):
    result = parse_action(reply, "token")
    assert (result.action, result.span, result.exact) == (expected, span, False)
    assert reply[span[0]] == expected.value


@pytest.mark.parametrize("reply", ["CD", "Cooperate", "I'd defect", "c or d", "", None, "A B"])
def test_token_default_without_a_standalone_capital_letter_is_invalid(reply):
    assert not parse_action(reply, "token").ok


def test_exact_replies_are_marked_exact_with_the_letter_span():
    result = parse_action("  D\n", "token")
    assert (result.action, result.span, result.exact) == (Action.D, (2, 3), True)
    result = parse_action('{"action": "c"}', "json")
    assert (result.action, result.span, result.exact) == (Action.C, (12, 13), True)


@pytest.mark.parametrize("fmt", ["json", "choice"])
def test_json_default_takes_the_last_object_with_an_action(fmt):
    reply = 'Thinking {"action": "D"} ... no: {"action": "C", "reason": "trust"} done'
    result = parse_action(reply, fmt)
    assert (result.action, result.exact) == (Action.C, False)
    assert result.span == (reply.rindex('"C"') + 1, reply.rindex('"C"') + 2)
    assert not parse_action('{"move": "C"} and C', fmt).ok  # a bare letter is not JSON


@pytest.mark.parametrize(
    ("pattern", "reply", "expected"),
    [
        (r"ANSWER:\s*(\w)", "ANSWER: D, later ANSWER: c", Action.C),
        (r"move=(?P<answer>[CD])", "move=D", Action.D),
        (r"\b[CD]\b", "C then D", Action.D),
    ],
)
def test_answer_pattern_last_match_counts(pattern, reply, expected):
    assert parse_action(reply, "token", pattern).action is expected


def test_answer_pattern_without_a_match_or_with_another_value_is_invalid():
    assert "found no answer" in parse_action("C", "token", r"ANSWER: (\w)").error
    assert "not C or D" in parse_action("ANSWER: X", "token", r"ANSWER: (\w)").error


def test_correction_template_takes_error_and_expected():
    msg = correction_message("choice", "bad", "Oops ({error}); send {expected}.")
    assert msg == 'Oops (bad); send exactly {"action": "C"} or {"action": "D"}.'


# --- decision probabilities ---------------------------------------------------------------------


def _tokens(*items):
    return [TokenLogprobs(tok, lp, tuple(top)) for tok, lp, top in items]


def test_probability_is_renormalised_over_c_and_d_at_the_answer_token():
    # Hand calculation: P(C) = 0.5, P(" C") = 0.1, P(D) = 0.2, P(A) = 0.2 at the answer token:
    # (0.5 + 0.1) / (0.5 + 0.1 + 0.2) = 0.75.
    tokens = _tokens(
        ("Answer", -0.1, [("Answer", -0.1), ("C", -3.0)]),
        (": ", -0.1, [(": ", -0.1)]),
        (
            "C",
            math.log(0.5),
            [
                ("C", math.log(0.5)),
                ("D", math.log(0.2)),
                ("A", math.log(0.2)),
                (" C", math.log(0.1)),
            ],
        ),
    )
    reply = "Answer: C"
    result = parse_action(reply, "token")
    assert result.span == (8, 9)
    assert decision_probability(tokens, result.span) == pytest.approx(0.75)


def test_probability_reads_quoted_json_letters_and_none_when_missing():
    reply = '{"action": "D"}'
    tokens = _tokens(
        ('{"', 0.0, []),
        ("action", 0.0, []),
        ('": "', 0.0, []),
        ("D", math.log(0.6), [("D", math.log(0.6)), ("C", math.log(0.3)), ("c", math.log(0.1))]),
        ('"}', 0.0, []),
    )
    span = parse_action(reply, "json").span
    assert decision_probability(tokens, span) == pytest.approx(0.4)  # (0.3 + 0.1) / 1.0
    no_alternatives = _tokens(('{"action": "', 0.0, []), ("D", 0.0, [("X", -1.0)]), ('"}', 0.0, []))
    assert decision_probability(no_alternatives, span) is None
    assert decision_probability(None, span) is None
    assert decision_probability(tokens, None) is None
    assert decision_probability(_tokens(("{", 0.0, [])), span) is None  # tokens end too soon


# --- named parse modes (core/parse_modes.py): where the answer sits and why a reply fails ---

COOP_DEFECT = ("Cooperate", "Defect")


@pytest.mark.parametrize(
    ("reply", "span", "exact"),
    [
        # counted by hand: the value starts after '{"action": "' (12 characters)
        ('{"action": "Defect"}', (12, 18), True),
        ("{'action': 'Defect'}", (12, 18), True),  # the quotes swap one for one: same places
        ('  {"action": "Defect"}\n', (14, 20), True),
        ('Sure. {"action": "Defect", "why": "x"}', (18, 24), False),
        ('{"action": "Cooperate", "action": "Defect"}', (35, 41), False),  # the last key counts
    ],
)
def test_fontana_json_finds_the_label_where_it_is(reply, span, exact):
    from pdbench.core.parse_modes import read_fontana_json

    result = read_fontana_json(reply, COOP_DEFECT)
    assert (result.action, result.span, result.exact) == (Action.D, span, exact)


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        ("no braces", "no JSON object in the reply"),
        ('{"action": "Coop', "the first JSON object is never closed"),
        ('{"action": "Defect",}', "the first JSON object is not valid JSON"),
        ('{"move": "Defect"}', 'the first JSON object has no "action"'),
        (
            '{"action": "defect"}',
            '"action" must be exactly "Cooperate" or "Defect" (got \'defect\')',
        ),
    ],
)
def test_fontana_json_says_why_a_reply_is_not_read(reply, words):
    from pdbench.core.parse_modes import read_fontana_json

    result = read_fontana_json(reply, COOP_DEFECT)
    assert result.action is None and words in (result.error or "")


def test_akata_exact_reads_the_trimmed_label_and_nothing_else():
    from pdbench.core.parse_modes import read_akata_exact, read_reply

    assert read_akata_exact(" J\n", ("J", "F")).span == (1, 2)
    assert read_akata_exact("j", ("J", "F")).error == "expected exactly J or F (got 'j')"
    assert read_reply("  ", "token", None, ("J", "F"), "akata_exact").error == "empty reply"
    # without a mode, the usual rules: "j" is read as J
    assert read_reply("j", "token", None, ("J", "F")).action is Action.C
