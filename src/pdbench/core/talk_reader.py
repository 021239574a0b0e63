"""Reading what a message says, as its reader (the partner) sees it: the rule reader.

`read_message(text)` gives a `Reading`: the move the text commits its writer to (`C`, `D`),
a conditional commitment to cooperate (`conditional_C`: "I'll cooperate if you do"), no
statement of a move (`none`), or `unread`: a text the reader cannot read (a language it does not
know, a statement it cannot parse), never counted as "no statement". `standing` says whether the
statement binds beyond the next move ("always", "never", "from now on").

This first version reads as `core.talk.read_intent` does (the phrases of `INTENT_PHRASES`);
issue 29's reader replaces the rules behind the same interface.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdbench.core.talk import read_intent
from pdbench.core.types import Action

# What a message can say about its writer's moves.
READINGS: tuple[str, ...] = ("C", "D", "conditional_C", "none", "unread")
READER_NAME = "rules"


@dataclass(frozen=True, slots=True)
class Reading:
    """What one message says: `kind` (one of READINGS), whether it binds beyond the next move
    (`standing`), and for `unread`, why (`reason`, e.g. "language: de")."""

    kind: str
    standing: bool = False
    reason: str = ""

    def __post_init__(self) -> None:
        if self.kind not in READINGS:
            raise ValueError(f"a reading is one of {', '.join(READINGS)} (got {self.kind!r})")


def read_message(text: str, labels: tuple[str, str] = ("C", "D")) -> Reading:
    """What `text` says its writer will do (see the module docstring); `labels` are the move
    labels the writer was shown (J/F, C/D, ...), read as move words too."""
    found = read_intent(text, labels)
    if found is Action.C:
        return Reading("C")
    if found is Action.D:
        return Reading("D")
    return Reading("none")
