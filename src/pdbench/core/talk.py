"""Talk before you move: the message channel's settings, who speaks when, what a message says it
will do, and the message rules of scripted policies.

The channel (`communication` of an experiment or of one condition):

- `mode`: `none`; `pregame`, one exchange before round 1; `every_round`, an exchange before each
  move.
- `order`: `simultaneous` (in each turn both write, neither seeing the other's message of that
  turn), `a_first` (A writes, then B, who has read A's message), `alternate` (A first in even
  exchanges, B first in odd ones; the exchange before round r is exchange r - 1, 0-based).
- `turns`: messages each agent writes per exchange; `max_chars`: a message is cut to this many
  characters; `history`: how many earlier messages an agent is shown (the current exchange's
  visible messages are always shown).

A message's **intention** is the move it says its writer will make next: the intention the
writer declared (an LLM's structured reply, a policy's rule), else the one read from its text
by the phrase table `INTENT_PHRASES` (first person statements such as "I will cooperate",
"I'll play J", "I won't defect"; a text that states both moves, or neither, states none). The
intention of an agent before a move is that of its last message of the exchange that states
one. Metrics compare it with the move the agent chose (before execution noise; a noise flip is
not the writer's doing), see `pdbench.core.talk_metrics`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from pydantic import Field

from pdbench.core.strict import Strict
from pdbench.core.types import Action

MODES = ("none", "pregame", "every_round")
ORDERS = ("simultaneous", "a_first", "alternate")
SOURCES = ("declared", "phrases", "none")  # where a message's intention came from


class CommunicationConfig(Strict):
    """The message channel of an experiment (or of one condition); see the module docstring."""

    mode: Literal["none", "pregame", "every_round"] = "none"
    order: Literal["simultaneous", "a_first", "alternate"] = "simultaneous"
    turns: int = Field(default=1, ge=1, le=10)
    max_chars: int = Field(default=280, ge=1, le=10_000)
    history: int = Field(default=10, ge=0, le=10_000)

    @property
    def enabled(self) -> bool:
        """Agents talk in this game."""
        return self.mode != "none"

    def exchange_before(self, round_index: int) -> bool:
        """Whether an exchange of messages precedes round `round_index` (0-based)."""
        return self.mode == "every_round" or (self.mode == "pregame" and round_index == 0)


class CommunicationOverride(Strict):
    """A condition's changes to the experiment's channel: the keys it sets replace the
    experiment's, the others are inherited."""

    mode: Literal["none", "pregame", "every_round"] | None = None
    order: Literal["simultaneous", "a_first", "alternate"] | None = None
    turns: int | None = Field(default=None, ge=1, le=10)
    max_chars: int | None = Field(default=None, ge=1, le=10_000)
    history: int | None = Field(default=None, ge=0, le=10_000)

    def over(self, base: CommunicationConfig) -> CommunicationConfig:
        """The channel of the condition: `base` with the keys set here replaced."""
        changed = self.model_dump(exclude_none=True)
        return base.model_copy(update=changed) if changed else base


def speaking_groups(order: str, exchange_index: int, turns: int) -> list[tuple[int, ...]]:
    """The seats (0: A, 1: B) that write at once, in order, in one exchange: each group writes
    having read every message of the groups before it (and of earlier exchanges)."""
    if order == "simultaneous":
        return [(0, 1)] * turns
    first = 0 if order == "a_first" or exchange_index % 2 == 0 else 1
    return [(first,), (1 - first,)] * turns


# --------------------------------------------------------------------------------------------
# Reading an intention from a text

_WILL = (
    r"(?:i\s*(?:will|'ll|shall|am going to|'m going to|promise to|intend to|plan to)"
    r"|let's|let us|we\s*(?:will|should|'ll))"
)
_WONT = r"(?:i\s*(?:will not|won't|shall not|am not going to|'m not going to|promise not to|never))"
_FILLER = r"(?:\s+(?!not\b|never\b|n't\b)[\w']+){0,2}?"  # "always", "definitely", ...
_PLAY = r"(?:\s+(?:play|choose|pick|select|go with|answer))?"


def _phrases(c_words: list[str], d_words: list[str]) -> list[tuple[re.Pattern[str], Action]]:
    def words(ws: list[str]) -> str:
        return "|".join(re.escape(w) for w in ws)

    out = []
    for stated, negated, target in ((c_words, d_words, Action.C), (d_words, c_words, Action.D)):
        will = rf"\b{_WILL}(?!\s+not\b|\s+never\b){_FILLER}{_PLAY}\s+(?:{words(stated)})\b"
        out.append((re.compile(will), target))
        out.append((re.compile(rf"\b{_WONT}{_PLAY}\s+(?:{words(negated)})\b"), target))
    return out


# The words of each move: the action words, and the labels an agent is shown (J/F, C/D, ...).
C_WORDS = ["cooperate", "cooperating", "cooperation", "stay cooperative"]
D_WORDS = ["defect", "defecting", "defection", "betray you", "cheat"]
INTENT_PHRASES = (
    "first person statements of the next move: 'I will / I'll / I shall / I am going to / "
    "I promise to / I intend to / I plan to / let's / we will / we should' followed (within two "
    "words, optionally 'play', 'choose', 'pick', 'select', 'go with') by a move word; "
    "'I will not / won't / never' followed by a move word states the other move. Move words: "
    f"C: {', '.join(C_WORDS)} or the agent's C label; D: {', '.join(D_WORDS)} or its D label."
)


def read_intent(text: str, labels: tuple[str, str] = ("C", "D")) -> Action | None:
    """The move a message says its writer will make next (see `INTENT_PHRASES`): C or D when
    the text states exactly one of them, None when it states neither or both."""
    lowered = " ".join(text.lower().replace("’", "'").split())
    c_words = [*C_WORDS, labels[0].lower()]
    d_words = [*D_WORDS, labels[1].lower()]
    found = {target for pattern, target in _phrases(c_words, d_words) if pattern.search(lowered)}
    return found.pop() if len(found) == 1 else None


def clip_text(text: str, max_chars: int) -> str:
    """A message as sent: whitespace collapsed at the ends, cut to `max_chars` characters."""
    text = text.strip()
    return text if len(text) <= max_chars else text[:max_chars]


# What `quote_message` escapes: the quote, the backslash, every control character (Unicode
# category Cc: U+0000-U+001F and U+007F-U+009F, so NUL, tab, newline, CR, ESC, DEL, NEL) and the
# line and paragraph separators (U+2028, U+2029: categories Zl and Zp); short forms where JSON
# has them, else \uXXXX.
_TO_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f-\x9f\u2028\u2029]')
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    return _SHORT_ESCAPES.get(char) or f"\\u{ord(char):04x}"


def quote_message(text: str) -> str:
    """A message as another agent's prompt shows it: in double quotes, on one line, its quotes,
    backslashes, line breaks, tabs and other control characters escaped (a JSON string: `json.loads`
    gives the text back), so no message can pass for a line of the prompt around it."""
    return '"' + _TO_ESCAPE.sub(_escape, text) + '"'


# --------------------------------------------------------------------------------------------
# Message rules of scripted policies

RuleFn = Callable[[Action, "str | None"], tuple[str, Action | None] | None]
MESSAGE_RULES: dict[str, tuple[str, RuleFn]] = {}


def register_rule(name: str, description: str) -> Callable[[RuleFn], RuleFn]:
    """Decorator: register a message rule under `name`; a duplicate name is an error."""

    def add(fn: RuleFn) -> RuleFn:
        if name in MESSAGE_RULES:
            raise ValueError(f"duplicate message rule {name!r}")
        MESSAGE_RULES[name] = (description, fn)
        return fn

    return add


@register_rule("silent", "says nothing")
def _silent(planned: Action, text: str | None) -> tuple[str, Action | None] | None:
    return None


@register_rule("honest", "announces the move it will play")
def _honest(planned: Action, text: str | None) -> tuple[str, Action | None] | None:
    return ("I will cooperate." if planned is Action.C else "I will defect."), planned


@register_rule("always_promise", "promises to cooperate, whatever it plays")
def _always_promise(planned: Action, text: str | None) -> tuple[str, Action | None] | None:
    return "I will cooperate.", Action.C


@register_rule("fixed", "says `talk_text` every time (its intention read from the text)")
def _fixed(planned: Action, text: str | None) -> tuple[str, Action | None] | None:
    return (text or ""), None


def rule_names() -> list[str]:
    """The registered message rules."""
    return list(MESSAGE_RULES)


def rule_message(
    rule: str, planned: Action, text: str | None, labels: tuple[str, str] = ("C", "D")
) -> tuple[str, Action | None, str] | None:
    """A policy's message under `rule` when it plans to play `planned`: (text, intention,
    source), or None when it says nothing."""
    said = MESSAGE_RULES[rule][1](planned, text)
    if said is None:
        return None
    words, declared = said
    if declared is not None:
        return words, declared, "declared"
    read = read_intent(words, labels)
    return words, read, "phrases" if read is not None else "none"
