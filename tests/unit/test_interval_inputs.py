"""Issue 28 I01: every interval function refuses what it cannot bound. A NaN or infinite count
or value, or no trial, gives no interval (None, or NaN where the function answers in arrays),
never an interval clamped into [0, 1], a (nan, nan) pair or an exception. NaN inside a list of
per-game values means "undefined in that game" and is left out (the documented convention), so
the NaN cases here are those where nothing defined is left, or a count is NaN.

The functions are found by name in the modules that compute intervals, so a new one cannot
escape this table: a public function whose name says it computes an interval must have cases
here (or a reason in NOT_INTERVALS)."""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from pdbench.core import axes, bootstrap_t, compare, metrics, stats, strategy_fit
from pdbench.core import tournament_metrics as tournament
from pdbench.core.stats import IntervalSettings
from pdbench.runners.science import evolve
from pdbench.storage import intervals

NAN, INF = float("nan"), float("inf")
MODULES: tuple[ModuleType, ...] = (
    stats,
    bootstrap_t,
    compare,
    metrics,
    tournament,
    strategy_fit,
    axes,
    evolve,
    intervals,
)
NAME = re.compile(r"interval|_ci|ci95|uncertainty|bootstrap|difference|mean|shares|axis_values")
NOT_INTERVALS = {
    "metrics.interval_kind": "names a column's kind",
    "metrics.interval_columns": "lists column names",
    "metrics.decided_cooperation_rate": "a metric, not an interval",
    "metrics.mean_over_time": "a per-round mean, not an interval",
    "metrics.mean_probability": "a mean, not an interval",
    "intervals.interval_settings": "reads settings from a manifest",
    "intervals.interval_generators": "makes generators",
    "stats.mean_intervals": "clipped_mean_intervals without the flags: covered by its cases",
    "evolve.fixation_over_seeds": "plays the process; its interval is evolve.wilson_interval",
    "strategy_fit.share_intervals": "reads moves (never NaN); a NaN share gets NaN, not the "
    "Wilson floor (stats.wilson_interval, above)",
}


def _rng() -> np.random.Generator:
    return np.random.default_rng(7)


def _rows(values: list[float]) -> list[dict[str, Any]]:
    """A condition row and its replicate rows with one mean-kind metric and one share-kind."""
    games = [
        {
            "condition": "c",
            "scope": "replicate",
            "agent_a_cooperation_rate": v,
            "collapsed_fraction": v,
        }
        for v in values
    ]
    return [*games, {"condition": "c", "scope": "condition"}]


def _ends_of_rows(rows: list[dict[str, Any]]) -> list[Any]:
    row = rows[-1]
    return [
        row[f"{c}_ci_{end}"]
        for c in ("agent_a_cooperation_rate", "collapsed_fraction")
        for end in ("low", "high")
    ]


def _ends(result: Any) -> list[Any]:
    """The interval ends in a result: tuples and lists flattened, arrays as floats."""
    if isinstance(result, np.ndarray):
        return [float(v) for v in result.ravel()]
    if isinstance(result, tuple | list):
        return [e for part in result for e in _ends(part)]
    if isinstance(result, dict):
        return [e for part in result.values() for e in _ends(part)]
    return [result]


# name -> [(case, call, the interval ends of its result)]
Case = tuple[str, Callable[[], Any], Callable[[Any], list[Any]]]
CASES: dict[str, list[Case]] = {
    "stats.wilson_interval": [
        ("nan successes", lambda: stats.wilson_interval(NAN, 10), _ends),
        ("inf successes", lambda: stats.wilson_interval(INF, 10), _ends),
        ("nan trials", lambda: stats.wilson_interval(3, NAN), _ends),
        ("inf trials", lambda: stats.wilson_interval(3, INF), _ends),
        ("zero trials", lambda: stats.wilson_interval(0, 0), _ends),
        ("negative trials", lambda: stats.wilson_interval(0, -2), _ends),
    ],
    "stats.wilson_cc_interval": [
        ("nan successes", lambda: stats.wilson_cc_interval(NAN, 10), _ends),
        ("inf successes", lambda: stats.wilson_cc_interval(INF, 10), _ends),
        ("inf trials", lambda: stats.wilson_cc_interval(3, INF), _ends),
        ("zero trials", lambda: stats.wilson_cc_interval(0, 0), _ends),
    ],
    "stats.constant_interval": [
        ("nan value", lambda: stats.constant_interval(NAN, 5, (0.0, 1.0)), _ends),
        ("inf value", lambda: stats.constant_interval(INF, 5, (0.0, 1.0)), _ends),
        ("-inf value", lambda: stats.constant_interval(-INF, 5, (0.0, 1.0)), _ends),
        ("no game", lambda: stats.constant_interval(0.5, 0, (0.0, 1.0)), _ends),
    ],
    "stats.t_interval": [
        ("inf value", lambda: stats.t_interval([1.0, 2.0, INF]), _ends),
        ("-inf value", lambda: stats.t_interval([1.0, 2.0, -INF], (0.0, 5.0)), _ends),
        ("only nan", lambda: stats.t_interval([NAN, NAN, NAN]), _ends),
        ("no value", lambda: stats.t_interval([]), _ends),
    ],
    "stats.clipped_mean_intervals": [
        (
            f"{name} column ({games} games)",
            lambda column=column, games=games: stats.clipped_mean_intervals(
                np.array([column[:games]]).T, stats.resample_weights(games, 50, _rng())
            ),
            lambda r: [e for low, high, _ in r for e in (low, high)],
        )
        for name, column in (
            ("inf", [0.1, 0.4, INF, 0.2, 0.9, 0.3]),
            ("all inf", [INF] * 6),
            ("-inf", [0.1, -INF, 0.4, 0.2, 0.9, 0.3]),
            ("all nan", [NAN] * 6),
        )
        for games in (3, 6)
    ],
    "stats.share_interval": [
        ("inf value", lambda: stats.share_interval([1.0, 0.0, INF]), _ends),
        ("only nan", lambda: stats.share_interval([NAN, NAN]), _ends),
    ],
    "stats.ratio_interval": [
        (
            "inf numerator",
            lambda: stats.ratio_interval(np.array([1.0, INF]), np.array([2.0, 3.0])),
            _ends,
        ),
        (
            "nan numerator",
            lambda: stats.ratio_interval(np.array([NAN, 1.0]), np.array([2.0, 3.0])),
            _ends,
        ),
        (
            "inf visits",
            lambda: stats.ratio_interval(np.array([1.0, 1.0]), np.array([INF, 3.0])),
            _ends,
        ),
        ("no game", lambda: stats.ratio_interval(np.array([]), np.array([])), _ends),
    ],
    "compare.bootstrap_difference": [
        (
            "inf value",
            lambda: compare.bootstrap_difference(
                np.array([1.0, INF]), np.array([1.0, 2.0]), _rng()
            ),
            _ends,
        ),
        (
            "nan value",
            lambda: compare.bootstrap_difference(
                np.array([1.0, 2.0]), np.array([NAN, 2.0]), _rng()
            ),
            _ends,
        ),
        (
            "no game",
            lambda: compare.bootstrap_difference(np.array([]), np.array([1.0, 2.0]), _rng()),
            _ends,
        ),
    ],
    "compare.own_interval": [
        ("inf value", lambda: compare.own_interval(np.array([1.0, 2.0, INF]), None), _ends),
        ("all inf", lambda: compare.own_interval(np.array([INF, INF]), (0.0, 1.0)), _ends),
        ("all nan", lambda: compare.own_interval(np.array([NAN, NAN]), (0.0, 1.0)), _ends),
    ],
    "compare.mover_difference": [
        (
            "inf value",
            lambda: compare.mover_difference(np.array([1.0, INF, 2.0]), np.array([1.0, 2.0, 3.0])),
            _ends,
        ),
        (
            "nan value",
            lambda: compare.mover_difference(np.array([1.0, NAN, 2.0]), np.array([1.0, 2.0, 3.0])),
            _ends,
        ),
    ],
    "metrics.mean_and_ci95": [
        ("inf value", lambda: metrics.mean_and_ci95([1.0, INF]), _ends),
        ("only nan", lambda: metrics.mean_and_ci95([NAN, NAN]), _ends),
    ],
    "metrics.add_intervals": [
        (
            f"{name} in a game ({len(values)} games)",
            lambda values=values: metrics.add_intervals(
                _rows(values), IntervalSettings(resamples=50), lambda _c: _rng()
            ),
            _ends_of_rows,
        )
        for name, values in (
            ("inf", [1.0, 0.0, INF]),
            ("inf", [1.0, 0.0, INF, 1.0, 0.0, 1.0]),
            ("nan only", [NAN, NAN, NAN]),
        )
    ],
    "intervals.with_intervals": [
        (
            "inf in a game",
            lambda: intervals.with_intervals(
                _rows([0.0, 1.0, INF, 0.0, 1.0]), IntervalSettings(resamples=50)
            ),
            _ends_of_rows,
        ),
    ],
    "tournament.repetition_uncertainty": [
        (
            "inf score",
            lambda: tournament.repetition_uncertainty(
                np.array([[1.0, INF, 2.0], [1.0, 2.0, 3.0]]), _rng(), 50
            ),
            lambda r: [float(v[0]) for v in r.values()],  # the player with the infinite score
        ),
        (
            "nan scores only",
            lambda: tournament.repetition_uncertainty(
                np.array([[NAN, NAN, NAN], [1.0, 2.0, 3.0]]), _rng(), 50
            ),
            lambda r: [float(r[k][0]) for k in ("se", "low", "high")],
        ),
    ],
    "evolve.wilson_interval": [
        ("zero trials", lambda: evolve.wilson_interval(0, 0), _ends),
        ("nan successes", lambda: evolve.wilson_interval(NAN, 10), _ends),  # type: ignore[arg-type]
        ("inf trials", lambda: evolve.wilson_interval(3, INF), _ends),  # type: ignore[arg-type]
    ],
    "axes.pooled_mean": [
        (
            "inf in a game",
            lambda: axes.pooled_mean(
                [{"agent_a_cooperation_rate": v} for v in (0.2, INF, 0.5)],
                "agent_a_cooperation_rate",
                _rng(),
                50,
            ),
            lambda r: list(r[2:]),
        ),
    ],
    "axes.variance_shares": [
        (
            f"{name} in a game",
            lambda value=value: axes.variance_shares(
                [
                    {"condition": f"c{x}", "x": x, "agent_a_cooperation_rate": v}
                    for x, v in ((1, 0.2), (1, 0.4), (2, value), (2, 0.9), (2, 0.7))
                ],
                ["x"],
                "agent_a_cooperation_rate",
                _rng(),
                50,
            ),
            lambda r: [e for v in r for e in (v.share, v.ci_low, v.ci_high)],
        )
        for name, value in (("inf", INF), ("-inf", -INF))
    ],
    "axes.axis_values": [
        (
            "inf in a game",
            lambda: axes.axis_values(
                [{"x": 1, "agent_a_cooperation_rate": v} for v in (0.2, INF, 0.5)],
                ["x"],
                ["agent_a_cooperation_rate"],
                _rng(),
                50,
            ),
            lambda r: [e for v in r for e in (v.ci_low, v.ci_high)],
        ),
    ],
}


def _discovered() -> list[str]:
    found = []
    for module in MODULES:
        short = module.__name__.rsplit(".", 1)[1]
        short = "tournament" if short == "tournament_metrics" else short
        for name, obj in vars(module).items():
            if (
                inspect.isfunction(obj)
                and obj.__module__ == module.__name__
                and not name.startswith("_")
                and NAME.search(name)
            ):
                found.append(f"{short}.{name}")
    return sorted(found)


def test_every_interval_function_has_cases() -> None:
    found = _discovered()
    assert "stats.wilson_interval" in found and "tournament.repetition_uncertainty" in found
    missing = [f for f in found if f not in CASES and f not in NOT_INTERVALS]
    assert not missing, f"interval functions without NaN/inf/zero cases: {missing}"
    assert not [f for f in CASES if f not in found], "a case names no discovered function"


def _no_interval(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


@pytest.mark.parametrize(
    ("name", "case"),
    [(name, case) for name, cases in CASES.items() for case in cases],
    ids=[f"{name}: {case[0]}" for name, cases in CASES.items() for case in cases],
)
def test_no_interval_from_what_cannot_be_bounded(name: str, case: Case) -> None:
    _, call, ends = case
    found = ends(call())
    assert found and all(_no_interval(e) for e in found), f"{name}: {found}"


def test_finite_input_keeps_its_interval() -> None:
    # The guards leave finite input alone. Wilson by hand: 3 of 10, z = 1.959964,
    # z^2/n = 0.384146, centre = (0.3 + 0.192073) / 1.384146 = 0.355506,
    # half = 1.959964 / 1.384146 * sqrt(0.021 + 0.009604) = 0.247716.
    low, high = stats.wilson_interval(3, 10)
    assert (low, high) == pytest.approx((0.355506 - 0.247716, 0.355506 + 0.247716), abs=1e-5)
    # t interval of 1, 2, 3 (and a NaN left out): mean 2, sd 1, t(0.975, 2) = 4.302653.
    assert stats.t_interval([1.0, NAN, 2.0, 3.0]) == pytest.approx(
        (2 - 4.302653 / math.sqrt(3), 2 + 4.302653 / math.sqrt(3))
    )
    # A column with an infinity has no interval; the finite column beside it keeps the one it
    # has alone.
    values = np.array([[0.1, 0.4, 0.2, 0.9, 0.3], [0.5, INF, 0.1, 0.2, 0.7]]).T
    weights = stats.resample_weights(5, 200, _rng())
    both = stats.clipped_mean_intervals(values, weights)
    alone = stats.clipped_mean_intervals(values[:, :1], weights)
    assert both[0] == alone[0] and both[1] == (None, None, False)
