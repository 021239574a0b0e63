"""Turning an LLM's reply into a move.

Three answer formats: `token` (a C or a D), `json` (`{"action": "C"}`) and `choice` (the same
JSON object, which the server is asked to constrain to C or D). How the answer is found in the
reply is the agent's `answer_pattern`:

- null (the default): a reply that is exactly the answer form is read as it is; otherwise the
  *last* standalone capital C or D (token) or the last JSON object with an "action" of C or D
  (json, choice) counts, so a model that reasons before it answers still gets its move. Such a
  reading is marked `exact=False` in the call record.
- "exact": only a reply that is exactly the answer form counts (whitespace and case aside).
- any other string: a regular expression whose last match is the answer (its group `answer`,
  else its first group, else the whole match), C or D in any case.

`ParseResult.span` is where the answer letter sits in the reply, so the log-probabilities of
that token can be read (see `decision_probability`).

Every function takes the agent's action labels (`labels`, the words shown for C and D; ("J", "F")
as Akata et al. used): the model answers with the labels, and a label is read back as the move it
stands for. The defaults are ("C", "D").
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from pdbench.core.types import Action

OutputFormat = Literal["token", "json", "choice"]
Labels = tuple[str, str]  # the words shown for (C, D)
EXACT = "exact"
DEFAULT_LABELS: Labels = ("C", "D")


@cache
def _standalone(labels: Labels) -> re.Pattern[str]:
    """A label as a word of its own, written as given (case-sensitive)."""
    words = "|".join(re.escape(x) for x in sorted(labels, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_'])(?:{words})(?![A-Za-z0-9_'])")


@cache
def _action_value(labels: Labels) -> re.Pattern[str]:
    """`"action": "<label>"` in any case; group 1 is the label."""
    words = "|".join(re.escape(x) for x in sorted(labels, key=len, reverse=True))
    return re.compile(rf'"action"\s*:\s*"\s*({words})\s*"', re.IGNORECASE)


def label_action(value: str, labels: Labels = DEFAULT_LABELS) -> Action | None:
    """The move a label stands for (case and surrounding whitespace ignored), else None."""
    text = value.strip().upper()
    if text == labels[0].upper():
        return Action.C
    if text == labels[1].upper():
        return Action.D
    return None


def either(labels: Labels) -> str:
    """ "C or D" in the agent's labels."""
    return f"{labels[0]} or {labels[1]}"


@dataclass(frozen=True, slots=True)
class ParseResult:
    """The move read from a reply, or None with the reason it was rejected."""

    action: Action | None
    error: str | None = None
    span: tuple[int, int] | None = None  # where the answer letter is in the reply
    exact: bool = True  # the reply was exactly the answer form

    @property
    def ok(self) -> bool:
        """True when the reply gave a valid move."""
        return self.action is not None


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _label_span(reply: str, start: int, end: int, labels: Labels) -> tuple[int, int] | None:
    """The span of the first label (any case) in reply[start:end]."""
    lowered = reply[start:end].upper()
    found = [(i, len(label)) for label in labels if (i := lowered.find(label.upper())) >= 0]
    if not found:
        return None
    i, size = min(found)
    return (start + i, start + i + size)


def _exact(reply: str, output_format: OutputFormat, labels: Labels) -> ParseResult:
    """The strict reading: the whole reply (trimmed) is the answer form."""
    text = reply.strip()
    offset = len(reply) - len(reply.lstrip())
    if output_format == "token":
        action = label_action(text, labels)
        if action is not None:
            return ParseResult(action, span=(offset, offset + len(text)))
        return ParseResult(None, f"expected exactly {either(labels)} (got {_shorten(text)!r})")
    try:
        payload = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return ParseResult(None, f"not valid JSON (got {_shorten(text)!r})")
    c, d = labels
    if not isinstance(payload, dict) or set(payload) != {"action"}:
        return ParseResult(
            None, f'expected {{"action": "{c}"}} or {{"action": "{d}"}} (got {_shorten(text)!r})'
        )
    value = payload["action"]
    action = label_action(value, labels) if isinstance(value, str) else None
    if action is not None:
        found = _action_value(labels).search(reply)
        span = (found.start(1), found.end(1)) if found else None
        return ParseResult(action, span=span)
    return ParseResult(None, f'"action" must be "{c}" or "{d}" (got {value!r})')


def _last_json_action(reply: str, labels: Labels) -> ParseResult | None:
    """The last JSON object in the reply whose "action" is a label (other keys allowed)."""
    decoder = json.JSONDecoder()
    for start in range(len(reply) - 1, -1, -1):
        if reply[start] != "{":
            continue
        try:
            payload, end = decoder.raw_decode(reply, start)
        except (json.JSONDecodeError, RecursionError):
            continue
        if not isinstance(payload, dict):
            continue
        value = payload.get("action")
        action = label_action(value, labels) if isinstance(value, str) else None
        if action is not None:
            found = _action_value(labels).search(reply, start, end)
            span = (found.start(1), found.end(1)) if found else None
            return ParseResult(action, span=span, exact=False)
    return None


def _by_pattern(reply: str, pattern: str, labels: Labels) -> ParseResult:
    """The last match of a user's answer pattern."""
    regex = re.compile(pattern)
    matches = list(regex.finditer(reply))
    if not matches:
        return ParseResult(None, f"answer_pattern found no answer (got {_shorten(reply)!r})")
    last = matches[-1]
    group: int | str = "answer" if "answer" in regex.groupindex else (1 if regex.groups else 0)
    value = last.group(group)
    action = label_action(value, labels) if value is not None else None
    if action is None:
        return ParseResult(None, f"answer_pattern matched {value!r}, not {either(labels)}")
    start = last.start(group)
    span = _label_span(reply, start, last.end(group), labels)
    return ParseResult(action, span=span, exact=reply.strip() == value)


def parse_action(
    reply: str | None,
    output_format: OutputFormat = "token",
    answer_pattern: str | None = None,
    labels: Labels = DEFAULT_LABELS,
) -> ParseResult:
    """Read a move from `reply` (see the module docstring for the rules)."""
    if output_format not in ("token", "json", "choice"):
        raise ValueError(f"unknown output format {output_format!r} (valid: token, json, choice)")
    if reply is None or not reply.strip():
        return ParseResult(None, "empty reply")
    if answer_pattern not in (None, EXACT):
        return _by_pattern(reply, answer_pattern, labels)
    strict = _exact(reply, output_format, labels)
    if strict.ok or answer_pattern == EXACT:
        return strict
    if output_format == "token":
        words = list(_standalone(labels).finditer(reply))
        if words:
            last = words[-1]
            action = Action.C if last.group() == labels[0] else Action.D
            return ParseResult(action, span=(last.start(), last.end()), exact=False)
        return ParseResult(
            None, f"no {either(labels)} in the reply (got {_shorten(reply.strip())!r})"
        )
    found = _last_json_action(reply, labels)
    if found is not None:
        return found
    return ParseResult(
        None,
        f'no JSON object with "action" {either(labels)} in the reply '
        f"(got {_shorten(reply.strip())!r})",
    )


def expected_answer(output_format: OutputFormat, labels: Labels = DEFAULT_LABELS) -> str:
    """What a valid answer looks like, in words."""
    c, d = labels
    if output_format == "token":
        if len(c) == len(d) == 1:
            return f"exactly one letter: {c} or {d}"
        return f"exactly one word: {c} or {d}"
    return f'exactly {{"action": "{c}"}} or {{"action": "{d}"}}'


DEFAULT_REPROMPT = (
    "Your previous reply was invalid ({error}). Reply with {expected}, and nothing else."
)


def correction_message(
    output_format: OutputFormat,
    error: str,
    template: str | None = None,
    labels: Labels = DEFAULT_LABELS,
) -> str:
    """The user turn sent after an invalid reply (`template` takes {error} and {expected})."""
    return (template or DEFAULT_REPROMPT).format(
        error=error, expected=expected_answer(output_format, labels)
    )


@dataclass(frozen=True, slots=True)
class TokenLogprobs:
    """One generated token, its log-probability and the top alternatives at its position."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...]


def _token_text(token: str) -> str:
    return token.strip(" \t\n\"'{}:,.").upper()


def _reads_as(token: str, label: str, other: str) -> bool:
    """Whether a token reads as `label`: the whole label, or its start when the other label does
    not start the same way (a multi-token label such as "cooperate")."""
    text, label, other = _token_text(token), label.upper(), other.upper()
    if text == label:
        return True
    return bool(text) and label.startswith(text) and not other.startswith(text)


def answer_token_index(tokens: Sequence[TokenLogprobs], span: tuple[int, int]) -> int | None:
    """The index of the token that holds the answer letter at `span` of the reply the tokens
    spell; None when the tokens do not spell that far."""
    position = 0
    for index, item in enumerate(tokens):
        end = position + len(item.token)
        if position <= span[0] < end:
            return index
        position = end
    return None


def decision_probability(
    tokens: Sequence[TokenLogprobs] | None,
    span: tuple[int, int] | None,
    labels: Labels = DEFAULT_LABELS,
) -> float | None:
    """P(C) renormalised over C and D at the answer token: the summed probabilities of the top
    alternatives that read as the C label (" C", "c", '"C' ...) over those that read as either
    label. None when the provider gave no log-probabilities, the answer token cannot be found, or
    neither label is among the alternatives."""
    if not tokens or span is None:
        return None
    index = answer_token_index(tokens, span)
    if index is None:
        return None
    top = tokens[index].top or ((tokens[index].token, tokens[index].logprob),)
    c, d = labels
    p_c = sum(math.exp(lp) for tok, lp in top if _reads_as(tok, c, d) and math.isfinite(lp))
    p_d = sum(math.exp(lp) for tok, lp in top if _reads_as(tok, d, c) and math.isfinite(lp))
    if p_c + p_d <= 0.0:
        return None
    return p_c / (p_c + p_d)
