"""Adapter for the official OpenAI SDK; with `base_url` it serves any OpenAI-compatible server
(vLLM, Ollama, llama.cpp, LM Studio). Install with `uv sync --extra openai`."""

from __future__ import annotations

from typing import Any

from pdbench.agents.providers.base import (
    Completion,
    CompletionRequest,
    ProviderBase,
    chat_completion,
    chat_messages,
    completion_text,
    import_optional,
    list_models,
    openai_options,
    provider,
    text_completion,
)
from pdbench.agents.providers.errors import classify
from pdbench.core.config import LLMAgentConfig


@provider("openai", sdk="openai")
class OpenAIProvider(ProviderBase):
    """Chat completions through `openai.AsyncOpenAI` (SDK retries off: pdbench retries itself)."""

    enforces_timeout = True
    completes_text = True  # prompt_mode completion
    constrains_answers = True
    gives_logprobs = True

    def __init__(self, cfg: LLMAgentConfig, api_key: str | None) -> None:
        super().__init__(cfg, api_key)
        self._timeout = cfg.timeout_s
        sdk = import_optional("openai", "openai")
        # A local OpenAI-compatible server usually needs no key, but the SDK insists on one.
        self._client = sdk.AsyncOpenAI(
            api_key=api_key or "not-needed",
            base_url=cfg.base_url,
            timeout=cfg.timeout_s,
            max_retries=0,
        )
        # Server-specific request fields (llama.cpp's `cache_prompt`), sent as they are.
        self.extra_body: dict[str, Any] = {}

    async def complete(self, request: CompletionRequest) -> Completion:
        """One chat completion (prompt_mode completion: one text completion, `/v1/completions`),
        with the request's seed when it has one; errors become ProviderErrors (retryable or
        fatal; an unreadable reply is a retryable one)."""
        as_text = request.mode == "completion"
        kwargs: dict[str, Any] = {
            "model": self.model,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if as_text:
            kwargs["prompt"] = completion_text(request)
        else:
            kwargs["messages"] = chat_messages(request)
        if request.seed is not None:
            kwargs["seed"] = request.seed
        kwargs.update(openai_options(request))
        if self.extra_body:
            kwargs["extra_body"] = dict(self.extra_body)
        try:
            if as_text:
                return text_completion(await self._client.completions.create(**kwargs))
            response = await self._client.chat.completions.create(**kwargs)
            return chat_completion(response)
        except Exception as exc:  # noqa: BLE001 - every SDK error is classified
            raise classify(exc, self.api_key) from None

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()

    async def served_models(self) -> list[str] | None:
        """The names `GET /models` lists (None when the server lists none)."""
        return await list_models(str(self._client.base_url), self.api_key, self._timeout)
