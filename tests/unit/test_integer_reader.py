"""The integer readers' measured accuracy: the scorer on a hand-made table, the shipped corpus of
labelled replies, the reader rules the corpus showed wrong, and the accuracy printed where the
reply counts are (report, run summary)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdbench.core.integer_reader_scores import (
    UNREADABLE,
    accuracy_phrase,
    score_integer_readings,
)
from pdbench.core.parse_integer import (
    read_govsim_integer,
    read_pgg_contribution,
    read_pgg_punishment,
)
from pdbench.report.resources import readings_section
from pdbench.runners.science.resources import ResourceSummary, summary_lines
from pdbench.storage.integer_replies import (
    IntegerCorpusError,
    corpus_path,
    load_integer_replies,
)

SEATS = ("P1", "P2", "P3", "P4")


def test_scorer_on_a_hand_made_table() -> None:
    labels = [3, 5, UNREADABLE, 7, UNREADABLE]
    readings = [3, 4, UNREADABLE, UNREADABLE, 9]
    score = score_integer_readings(labels, readings)
    # right: 3 and the unreadable one; misread: 4 for 5, 9 for unreadable; missed: 7
    assert (score.n, score.correct, score.misread, score.missed) == (5, 2, 2, 1)
    assert score.accuracy == pytest.approx(0.4)
    # Wilson, z = 1.96, p = 0.4, n = 5: centre 0.44345, half-width 0.32583 (by hand)
    assert score.ci_low == pytest.approx(0.11762, abs=1e-4)
    assert score.ci_high == pytest.approx(0.76928, abs=1e-4)
    assert accuracy_phrase(score) == "2/5 correctly (accuracy 40% [12%, 77%])"


def test_scorer_without_replies_and_with_uneven_lists() -> None:
    empty = score_integer_readings([], [])
    assert empty.accuracy is None and empty.ci_low is None
    assert accuracy_phrase(empty) == "no labelled replies"
    with pytest.raises(ValueError):
        score_integer_readings([1], [])


def test_the_corpus_loads_and_every_line_is_labelled() -> None:
    raw = [json.loads(x) for x in corpus_path().read_text(encoding="utf-8").splitlines() if x]
    replies = load_integer_replies()
    assert len(replies) == len(raw) >= 60
    assert {r.stage for r in replies} == {"contribution", "punishment", "harvest"}
    assert all(row.get("label") is not None and row.get("source") for row in raw)
    assert any(r.label == UNREADABLE for r in replies)


def test_a_bad_corpus_line_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "c.jsonl"
    bad.write_text(
        '{"kind": "pgg", "stage": "harvest", "text": "x", "label": 1, '
        '"category": "c", "source": "written"}\n'
    )
    with pytest.raises(IntegerCorpusError, match="c.jsonl:1"):
        load_integer_replies(bad)


# Replies the corpus showed misread by the last-tag rule (an echoed example after the answer, or
# alone), or refused though plainly an integer; each failed on the reader before the fix.
@pytest.mark.parametrize(
    ("reply", "value"),
    [
        (
            "<contribution>25</contribution>\nWrite it inside `<contribution></contribution>`, "
            "e.g. `<contribution>10</contribution>`.",
            25,
        ),
        ("<contribution>5</contribution> (format: e.g. <contribution>10</contribution>)", 5),
        ("<contribution>7</contribution> for example <contribution>10</contribution>", 7),
        ("<contribution>**22**</contribution>", 22),
        ("<contribution>15 dollars</contribution>", 15),
        ("I'd like to give <contribution>20</contribution>", 20),
    ],
)
def test_an_echoed_example_after_the_answer_is_not_the_answer(reply: str, value: int) -> None:
    assert read_pgg_contribution(reply) == (value, None)


@pytest.mark.parametrize(
    "reply",
    [
        "e.g. `<contribution>10</contribution>`",
        "inside `<contribution></contribution>`, e.g. `<contribution>10</contribution>`.",
        "<contribution></contribution>",
    ],
)
def test_a_reply_that_only_echoes_the_prompt_is_a_problem(reply: str) -> None:
    got = read_pgg_contribution(reply)
    assert got.value is None and got.problem


def test_punishment_examples_echoed_are_not_answers() -> None:
    after = (
        "<punish>P3=5</punish>\nOtherwise, provide one line in the form `<punish>P2=50</punish>`"
    )
    assert read_pgg_punishment(after, SEATS) == ("P3", 5, None)
    assert read_pgg_punishment("<punish>NO</punish> (or e.g. <punish>P2=50</punish>)", SEATS) == (
        None,
        0,
        None,
    )
    only = read_pgg_punishment("in the form `<punish>P2=50</punish>`, meaning $50", SEATS)
    assert only.target is None and only.amount is None and only.problem


def test_govsim_keeps_its_documented_rule() -> None:
    # GovSim's regex: the first digits after the first marker, the sign not read
    assert read_govsim_integer("Answer: -5 tons") == (5, None)
    assert read_govsim_integer("Answer: 5 tons. Then Answer: 8 tons") == (5, None)


def _independent_count(kind: str) -> tuple[int, int]:
    """(right, all) on the shipped corpus, read here from the JSON lines and the readers."""
    right = total = 0
    for line in corpus_path().read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["kind"] != kind:
            continue
        total += 1
        if row["stage"] == "punishment":
            target, amount, problem = read_pgg_punishment(row["text"], SEATS)
            got = UNREADABLE if problem else ("NO" if not amount else f"{target}={amount}")
        else:
            reader = (
                read_pgg_contribution if row["stage"] == "contribution" else read_govsim_integer
            )
            value, problem = reader(row["text"])
            got = UNREADABLE if problem else value
        right += got == row["label"]
    return right, total


@pytest.mark.parametrize("kind", ["pgg", "commons"])
def test_the_accuracy_is_printed_in_the_report_and_the_summary(kind: str) -> None:
    right, total = _independent_count(kind)
    expected = f"read {right}/{total} correctly on the labelled set (accuracy {right / total:.0%}"
    row = {"condition": "llm", "decisions": 4, "parse_failures": 1, "fallbacks": 0, "clamped": 0}
    assert expected in readings_section([row], kind)
    summary = ResourceSummary(
        run_dir=Path("out"),
        run_id="r",
        kind=kind,
        n_games=1,
        n_rounds=2,
        rows=[{**row, **_metrics(kind)}],
        manifest={"conditions": [{"name": "llm", "llm": True}]},
    )
    (line,) = [x for x in summary_lines(summary) if x.startswith("replies:")]
    assert line.startswith("replies: 1 unreadable") and expected in line


def _metrics(kind: str) -> dict[str, float]:
    names = (
        ("contribution_rate", "efficiency", "punish_spent")
        if kind == "pgg"
        else ("survival", "survival_months", "efficiency")
    )
    return {f"{n}{end}": 0.5 for n in names for end in ("", "_ci_low", "_ci_high")} | {"n_games": 1}


def test_a_reward_tag_quoting_the_example_is_not_the_answer() -> None:
    from pdbench.core.parse_integer import read_pgg_reward

    seats = ("P1", "P2", "P3")
    echoed = "Reply e.g. <reward>P2=1</reward>. My answer: <reward>NO</reward>"
    assert read_pgg_reward(echoed, seats) == ({}, None)
    only = read_pgg_reward("Answer in the form <reward>P2=1</reward>", seats)
    assert only.tokens is None and "example" in (only.problem or "")
