"""Long games readable: the automatic smoothing window and the condition mean's band."""

from __future__ import annotations

import pandas as pd
import pytest

from pdbench.storage.record.fields import side_field
from pdbench.ui import charts


@pytest.mark.parametrize(
    ("n_rounds", "window"),
    [
        (3, 1),
        (50, 1),  # 50 / 50 = 1
        (51, 3),  # just over one round a window: the next offered window
        (200, 5),  # 4 -> 5
        (1_000, 20),
        (20_000, 500),  # 400 -> 500
        (60_000, 2000),  # 1,200 -> 2,000
        (10_000_000, 2000),  # the widest offered
    ],
)
def test_the_automatic_window_is_the_smallest_offered_of_at_least_n_over_50(
    n_rounds: int, window: int
) -> None:
    assert charts.auto_window(n_rounds) == window


def _game(moves_a: str, moves_b: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "round": range(1, len(moves_a) + 1),
            side_field("a", "action"): list(moves_a),
            side_field("b", "action"): list(moves_b),
        }
    )


def test_the_band_is_drawn_behind_the_lines_averaged_over_the_window() -> None:
    game = _game("CCDD", "CDCD")
    lows, highs = [0.2, 0.4, 0.6, 0.8], [0.4, 0.8, 1.0, 1.0]
    chart = charts.cooperation_chart(
        game, ["A", "B"], 3, [1.0, 0.5, 0.5, 0.0], [0.3, 0.6, 0.8, 0.9], (lows, highs)
    )
    spec = chart.to_dict()
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks == ["area", "line"]  # the band first: behind the lines
    area = chart.layer[0].data
    # rolling mean over 3 rounds (fewer at the start), by hand
    assert area["low"].round(9).tolist() == [0.2, 0.3, 0.4, 0.6]
    assert area["high"].round(9).tolist() == [0.4, 0.6, round(2.2 / 3, 9), round(2.8 / 3, 9)]
    assert area["round"].tolist() == [1, 2, 3, 4]


def test_without_a_band_only_the_lines_are_drawn() -> None:
    game = _game("CCDD", "CDCD")
    for band in (None, ([], []), ([0.1, 0.2], [0.3])):
        chart = charts.cooperation_chart(game, ["A", "B"], 1, [], [0.5] * 4, band)
        assert chart.to_dict()["mark"]["type"] == "line"
