"""Adapter for the official Anthropic SDK. Install with `uv sync --extra anthropic`."""

from __future__ import annotations

from pdbench.agents.providers.base import (
    Completion,
    CompletionRequest,
    ProviderBase,
    import_optional,
    provider,
)
from pdbench.agents.providers.errors import classify
from pdbench.core.config import LLMAgentConfig


@provider("anthropic", sdk="anthropic")
class AnthropicProvider(ProviderBase):
    """Messages API through `anthropic.AsyncAnthropic` (SDK retries off: pdbench retries itself)."""

    enforces_timeout = True

    def __init__(self, cfg: LLMAgentConfig, api_key: str | None) -> None:
        super().__init__(cfg, api_key)
        sdk = import_optional("anthropic", "anthropic")
        self._client = sdk.AsyncAnthropic(
            api_key=api_key, base_url=cfg.base_url, timeout=cfg.timeout_s, max_retries=0
        )

    async def complete(self, request: CompletionRequest) -> Completion:
        """One message; errors become ProviderErrors (retryable or fatal)."""
        try:
            response = await self._client.messages.create(
                model=self.model,
                system=request.system,
                messages=[{"role": "user", "content": request.prompt}],
                temperature=request.temperature,
                max_tokens=request.max_tokens,
            )
            text = "".join(getattr(block, "text", "") for block in response.content)
            usage = getattr(response, "usage", None)
        except Exception as exc:  # noqa: BLE001 - every SDK error is classified
            raise classify(exc, self.api_key) from None
        return Completion(
            text=text,
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()
