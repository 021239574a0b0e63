"""Exact where it is exact (issue 29): a condition deterministic by construction has exact
values, shown as exact in the run's lines, the report, `compare` and the app; a condition that
could have varied keeps its interval, and when its games were all identical says why the
interval is wide.

Worked by hand: over a fixed 10 rounds TFT plays C in round 1, then copies ALLD's D nine times:
it cooperates in 1 round of 10 (0.1) and earns 0 + 9 x 1 = 9, ALLD 5 + 9 x 1 = 14, in every
game, whatever the seeds.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from tests.support.configs import experiment, llm, policy, write_config

from pdbench.runners.config.loader import load_config
from pdbench.runners.science.compare import compare_run, comparison_table
from pdbench.runners.science.experiment import run_experiment
from pdbench.runners.start import report as run_lines
from pdbench.storage.run_dir import read_manifest


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """One run: TFT vs ALLD twice (exact), RANDOM vs TFT, TFT vs ALLD with noise, the mock's
    tit-for-tat persona vs TFT (identical games from an agent that could vary)."""
    directory = tmp_path_factory.mktemp("exact")
    mapping = experiment(
        [
            ("tft_alld", policy("TFT"), policy("ALLD")),
            ("tft_alld_again", policy("TFT"), policy("ALLD")),
            ("random_tft", policy("RANDOM"), policy("TFT")),
            ("tft_alld_noisy", policy("TFT"), policy("ALLD")),
            ("mock_tft", llm("tit_for_tat"), policy("TFT")),
        ],
        horizon={"type": "fixed", "n_rounds": 10},
        replicates=4,
        run={"output_dir": str(directory / "run")},
    )
    mapping["experiment"]["conditions"][3]["noise"] = 0.1
    loaded = load_config(write_config(mapping, directory))
    summary = run_experiment(loaded)
    rows = {r["condition"]: r for r in summary.rows if r["scope"] == "condition"}
    return SimpleNamespace(dir=Path(summary.run_dir), summary=summary, rows=rows, loaded=loaded)


def test_the_manifest_records_which_conditions_are_exact_and_why_not(run) -> None:
    conditions = {c["name"]: c for c in read_manifest(run.dir, "experiment")["conditions"]}
    assert conditions["tft_alld"]["exact"] is True
    assert conditions["tft_alld"]["could_vary"] == []
    assert conditions["random_tft"]["exact"] is False
    assert conditions["random_tft"]["could_vary"] == ["RANDOM, a policy that draws at random"]
    assert conditions["tft_alld_noisy"]["could_vary"] == ["execution noise 0.1"]
    assert conditions["mock_tft"]["exact"] is False
    assert "an LLM agent" in conditions["mock_tft"]["could_vary"][0]


def test_a_deterministic_condition_has_exact_values_and_intervals_equal_to_them(run) -> None:
    row = run.rows["tft_alld"]
    assert row["exact"] is True
    assert row["agent_a_cooperation_rate"] == 0.1
    assert row["agent_a_cooperation_rate_ci_low"] == row["agent_a_cooperation_rate_ci_high"] == 0.1
    assert row["agent_a_total_payoff"] == 9.0
    assert row["agent_b_total_payoff_ci_low"] == row["agent_b_total_payoff_ci_high"] == 14.0


def test_conditions_that_could_vary_keep_their_intervals(run) -> None:
    for name in ("random_tft", "tft_alld_noisy"):
        row = run.rows[name]
        assert row["exact"] is False
        assert row["agent_a_cooperation_rate_ci_low"] < row["agent_a_cooperation_rate_ci_high"]
    mock = run.rows["mock_tft"]
    # the mock's tit-for-tat persona against TFT: CCC... in every game, yet not exact
    assert mock["identical_games"] is True and mock["exact"] is False
    assert mock["agent_a_cooperation_rate"] == 1.0
    assert mock["agent_a_cooperation_rate_ci_low"] < 0.9


def test_the_run_lines_say_which_values_are_exact_and_why_identical_games_are_wide(run) -> None:
    lines = run_lines(run.loaded, run.summary)
    exact = [line for line in lines if line.startswith("exact: ")]
    assert len(exact) == 1 and exact[0].startswith("exact: tft_alld, tft_alld_again: ")
    notes = [line for line in lines if line.startswith("note: mock_tft: every game identical")]
    assert len(notes) == 1 and "an LLM agent" in notes[0]
    assert not any("random_tft" in line for line in lines if line.startswith(("exact", "note")))


def test_the_report_shows_exact_values_without_brackets(run) -> None:
    from pdbench.report import experiment_report

    html = experiment_report(run.dir)
    assert "<td>10.0% <span class='ci'>(exact: deterministic)</span></td>" in html
    assert "mock_tft: every game identical; the interval is wide because" in html
    assert "10.0% <span class='ci'>[" not in html  # TFT's 1 in 10 is never an interval


def test_compare_of_two_identical_deterministic_conditions_is_exactly_zero(run) -> None:
    rows = {r["condition"]: r for r in compare_run(run.dir, baseline="tft_alld")}
    twin = rows["tft_alld_again"]
    assert (twin["difference"], twin["ci_low"], twin["ci_high"]) == (0.0, 0.0, 0.0)
    assert twin["exact"] is True and twin["p_value"] is None
    line = next(x for x in comparison_table(list(rows.values())).splitlines() if "again" in x)
    assert "0 (exact)" in line and "[" not in line
    # against a condition that could vary: an interval; the exact baseline adds no width
    other = rows["random_tft"]
    assert other["exact"] is False and other["ci_low"] < other["difference"] < other["ci_high"]


def test_compare_says_why_identical_games_of_agents_that_could_vary_are_wide(
    run, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.cli import run_in_process

    code, out, err = run_in_process(["compare", str(run.dir), "--baseline", "tft_alld"], capsys)
    assert code == 0, err
    notes = [line for line in out.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and notes[0].startswith("note: mock_tft: every game identical")
    assert "an LLM agent" in notes[0]


def test_the_app_shows_exact_values_as_exact(run) -> None:
    import pandas as pd

    from pdbench.ui import science, tables

    aggregates = pd.read_parquet(run.dir / "aggregates.parquet")
    table = tables.interval_table(aggregates, "tft_alld")
    cooperation = table[table["metric"] == tables.METRICS["agent_a_cooperation_rate"][0]]
    assert cooperation["95% interval (games as the unit)"].tolist() == ["exact: deterministic"]
    frame = science.comparison_frame(aggregates, "agent_a_cooperation_rate", ["tft_alld"])
    assert frame["text"].tolist() == ["10.0% (exact: deterministic)"]
    manifest = read_manifest(run.dir, "experiment")
    notes = science.exactness_notes(aggregates, manifest, ["mock_tft", "random_tft"])
    assert len(notes) == 1 and notes[0].startswith("note: mock_tft: every game identical")
