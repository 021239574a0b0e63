"""What a call costs: the agent's `pricing`, else litellm's bundled price list (read as a file,
offline, without importing litellm), else what the adapter reported; otherwise unknown (None),
never 0. The offline mock and a local llama.cpp server are free.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

from pdbench.agents.providers.base import Completion
from pdbench.core.config import LLMAgentConfig

FREE_PROVIDERS = ("mock", "llamacpp")
PRICE_FILE = "model_prices_and_context_window_backup.json"  # shipped inside the litellm wheel


@functools.cache
def _price_list() -> dict[str, Any]:
    """litellm's bundled price list ({} when litellm is not installed or the file is unreadable)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    for folder in spec.submodule_search_locations:
        path = Path(folder) / PRICE_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        return data if isinstance(data, dict) else {}
    return {}


def listed_price(model: str) -> tuple[float, float] | None:
    """USD per input and per output token from litellm's price list (the model as named, then
    without a `provider/` prefix), or None when it is not listed."""
    prices = _price_list()
    for name in (model, model.split("/", 1)[-1]):
        entry = prices.get(name)
        if not isinstance(entry, dict):
            continue
        cost_in, cost_out = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if isinstance(cost_in, int | float) and isinstance(cost_out, int | float):
            return float(cost_in), float(cost_out)
    return None


def price_per_token(cfg: LLMAgentConfig) -> tuple[float, float] | None:
    """USD per input and per output token for an agent, or None when unknown. A server at a
    `base_url` of the openai provider is not OpenAI: only `pricing` prices it."""
    if cfg.pricing is not None:
        return cfg.pricing.input_per_mtok / 1e6, cfg.pricing.output_per_mtok / 1e6
    if cfg.provider in FREE_PROVIDERS:
        return 0.0, 0.0
    if cfg.provider == "openai" and cfg.base_url:
        return None
    return listed_price(cfg.model)


def price_known(cfg: LLMAgentConfig) -> bool:
    """Whether a budget in USD can count this agent's calls (litellm prices what it routes)."""
    return price_per_token(cfg) is not None or (
        cfg.provider == "litellm" and listed_price(cfg.model) is not None
    )


def call_cost(cfg: LLMAgentConfig, completion: Completion) -> float | None:
    """The USD cost of one reply: tokens times the known price, else the adapter's own figure
    (litellm's), else None."""
    price = price_per_token(cfg)
    if price is not None:
        if price == (0.0, 0.0):
            return 0.0
        if completion.input_tokens is None or completion.output_tokens is None:
            return completion.cost_usd
        return completion.input_tokens * price[0] + completion.output_tokens * price[1]
    return completion.cost_usd
