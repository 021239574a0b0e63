"""Unit tests of pdbench.core.parse: strict token and JSON parsing, correction messages."""

from __future__ import annotations

import pytest

from pdbench.core.parse import correction_message, parse_action
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
def test_token_invalid(reply):
    result = parse_action(reply, "token")
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
def test_json_invalid(reply):
    result = parse_action(reply, "json")
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
