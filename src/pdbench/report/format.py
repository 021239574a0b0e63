"""Numbers as the report shows them."""

from __future__ import annotations

from typing import Any


def fmt(
    value: Any, low: Any = None, high: Any = None, percent: bool = False, exact: str = ""
) -> str:
    """'value [low, high]' (percent or 3 significant digits); '-' when there is no value;
    `exact`: the value is exact (a deterministic condition), shown as 'value (exact...)' with
    no brackets (`exact` is the words in the parentheses)."""
    if value is None:
        return "-"

    def f(v: float) -> str:
        return f"{100 * v:.1f}%" if percent else f"{v:.3g}"

    if exact:
        return f"{f(float(value))} <span class='ci'>({exact})</span>"
    if low is None or high is None:
        return f(float(value))
    return f"{f(float(value))} <span class='ci'>[{f(float(low))}, {f(float(high))}]</span>"
