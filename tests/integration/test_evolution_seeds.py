"""`pdbench evolve --seeds N`: the process run N times on the same played matches; fixation
probabilities with Wilson intervals in fixation.parquet; `--seeds 1` stays as before."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.support.cli import run_in_process

from pdbench.runners.science.evolve import wilson_interval

REPO = Path(__file__).resolve().parents[2]


def test_wilson_interval_by_hand() -> None:
    # 39 of 50, z = 1.96: centre (0.78 + 1.96^2/100) / (1 + 1.96^2/50) = 0.760018,
    # half 1.96 sqrt(0.78 * 0.22 / 50 + 1.96^2 / 10000) / 1.076832 = 0.112442.
    low, high = wilson_interval(39, 50)
    assert low == pytest.approx(0.760018 - 0.112442, abs=1e-5)
    assert high == pytest.approx(0.760018 + 0.112442, abs=1e-5)
    low, high = wilson_interval(0, 50)
    assert low == 0.0 and high == pytest.approx(1.96**2 / 50 / (1 + 1.96**2 / 50), abs=1e-4)
    assert not math.isnan(wilson_interval(5, 5)[0])


def test_seeds_give_fixation_probabilities(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(REPO / "configs" / "evolution.yaml")
    code, out, err = run_in_process(["evolve", config, "-o", str(tmp_path / "one")], capsys)
    assert code == 0, err
    assert not (tmp_path / "one" / "fixation.parquet").exists()
    single = (tmp_path / "one" / "generations.parquet").read_bytes()
    code, out, err = run_in_process(
        ["evolve", config, "-o", str(tmp_path / "many"), "--seeds", "12"], capsys
    )
    assert code == 0, err
    assert "fixation over 12 seeds" in out
    # The first seed is the single run: the same generations.
    assert pq.read_table(tmp_path / "many" / "generations.parquet").equals(
        pq.read_table(tmp_path / "one" / "generations.parquet")
    )
    assert single
    rows = pq.read_table(tmp_path / "many" / "fixation.parquet").to_pylist()
    assert sum(r["fixations"] for r in rows) == 12
    for r in rows:
        assert r["ci_low"] <= r["probability"] <= r["ci_high"]
        assert (r["ci_low"], r["ci_high"]) == pytest.approx(wilson_interval(r["fixations"], 12))


def test_overwriting_with_one_seed_removes_the_old_fixation_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stale fixation.parquet would be shown as the new run's fixation over seeds."""
    config = str(REPO / "configs" / "evolution.yaml")
    out_dir = str(tmp_path / "run")
    code, _, err = run_in_process(["evolve", config, "-o", out_dir, "--seeds", "3"], capsys)
    assert code == 0, err
    assert (tmp_path / "run" / "fixation.parquet").is_file()
    code, _, err = run_in_process(["evolve", config, "-o", out_dir, "--overwrite"], capsys)
    assert code == 0, err
    assert not (tmp_path / "run" / "fixation.parquet").exists()
