"""The labelled message corpus shipped with pdbench, and the rule reader's measured accuracy on it.

`src/pdbench/data/talk_corpus.jsonl` (package data) holds one message a line:
`{"text", "label", "standing", "category", "source"}` and, for messages not in English,
`"language"` and `"meaning"` / `"meaning_standing"` (what the text says, to score a reader that
reads that language; its `label` is "unread", what an English-only reader should answer). The
labels were written by hand from each text's meaning, never by running a reader.

`reader_accuracy()` scores the rule reader on it (cached in the process, a few milliseconds);
`reader_accuracy_line(unread_share)` is the sentence the report and the app print beside the
talk metrics.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from pdbench.core.reader_scores import ReaderScores, score_reader
from pdbench.core.talk_reader import READER_NAME, READINGS, read_message
from pdbench.errors import PdbenchError

CORPUS_FILE = "talk_corpus.jsonl"
CATEGORIES = (
    "plain",
    "negation",
    "stop_end",
    "never",
    "paraphrase_c",
    "paraphrase_d",
    "labels",
    "proposal",
    "conditional",
    "standing",
    "contradiction",
    "question",
    "chitchat",
    "hedge",
    "mock",
    "local_model",
    "other_language",
)


class CorpusError(PdbenchError):
    """A corpus file that cannot be read (the message names the file and line)."""


@dataclass(frozen=True, slots=True)
class LabelledMessage:
    """One hand-labelled message of the corpus (see the module docstring)."""

    text: str
    label: str
    standing: bool
    category: str
    source: str
    labels: tuple[str, str] = ("C", "D")
    language: str = "en"
    meaning: str | None = None
    meaning_standing: bool | None = None


def corpus_path() -> Path:
    """Where the shipped corpus is."""
    return Path(str(resources.files("pdbench") / "data" / CORPUS_FILE))


def _message(row: object, where: str) -> LabelledMessage:
    if not isinstance(row, dict):
        raise CorpusError(f"{where}: not a JSON object")
    missing = [k for k in ("text", "label", "standing", "category", "source") if k not in row]
    if missing:
        raise CorpusError(f"{where}: missing {', '.join(missing)}")
    for key in ("label", "meaning"):
        if row.get(key) is not None and row[key] not in READINGS:
            raise CorpusError(f"{where}: {key} {row[key]!r} is not one of {', '.join(READINGS)}")
    if row["category"] not in CATEGORIES:
        raise CorpusError(f"{where}: unknown category {row['category']!r}")
    if not isinstance(row["text"], str) or not isinstance(row["standing"], bool):
        raise CorpusError(f"{where}: text must be a string and standing true or false")
    labels = row.get("labels", ["C", "D"])
    return LabelledMessage(
        text=row["text"],
        label=row["label"],
        standing=row["standing"],
        category=row["category"],
        source=str(row["source"]),
        labels=(str(labels[0]), str(labels[1])),
        language=str(row.get("language", "en")),
        meaning=row.get("meaning"),
        meaning_standing=row.get("meaning_standing"),
    )


def load_corpus(path: Path | None = None) -> list[LabelledMessage]:
    """The messages of a corpus file (default: the shipped one); a bad line is a CorpusError."""
    path = path or corpus_path()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read the corpus ({exc.strerror or exc})") from None
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{path}:{number}: not JSON ({exc.msg})") from None
        out.append(_message(row, f"{path}:{number}"))
    return out


@cache
def reader_accuracy(category: str | None = None) -> ReaderScores:
    """The rule reader's scores on the shipped corpus, or on one category of it (cached in the
    process)."""
    corpus = [m for m in load_corpus() if category is None or m.category == category]
    truth = [m.label for m in corpus]
    read = [read_message(m.text, m.labels).kind for m in corpus]
    return score_reader(truth, read, READINGS)


# The messages labelled before the rules were run on them (the others were written beside the
# rules, which were then fixed where they misread them: their scores flatter the rules).
HELD_OUT = "local_model"


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def reader_accuracy_line(unread_share: float | None = None) -> str:
    """One line naming the reader and its measured accuracy (on the whole corpus, and on the
    messages labelled before the rules met them), and (given) the share of this run's messages
    it left unread."""
    scores, held = reader_accuracy(), reader_accuracy(HELD_OUT)
    line = (
        f"said = {READER_NAME}: precision {_fmt(scores.precision['C'])}, recall "
        f"{_fmt(scores.recall['C'])} for promises of C, kappa {_fmt(scores.kappa)} on "
        f"{scores.n} labelled messages (kappa {_fmt(held.kappa)} on the {held.n} of them "
        "labelled before the rules were tuned: benchmarks/talk_reader.py)"
    )
    if unread_share is not None:
        line += f"; {unread_share:.0%} of this run's messages unread"
    return line
