"""Numbers as the report shows them."""

from __future__ import annotations

from typing import Any


def fmt(value: Any, low: Any = None, high: Any = None, percent: bool = False) -> str:
    """'value [low, high]' (percent or 3 significant digits); '-' when there is no value."""
    if value is None:
        return "-"

    def f(v: float) -> str:
        return f"{100 * v:.1f}%" if percent else f"{v:.3g}"

    if low is None or high is None:
        return f(float(value))
    return f"{f(float(value))} <span class='ci'>[{f(float(low))}, {f(float(high))}]</span>"
