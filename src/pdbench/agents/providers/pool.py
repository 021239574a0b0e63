"""The provider clients of one run: built on first use, shared by agents with the same
connection settings, and closed together when the run ends."""

from __future__ import annotations

import json

from pdbench.agents.providers.base import Provider, ProviderError, provider_entry
from pdbench.agents.providers.keys import resolve_api_key
from pdbench.core.config import LLMAgentConfig
from pdbench.errors import RunError


def require_api_key(cfg: LLMAgentConfig) -> str | None:
    """The agent's API key (None when it names no variable); RunError naming the variable, never
    a value, when the variable is not set. Runs check every agent before the first call."""
    api_key = resolve_api_key(cfg.api_key_env)
    if cfg.api_key_env and not api_key:
        raise RunError(
            f"{cfg.display_name()}: environment variable {cfg.api_key_env} is not set "
            f"(set it, or put it in .env; see .env.example)"
        )
    return api_key


class ProviderPool:
    """Provider clients keyed by provider, model, base_url, key variable, timeout, mock
    settings and a local model's file and settings. Keys are read from the variable named by `api_key_env` (environment, then
    `.env`); a missing key is a RunError naming the variable, never showing any value."""

    def __init__(self) -> None:
        self._clients: dict[str, Provider] = {}

    def get(self, cfg: LLMAgentConfig) -> Provider:
        """The (shared) client for an LLM agent config."""
        key = json.dumps(
            [
                cfg.provider,
                cfg.model,
                cfg.base_url,
                cfg.api_key_env,
                cfg.timeout_s,
                cfg.mock.model_dump(),
                # a local server (llamacpp) is its model file and settings, not only its name
                cfg.model_path,
                cfg.n_ctx,
                cfg.n_threads,
                cfg.prompt_cache,
                cfg.max_concurrency if cfg.provider == "llamacpp" else None,
            ]
        )
        if key not in self._clients:
            api_key = require_api_key(cfg)
            try:
                entry = provider_entry(cfg.provider)
                self._clients[key] = entry.factory(cfg, api_key)
            except KeyError as exc:
                raise RunError(f"{cfg.display_name()}: {exc.args[0]}") from None
            except ProviderError as exc:
                raise RunError(f"{cfg.display_name()}: {exc}") from None
        return self._clients[key]

    async def aclose(self) -> None:
        """Close every client (best effort: a failing close does not hide the run's outcome)."""
        for client in self._clients.values():
            try:
                await client.aclose()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        self._clients.clear()
