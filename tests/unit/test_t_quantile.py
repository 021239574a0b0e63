"""Student-t quantiles against scipy (an independent implementation): exact where tabled, and
the Cornish-Fisher expansion within its stated error elsewhere."""

from __future__ import annotations

import pytest
from scipy import stats

from pdbench.core.stats import t_quantile


@pytest.mark.parametrize("df", range(1, 11))
def test_the_tabled_97_5_percent_points_are_exact(df: int) -> None:
    assert t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), abs=1e-12)


@pytest.mark.parametrize("df", [11, 12, 15, 20, 30, 60, 200])
def test_the_expansion_is_within_2e_4_above_the_table(df: int) -> None:
    assert abs(t_quantile(0.975, df) - stats.t.ppf(0.975, df)) < 2e-4
