"""Named ways of reading a reply (an LLM agent's `parse`), for recipes that must read replies
exactly as a paper's code read them. Each mode is registered once here with `@parse_mode`; the
config accepts the registered names, and `read_reply` is what the LLM agent calls.

- `fontana_json` (Fontana, Pittis & Perini 2024, their `find_json_object`): in the reply, an
  apostrophe between two ASCII letters becomes a comma ("I'll" -> "I,ll") and every other
  apostrophe a double quote; the first "{" starts the object, which ends where the count of "{"
  and "}" (inside strings too) is back to zero; that text must load as JSON, and its "action"
  must be exactly one of the two labels ("Cooperate", "Defect"). Anything else - no object, an
  object never closed (cut at the token limit), invalid JSON (a trailing or missing comma,
  broken quotes), no "action", another value - is a failed reading, which the recipe plays as a
  defection (`on_parse_failure: defect`, `max_retries: 0`), as their code did.
- `akata_exact` (Akata et al. 2023, `pd/query_main.py`): the reply with surrounding whitespace
  removed must be exactly one of the two labels ("J", "F"), case included; anything else is a
  failed reading.

Both modes read the agent's action labels, so they work with any labels.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from pdbench.core.parse import (
    DEFAULT_LABELS,
    Labels,
    OutputFormat,
    ParseResult,
    either,
    parse_action,
)
from pdbench.core.types import Action

Reader = Callable[[str, Labels], ParseResult]


@dataclass(frozen=True, slots=True)
class ParseMode:
    """A registered way of reading a reply: the output format it reads and its reader."""

    name: str
    output_format: OutputFormat
    read: Reader
    summary: str


_MODES: dict[str, ParseMode] = {}


def parse_mode(name: str, output_format: OutputFormat, summary: str) -> Callable[[Reader], Reader]:
    """Register a reader under `name` (the value of an LLM agent's `parse`)."""

    def register(read: Reader) -> Reader:
        if name in _MODES:
            raise ValueError(f"parse mode {name!r} is registered twice")
        _MODES[name] = ParseMode(name, output_format, read, summary)
        return read

    return register


def parse_mode_names() -> list[str]:
    """The registered parse modes, sorted."""
    return sorted(_MODES)


def get_parse_mode(name: str) -> ParseMode:
    """The registered mode `name` (KeyError naming the valid ones otherwise)."""
    try:
        return _MODES[name]
    except KeyError:
        raise KeyError(
            f"unknown parse mode {name!r} (valid: {', '.join(parse_mode_names())})"
        ) from None


def parse_settings_problem(
    mode: str | None, answer_pattern: str | None, output_format: str
) -> str | None:
    """What is wrong with an agent's `parse` beside its other reading settings, or None."""
    if mode is None:
        return None
    if mode not in _MODES:
        return f"unknown parse mode {mode!r} (valid: {', '.join(parse_mode_names())})"
    if answer_pattern is not None:
        return f"parse ({mode}) and answer_pattern are two ways of reading a reply: set one of them"
    wanted = _MODES[mode].output_format
    if output_format != wanted:
        return f"parse {mode} reads output_format {wanted} (this agent's is {output_format})"
    return None


def _shown(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _label_move(value: object, labels: Labels) -> Action | None:
    """The move a value stands for when it is exactly a label (case and spaces included)."""
    if value == labels[0]:
        return Action.C
    if value == labels[1]:
        return Action.D
    return None


# --- Fontana et al. 2024 -----------------------------------------------------------------------

_APOSTROPHE_IN_WORD = re.compile(r"([a-zA-Z])'([a-zA-Z])")
_ACTION_KEY = re.compile(r'"action"\s*:')


def _first_braced(text: str) -> tuple[int, int] | None:
    """Where the first "{" starts and the count of braces first returns to zero (end exclusive;
    braces inside strings count too); None when there is no "{". (start, -1) when the object is
    never closed."""
    start = text.find("{")
    if start < 0:
        return None
    depth = 0
    for index in range(start, len(text)):
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return (start, index + 1)
    return (start, -1)


@parse_mode(
    "fontana_json",
    output_format="json",
    summary="the first JSON object as Fontana et al.'s find_json_object reads it; its action "
    "exactly a label",
)
def read_fontana_json(reply: str, labels: Labels = DEFAULT_LABELS) -> ParseResult:
    """Read a reply as Fontana et al.'s parser did (see the module docstring)."""
    # Each substitution replaces one character with one, so positions stay those of the reply.
    text = _APOSTROPHE_IN_WORD.sub(r"\1,\2", reply).replace("'", '"')
    found = _first_braced(text)
    if found is None:
        return ParseResult(None, f"no JSON object in the reply (got {_shown(reply.strip())})")
    start, end = found
    if end < 0:
        return ParseResult(
            None, f"the first JSON object is never closed (got {_shown(reply[start:])})"
        )
    try:
        payload = json.loads(text[start:end])
    except (json.JSONDecodeError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deep"
        return ParseResult(
            None,
            f"the first JSON object is not valid JSON ({reason}; got {_shown(text[start:end])})",
        )
    if not isinstance(payload, dict) or "action" not in payload:
        return ParseResult(
            None, f'the first JSON object has no "action" (got {_shown(text[start:end])})'
        )
    value = payload["action"]
    action = _label_move(value, labels)
    if action is None:
        return ParseResult(
            None, f'"action" must be exactly "{labels[0]}" or "{labels[1]}" (got {value!r})'
        )
    found = list(re.finditer(rf'"action"\s*:\s*"({re.escape(value)})"', text[start:end]))
    # the last one: JSON keeps the last of repeated keys
    span = (start + found[-1].start(1), start + found[-1].end(1)) if found else None
    exact = (
        reply.strip() == reply[start:end]
        and set(payload) == {"action"}
        and len(_ACTION_KEY.findall(text, start, end)) == 1
    )
    return ParseResult(action, span=span, exact=exact)


# --- Akata et al. 2023 -------------------------------------------------------------------------


@parse_mode(
    "akata_exact",
    output_format="token",
    summary="the reply, trimmed, exactly one of the two labels (as Akata et al.'s code compared "
    "it)",
)
def read_akata_exact(reply: str, labels: Labels = DEFAULT_LABELS) -> ParseResult:
    """Read a reply as Akata et al.'s code did (see the module docstring)."""
    text = reply.strip()
    action = _label_move(text, labels)
    if action is None:
        return ParseResult(None, f"expected exactly {either(labels)} (got {_shown(text)})")
    offset = len(reply) - len(reply.lstrip())
    return ParseResult(action, span=(offset, offset + len(text)))


def read_reply(
    reply: str | None,
    output_format: OutputFormat = "token",
    answer_pattern: str | None = None,
    labels: Labels = DEFAULT_LABELS,
    mode: str | None = None,
) -> ParseResult:
    """The move in a reply: by the named parse `mode` when one is set, else by `parse_action`'s
    rules (output format and answer pattern)."""
    if mode is None:
        return parse_action(reply, output_format, answer_pattern, labels)
    if reply is None or not reply.strip():
        return ParseResult(None, "empty reply")
    return get_parse_mode(mode).read(reply, labels)
