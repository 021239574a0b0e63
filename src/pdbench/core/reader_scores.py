"""How well a message reader agrees with hand labels: precision and recall per label, Cohen's
kappa over all labels, and the share unread (pure arithmetic on pairs of labels).

- precision of label k: of the messages read as k, the share labelled k (None when none was
  read as k); recall of k: of the messages labelled k, the share read as k (None when none is
  labelled k).
- Cohen's kappa: (p_o - p_e) / (1 - p_e), p_o the share of agreement, p_e the agreement
  expected by chance from the two sets of label frequencies; 1.0 when both give one and the
  same label to every message (p_e = 1), None for no messages.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReaderScores:
    """Agreement of a reader with the hand labels of `n` messages."""

    n: int
    precision: dict[str, float | None]
    recall: dict[str, float | None]
    kappa: float | None
    accuracy: float | None
    unread_share: float | None


def cohen_kappa(truth: Sequence[str], read: Sequence[str]) -> float | None:
    """Cohen's kappa of two labellings of the same messages (see the module docstring)."""
    n = len(truth)
    if n != len(read):
        raise ValueError("the two labellings differ in length")
    if n == 0:
        return None
    observed = sum(a == b for a, b in zip(truth, read, strict=True)) / n
    left, right = Counter(truth), Counter(read)
    expected = sum(left[k] * right[k] for k in left) / (n * n)
    if expected == 1.0:
        return 1.0
    return (observed - expected) / (1.0 - expected)


def score_reader(truth: Sequence[str], read: Sequence[str], labels: Iterable[str]) -> ReaderScores:
    """Precision and recall of each of `labels`, kappa, accuracy and the share read as
    "unread", of the readings `read` against the hand labels `truth`."""
    if len(truth) != len(read):
        raise ValueError("the two labellings differ in length")
    pairs = list(zip(truth, read, strict=True))
    precision: dict[str, float | None] = {}
    recall: dict[str, float | None] = {}
    for label in labels:
        hits = sum(t == label and r == label for t, r in pairs)
        as_read = sum(r == label for _, r in pairs)
        labelled = sum(t == label for t, _ in pairs)
        precision[label] = hits / as_read if as_read else None
        recall[label] = hits / labelled if labelled else None
    n = len(pairs)
    return ReaderScores(
        n=n,
        precision=precision,
        recall=recall,
        kappa=cohen_kappa(truth, read),
        accuracy=sum(t == r for t, r in pairs) / n if n else None,
        unread_share=sum(r == "unread" for _, r in pairs) / n if n else None,
    )
