"""The Agents tab through AppTest: every agent of two saved runs listed; two appearances of the
same LLM agent side by side with the difference and interval `pdbench compare --across-runs`
prints; a third one facing another design named as such, with no difference."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.support.agent_runs import make_agent_run
from tests.support.cli import run_in_process
from tests.ui.test_app import assert_clean, make_app, show_tab

from pdbench.runners.science.profile import profile_run

AGENTS = "👥 Agents"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """monday then friday (friday also with a noisy condition) under `<base>/data/runs`."""
    base = tmp_path_factory.mktemp("agents_tab")
    runs = base / "data" / "runs"
    make_agent_run(runs, "monday", 11, 3, n_rounds=12)
    make_agent_run(runs, "friday", 12, 4, noisy=True, n_rounds=12)
    for name in ("monday_config", "friday_config"):  # not runs: out of the listed directory
        (runs / name).rename(base / name)
    profile_run(runs / "monday")  # a strategy card for monday's agents, none for friday's
    return base


def cli_cooperation(base: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The cooperation difference [interval] `pdbench compare --across-runs` prints for friday's
    llm_vs_TFT minus monday's."""
    runs = base / "data" / "runs"
    code, out, err = run_in_process(
        ["compare", str(runs / "monday"), str(runs / "friday"), "--across-runs", "--agent", "coop"],
        capsys,
    )
    assert code == 0, err
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if "friday · llm_vs_TFT · A  minus" in line)
    label, _, rest = lines[head + 1].strip().partition("  ")
    assert label == "cooperation"
    return rest.strip().split("  p ")[0]


def test_two_agents_from_two_runs_side_by_side(
    two_runs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = cli_cooperation(two_runs, capsys)
    monkeypatch.chdir(two_runs)
    at = show_tab(make_app().run(), AGENTS)
    assert_clean(at)
    agents = at.dataframe[0].value
    coop = agents[agents["agent"].str.startswith("mock-persona-v1[cooperative] · prompt ")]
    assert list(coop["runs"]) == ["friday, monday"] and list(coop["appearances"]) == [3]
    assert set(agents["agent"]) >= {"TFT", "GRIM", "ALLD"}
    # Opened on the LLM agent's first pair with the same design: monday's, then friday's.
    picked = at.multiselect(key="ag_picked").value
    assert [k.split("@")[0] for k in picked] == ["monday", "friday"]
    side_by_side, differences = at.table[0].value, at.table[1].value
    assert "monday · llm_vs_TFT · A" in side_by_side.columns[0]
    assert "friday · llm_vs_TFT · A" in side_by_side.columns[1]
    assert side_by_side.loc["games"].tolist() == ["3", "4"]
    assert differences.loc["cooperation", "difference [95% CI]"] == expected
    card = side_by_side.loc["strategy card"].tolist()
    assert card[0].startswith(("no strategy fits (closest ", "ALLC", "GTFT", "TFT")), card
    assert card[1].startswith("no strategy card: run `pdbench profile "), card
    # A third appearance that faced 10% noise: named as another design, no difference.
    noisy = next(k for k in at.multiselect(key="ag_picked").options if "llm_vs_TFT_noisy" in k)
    at.multiselect(key="ag_picked").select(noisy).run()
    assert_clean(at)
    assert len(at.table) == 2  # the side by side (now three columns) and one difference table
    assert len(at.table[0].value.columns) == 3
    assert any("designs differ (noise 0.0 vs 0.1)" in w.value for w in at.warning)


def test_a_damaged_run_and_a_copy_cost_one_line_each(
    two_runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Besides monday and friday: a run whose aggregates.parquet is cut short, one whose
    manifest is garbled, a directory that is not a run, and a copy of monday (the same run
    twice). The two runs' agents are listed as without them, one line for each of the others."""
    shutil.copytree(two_runs / "data", tmp_path / "data")
    runs = tmp_path / "data" / "runs"
    broken = runs / "broken"
    shutil.copytree(runs / "friday", broken)
    manifest = json.loads((broken / "run_manifest.json").read_text())
    manifest.update(run_id="broken", started_at_utc="2031-01-01T00:00:00+00:00")
    (broken / "run_manifest.json").write_text(json.dumps(manifest))
    with open(broken / "aggregates.parquet", "r+b") as fh:
        fh.truncate(2000)
    shutil.copytree(runs / "friday", runs / "garbled")
    (runs / "garbled" / "run_manifest.json").write_text("{garbled")
    (runs / "notes").mkdir()
    (runs / "notes" / "todo.txt").write_text("not a run")
    shutil.copytree(runs / "monday", runs / "monday_backup")
    monkeypatch.chdir(tmp_path)
    at = show_tab(make_app().run(), AGENTS)
    assert not at.exception, [e.value for e in at.exception]
    agents = at.dataframe[0].value
    coop = agents[agents["agent"].str.startswith("mock-persona-v1[cooperative] · prompt ")]
    assert list(coop["runs"]) == ["friday, monday"] and list(coop["appearances"]) == [3]
    warnings = [w.value for w in at.warning]
    assert all("\n" not in w for w in warnings), warnings
    assert len(warnings) == 3, warnings  # the directory without a manifest is not a run
    assert any(
        f"{(runs / 'garbled').resolve()}/run_manifest.json: not valid JSON" in w for w in warnings
    ), warnings
    assert any(
        f"{broken.resolve()}/aggregates.parquet: not a readable Parquet file" in w for w in warnings
    ), warnings
    assert any(
        f"{(runs / 'monday_backup').resolve()}: the same run as {(runs / 'monday').resolve()}" in w
        for w in warnings
    ), warnings
    picked = at.multiselect(key="ag_picked").value  # the default pair still: monday, friday
    assert [k.split("@")[0] for k in picked] == ["monday", "friday"]
