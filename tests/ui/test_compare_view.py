"""View Results compares conditions with their intervals, shows each agent's memory-one profile
and offers the run's files and its HTML report for download. The numbers drawn are those of
aggregates.parquet (checked cell by cell), and viewing writes nothing into the run directory."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
from tests.ui.test_app import VIEW, assert_clean, make_app, show_tab

from pdbench.ui import files, science


def condition_rows(run: Path) -> dict[str, dict]:
    rows = pq.read_table(run / "aggregates.parquet").to_pylist()
    return {r["condition"]: r for r in rows if r["scope"] == "condition"}


def test_the_comparison_frame_is_the_aggregates_intervals(sample_run: Path) -> None:
    aggregates = pq.read_table(sample_run / "aggregates.parquet").to_pandas()
    rows = condition_rows(sample_run)
    order = list(rows)[::-1]  # the order asked for is the order drawn
    frame = science.comparison_frame(aggregates, "agent_a_cooperation_rate", order)
    assert list(frame["condition"]) == order
    for _, drawn in frame.iterrows():
        row = rows[drawn["condition"]]
        assert drawn["value"] == row["agent_a_cooperation_rate"]
        assert drawn["low"] == row["agent_a_cooperation_rate_ci_low"]
        assert drawn["high"] == row["agent_a_cooperation_rate_ci_high"]
        assert drawn["games"] == row["n_replicates"]
        assert drawn["text"].startswith(f"{100 * row['agent_a_cooperation_rate']:.1f}%")
    chart = science.interval_chart(frame, "A cooperation rate", True).to_dict()
    assert chart["height"] == {"step": science.ROW_HEIGHT}  # a row of its own per condition
    assert chart["layer"][0]["encoding"]["y"]["sort"] == order
    missing = science.comparison_frame(aggregates, "agent_a_cooperation_rate", ["nope"])
    assert missing.empty


def test_memory_one_profile_per_agent(sample_run: Path) -> None:
    aggregates = pq.read_table(sample_run / "aggregates.parquet").to_pandas()
    rows = condition_rows(sample_run)
    condition = next(iter(rows))
    frame = science.memory_one_frame(aggregates, condition)
    row = rows[condition]
    for _, drawn in frame.iterrows():
        side = drawn["agent"][-1].lower()
        state = drawn["state"].split()[-1].lower()
        assert drawn["value"] == row[f"agent_{side}_p_coop_after_{state}"]
        assert drawn["rounds"] == row[f"agent_{side}_n_{state}"]
    # Every state that was reached is drawn, and only those.
    reached = {
        (s, st)
        for s in "ab"
        for st in ("cc", "cd", "dc", "dd")
        if row[f"agent_{s}_p_coop_after_{st}"] is not None
    }
    assert len(frame) == len(reached)


def test_downloads_are_the_run_files_and_the_report(sample_run: Path) -> None:
    before = sorted(p.name for p in sample_run.iterdir())
    found = files.run_files(sample_run)
    assert [p.name for p in found][:3] == [
        "rounds.jsonl",
        "run_manifest.json",
        "aggregates.parquet",
    ]
    archive = zipfile.ZipFile(io.BytesIO(files.zipped(sample_run)))
    assert sorted(archive.namelist()) == sorted(f"{sample_run.name}/{p.name}" for p in found)
    rounds = archive.read(f"{sample_run.name}/rounds.jsonl")
    assert rounds == (sample_run / "rounds.jsonl").read_bytes()
    html = files.report(sample_run).decode()
    assert html.startswith("<!DOCTYPE html>") and "pdbench report" in html
    assert sorted(p.name for p in sample_run.iterdir()) == before  # nothing written


def test_view_results_draws_the_comparison_and_download_buttons(sample_run: Path) -> None:
    at = show_tab(make_app(sample_run).run(), VIEW)
    assert_clean(at)
    subheaders = [h.value for h in at.subheader]
    for title in ("⚖️ Compare conditions", "🧠 Memory-one profile", "⬇️ Download"):
        assert title in subheaders
    metrics = at.multiselect(key="vr_compare_metrics")
    assert metrics.value == [
        "agent_a_cooperation_rate",
        "agent_b_cooperation_rate",
        "agent_a_total_payoff",
    ]
    metrics.set_value(["overall_cooperation_rate"]).run()
    assert_clean(at)
    assert at.multiselect(key="vr_compare_metrics").value == ["overall_cooperation_rate"]
