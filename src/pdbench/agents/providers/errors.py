"""Turning SDK exceptions (openai, anthropic, litellm) into retryable or fatal ProviderErrors."""

from __future__ import annotations

import json
import re

from pdbench.agents.providers.base import ProviderError, malformed

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
RETRYABLE_NAMES = (
    "Timeout",
    "Connection",
    "ResponseValidation",
    "InternalServer",
    "ServiceUnavailable",
    "RateLimit",
    "BadGateway",
    "Overloaded",
    "GatewayTimeout",
)
FATAL_HINTS = {
    400: "the request was rejected (check model name and decoding settings)",
    401: "authentication failed (check that the API key variable is set and valid)",
    403: "permission denied (check the key's access to this model)",
    404: "model or endpoint not found (check model and base_url)",
    422: "the request was rejected (check decoding settings)",
}


def _status(exc: BaseException) -> int | None:
    for attr in ("status_code", "status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def _retry_after(exc: BaseException) -> float | None:
    raw = None
    # openai/anthropic keep the HTTP response; litellm copies its headers to the exception.
    sources = (
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "litellm_response_headers", None),
        getattr(exc, "headers", None),
    )
    for headers in sources:
        try:
            raw = headers.get("retry-after") or headers.get("Retry-After") if headers else None
        except (AttributeError, TypeError):
            raw = None
        if raw is not None:
            break
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None


# litellm reports a reply it could not read as an HTTP 500 of its own making, with its parser's
# traceback in the message; these are its wordings (litellm/llms/openai/openai.py and
# litellm_core_utils/llm_response_utils/convert_dict_to_response.py).
_LITELLM_MALFORMED = (
    ("provider returned 'choices' that is not a list", "no choices"),
    ("Empty or invalid response from LLM endpoint", "empty, or not a JSON object"),
    ("Invalid response object", "litellm could not read it as a chat completion"),
)
# A JSON decoding error (json.JSONDecodeError's wording) ending litellm's message.
_JSON_ERROR = re.compile(
    r"Exception - ((?:Expecting|Extra data|Unterminated|Invalid)[^:\n]*): "
    r"line (\d+) column (\d+) \(char \d+\)$"
)


def _malformed_reply(exc: BaseException) -> ProviderError | None:
    """A malformed-reply error when `exc` says the reply could not be parsed, else None."""
    if isinstance(exc, json.JSONDecodeError):
        return malformed(f"not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})")
    if not type(exc).__module__.startswith("litellm"):
        return None
    text = str(exc)
    for marker, what in _LITELLM_MALFORMED:
        if marker in text:
            return malformed(what)
    first = (text.strip().splitlines() or [""])[0]
    if found := _JSON_ERROR.search(first):
        msg, line, column = found.groups()
        return malformed(f"not valid JSON ({msg}, line {line} column {column})")
    return None


def redact(text: str, secret: str | None) -> str:
    """Remove a secret from text (API keys must never reach a log or an artifact)."""
    if secret and len(secret) >= 4:
        return text.replace(secret, "***")
    return text


def classify(exc: BaseException, secret: str | None = None) -> ProviderError:
    """A ProviderError saying whether `exc` is worth retrying, with a one-line, key-free message."""
    if isinstance(exc, ProviderError):
        return exc
    if (unreadable := _malformed_reply(exc)) is not None:
        return unreadable
    status = _status(exc)
    first_line = (str(exc).strip().splitlines() or [""])[0][:300]
    message = redact(f"{type(exc).__name__}: {first_line}", secret)
    if status is not None:
        if status in RETRYABLE_STATUS:
            return ProviderError(
                f"HTTP {status} {message}", retryable=True, retry_after=_retry_after(exc)
            )
        hint = FATAL_HINTS.get(status, "the provider refused the request")
        return ProviderError(f"HTTP {status}: {hint} ({message})", retryable=False)
    if isinstance(exc, TimeoutError | ConnectionError):
        return ProviderError(message, retryable=True)
    name = type(exc).__name__
    if any(part in name for part in RETRYABLE_NAMES):
        return ProviderError(message, retryable=True, retry_after=_retry_after(exc))
    return ProviderError(message, retryable=False)
