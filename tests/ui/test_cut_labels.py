"""Long labels in charts are wrapped or moved, never cut: legend labels as lines (Vega cannot
wrap and cuts with "…"), and an interval chart's value written on the side of its dot with room."""

from __future__ import annotations

import pandas as pd

from pdbench.ui import charts, science

LONG = "A · 💬 mock-persona-v1-instruct-extended-context-2026-preview · cooperative"


def test_a_long_legend_label_is_drawn_on_lines_that_keep_all_its_text() -> None:
    lines = charts.legend_lines(LONG)
    assert len(lines) >= 2 and all(len(line) <= charts.LEGEND_LINE for line in lines)
    # the lines, put back together, are the label: nothing dropped (breaks at spaces/hyphens)
    assert "".join(lines).replace(" ", "") == LONG.replace(" ", "")
    assert charts.legend_lines("A · TFT") == ["A · TFT"]


def test_the_legend_hands_vega_the_lines_of_long_labels_only() -> None:
    legend = charts.wrapping_legend([LONG, "B · TFT"]).to_dict()
    expr = legend["labelExpr"]
    assert legend["labelLimit"] == 0 and legend["columns"] == 1  # no cut, one entry a line
    assert expr.startswith(f'datum.label === "{LONG}" ? [')
    assert '"B · TFT"' not in expr and expr.endswith(": datum.label")


def _label_layers(chart: dict) -> dict[str, str]:
    """The interval chart's text layers: alignment -> the filter choosing their rows."""
    out = {}
    for layer in chart["layer"]:
        for sub in layer.get("layer", [layer]):
            mark = sub["mark"]
            if isinstance(mark, dict) and mark.get("type") == "text":
                out[mark["align"]] = sub["transform"][0]["filter"]
    return out


def test_a_value_near_the_right_end_is_written_left_of_its_dot() -> None:
    frame = pd.DataFrame(
        {
            "condition": ["took over", "rare"],
            "value": [1.0, 0.1],
            "low": [0.84, 0.02],
            "high": [1.0, 0.3],
            "games": [20, 20],
            "text": ["100% [84%, 100%] · 20 of 20", "10% [2%, 30%] · 2 of 20"],
        }
    )
    layers = _label_layers(science.interval_chart(frame, "share", True, "seeds").to_dict())
    # shares: the middle of the 0-100% axis is 50%; right of it the text goes left of the dot
    assert layers == {"left": "(datum.value <= 0.5)", "right": "(!(datum.value <= 0.5))"}
    # other values: the middle of their range, lows and highs included: (2 + 10) / 2
    numbers = frame.assign(value=[9.0, 3.0], low=[8.0, 2.0], high=[10.0, 4.0])
    layers = _label_layers(science.interval_chart(numbers, "payoff", False).to_dict())
    assert layers["left"] == "(datum.value <= 6.0)"


def test_a_text_column_is_as_wide_as_its_longest_text() -> None:
    from pdbench.ui.components import text_column_width

    # 7.5 px a character plus 32 px of padding, at least 80 and at most the cap
    assert text_column_width(["ab", "x" * 40]) == 7.5 * 40 + 32
    assert text_column_width(["a"]) == 80
    assert text_column_width([]) == 80
    assert text_column_width(["y" * 500]) == 900
    assert text_column_width(["y" * 500], cap=400) == 400
