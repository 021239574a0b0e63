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
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pdbench.core.types import Action

OutputFormat = Literal["token", "json", "choice"]
EXACT = "exact"

_STANDALONE = re.compile(r"(?<![A-Za-z0-9_'])[CD](?![A-Za-z0-9_'])")
_ACTION_VALUE = re.compile(r'"action"\s*:\s*"\s*([CDcd])\s*"')


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


def _letter_span(reply: str, start: int, end: int) -> tuple[int, int] | None:
    """The span of the first C/D letter (any case) in reply[start:end]."""
    for i in range(start, end):
        if reply[i] in "CDcd":
            return (i, i + 1)
    return None


def _exact(reply: str, output_format: OutputFormat) -> ParseResult:
    """The strict reading: the whole reply (trimmed) is the answer form."""
    text = reply.strip()
    offset = len(reply) - len(reply.lstrip())
    if output_format == "token":
        if text.upper() in ("C", "D"):
            return ParseResult(Action(text.upper()), span=(offset, offset + 1))
        return ParseResult(None, f"expected exactly C or D (got {_shorten(text)!r})")
    try:
        payload = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return ParseResult(None, f"not valid JSON (got {_shorten(text)!r})")
    if not isinstance(payload, dict) or set(payload) != {"action"}:
        return ParseResult(
            None, f'expected {{"action": "C"}} or {{"action": "D"}} (got {_shorten(text)!r})'
        )
    value = payload["action"]
    if isinstance(value, str) and value.strip().upper() in ("C", "D"):
        found = _ACTION_VALUE.search(reply)
        span = (found.start(1), found.end(1)) if found else None
        return ParseResult(Action(value.strip().upper()), span=span)
    return ParseResult(None, f'"action" must be "C" or "D" (got {value!r})')


def _last_json_action(reply: str) -> ParseResult | None:
    """The last JSON object in the reply whose "action" is C or D (other keys allowed)."""
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
        if isinstance(value, str) and value.strip().upper() in ("C", "D"):
            found = _ACTION_VALUE.search(reply, start, end)
            span = (found.start(1), found.end(1)) if found else None
            return ParseResult(Action(value.strip().upper()), span=span, exact=False)
    return None


def _by_pattern(reply: str, pattern: str) -> ParseResult:
    """The last match of a user's answer pattern."""
    regex = re.compile(pattern)
    matches = list(regex.finditer(reply))
    if not matches:
        return ParseResult(None, f"answer_pattern found no answer (got {_shorten(reply)!r})")
    last = matches[-1]
    group: int | str = "answer" if "answer" in regex.groupindex else (1 if regex.groups else 0)
    value = last.group(group)
    if value is None or value.strip().upper() not in ("C", "D"):
        return ParseResult(None, f"answer_pattern matched {value!r}, not C or D")
    start = last.start(group)
    span = _letter_span(reply, start, last.end(group))
    return ParseResult(Action(value.strip().upper()), span=span, exact=reply.strip() == value)


def parse_action(
    reply: str | None,
    output_format: OutputFormat = "token",
    answer_pattern: str | None = None,
) -> ParseResult:
    """Read a move from `reply` (see the module docstring for the rules)."""
    if output_format not in ("token", "json", "choice"):
        raise ValueError(f"unknown output format {output_format!r} (valid: token, json, choice)")
    if reply is None or not reply.strip():
        return ParseResult(None, "empty reply")
    if answer_pattern not in (None, EXACT):
        return _by_pattern(reply, answer_pattern)
    strict = _exact(reply, output_format)
    if strict.ok or answer_pattern == EXACT:
        return strict
    if output_format == "token":
        letters = list(_STANDALONE.finditer(reply))
        if letters:
            last = letters[-1]
            return ParseResult(Action(last.group()), span=(last.start(), last.end()), exact=False)
        return ParseResult(None, f"no C or D in the reply (got {_shorten(reply.strip())!r})")
    found = _last_json_action(reply)
    if found is not None:
        return found
    return ParseResult(
        None,
        f'no JSON object with "action" C or D in the reply (got {_shorten(reply.strip())!r})',
    )


def expected_answer(output_format: OutputFormat) -> str:
    """What a valid answer looks like, in words."""
    if output_format == "token":
        return "exactly one letter: C or D"
    return 'exactly {"action": "C"} or {"action": "D"}'


DEFAULT_REPROMPT = (
    "Your previous reply was invalid ({error}). Reply with {expected}, and nothing else."
)


def correction_message(output_format: OutputFormat, error: str, template: str | None = None) -> str:
    """The user turn sent after an invalid reply (`template` takes {error} and {expected})."""
    return (template or DEFAULT_REPROMPT).format(
        error=error, expected=expected_answer(output_format)
    )


@dataclass(frozen=True, slots=True)
class TokenLogprobs:
    """One generated token, its log-probability and the top alternatives at its position."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...]


def _label(token: str) -> str:
    return token.strip(" \t\n\"'{}:,.").upper()


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
    tokens: Sequence[TokenLogprobs] | None, span: tuple[int, int] | None
) -> float | None:
    """P(C) renormalised over C and D at the answer token: the summed probabilities of the top
    alternatives that read C (" C", "c", '"C' ...) over those that read C or D. None when the
    provider gave no log-probabilities, the answer token cannot be found, or neither C nor D is
    among the alternatives."""
    if not tokens or span is None:
        return None
    index = answer_token_index(tokens, span)
    if index is None:
        return None
    top = tokens[index].top or ((tokens[index].token, tokens[index].logprob),)
    p_c = sum(math.exp(lp) for tok, lp in top if _label(tok) == "C" and math.isfinite(lp))
    p_d = sum(math.exp(lp) for tok, lp in top if _label(tok) == "D" and math.isfinite(lp))
    if p_c + p_d <= 0.0:
        return None
    return p_c / (p_c + p_d)
