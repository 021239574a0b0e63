"""Adapter for litellm (any provider litellm supports). Install with `uv sync --extra litellm`.

litellm fetches a model price map at import unless LITELLM_LOCAL_MODEL_COST_MAP is set; pdbench
sets it (the bundled map is used) so runs stay offline-safe.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from pdbench.agents.providers.base import Completion
from pdbench.agents.providers.errors import classify
from pdbench.agents.providers.openai import import_optional


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


class LiteLLMProvider:
    """`litellm.acompletion` with pdbench's own retries (litellm's are off)."""

    name = "litellm"
    enforces_timeout = True

    def __init__(
        self, model: str, *, api_key: str | None, base_url: str | None, timeout_s: float
    ) -> None:
        self._litellm = load_litellm()
        self.model = model
        self._key = api_key
        self._base_url = base_url
        self._timeout = timeout_s

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
        """One completion; errors become ProviderErrors (retryable or fatal)."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": prompt},
            ],
            "temperature": temperature,
            "max_tokens": max_tokens,
            "timeout": self._timeout,
            "num_retries": 0,
        }
        if self._key:
            kwargs["api_key"] = self._key
        elif self._base_url:
            # A local OpenAI-compatible server usually needs no key, but litellm insists on one.
            kwargs["api_key"] = "not-needed"
        if self._base_url:
            kwargs["api_base"] = self._base_url
        try:
            response = await self._litellm.acompletion(**kwargs)
            text = response.choices[0].message.content or ""
            usage = getattr(response, "usage", None)
        except Exception as exc:  # noqa: BLE001 - every SDK error is classified
            raise classify(exc, self._key) from None
        return Completion(
            text=text,
            input_tokens=getattr(usage, "prompt_tokens", None),
            output_tokens=getattr(usage, "completion_tokens", None),
            cost_usd=self._cost(response),
        )

    def _cost(self, response: Any) -> float | None:
        try:
            return float(self._litellm.completion_cost(completion_response=response))
        except Exception:  # noqa: BLE001 - unknown prices are normal for local models
            return None
