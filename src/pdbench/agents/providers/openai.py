"""Adapter for the official OpenAI SDK; with `base_url` it serves any OpenAI-compatible server
(vLLM, Ollama, llama.cpp, LM Studio). Install with `uv sync --extra openai`."""

from __future__ import annotations

import importlib
from typing import Any

from pdbench.agents.providers.base import Completion, ProviderError
from pdbench.agents.providers.errors import classify


def import_optional(module: str, extra: str) -> Any:
    """Import an optional SDK, or fail with the command that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ProviderError(
            f"the {extra} provider needs its extra: run `uv sync --extra {extra}`", retryable=False
        ) from None


class OpenAIProvider:
    """Chat completions through `openai.AsyncOpenAI` (SDK retries off: pdbench retries itself)."""

    name = "openai"
    enforces_timeout = True

    def __init__(
        self, model: str, *, api_key: str | None, base_url: str | None, timeout_s: float
    ) -> None:
        sdk = import_optional("openai", "openai")
        self.model = model
        self._key = api_key
        # A local OpenAI-compatible server usually needs no key, but the SDK insists on one.
        self._client = sdk.AsyncOpenAI(
            api_key=api_key or "not-needed", base_url=base_url, timeout=timeout_s, max_retries=0
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
        """One chat completion; errors become ProviderErrors (retryable or fatal)."""
        try:
            response = await self._client.chat.completions.create(
                model=self.model,
                messages=[
                    {"role": "system", "content": system},
                    {"role": "user", "content": prompt},
                ],
                temperature=temperature,
                max_tokens=max_tokens,
            )
            text = response.choices[0].message.content or ""
            usage = getattr(response, "usage", None)
        except Exception as exc:  # noqa: BLE001 - every SDK error is classified
            raise classify(exc, self._key) from None
        return Completion(
            text=text,
            input_tokens=getattr(usage, "prompt_tokens", None),
            output_tokens=getattr(usage, "completion_tokens", None),
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()
