"""The game charts leave out a line's points that lie on the straight segment between their
neighbours (`charts._drop_straight`): the line through the points kept is the line through all
of them, checked by interpolating the kept points back at every round."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pdbench.ui import charts


def _kept(y: list[float]) -> list[int]:
    frame = pd.DataFrame({"round": np.arange(1, len(y) + 1), "rate": y})
    return charts._drop_straight(frame, "round", "rate")["round"].tolist()


def test_runs_keep_their_two_ends() -> None:
    # flat 0 for rounds 1-3, rising by 1 to round 6, flat 3 to round 8
    assert _kept([0, 0, 0, 1, 2, 3, 3, 3]) == [1, 3, 6, 8]


def test_points_next_to_a_missing_value_stay() -> None:
    assert _kept([0, 0, float("nan"), 0, 0]) == [1, 2, 3, 4, 5]


def test_float_rounding_counts_as_straight() -> None:
    # 0.1 * 3 is 0.30000000000000004: on the flat run, not a kink
    assert _kept([0.3, 0.1 * 3, 0.3, 0.7]) == [1, 3, 4]


def test_kept_points_draw_the_same_line() -> None:
    rng = np.random.default_rng(5)
    moves = pd.Series(rng.random(1000) < 0.7, dtype=float)
    for y in (
        moves.rolling(10, min_periods=1).mean(),  # a rolling cooperation rate
        moves.mul(3).cumsum(),  # a cumulative payoff
        pd.Series(np.repeat([0.0, 1.0, 0.5], [400, 300, 300])),
    ):
        frame = pd.DataFrame({"round": np.arange(1, 1001), "value": y})
        kept = charts._drop_straight(frame, "round", "value")
        assert len(kept) < len(frame)
        again = np.interp(frame["round"], kept["round"], kept["value"])
        np.testing.assert_allclose(again, frame["value"], rtol=0, atol=1e-9)


def test_a_steady_game_is_drawn_from_the_ends_of_its_lines() -> None:
    n = 1000
    game = pd.DataFrame(
        {
            "round": np.arange(1, n + 1),
            "agent_a_action": ["C"] * n,
            "agent_b_action": ["C"] * n,
            "agent_a_cum_payoff": 3.0 * np.arange(1, n + 1),
            "agent_b_cum_payoff": 3.0 * np.arange(1, n + 1),
        }
    )
    coop = charts.cooperation_chart(game, ["A", "B"], 10, [1.0] * n, [1.0] * n).data
    payoff = charts.payoff_chart(game, ["A", "B"]).data
    for data, series in ((coop, "series"), (payoff, "agent")):
        for _, line in data.groupby(series):
            assert line["round"].tolist() == [1, n]
