"""Rounds are numbered from 1 wherever a person reads them (issue 23, point 2): the app, the
HTML report and the CLI's summaries show a round-valued metric as the round people count, while
the artifacts keep the 0-based index.

The run is known by hand. Ana (a human agent, her moves given) cooperates in rounds 1-40 and
defects from round 41 on (round_index 40); TFT copies her move one round later, so both defect
first in round_index 41. With the collapse window k = 1 and threshold 0, `time_to_collapse` is
the first round_index where both defect: 41, which people read as round 42. In a second
condition Ana defects from round_index 20, so the game collapses at index 21, round 22.
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from tests.support.cli import run_in_process
from tests.ui.sample import CONFIGS

from pdbench.core import rounds_display
from pdbench.report import report_html
from pdbench.report.experiment import cell
from pdbench.runners.plan import summary_table
from pdbench.runners.science.compare import comparison_table
from pdbench.ui import science, tables

N_ROUNDS = 60
LATE, EARLY = "defects_late", "defects_early"
# (first 0-based index where both defect, the round people read): hand-known, see the docstring
COLLAPSE = {LATE: (41, 42), EARLY: (21, 22)}


def _ana(defect_from: int) -> dict[str, Any]:
    moves = "C" * defect_from + "D" * (N_ROUNDS - defect_from)
    return {"type": "human", "name": "Ana", "moves": moves}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two one-game conditions above, run with the library."""
    from pdbench.runners.config.loader import load_config
    from pdbench.runners.lifecycle.session import RunOptions
    from pdbench.runners.science.experiment import run_experiment

    base = tmp_path_factory.mktemp("rounds")
    tft = {"ref": "agents/policies.yaml", "overrides": {"policy": "TFT"}}
    config = {
        "run": {"run_id": "rounds_from_one", "seed": 7, "output_dir": str(base / "run")},
        "horizon": {"type": "fixed", "n_rounds": N_ROUNDS},
        "metrics": {"collapse": {"k": 1, "threshold": 0.0}},
        "experiment": {
            "replicates": 1,
            "conditions": [
                {"name": LATE, "agent_a": _ana(40), "agent_b": tft},
                {"name": EARLY, "agent_a": _ana(20), "agent_b": tft},
            ],
        },
    }
    (base / "agents").mkdir()
    (base / "agents" / "policies.yaml").write_text(
        (CONFIGS / "agents" / "policies.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    path = base / "experiment.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = base / "run"
    run_experiment(load_config(path, kind="experiment"), RunOptions(output_dir=out))
    return out


def _condition_rows(run_dir: Path) -> dict[str, dict[str, Any]]:
    from pdbench.runners.science.compare import read_aggregate_rows

    rows = read_aggregate_rows(run_dir)
    return {r["condition"]: r for r in rows if r["scope"] == "condition"}


def test_the_artifacts_keep_the_0_based_index(run_dir: Path) -> None:
    rows = _condition_rows(run_dir)
    for condition, (index, _) in COLLAPSE.items():
        assert rows[condition]["time_to_collapse"] == index
    rounds = pd.read_json(run_dir / "rounds.jsonl", lines=True)
    assert rounds.groupby("condition")["round_index"].min().tolist() == [0, 0]


def test_the_cli_summaries_number_rounds_from_1(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_in_process(["aggregate", str(run_dir)], capsys)
    assert code == 0, err
    header, _, *lines = out.splitlines()[1:]
    at = header.index("collapse")  # a right-aligned column of 8 characters
    by_condition = {line.split()[0]: line[at : at + 8].strip() for line in lines if line.strip()}
    for condition, (index, shown) in COLLAPSE.items():
        assert by_condition[condition] == f"{shown}.0" != f"{index}.0"

    code, out, err = run_in_process(
        ["compare", str(run_dir), "--metric", "time_to_collapse", "--baseline", LATE], capsys
    )
    assert code == 0, err
    assert "rounds numbered from 1" in out
    (line,) = [x for x in out.splitlines() if x.startswith(EARLY)]
    # n, the condition's mean as a round, and the difference of rounds (22 - 42, as 21 - 41)
    assert line.split()[1:4] == ["1", "22.000", "-20.000"]


def test_the_report_numbers_rounds_from_1(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_in_process(
        ["compare", str(run_dir), "--metric", "time_to_collapse", "--baseline", LATE], capsys
    )
    assert code == 0, err
    html = report_html(run_dir)
    assert "0-based" not in html and "time_to_collapse" not in _visible(html)
    # The key metrics table: the collapse column of each condition's row.
    metrics = _section(html, "metrics")
    table = _tables(metrics)[0]
    column = table[0].index("collapse round (collapsed games)")
    shown = {row[0]: row[column] for row in table[1:]}
    assert shown == {c: str(r) for c, (_, r) in COLLAPSE.items()}
    # The table of every metric: its row for the collapse round.
    every = _tables(metrics)[1]
    (row,) = [r for r in every if r[0] == "collapse round"]
    assert row[2:] == ["42", "22"]
    # The comparison: each mean a round, the difference a difference of rounds.
    comparisons = _section(html, "comparisons")
    assert "Comparisons: collapse round" in _visible(comparisons)
    assert "(mean 42, 1 games)" in _visible(comparisons)
    (row,) = _tables(comparisons)[0][1:]
    assert row[:4] == [EARLY, "1", "22", "-20"]


def test_the_app_numbers_rounds_from_1(run_dir: Path) -> None:
    from streamlit.testing.v1 import AppTest
    from tests.ui.test_app import APP, assert_clean, metric_values

    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state["pdbench_run_dir"] = str(run_dir)
    at.run()
    assert_clean(at)
    assert metric_values(at)["📉 Collapse at"] == "round 42"
    (chip,) = [m for m in at.metric if m.label == "📉 Collapse at"]
    assert "mean round 42" in str(chip.proto.delta) and "41" not in str(chip.proto.delta)
    frames = [t.value for t in at.dataframe]
    every = next(f for f in frames if "column" in f.columns)  # all metrics of this game
    (row,) = every[every["column"] == "time_to_collapse"].to_dict("records")
    assert row["metric"] == "collapse round"
    assert row["replicate 0"] == row["condition mean"] == row["min"] == row["max"] == "42"
    intervals = next(f for f in frames if "95% interval (games as the unit)" in f.columns)
    assert intervals.set_index("metric").loc["collapse round", "value"] == "42"
    conditions = next(f for f in frames if "n_replicates" in f.columns and " " in f.columns)
    assert dict(zip(conditions["condition"], conditions["time_to_collapse"], strict=True)) == {
        c: r for c, (_, r) in COLLAPSE.items()
    }
    # The timeline: Ana's first D is in round 41, shown as such in the cell's tooltip.
    html = "\n".join(h.proto.body for h in at.get("html"))
    assert "Round 41: " in html and re.search(r"Round 41: [^\"]*played D", html)
    assert not re.search(r"Round 40: [^\"]*played D", html)


# --------------------------------------------------------------------------------------------
# Intervals: a round-valued metric's bounds move with its mean (hand-made rows)

ROW = {
    "condition": "c",
    "scope": "condition",
    "n_replicates": 4,
    "time_to_collapse": 10.5,
    "time_to_collapse_ci_low": 9.0,
    "time_to_collapse_ci_high": 12.0,
    "agent_a_cooperation_rate": 0.25,
    "agent_a_cooperation_rate_ci_low": 0.125,
    "agent_a_cooperation_rate_ci_high": 0.5,
}


def test_intervals_of_a_round_metric_are_shifted_like_its_mean() -> None:
    frame = pd.DataFrame([ROW])
    # the report's cell: mean 11.5 with [10, 13]; a rate is left alone
    assert _visible(cell(ROW, "time_to_collapse", False)) == "11.5 [10, 13]"
    assert _visible(cell(ROW, "agent_a_cooperation_rate", True)) == "25.0% [12.5%, 50.0%]"
    # the app's interval table and comparison chart
    table = tables.interval_table(frame, "c").set_index("metric")
    assert table.loc["collapse round", "value"] == "11.5"
    assert table.loc["collapse round", "95% interval (games as the unit)"] == "10 – 13"
    (point,) = science.comparison_frame(frame, "time_to_collapse", ["c"]).to_dict("records")
    assert (point["value"], point["low"], point["high"]) == (11.5, 10.0, 13.0)
    assert point["text"] == "11.5 [10, 13]"


def test_the_cli_comparison_shifts_means_not_differences() -> None:
    row = {
        "metric": "time_to_collapse",
        "baseline": "a",
        "condition": "b",
        "n_baseline": 3,
        "n_condition": 3,
        "baseline_mean": 4.0,
        "condition_mean": 9.0,
        "difference": 5.0,
        "ci_low": 2.0,
        "ci_high": 8.0,
        "p_value": 0.01,
        "p_holm": 0.01,
        "method": "m",
    }
    (line,) = [x for x in comparison_table([row]).splitlines() if x.startswith("b ")]
    assert line.split()[1:6] == ["3", "10.000", "+5.000", "[+2.000,", "+8.000]"]


def test_the_run_summary_table_shows_the_collapse_round() -> None:
    rows = [
        {
            "scope": "condition",
            "condition": "c",
            "agent_a_name": "A",
            "agent_b_name": "B",
            "n_rounds": 30.0,
            "agent_a_cooperation_rate": 0.5,
            "agent_b_cooperation_rate": 0.5,
            "agent_a_total_payoff": 1.0,
            "agent_b_total_payoff": 1.0,
            "time_to_collapse": 0.0,  # collapsed in the first round
        }
    ]
    header, _, line = summary_table(rows).splitlines()[:3]
    at = header.index("collapse")
    assert line[at : at + 8].strip() == "1.0"


@pytest.mark.parametrize(
    ("index", "number", "text"),
    [(0, 1, "round 1"), (41, 42, "round 42"), (9999, 10000, "round 10,000")],
)
def test_round_numbers(index: int, number: int, text: str) -> None:
    assert rounds_display.round_number(index) == number
    assert rounds_display.round_index_of(number) == index
    assert rounds_display.round_text(index) == text


# --------------------------------------------------------------------------------------------
# HTML helpers


def _visible(html: str) -> str:
    """The text of some HTML, tags removed."""
    return unescape(re.sub(r"<[^>]+>", "", html))


def _section(html: str, name: str) -> str:
    match = re.search(rf"<section id='{name}'>(.*?)</section>", html, re.S)
    assert match, name
    return match.group(1)


def _tables(html: str) -> list[list[list[str]]]:
    """Each <table> of some HTML as rows of visible cell texts."""
    out = []
    for table in re.findall(r"<table[^>]*>(.*?)</table>", html, re.S):
        rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)
        out.append(
            [
                [_visible(c).strip() for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r, re.S)]
                for r in rows
            ]
        )
    return out
