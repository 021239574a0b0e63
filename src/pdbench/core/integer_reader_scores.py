"""How well the integer readers (`core.parse_integer`) agree with hand labels: accuracy with a
Wilson 95% interval (pure arithmetic on pairs of readings).

A reading is what the seat takes from one reply: the value when the reader reports no problem,
or UNREADABLE when it reports one (the seat is then asked again and the value, if any, is not
used; `agents.resource_llm.ResourceLLMSeat.ask`). A pair is correct when the reading equals the
hand label, so a reply labelled UNREADABLE is read correctly exactly when the reader reports a
problem. Of the wrong ones, a *misread* took a value the label does not hold (the harmful
error: a wrong number enters the game), a *missed* one reported a problem on a reply a careful
human reads (harmless but for a re-ask).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from pdbench.core.stats import wilson_interval

UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class IntegerReaderScore:
    """Agreement of the readings of `n` replies with their hand labels."""

    n: int
    correct: int
    misread: int
    missed: int
    accuracy: float | None
    ci_low: float | None
    ci_high: float | None


def score_integer_readings(
    labels: Sequence[Hashable], readings: Sequence[Hashable]
) -> IntegerReaderScore:
    """Accuracy (share of readings equal to their label) with its Wilson 95% interval, and the
    wrong readings split into misread and missed (module docstring)."""
    if len(labels) != len(readings):
        raise ValueError("labels and readings differ in length")
    pairs = list(zip(labels, readings, strict=True))
    n = len(pairs)
    correct = sum(label == read for label, read in pairs)
    misread = sum(read != UNREADABLE and read != label for label, read in pairs)
    missed = sum(read == UNREADABLE and label != UNREADABLE for label, read in pairs)
    low, high = wilson_interval(correct, n)
    return IntegerReaderScore(
        n=n,
        correct=correct,
        misread=misread,
        missed=missed,
        accuracy=correct / n if n else None,
        ci_low=low,
        ci_high=high,
    )


def accuracy_phrase(score: IntegerReaderScore) -> str:
    """'X/Y correctly (accuracy 97% [91%, 99%])', or 'no labelled replies' when Y is 0."""
    if not score.n or score.accuracy is None:
        return "no labelled replies"
    ci = (
        ""
        if score.ci_low is None or score.ci_high is None
        else f" [{score.ci_low:.0%}, {score.ci_high:.0%}]"
    )
    return f"{score.correct}/{score.n} correctly (accuracy {score.accuracy:.0%}{ci})"
