"""Adapter for the official Anthropic SDK. Install with `uv sync --extra anthropic`."""

from __future__ import annotations

from typing import Any

from pdbench.agents.providers.base import Completion
from pdbench.agents.providers.errors import classify
from pdbench.agents.providers.openai import import_optional


class AnthropicProvider:
    """Messages API through `anthropic.AsyncAnthropic` (SDK retries off: pdbench retries itself)."""

    name = "anthropic"
    enforces_timeout = True

    def __init__(
        self, model: str, *, api_key: str | None, base_url: str | None, timeout_s: float
    ) -> None:
        sdk = import_optional("anthropic", "anthropic")
        self.model = model
        self._key = api_key
        self._client = sdk.AsyncAnthropic(
            api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0
        )

    async def acomplete(
        self,
        *,
        system: str,
        prompt: str,
        temperature: float,
        max_tokens: int,
        seed: int | None = None,
        tag: Any = None,
    ) -> Completion:
        """One message; errors become ProviderErrors (retryable or fatal)."""
        try:
            response = await self._client.messages.create(
                model=self.model,
                system=system,
                messages=[{"role": "user", "content": prompt}],
                temperature=temperature,
                max_tokens=max_tokens,
            )
            text = "".join(getattr(block, "text", "") for block in response.content)
            usage = getattr(response, "usage", None)
        except Exception as exc:  # noqa: BLE001 - every SDK error is classified
            raise classify(exc, self._key) from None
        return Completion(
            text=text,
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
        )
