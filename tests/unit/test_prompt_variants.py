"""Prompt variants: action labels (shown to the model, parsed back to C/D), payoff scaling (what
the model is told, not what the game pays), and the mock answering in the labels. Expected texts
are written by hand from the rules in the docstrings."""

from __future__ import annotations

import asyncio
import math

import pytest

from pdbench.agents.llm import PromptTemplates, output_instruction, render_round, render_system
from pdbench.agents.providers.base import CompletionRequest, openai_options
from pdbench.agents.providers.mock import MockProvider, read_history
from pdbench.core.config import LLMAgentConfig
from pdbench.core.parse import (
    TokenLogprobs,
    correction_message,
    decision_probability,
    parse_action,
)
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action

JF = ("J", "F")
WORDS = ("cooperate", "defect")


@pytest.mark.parametrize(
    ("reply", "fmt", "labels", "expected", "exact"),
    [
        ("J", "token", JF, Action.C, True),
        (" f\n", "token", JF, Action.D, True),
        ("I pick F.", "token", JF, Action.D, False),
        ("J first, but now F", "token", JF, Action.D, False),  # the last label counts
        ('{"action": "J"}', "json", JF, Action.C, True),
        ('Thinking... {"action": "f"}', "json", JF, Action.D, False),
        ('{"action": "F"}', "choice", JF, Action.D, True),
        ("defect", "token", WORDS, Action.D, True),
        ("I will cooperate", "token", WORDS, Action.C, False),
        ("C", "token", ("C", "D"), Action.C, True),
    ],
)
def test_labels_are_read_back_as_moves(
    reply: str, fmt: str, labels: tuple[str, str], expected: Action, exact: bool
) -> None:
    result = parse_action(reply, fmt, None, labels)  # type: ignore[arg-type]
    assert result.action is expected
    assert result.exact is exact


@pytest.mark.parametrize(
    ("reply", "fmt", "needle"),
    [
        ("C", "token", "no J or F in the reply (got 'C')"),
        ("D", "token", "no J or F"),
        ('{"action": "C"}', "json", 'no JSON object with "action" J or F'),
        ("JF", "token", "no J or F"),  # not a label on its own
    ],
)
def test_the_plain_letters_are_not_moves_under_other_labels(
    reply: str, fmt: str, needle: str
) -> None:
    result = parse_action(reply, fmt, None, JF)  # type: ignore[arg-type]
    assert result.action is None
    assert needle in (result.error or "")


def test_exact_and_pattern_readings_follow_the_labels() -> None:
    assert parse_action("F", "token", "exact", JF).action is Action.D
    assert parse_action("I pick F", "token", "exact", JF).action is None
    found = parse_action("Answer: Option F", "token", r"Option (\w+)", JF)
    assert found.action is Action.D
    assert found.span == (15, 16)
    wrong = parse_action("Option D", "token", r"Option (\w+)", JF)
    assert wrong.error == "answer_pattern matched 'D', not J or F"


def test_corrections_and_instructions_name_the_labels() -> None:
    assert "exactly one letter: J or F" in correction_message("token", "bad", None, JF)
    assert 'exactly {"action": "J"} or {"action": "F"}' in correction_message(
        "json", "bad", None, JF
    )
    assert correction_message("token", "bad", None, WORDS).endswith(
        "Reply with exactly one word: cooperate or defect, and nothing else."
    )
    assert output_instruction("token", JF) == "Answer with only one letter, J or F, nothing else."


def test_p_cooperate_reads_the_label_tokens() -> None:
    tokens = [TokenLogprobs("J", math.log(0.7), (("J", math.log(0.7)), ("F", math.log(0.2))))]
    assert decision_probability(tokens, (0, 1), JF) == pytest.approx(0.7 / 0.9)
    # A label split over tokens: "co" + "operate"; the first token decides.
    split = [
        TokenLogprobs("co", math.log(0.6), (("co", math.log(0.6)), ("def", math.log(0.3)))),
        TokenLogprobs("operate", 0.0, (("operate", 0.0),)),
    ]
    assert decision_probability(split, (0, 9), WORDS) == pytest.approx(0.6 / 0.9)


def test_choice_constrains_to_the_labels() -> None:
    request = CompletionRequest("s", "p", 0.0, 4, output_format="choice", labels=JF)
    schema = openai_options(request)["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["action"]["enum"] == ["J", "F"]


def test_labels_and_payoff_scale_in_the_prompts() -> None:
    templates = PromptTemplates("Moves: {C} or {D}.\n{payoff_table}\n{output_instruction}", "", "")
    system = render_system(templates, PayoffMatrix().scaled(10.0), "token", JF)
    assert system == (
        "Moves: J or F.\n"
        "- you play J, they play J: you get 30, they get 30\n"
        "- you play J, they play F: you get 0, they get 50\n"
        "- you play F, they play J: you get 50, they get 0\n"
        "- you play F, they play F: you get 10, they get 10\n"
        "Answer with only one letter, J or F, nothing else.\n"
    )
    transcript = Transcript(PayoffMatrix())
    transcript.record(Action.C, Action.D)  # A gets 0, B gets 5
    obs = transcript.observation(0, history_window=None, include_totals=True, horizon_type="fixed")
    text = render_round(
        "{history}|{totals}|{opponent_last_move}|{my_last_move}|{C}{D}",
        obs,
        None,
        "token",
        JF,
        10.0,
    )
    assert text == (
        "Round 1: you played J, the opponent played F; you got 0, they got 50."
        "|Total so far: you 0 points, the opponent 50 points.|F|J|JF\n"
    )
    # The game itself pays what it always paid: scaling only changes what the model is told.
    assert transcript.payoffs_b == [5.0]


def mock_config(**extra: object) -> LLMAgentConfig:
    prompts = {"system": "s.md", "round": "r.md", "personas_dir": "p"}
    return LLMAgentConfig.model_validate({"type": "llm", "model": "m", "prompts": prompts, **extra})


def test_the_mock_reads_and_answers_in_the_labels() -> None:
    mock = MockProvider(mock_config())
    system = "Persona: tit_for_tat."
    prompt = "Round 1: you played J, the opponent played F; you got 0, they got 5."
    assert read_history(prompt, JF) == [("C", "D")]
    assert mock.reply(system=system, prompt=prompt, seed=1, labels=JF) == "F"  # copies the D
    later = prompt + "\nRound 2: you played F, the opponent played J; you got 5, they got 0."
    assert mock.reply(system=system, prompt=later, seed=1, labels=JF) == "J"
    asked = later + '\nAnswer with only the JSON object {"action": "J"} or {"action": "F"}.'
    request = CompletionRequest(system, asked, 0.0, 4, output_format="json", labels=JF)
    completion = asyncio.run(mock.complete(request))
    assert completion.text == '{"action": "J"}'


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("J/j", "the two labels must differ, ignoring case"),
        ({"C": "J"}, "Field required"),
        ({"C": "J F", "D": "X"}, "String should match pattern"),
    ],
)
def test_bad_labels_are_refused(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mock_config(action_labels=value)


def test_label_shorthand_and_scale() -> None:
    cfg = mock_config(action_labels="J/F", payoff_scale=10.0)
    assert cfg.labels() == JF
    assert mock_config().labels() == ("C", "D")
    with pytest.raises(ValueError, match="greater than 0"):
        mock_config(payoff_scale=0.0)
