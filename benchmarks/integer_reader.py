"""How well the integer readers read: `core.parse_integer`'s readers against the hand labels of
the shipped corpus (`src/pdbench/data/integer_replies.jsonl`, see
`pdbench.storage.integer_replies`).

Prints the accuracy with its Wilson 95% interval overall, per game kind, per stage and per
source, then every reply read wrong (label, reading, category, text).

    uv run python benchmarks/integer_reader.py [--corpus FILE]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from pdbench.core.integer_reader_scores import accuracy_phrase, score_integer_readings
from pdbench.storage.integer_replies import LabelledReply, load_integer_replies, reading_of


def _line(name: str, replies: Sequence[LabelledReply]) -> str:
    score = score_integer_readings([r.label for r in replies], [reading_of(r) for r in replies])
    return (
        f"{name:<22} {accuracy_phrase(score)}; misread {score.misread}, "
        f"readable re-asked {score.missed}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Print the scores (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=None)
    args = parser.parse_args(argv)
    replies = load_integer_replies(args.corpus)
    print(_line("all", replies))
    for field in ("kind", "stage", "source"):
        for value in sorted({getattr(r, field) for r in replies}):
            print(_line(f"{field}={value}", [r for r in replies if getattr(r, field) == value]))
    print("\nread wrong (label -> reading):")
    for r in replies:
        read = reading_of(r)
        if read != r.label:
            print(
                f"  {r.label!s:>10} -> {read!s:<10} {r.stage:<12} {r.category:<12} {r.text!r:.90}"
            )


if __name__ == "__main__":
    main()
