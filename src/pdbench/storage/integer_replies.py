"""The labelled integer replies shipped with pdbench, and the integer readers' measured accuracy.

`src/pdbench/data/integer_replies.jsonl` (package data) holds one reply a line:
`{"kind", "stage", "text", "label", "category", "source"}`: kind "pgg" (stage "contribution" or
"punishment") or "commons" (stage "harvest"); label the integer a careful human reads in the
text (for a punishment "NO" or "P2=5"), or "unreadable"; source "written" (by hand, in the
shapes small models answer in, the prompts' own examples among them) or "smollm2" (real replies
of SmolLM2-135M-Instruct to the games' prompts, from a local run). Labels were written from the
text, never by running a reader; where a human and an author's documented rule disagree (GovSim
reads "-5" as 5), the label is the human's, and the accuracy counts the rule's reading as wrong.

`integer_reader_score(kind)` scores the readers on it (cached in the process);
`integer_reader_line(kind)` is the sentence the report, the run summary and the app print.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from pdbench.core.integer_reader_scores import (
    UNREADABLE,
    IntegerReaderScore,
    accuracy_phrase,
    score_integer_readings,
)
from pdbench.core.parse_integer import (
    read_govsim_integer,
    read_pgg_contribution,
    read_pgg_punishment,
)
from pdbench.errors import PdbenchError

CORPUS_FILE = "integer_replies.jsonl"
STAGES = {"contribution": "pgg", "punishment": "pgg", "harvest": "commons"}
SOURCES = ("written", "smollm2")
# The seats a punishment may name (PGG-Bench's preset has four players).
PGG_SEATS = ("P1", "P2", "P3", "P4")


class IntegerCorpusError(PdbenchError):
    """A corpus file that cannot be read (the message names the file and line)."""


@dataclass(frozen=True, slots=True)
class LabelledReply:
    """One hand-labelled reply of the corpus (module docstring)."""

    kind: str
    stage: str
    text: str
    label: int | str
    category: str
    source: str


def corpus_path() -> Path:
    """Where the shipped corpus is."""
    return Path(str(resources.files("pdbench") / "data" / CORPUS_FILE))


def _label_ok(stage: str, label: object) -> bool:
    if label == UNREADABLE:
        return True
    if stage == "punishment":
        if label == "NO":
            return True
        seat, _, amount = str(label).partition("=")
        return seat in PGG_SEATS and amount.isdigit()
    return isinstance(label, int) and not isinstance(label, bool)


def _reply(row: object, where: str) -> LabelledReply:
    if not isinstance(row, dict):
        raise IntegerCorpusError(f"{where}: not a JSON object")
    missing = [k for k in ("kind", "stage", "text", "label", "category", "source") if k not in row]
    if missing:
        raise IntegerCorpusError(f"{where}: missing {', '.join(missing)}")
    stage = row["stage"]
    if STAGES.get(stage) != row["kind"]:
        raise IntegerCorpusError(f"{where}: stage {stage!r} is not a stage of kind {row['kind']!r}")
    if not isinstance(row["text"], str):
        raise IntegerCorpusError(f"{where}: text must be a string")
    if not _label_ok(stage, row["label"]):
        raise IntegerCorpusError(f"{where}: label {row['label']!r} is not a {stage} reading")
    if row["source"] not in SOURCES:
        raise IntegerCorpusError(f"{where}: source {row['source']!r} not one of {SOURCES}")
    return LabelledReply(
        kind=row["kind"],
        stage=stage,
        text=row["text"],
        label=row["label"],
        category=str(row["category"]),
        source=row["source"],
    )


def load_integer_replies(path: Path | None = None) -> list[LabelledReply]:
    """The replies of a corpus file (default: the shipped one); a bad line is an error."""
    path = path or corpus_path()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise IntegerCorpusError(
            f"{path}: cannot read the corpus ({exc.strerror or exc})"
        ) from None
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise IntegerCorpusError(f"{path}:{number}: not JSON ({exc.msg})") from None
        out.append(_reply(row, f"{path}:{number}"))
    return out


def reading_of(reply: LabelledReply) -> int | str:
    """What a seat takes from the reply: the reader's value, or UNREADABLE when the reader
    reports a problem (a punishment as "NO" or "P2=5")."""
    if reply.stage == "punishment":
        got = read_pgg_punishment(reply.text, PGG_SEATS)
        if got.problem is not None:
            return UNREADABLE
        return "NO" if got.target is None or not got.amount else f"{got.target}={got.amount}"
    reader = read_pgg_contribution if reply.stage == "contribution" else read_govsim_integer
    value, problem = reader(reply.text)
    return UNREADABLE if problem is not None or value is None else value


@cache
def integer_reader_score(kind: str | None = None) -> IntegerReaderScore:
    """The readers' score on the shipped corpus, or on one game kind of it (cached)."""
    corpus = [r for r in load_integer_replies() if kind is None or r.kind == kind]
    return score_integer_readings([r.label for r in corpus], [reading_of(r) for r in corpus])


def integer_reader_line(kind: str | None = None) -> str:
    """'integer replies read X/Y correctly on the labelled set (accuracy ...)' for one game kind
    (all replies when None), naming the corpus."""
    score = integer_reader_score(kind)
    what = {"pgg": "contribution and punishment", "commons": "harvest"}.get(kind or "", "integer")
    if not score.n:
        return f"{what} replies: no labelled replies (data/{CORPUS_FILE})"
    count, _, accuracy = accuracy_phrase(score).partition(" (")
    return (
        f"{what} replies read {count} on the labelled set ({accuracy}; {score.misread} "
        f"misread, {score.missed} readable ones re-asked (data/{CORPUS_FILE}, "
        "benchmarks/integer_reader.py)"
    )
