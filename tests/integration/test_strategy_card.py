"""The strategy card end to end (`pdbench profile`, its table, the report): ties named as
indistinguishable and RANDOM(p) named, through the goodness-of-fit test and strategy_fit.parquet.
Expected outcomes by hand (tests/unit/test_strategy_card.py works the cases out)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from tests.support.configs import experiment, policy, write_config

from pdbench.core.metrics import GameOutcome
from pdbench.report.experiment import strategy_section
from pdbench.runners.config.loader import load_config
from pdbench.runners.science.experiment import RunOptions, run_experiment
from pdbench.runners.science.profile import profile_rows, profile_run, strategy_table


def _random_vs_tft(condition: str, p: float, games: int, rounds: int, seed: int) -> list:
    """A player cooperating with probability p against TFT (which copies its last move)."""
    rng = np.random.default_rng(seed)
    out = []
    for replicate in range(games):
        own = rng.random(rounds) < p
        opp = np.concatenate(([True], own[:-1]))
        zeros = np.zeros(rounds)
        out.append(GameOutcome(condition, replicate, "RANDOM", "TFT", own, opp, zeros, zeros))
    return out


def _card(rows: list[dict], condition: str, agent: str) -> list[dict]:
    return sorted(
        (r for r in rows if r["condition"] == condition and r["agent"] == agent),
        key=lambda r: r["rank"],
    )


def test_profile_names_random_p_and_its_ties() -> None:
    """RANDOM(p) against TFT, 20 games x 100 rounds, p = 0.2, 0.5, 0.8: agent A's card names
    RANDOM with its share of cooperation, passes the goodness-of-fit test (it is the truth), and
    at 0.8 / 0.2 names ALLC / ALLD as indistinguishable (the same Bernoulli model). Agent B
    plays TFT exactly: TFT is its name."""
    outcomes = []
    for p in (0.2, 0.5, 0.8):
        outcomes += _random_vs_tft(f"p{p}", p, 20, 100, seed=int(10 * p))
    manifest = {"seed": 3, "conditions": [{"name": f"p{p}"} for p in (0.2, 0.5, 0.8)]}
    rows = profile_rows(manifest, outcomes, resamples=30)
    text = strategy_table(rows)
    for p, tie in ((0.2, "ALLD"), (0.5, None), (0.8, "ALLC")):
        card = _card(rows, f"p{p}", "a")
        best = card[0]
        assert best["strategy"] == "RANDOM" and best["adequate"]
        fitted = json.loads(best["parameters"])["every_round"]
        assert fitted == pytest.approx(p, abs=0.04)
        ties = json.loads(best["indistinguishable_from"])
        if tie is not None:
            assert tie in ties
            assert f"RANDOM({fitted:.2f}) = {tie}" in text
        assert re.search(rf"p{p}\s+a: RANDOM\s+1 RANDOM\({fitted:.2f}\)", text)
        assert _card(rows, f"p{p}", "b")[0]["strategy"] == "TFT"
    html = strategy_section(rows)
    assert "RANDOM(0.8" in html and "indistinguishable on these games" in html


@pytest.mark.slow
def test_axelrod_look_alikes_against_tft_are_named_together(tmp_path: Path) -> None:
    """With the Axelrod library (`--library all`), against TFT, 3 games x 30 rounds: Prober
    (D, C, C, then tit for tat, since TFT's D in round 2 spoils the probe) plays D, C, C, C, ...
    exactly as DEFECT_ONCE does, and Gradual (cooperates until the opponent defects) plays all
    C as ALLC does: whichever of each pair plays, the card of agent A names both as
    indistinguishable, and the built-in comes first (library order)."""
    conditions = [
        ("prober", {"type": "axelrod", "strategy": "Prober"}, policy("TFT")),
        ("defect_once", policy("DEFECT_ONCE"), policy("TFT")),
        ("gradual", {"type": "axelrod", "strategy": "Gradual"}, policy("TFT")),
        ("allc", policy("ALLC"), policy("TFT")),
    ]
    data = experiment(conditions, replicates=3, horizon={"type": "fixed", "n_rounds": 30})
    data["run"]["output_dir"] = str(tmp_path / "run")
    run_experiment(load_config(write_config(data, tmp_path)), RunOptions())
    result = profile_run(tmp_path / "run", library="all", resamples=20)
    stored = pq.read_table(result.path).to_pylist()
    assert stored == result.rows
    for condition, lead, partner in (
        ("prober", "DEFECT_ONCE", "axelrod:Prober"),
        ("defect_once", "DEFECT_ONCE", "axelrod:Prober"),
        ("gradual", "ALLC", "axelrod:Gradual"),
        ("allc", "ALLC", "axelrod:Gradual"),
    ):
        best = _card(stored, condition, "a")[0]
        assert best["strategy"] == lead, condition
        assert partner in json.loads(best["indistinguishable_from"]), condition
        partner_row = next(r for r in _card(stored, condition, "a") if r["strategy"] == partner)
        assert lead in json.loads(partner_row["indistinguishable_from"])
    text = strategy_table(stored)
    assert re.search(r"DEFECT_ONCE = .*axelrod:Prober.*indistinguishable on these games", text)
