"""The message reader of issue 29: the rules (table-driven, expectations written by hand from each
text's meaning), language detection, the shipped corpus, the accuracy arithmetic (worked by
hand), and the LLM judge's strict parsing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from pdbench.agents.providers.base import Completion, CompletionRequest
from pdbench.agents.providers.mock import MockProvider
from pdbench.agents.talk_judge import judge_message, parse_judgement
from pdbench.core.config import LLMAgentConfig, PromptFiles
from pdbench.core.reader_scores import cohen_kappa, score_reader
from pdbench.core.talk import read_intent
from pdbench.core.talk_language import detect_language
from pdbench.core.talk_reader import READINGS, Reading, read_message
from pdbench.core.types import Action
from pdbench.storage.talk_corpus import (
    CATEGORIES,
    CorpusError,
    load_corpus,
    reader_accuracy,
    reader_accuracy_line,
)

CD, JF = ("C", "D"), ("J", "F")
S = True  # standing

# (text, labels, kind, standing), by rule
CASES = [
    # plain statements
    ("I will cooperate.", CD, "C", False),
    ("I'm going to defect this round.", CD, "D", False),
    ("My plan is to defect.", CD, "D", False),
    # negation
    ("I will not defect", CD, "C", False),
    ("I won't cooperate", CD, "D", False),
    ("I refuse to betray you.", CD, "C", False),
    ("I won't let you down.", CD, "C", False),
    # stop / end / no longer
    ("I will stop cooperating", CD, "D", S),
    ("I'll end our cooperation", CD, "D", S),
    ("I will no longer cooperate.", CD, "D", S),
    ("I'm done cooperating with you.", CD, "D", S),
    ("I will stop defecting.", CD, "C", S),
    ("I won't stop cooperating.", CD, "C", S),
    # never
    ("I will never defect", CD, "C", S),
    ("Never will I defect.", CD, "C", S),
    ("I'll never cooperate with you again.", CD, "D", S),
    # paraphrases
    ("I'll be cooperative", CD, "C", False),
    ("I'll play nice.", CD, "C", False),
    ("I'll keep working together.", CD, "C", False),
    ("I'll trust you.", CD, "C", False),
    ("I'll stay loyal.", CD, "C", False),
    ("I'll betray you.", CD, "D", False),
    ("I'll go my own way.", CD, "D", False),
    ("I'll protect myself and defect.", CD, "D", False),
    ("You can trust me.", CD, "C", False),
    # the agent's labels
    ("I'll play J", JF, "C", False),
    ("I will choose F this time", JF, "D", False),
    ("J", JF, "C", False),
    ("I'll play J", CD, "none", False),  # J means nothing under C/D
    ("I'll play a fair game.", ("A", "B"), "none", False),  # a label must stand alone
    # proposals
    ("Let's both cooperate.", CD, "C", False),
    ("How about we cooperate?", CD, "C", False),
    ("Why don't we both cooperate?", CD, "C", False),
    ("We will cooperate, right?", CD, "C", False),
    ("Let's both defect.", CD, "D", False),
    # conditionals
    ("I'll cooperate if you do.", CD, "conditional_C", False),
    ("As long as you cooperate, so will I.", CD, "conditional_C", S),
    ("If you defect I'll defect.", CD, "conditional_C", False),
    ("I'll match your move.", CD, "conditional_C", False),
    ("I cooperate until you defect; then I defect for good.", CD, "conditional_C", S),
    ("I'll cooperate no matter what you do.", CD, "C", False),
    ("Even if you defect, I will cooperate.", CD, "C", False),
    # standing
    ("I will always cooperate.", CD, "C", S),
    ("From now on I defect.", CD, "D", S),
    ("I'll cooperate for the rest of the game.", CD, "C", S),
    ("I will cooperate every round.", CD, "C", S),
    ("I'll cooperate this round.", CD, "C", False),
    # several sentences: unconditional wins over conditional
    ("I will defect now. If you cooperate later, I will too.", CD, "D", False),
    # questions and chit-chat
    ("Will you cooperate?", CD, "none", False),
    ("Should I defect?", CD, "none", False),
    ("Hello there, good luck!", CD, "none", False),
    ("You defected last round.", CD, "none", False),
    ("I defected last round, sorry.", CD, "none", False),
    ("", CD, "none", False),
    # hedges
    ("I might defect.", CD, "none", False),
    ("Maybe I'll cooperate.", CD, "none", False),
]


@pytest.mark.parametrize(("text", "labels", "kind", "standing"), CASES)
def test_rules(text: str, labels: tuple[str, str], kind: str, standing: bool) -> None:
    reading = read_message(text, labels)
    assert (reading.kind, reading.standing) == (kind, standing)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("I will cooperate. I will defect.", "contradiction"),
        ("I'll play nice, but I'll betray you.", "contradiction"),
        ("Ich werde immer kooperieren.", "language: de"),
        ("Je vais coopérer.", "language: fr"),
        ("Voy a cooperar siempre.", "language: es"),
        ("Coopererò sempre.", "language: it"),
        ("Ik ga samenwerken.", "language: nl"),
        ("Я буду сотрудничать.", "language: not English (cyrillic script)"),
        ("我会合作。", "language: not English (cjk script)"),
        ("I think cooperation is the way.", "no rule reads"),
    ],
)
def test_unread_with_a_reason(text: str, reason: str) -> None:
    reading = read_message(text)
    assert reading.kind == "unread"
    assert reading.reason.startswith(reason)


@pytest.mark.parametrize(
    "text",
    [
        "Let's cooperate, amigo!",  # one foreign word
        "I will cooperate, no matter what.",  # "no" is Spanish too
        "So I will defect.",  # "so" is German too
        "Café? I will cooperate.",  # an accented letter
    ],
)
def test_english_with_foreign_bits_stays_english(text: str) -> None:
    assert detect_language(text) == "en"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("I will cooperate", Action.C), ("I will stop cooperating", Action.D)]
    + [(t, None) for t in ("I'll cooperate if you do", "Hi", "Ich kooperiere", "C and D")],
)
def test_read_intent_delegates(text: str, expected: Action | None) -> None:
    assert read_intent(text) is expected


def test_reading_refuses_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="a reading is one of"):
        Reading("maybe")


# --------------------------------------------------------------------------------------------
# The corpus


def test_corpus_is_large_labelled_and_covers_every_category() -> None:
    corpus = load_corpus()
    assert len(corpus) >= 300
    assert {m.category for m in corpus} == set(CATEGORIES)
    assert all(m.label in READINGS for m in corpus)
    foreign = [m for m in corpus if m.category == "other_language"]
    assert len({m.language for m in foreign}) >= 3
    # an English-only reader should leave them unread; what they mean is recorded
    assert all(m.label == "unread" and m.meaning in READINGS for m in foreign)
    assert len({m.text for m in corpus if m.category == "local_model"}) >= 1


def test_bad_corpus_lines_are_one_line_errors(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    good = {"text": "hi", "label": "none", "standing": False, "category": "chitchat", "source": "x"}
    for bad, message in [
        ("{not json", "not JSON"),
        (json.dumps({**good, "label": "yes"}), "label 'yes' is not one of"),
        (json.dumps({**good, "category": "poetry"}), "unknown category"),
        (json.dumps({"text": "hi"}), "missing label"),
    ]:
        path.write_text(json.dumps(good) + "\n" + bad + "\n", encoding="utf-8")
        with pytest.raises(CorpusError, match=f"c.jsonl:2: {message}"):
            load_corpus(path)


def test_reader_accuracy_is_the_rules_scored_on_the_corpus() -> None:
    corpus = load_corpus()
    scores = reader_accuracy()
    assert scores.n == len(corpus)
    # recomputed here by counting: the share of messages read as labelled
    right = sum(read_message(m.text, m.labels).kind == m.label for m in corpus)
    assert scores.accuracy == pytest.approx(right / len(corpus))
    line = reader_accuracy_line(0.25)
    assert line.startswith("said = rule reader v2 (English only): precision ")
    assert f"on {len(corpus)} labelled messages (kappa " in line
    held = [m for m in corpus if m.category == "local_model"]
    assert f"on the {len(held)} of them labelled before the rules were tuned" in line
    assert line.endswith("; 25% of this run's messages unread")


# --------------------------------------------------------------------------------------------
# The arithmetic, on a confusion matrix worked by hand


def test_scores_of_a_small_confusion_matrix() -> None:
    truth = ["C", "C", "D", "D", "none"]
    read = ["C", "D", "D", "D", "unread"]
    scores = score_reader(truth, read, READINGS)
    # agreement 3/5; chance: truth C2 D2 none1, read C1 D3 unread1 -> (2*1 + 2*3) / 25 = 0.32
    assert scores.kappa == pytest.approx((0.6 - 0.32) / (1 - 0.32))
    assert scores.precision["C"] == 1.0 and scores.recall["C"] == 0.5
    assert scores.precision["D"] == pytest.approx(2 / 3) and scores.recall["D"] == 1.0
    assert scores.precision["none"] is None and scores.recall["none"] == 0.0
    assert scores.precision["conditional_C"] is None and scores.recall["conditional_C"] is None
    assert scores.accuracy == 0.6 and scores.unread_share == 0.2


def test_kappa_edges() -> None:
    assert cohen_kappa(["C", "C"], ["C", "C"]) == 1.0  # one label everywhere, agreed
    assert cohen_kappa(["C", "D"], ["D", "C"]) == pytest.approx(-1.0)
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError):
        cohen_kappa(["C"], [])


# --------------------------------------------------------------------------------------------
# The judge


@pytest.mark.parametrize(
    ("reply", "reading"),
    [
        ("C", "C"),
        (" d\n", "D"),
        ("conditional C", "conditional_C"),
        ("Conditional_C.", "conditional_C"),
        ('"none"', "none"),
        ("UNREAD", "unread"),
        ("C or D", "unread"),
        ("The answer is C", "unread"),
        ("cooperate", "unread"),
        ("conditional D", "unread"),
        ("", "unread"),
    ],
)
def test_judge_parses_strictly(reply: str, reading: str) -> None:
    assert parse_judgement(reply) == reading


def _config(provider: str = "mock") -> LLMAgentConfig:
    prompts = PromptFiles(system="s", round="r", personas_dir="p")
    return LLMAgentConfig(type="llm", model="x", provider=provider, prompts=prompts)


class FakeProvider:
    """Answers every call with a fixed reply and keeps the requests."""

    name, model, enforces_timeout, api_key = "fake", "x", True, None

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        return Completion(self.reply, 1, 1, 0.0)


@pytest.mark.parametrize(
    ("reply", "reading"),
    [("C", "C"), ("D", "D"), ("conditional C", "conditional_C"), ("none", "none")]
    + [("unread", "unread"), ("I think C", "unread")],
)
def test_judge_message_asks_with_the_fixed_prompt(reply: str, reading: str) -> None:
    fake = FakeProvider(reply)
    got = asyncio.run(judge_message(fake, _config(), 'He said "hi"\nthen left', ("J", "F")))  # type: ignore[arg-type]
    assert got == reading
    request = fake.requests[0]
    assert request.purpose == "judge"
    assert 'Message: "He said \\"hi\\"\\nthen left"' in request.prompt  # quoted, one line
    assert "J (cooperate) and F (defect)" in request.prompt


def test_mock_judge_is_plumbing_only() -> None:
    cfg = _config()
    got = asyncio.run(judge_message(MockProvider(cfg), cfg, "I will cooperate."))
    assert got in ("C", "D")
