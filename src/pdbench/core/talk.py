"""Talk before you move: the message channel's settings, who speaks when, what a message says it
will do, and the message rules of scripted policies.

The channel (`communication` of an experiment or of one condition):

- `mode`: `none`; `pregame`, one exchange before round 1; `every_round`, an exchange before each
  move.
- `order`: `simultaneous` (in each turn every seat writes, none seeing another's message of that
  turn), `a_first` (A writes, then B, who has read A's message), `alternate` (A first in even
  exchanges, B first in odd ones; the exchange before round r is exchange r - 1, 0-based),
  `round_robin` (one seat at a time, in seat order from a first speaker that rotates by
  exchange: seat e mod N first in exchange e; for two seats the same as `alternate`).
  `a_first` and `alternate` are orders of two seats: a group of more is refused
  (`order_problem`).
- `audience` (group games): `broadcast`, every message is read by every seat; `directed`, in
  each turn a speaker writes one message to each co-player, read only by its addressee. Two
  seats: the same messages either way.
- `turns`: messages each agent writes per exchange; `max_chars`: a message is cut to this many
  characters; `history`: how many earlier messages an agent is shown (the current exchange's
  visible messages are always shown).

A message's **intention** is the move it says its writer will make next: the intention the
writer declared (an LLM's structured reply, a policy's rule), else the one read from its text
by the rule reader (`pdbench.core.talk_reader`, summed up in `INTENT_PHRASES`: first person
statements such as "I will cooperate", "I'll play J", "I won't defect"; a conditional promise, a
text that states both moves, or neither, or is not in English, states none). The
intention of an agent before a move is that of its last message of the exchange that states
one. Metrics compare it with the move the agent chose (before execution noise; a noise flip is
not the writer's doing), see `pdbench.core.talk_metrics`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from pdbench.core.strict import Strict
from pdbench.core.talk_reader import READER_NAME, READER_RULES, read_message
from pdbench.core.types import Action

MODES = ("none", "pregame", "every_round")
ORDERS = ("simultaneous", "a_first", "alternate", "round_robin")
GROUP_ORDERS = ("simultaneous", "round_robin")  # the orders of more than two seats
AUDIENCES = ("broadcast", "directed")
SOURCES = ("declared", "phrases", "none")  # where a message's intention came from


class CommunicationConfig(Strict):
    """The message channel of an experiment (or of one condition); see the module docstring."""

    mode: Literal["none", "pregame", "every_round"] = "none"
    order: Literal["simultaneous", "a_first", "alternate", "round_robin"] = "simultaneous"
    turns: int = Field(default=1, ge=1, le=10)
    max_chars: int = Field(default=280, ge=1, le=10_000)
    history: int = Field(default=10, ge=0, le=10_000)
    audience: Literal["broadcast", "directed"] = "broadcast"

    @model_serializer(mode="wrap")
    def _without_default_audience(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The channel as a dict, `audience` left out when broadcast: a config that does not
        set it keeps the snapshot (and config hash) it had before groups, so its runs resume."""
        out = handler(self)
        if out.get("audience") == "broadcast":
            del out["audience"]
        return out

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
    order: Literal["simultaneous", "a_first", "alternate", "round_robin"] | None = None
    turns: int | None = Field(default=None, ge=1, le=10)
    max_chars: int | None = Field(default=None, ge=1, le=10_000)
    history: int | None = Field(default=None, ge=0, le=10_000)
    audience: Literal["broadcast", "directed"] | None = None

    def over(self, base: CommunicationConfig) -> CommunicationConfig:
        """The channel of the condition: `base` with the keys set here replaced."""
        changed = self.model_dump(exclude_none=True)
        return base.model_copy(update=changed) if changed else base


def order_problem(order: str, n_players: int) -> str | None:
    """Why `order` cannot run a channel of `n_players` seats (one line with the valid orders),
    or None when it can."""
    if order in GROUP_ORDERS or (order in ORDERS and n_players == 2):
        return None
    valid = ORDERS if n_players == 2 else GROUP_ORDERS
    return (
        f"communication.order {order!r} is not an order of {n_players} players "
        f"(valid: {', '.join(valid)})"
    )


def speaking_groups(
    order: str, exchange_index: int, turns: int, n_players: int = 2
) -> list[tuple[int, ...]]:
    """The seats (0: A, 1: B, ... N-1) that write at once, in order, in one exchange: each group
    writes having read every message of the groups before it (and of earlier exchanges).
    `simultaneous`: all seats at once each turn; `round_robin`: one seat at a time, seat
    `exchange_index mod N` first; `a_first` / `alternate`: two seats only (ValueError for more)."""
    problem = order_problem(order, n_players)
    if problem is not None:
        raise ValueError(problem)
    if order == "simultaneous":
        return [tuple(range(n_players))] * turns
    if order == "round_robin":
        first = exchange_index % n_players
        return [((first + i) % n_players,) for i in range(n_players)] * turns
    first = 0 if order == "a_first" or exchange_index % 2 == 0 else 1
    return [(first,), (1 - first,)] * turns


# --------------------------------------------------------------------------------------------
# Reading an intention from a text

INTENT_PHRASES = (
    f"the {READER_NAME}: {READER_RULES} A message's intention is the move it states without "
    "condition (a conditional promise, a contradiction, a question, a text not in English or one "
    "no rule reads states none)."
)


def read_intent(text: str, labels: tuple[str, str] = ("C", "D")) -> Action | None:
    """The move a message says its writer will make next, read by the rule reader
    (`pdbench.core.talk_reader.read_message`, see `INTENT_PHRASES`): C or D when the text states
    exactly one of them without condition, None otherwise (a conditional promise, none, unread)."""
    kind = read_message(text, labels).kind
    return Action.C if kind == "C" else Action.D if kind == "D" else None


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
