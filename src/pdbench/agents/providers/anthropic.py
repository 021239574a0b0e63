"""Adapter for the official Anthropic SDK (Messages API). Install with `uv sync --extra anthropic`.

The SDK since 2.0 speaks API version 2026-10-21, which has no sampling parameters: its
`messages.create` takes no `temperature` (nor `top_p`, `top_k`), and the API answers 400 to a
request that sends one, even through `extra_body`. So the agent's `temperature` is not sent: the
model samples at its own default. The Messages API has no seed either; the per-call seed is not
sent.
"""

from __future__ import annotations

from typing import Any

from pdbench.agents.providers.base import (
    Completion,
    CompletionRequest,
    ProviderBase,
    chat_messages,
    field,
    import_optional,
    is_object,
    json_object,
    malformed,
    provider,
    system_text,
    token_count,
)
from pdbench.agents.providers.errors import classify
from pdbench.core.config import LLMAgentConfig


def message_completion(response: Any) -> Completion:
    """A Completion from a Messages API reply: the text of its text blocks (other blocks, such
    as thinking, are skipped; no blocks is no text) and its token counts. A reply without a
    list of content blocks, or with a text block that holds no text, is a malformed reply."""
    content = field(json_object(response), "content")
    if content is None:
        raise malformed("no content")
    if not isinstance(content, list | tuple):
        raise malformed(f"content is not a list of blocks ({type(content).__name__})")
    texts = []
    for block in content:
        kind = field(block, "type") if is_object(block) else None
        if not isinstance(kind, str):
            raise malformed("a content block is not an object with a type")
        if kind == "text":
            text = field(block, "text")
            if not isinstance(text, str):
                raise malformed(f"a text block holds no text ({type(text).__name__})")
            texts.append(text)
    usage = field(response, "usage")
    stop, model = field(response, "stop_reason"), field(response, "model")
    return Completion(
        text="".join(texts),
        input_tokens=token_count(field(usage, "input_tokens")),
        output_tokens=token_count(field(usage, "output_tokens")),
        finish_reason=stop if isinstance(stop, str) else None,
        served_model=model if isinstance(model, str) else None,
    )


@provider("anthropic", sdk="anthropic")
class AnthropicProvider(ProviderBase):
    """Messages API through `anthropic.AsyncAnthropic` (SDK retries off: pdbench retries itself).

    See the module docstring for what is not sent (temperature, seed)."""

    enforces_timeout = True
    sends_temperature = False  # the Messages API no longer takes one

    def __init__(self, cfg: LLMAgentConfig, api_key: str | None) -> None:
        super().__init__(cfg, api_key)
        sdk = import_optional("anthropic", "anthropic")
        # Without a key the SDK goes looking for credentials in the environment and in profile
        # files; pdbench keys come from `api_key_env` only. A keyless local server accepts a
        # placeholder; the real API answers it with a clear 401.
        self._client = sdk.AsyncAnthropic(
            api_key=api_key or "not-needed",
            base_url=cfg.base_url,
            timeout=cfg.timeout_s,
            max_retries=0,
        )

    async def complete(self, request: CompletionRequest) -> Completion:
        """One message; errors become ProviderErrors (retryable or fatal; an unreadable reply
        is a retryable one)."""
        try:
            system = system_text(request)
            response = await self._client.messages.create(
                model=self.model,
                **({"system": system} if system else {}),
                messages=chat_messages(request, with_system=False),  # the system goes apart
                max_tokens=request.max_tokens,
            )
            return message_completion(response)
        except Exception as exc:  # noqa: BLE001 - every SDK error is classified
            raise classify(exc, self.api_key) from None

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()
