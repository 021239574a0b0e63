"""Turning an LLM's reply into a move, strictly: anything but the allowed form is invalid."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from pdbench.core.types import Action

OutputFormat = Literal["token", "json"]


@dataclass(frozen=True, slots=True)
class ParseResult:
    """The move read from a reply, or None with the reason it was rejected."""

    action: Action | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the reply gave a valid move."""
        return self.action is not None


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_action(reply: str | None, output_format: OutputFormat = "token") -> ParseResult:
    """Read a move from `reply`.

    token: exactly C or D after trimming whitespace, case-insensitive.
    json: a JSON object `{"action": "C"}` or `{"action": "D"}` (value case-insensitive, no other keys).
    """
    if reply is None:
        return ParseResult(None, "empty reply")
    text = reply.strip()
    if output_format == "token":
        if text.upper() in ("C", "D"):
            return ParseResult(Action(text.upper()))
        return ParseResult(None, f"expected exactly C or D (got {_shorten(text)!r})")
    if output_format == "json":
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
            return ParseResult(Action(value.strip().upper()))
        return ParseResult(None, f'"action" must be "C" or "D" (got {value!r})')
    raise ValueError(f"unknown output format {output_format!r} (valid: token, json)")


def correction_message(output_format: OutputFormat, error: str) -> str:
    """The short instruction appended when re-prompting after an invalid reply."""
    if output_format == "json":
        wanted = 'exactly {"action": "C"} or {"action": "D"}'
    else:
        wanted = "exactly one letter: C or D"
    return f"Your previous reply was invalid ({error}). Reply with {wanted}, and nothing else."
