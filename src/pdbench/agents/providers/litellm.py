"""Adapter for litellm (any provider litellm supports). Install with `uv sync --extra litellm`.

litellm fetches a model price map at import unless LITELLM_LOCAL_MODEL_COST_MAP is set; pdbench
sets it (the bundled map is used) so runs stay offline-safe.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import replace
from typing import Any

from pdbench.agents.providers.base import (
    Completion,
    CompletionRequest,
    ProviderBase,
    chat_completion,
    chat_messages,
    import_optional,
    list_models,
    openai_options,
    provider,
)
from pdbench.agents.providers.errors import classify
from pdbench.core.config import LLMAgentConfig


def load_litellm() -> Any:
    """Import litellm quietly, with the local cost map."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm = import_optional("litellm", "litellm")
    litellm.suppress_debug_info = True
    # litellm leaves a coroutine un-awaited when a call is cancelled mid-flight; not our error.
    warnings.filterwarnings(
        "ignore", message="coroutine .* was never awaited", category=RuntimeWarning
    )
    litellm.telemetry = False
    return litellm


def takes_seed(litellm: Any, model: str, base_url: str | None) -> bool:
    """Whether litellm passes `seed` on to the provider `model` routes to (it refuses the call,
    before sending it, when the provider has none, e.g. Anthropic's)."""
    try:
        name, routed_to, _, _ = litellm.get_llm_provider(model, api_base=base_url)
        params = litellm.get_supported_openai_params(model=name, custom_llm_provider=routed_to)
    except Exception:  # noqa: BLE001 - an unroutable model fails on its first call instead
        return False
    return "seed" in (params or ())


@provider("litellm", sdk="litellm")
class LiteLLMProvider(ProviderBase):
    """`litellm.acompletion` with pdbench's own retries (litellm's are off)."""

    enforces_timeout = True
    constrains_answers = True  # passed through to OpenAI-compatible providers
    gives_logprobs = True

    def __init__(self, cfg: LLMAgentConfig, api_key: str | None) -> None:
        super().__init__(cfg, api_key)
        self._litellm = load_litellm()
        self._base_url = cfg.base_url
        self._timeout = cfg.timeout_s
        self._takes_seed = takes_seed(self._litellm, self.model, self._base_url)

    async def complete(self, request: CompletionRequest) -> Completion:
        """One completion, with the request's seed where the routed provider takes one; errors
        become ProviderErrors (retryable or fatal; an unreadable reply is a retryable one)."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": chat_messages(request),
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "timeout": self._timeout,
            "num_retries": 0,
        }
        if request.seed is not None and self._takes_seed:
            kwargs["seed"] = request.seed
        kwargs.update(openai_options(request))
        if self.api_key:
            kwargs["api_key"] = self.api_key
        elif self._base_url:
            # A local OpenAI-compatible server usually needs no key, but litellm insists on one.
            kwargs["api_key"] = "not-needed"
        if self._base_url:
            kwargs["api_base"] = self._base_url
        try:
            response = await self._litellm.acompletion(**kwargs)
            completion = chat_completion(response)
        except Exception as exc:  # noqa: BLE001 - every SDK error is classified
            raise classify(exc, self.api_key) from None
        return replace(completion, cost_usd=self._cost(response))

    def served_name(self) -> str:
        """The model name litellm sends (`openai/x` goes to the server as `x`)."""
        try:
            return str(self._litellm.get_llm_provider(self.model, api_base=self._base_url)[0])
        except Exception:  # noqa: BLE001 - an unroutable model fails on its first call instead
            return self.model

    async def served_models(self) -> list[str] | None:
        """With a base_url, what the server's `GET /models` lists; else None (not checked)."""
        if not self._base_url:
            return None
        return await list_models(self._base_url, self.api_key, self._timeout)

    def _cost(self, response: Any) -> float | None:
        try:
            return float(self._litellm.completion_cost(completion_response=response))
        except Exception:  # noqa: BLE001 - unknown prices are normal for local models
            return None
