"""A stdlib-only fake of the Anthropic Messages API (``POST /v1/messages``) for offline tests.

It reuses FakeOpenAIServer's plumbing (127.0.0.1 only, request counting, scripted ``Fault``s,
``latency_s``, quiet prompt shutdown) and speaks the Messages API instead:

* auth: ``x-api-key: KEY`` or ``Authorization: Bearer KEY`` (the SDK since 2.0 sends the
  latter; when both are present the API reads ``x-api-key``); 401 ``authentication_error``;
* an ``anthropic-version`` header is required (400 without one);
* the body is validated like the API does: ``model`` (str), ``messages`` (non-empty list) and
  ``max_tokens`` (int >= 1) are required, ``system`` must be a string or a list of text blocks,
  and a field the API does not know is rejected (400 ``<field>: Extra inputs are not
  permitted``). Sampling parameters (``temperature``, ``top_p``, ``top_k``) are unknown fields
  from API version 2026-10-21 on (what SDK 2.x sends), accepted with an older version header;
* an unknown model is 404 ``not_found_error``;
* errors are ``{"type": "error", "error": {"type": ..., "message": ...}}``; faults "429",
  "500", "503" and "529" answer ``rate_limit_error``, ``api_error``, ``api_error`` and
  ``overloaded_error``;
* a reply is ``{"type": "message", "content": [{"type": "text", "text": ...}], "usage":
  {"input_tokens": .., "output_tokens": ..}, ...}`` with word counts as token counts.

The strategy sees the request as chat messages: the system prompt first (role "system"), then
the request's messages, so the strategies of openai_server work unchanged.

    with FakeAnthropicServer(api_key="sk-ant-test") as srv:
        client = anthropic.Anthropic(base_url=srv.base_url, api_key="sk-ant-test")
"""

from __future__ import annotations

import hmac
from typing import Any, ClassVar

from tests.support.openai_server import (
    FakeOpenAIServer,
    Reply,
    _Handler,
    count_tokens,
    message_text,
)

SAMPLING_REMOVED_IN = "2026-10-21"  # API versions are dates: they compare as strings
SAMPLING_FIELDS = frozenset({"temperature", "top_p", "top_k"})
# Request fields of the Messages API (the SDK's `messages.create` keywords, sampling aside).
KNOWN_FIELDS = frozenset(
    {
        "model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream",
        "thinking", "tool_choice", "tools", "output_config", "service_tier", "container",
        "cache_control", "diagnostics", "inference_geo", "speed", "user_profile_id",
        "workspace_id",
    }
)  # fmt: skip
_STATUS_ERRORS: dict[str, tuple[str, str]] = {
    "429": ("rate_limit_error", "Number of requests has exceeded your rate limit (scripted)."),
    "500": ("api_error", "Internal server error (scripted)."),
    "503": ("api_error", "Service unavailable (scripted)."),
    "529": ("overloaded_error", "Overloaded (scripted)."),
}


def anthropic_error(type_: str, message: str) -> dict[str, Any]:
    """An error body as the Messages API sends it."""
    return {"type": "error", "error": {"type": type_, "message": message}}


def _invalid(message: str) -> Reply:
    return 400, anthropic_error("invalid_request_error", message), {}


def system_text(system: Any) -> str | None:
    """The system prompt of a request: a string, or the text of a list of text blocks."""
    if isinstance(system, str):
        return system
    if isinstance(system, list) and all(
        isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        for b in system
    ):
        return "\n".join(b["text"] for b in system)
    return None


class FakeAnthropicServer(FakeOpenAIServer):
    """``POST /v1/messages`` on 127.0.0.1 (see the module docstring).

    ``requests`` records, per request: index, path, model, system, messages, max_tokens,
    temperature, seed, fields (the sorted body keys), auth ("x-api-key", "bearer" or None),
    had_auth, anthropic_version, fault and status; never the key itself.
    """

    chat_paths: ClassVar[frozenset[str]] = frozenset({"/v1/messages"})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("models", {"claude-test"})
        super().__init__(*args, **kwargs)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: the SDK adds ``/v1/messages`` itself."""
        return f"http://127.0.0.1:{self.port}"

    def _auth_error(self, h: _Handler) -> Reply | None:
        if self._api_key is None:
            return None
        header = h.headers.get("x-api-key")
        if header is None:
            bearer = h.headers.get("Authorization", "")
            header = bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else ""
        if hmac.compare_digest(header.encode(), self._api_key.encode()):
            return None
        return 401, anthropic_error("authentication_error", "invalid x-api-key"), {}

    def _handle_get(self, h: _Handler) -> Reply:
        path = h.path.split("?", 1)[0]
        return self._unknown_path(path)

    def _unknown_path(self, path: str) -> Reply:
        return 404, anthropic_error("not_found_error", f"Not found: {path}"), {}

    def _record_fields(self, h: _Handler, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        if h.headers.get("x-api-key") is not None:
            auth = "x-api-key"
        elif h.headers.get("Authorization", "").startswith("Bearer "):
            auth = "bearer"
        else:
            auth = None
        return {
            "model": body.get("model"), "system": system_text(body.get("system")),
            "messages": messages, "max_tokens": body.get("max_tokens"),
            "temperature": body.get("temperature"), "seed": body.get("seed"),
            "fields": sorted(body), "auth": auth, "had_auth": auth is not None,
            "anthropic_version": h.headers.get("anthropic-version"),
        }  # fmt: skip

    def _rejection(self, h: _Handler, body: dict[str, Any]) -> Reply | None:
        if (denied := self._auth_error(h)) is not None:
            return denied
        version = h.headers.get("anthropic-version")
        if not version:
            return _invalid("anthropic-version: header is required")
        known = KNOWN_FIELDS if version >= SAMPLING_REMOVED_IN else KNOWN_FIELDS | SAMPLING_FIELDS
        for field in sorted(body):
            if field not in known:
                return _invalid(f"{field}: Extra inputs are not permitted")
        model, messages, max_tokens = (
            body.get("model"),
            body.get("messages"),
            body.get("max_tokens"),
        )
        if not isinstance(model, str):
            return _invalid("model: Field required")
        if not isinstance(messages, list) or not messages:
            return _invalid("messages: Field required (a non-empty list)")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            return _invalid("max_tokens: Field required (an integer >= 1)")
        if "system" in body and system_text(body["system"]) is None:
            return _invalid("system: Input should be a string or a list of text blocks")
        if body.get("stream"):
            return _invalid("stream: not supported by this test server")
        if model not in self.models:
            return 404, anthropic_error("not_found_error", f"model: {model}"), {}
        return None

    def _strategy_input(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages")
        chat = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
        system = system_text(body.get("system"))
        return ([{"role": "system", "content": system}] if system else []) + chat

    def _status_fault(self, kind: str) -> Any:
        return anthropic_error(*_STATUS_ERRORS[kind])

    def _strategy_failed(self, exc: Exception) -> Reply:
        return 500, anthropic_error("api_error", f"strategy raised {exc!r}"), {}

    def _answer(self, body: dict[str, Any], content: str, index: int) -> Any:
        prompt = sum(count_tokens(message_text(m)) for m in self._strategy_input(body))
        return {
            "id": f"msg_fake{index:06d}", "type": "message", "role": "assistant",
            "model": body.get("model"), "content": [{"type": "text", "text": content}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": count_tokens(content)},
        }  # fmt: skip
