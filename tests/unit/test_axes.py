"""What each sweep axis explains: omega-squared shares computed by hand on tiny designs, means per
axis value, and the shares recovering a planted effect."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pdbench.core.axes import (
    BASE_AXIS,
    INTERACTIONS,
    NOISE,
    axes_of,
    axis_values,
    variance_shares,
)

Y = "agent_a_cooperation_rate"


def games(cells: dict[tuple[Any, ...], list[float]], paths: list[str]) -> list[dict[str, Any]]:
    out = []
    for coords, values in cells.items():
        name = "base+" + "+".join(f"{p}_{c}" for p, c in zip(paths, coords, strict=True))
        for rep, y in enumerate(values):
            out.append(
                {"condition": name, "replicate": rep, Y: y, **dict(zip(paths, coords, strict=True))}
            )
    return out


def shares(rows: list[dict[str, Any]], axes: list[str]) -> dict[str, float | None]:
    found = variance_shares(rows, axes, Y, np.random.default_rng(0), resamples=200)
    return {s.source: s.share for s in found}


def test_one_axis_by_hand() -> None:
    # x=0: 0.2, 0.4 (mean 0.3); x=1: 0.6, 0.8 (mean 0.7); grand mean 0.5.
    # total = 0.09 + 0.01 + 0.01 + 0.09 = 0.2; between = 2 * 0.04 + 2 * 0.04 = 0.16;
    # within = 0.04 over 4 - 2 df: MS = 0.02; omega^2 = (0.16 - 1 * 0.02) / (0.2 + 0.02).
    rows = games({(0,): [0.2, 0.4], (1,): [0.6, 0.8]}, ["x"])
    got = shares(rows, ["x"])
    assert list(got) == ["x", NOISE]  # one axis: its values are the cells, no interactions
    assert got["x"] == pytest.approx(0.14 / 0.22)
    assert got[NOISE] == pytest.approx(1 - 0.14 / 0.22)


def test_pure_interaction_by_hand() -> None:
    # A 2x2 "xor" design: each axis alone changes nothing (both margins average 0.3), together
    # they move the cell means 0.1 / 0.5. total = 0.4; between = 8 * 0.04 = 0.32, all of it
    # interaction (df 1); within = 0.08 over 8 - 4 df: MS = 0.02.
    rows = games(
        {(0, 0): [0.0, 0.2], (0, 1): [0.4, 0.6], (1, 0): [0.4, 0.6], (1, 1): [0.0, 0.2]},
        ["x", "z"],
    )
    got = shares(rows, ["x", "z"])
    assert got["x"] == 0.0 and got["z"] == 0.0  # (0 - 0.02) / 0.42 reads as 0
    assert got[INTERACTIONS] == pytest.approx(0.30 / 0.42)
    assert got[NOISE] == pytest.approx(1 - 0.30 / 0.42)


def test_no_variance_gives_no_shares() -> None:
    rows = games({(0,): [0.5, 0.5], (1,): [0.5, 0.5]}, ["x"])
    assert set(shares(rows, ["x"]).values()) == {None}


def test_a_planted_effect_is_found_and_noise_is_not_credited() -> None:
    rng = np.random.default_rng(1)
    cells = {}
    for x in (0, 1, 2):
        for z in ("a", "b", "c"):
            # x moves cooperation by 0.2 a step; z does nothing; games are noisy.
            cells[(x, z)] = list(np.clip(0.2 + 0.2 * x + rng.normal(0, 0.1, 40), 0, 1))
    rows = games(cells, ["x", "z"])
    found = {s.source: s for s in variance_shares(rows, ["x", "z"], Y, rng, resamples=300)}
    # Population shares: x has variance 0.2^2 * 2/3 = 0.0267 against noise 0.01 (clipping aside):
    # about 0.73 for x, 0 for z and interactions.
    assert 0.6 < found["x"].share < 0.85
    assert found["x"].ci_low < found["x"].share < found["x"].ci_high
    assert found["z"].share < 0.02 and found[INTERACTIONS].share < 0.02
    assert sum(s.share for s in found.values()) == pytest.approx(1.0)


def test_axis_values_and_the_base_condition_axis() -> None:
    rows = games({(0,): [0.2, 0.4], (1,): [0.6, 0.8, 1.0]}, ["x"])
    rows.append({"condition": "other", "replicate": 0, Y: 0.0, "x": None})
    assert axes_of(rows, ["x"]) == [BASE_AXIS, "x"]
    values = axis_values(rows, ["x"], [Y], np.random.default_rng(0), resamples=100)
    by_value = {v.value: (v.games, v.mean) for v in values}
    assert by_value[0] == (2, pytest.approx(0.3))
    assert by_value[1] == (3, pytest.approx(0.8))
    assert by_value[None] == (1, 0.0)
    base = axis_values(rows, [BASE_AXIS], [Y], np.random.default_rng(0), resamples=100)
    assert {v.value: v.games for v in base} == {"base": 5, "other": 1}
