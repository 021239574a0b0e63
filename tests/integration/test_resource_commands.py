"""The commands that read a resource run (issue 31), on small runs of policies: `pdbench report`
(its sections, the numbers of aggregates.parquet read here with pyarrow, the commons chart's
collapse threshold, the published table when the manifest has one), `pdbench aggregate`
(rewrites the three tables byte for byte), `pdbench compare` (differences checked against
per-game values computed here from rounds.jsonl), and the one-line refusals of `profile` and
`merge`."""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.support.cli import run_in_process, run_uncaptured

TABLES = ("aggregates.parquet", "resource_rounds.parquet", "resource_seats.parquet")
PGG = """run: {run_id: pgg_cmds, seed: 7, output_dir: OUT}
horizon: {type: fixed, n_rounds: 6}
pgg:
  replicates: 3
  game: {preset: pgg_bench}
  conditions:
    - name: mixed
      seats: [FULL_COOPERATOR, CONDITIONAL_COOPERATOR, PUNISHER, FREE_RIDER, ANTISOCIAL_PUNISHER]
    - name: cooperators
      seats: [FULL_COOPERATOR, FULL_COOPERATOR, CONDITIONAL_COOPERATOR, PUNISHER, PUNISHER]
"""
COMMONS = """run: {run_id: commons_cmds, seed: 7, output_dir: OUT}
horizon: {type: fixed, n_rounds: 8}
commons:
  replicates: 3
  conditions:
    - name: sustainable
      seats: [SUSTAINABLE, SUSTAINABLE, SUSTAINABLE, SUSTAINABLE, SUSTAINABLE]
    - name: moderate
      seats: [MODERATE, MODERATE, MODERATE, MODERATE, MODERATE]
    - name: greedy
      seats: [GREEDY, SUSTAINABLE, SUSTAINABLE, SUSTAINABLE, SUSTAINABLE]
"""


def _run(root: Path, name: str, text: str) -> Path:
    out = root / f"out_{name}"
    config = root / f"{name}.yaml"
    config.write_text(text.replace("OUT", str(out)))
    code, err = run_uncaptured(["run", str(config), "--overwrite"])
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One pgg and one commons run of policies, made once for the module."""
    root = tmp_path_factory.mktemp("resource_cmds")
    return {"pgg": _run(root, "pgg", PGG), "commons": _run(root, "commons", COMMONS)}


def _copy(run: Path, tmp_path: Path) -> Path:
    target = tmp_path / run.name
    shutil.copytree(run, target)
    return target


def _games(run: Path) -> dict[str, list[list[dict]]]:
    """rounds.jsonl's records per condition, one list a game (by replicate)."""
    found: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for line in (run / "rounds.jsonl").read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            found[(record["condition"], record["replicate"])].append(record)
    out: dict[str, list[list[dict]]] = defaultdict(list)
    for (condition, _), records in sorted(found.items(), key=lambda kv: kv[0][1]):
        out[condition].append(records)
    return out


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def _g(v: float) -> str:
    return f"{v:.3g}"


@pytest.mark.parametrize("kind", ["pgg", "commons"])
def test_aggregate_rewrites_the_tables_byte_for_byte(
    runs: dict[str, Path], kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _copy(runs[kind], tmp_path)
    before = {name: (run / name).read_bytes() for name in TABLES}
    for name in TABLES:
        (run / name).unlink()
    code, out, err = run_in_process(["aggregate", str(run)], capsys)
    assert code == 0, err
    assert "aggregates.parquet, resource_rounds.parquet, resource_seats.parquet rewritten" in out
    assert {name: (run / name).read_bytes() for name in TABLES} == before


def test_pgg_report_has_its_sections_and_the_tables_numbers(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _copy(runs["pgg"], tmp_path)
    code, _, err = run_in_process(["report", str(run)], capsys)
    assert code == 0, err
    html = (run / "report.html").read_text()
    for section in ("conditions", "rounds", "seats", "readings", "setup"):
        assert f"<section id='{section}'>" in html
    assert "published" not in html.split("<nav>")[1].split("</nav>")[0]
    assert "treats the game as the unit" in html
    assert "How replies are read" in html
    rows = pq.read_table(run / "aggregates.parquet").to_pylist()
    table = html.split("<section id='conditions'>")[1].split("</section>")[0]
    for row in rows:
        line = table.split(f"<td>{row['condition']}</td>")[1].split("</tr>")[0]
        assert _pct(row["contribution_rate"]) in line
        assert _g(row["efficiency"]) in line
        assert _g(row["punish_spent"]) in line
    readings = html.split("<section id='readings'>")[1].split("</section>")[0]
    for row in rows:
        cells = f"<td>{row['condition']}</td><td>{row['decisions']:,}</td><td>0</td>"
        assert cells in readings
    # one punishment chart and one contribution band per condition
    assert len(re.findall(r"<title>[^<]*punishment spent per round", html)) == len(rows)
    assert html.count("class='band'") == len(rows)


def test_commons_report_draws_the_collapse_threshold(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _copy(runs["commons"], tmp_path)
    code, _, err = run_in_process(["report", str(run)], capsys)
    assert code == 0, err
    html = (run / "report.html").read_text()
    for section in ("conditions", "seasons", "seats", "readings", "setup"):
        assert f"<section id='{section}'>" in html
    seasons = html.split("<section id='seasons'>")[1].split("</section>")[0]
    line = re.search(r"<line class='threshold' x1='[\d.]+' y1='([\d.]+)'", seasons)
    assert line is not None
    assert "collapse threshold: stock below 5" in seasons
    # the stock chart's y axis runs 0..100 (capacity) over 200 px from its top: stock 5 sits
    # 5% of the way up from the 0 gridline
    zero = re.search(
        r"<line x1='56' y1='([\d.]+)' x2='664' y2='\1' stroke='#e3e7ec'/><text[^>]*>0<", seasons
    )
    hundred = re.search(
        r"<line x1='56' y1='([\d.]+)' x2='664' y2='\1' stroke='#e3e7ec'/><text[^>]*>100<", seasons
    )
    assert zero and hundred
    y0, y100 = float(zero.group(1)), float(hundred.group(1))
    assert float(line.group(1)) == pytest.approx(y0 + 0.05 * (y100 - y0), abs=0.11)
    assert "Share of games still going" in seasons
    rows = pq.read_table(run / "aggregates.parquet").to_pylist()
    table = html.split("<section id='conditions'>")[1].split("</section>")[0]
    for row in rows:
        cells = table.split(f"<td>{row['condition']}</td>")[1].split("</tr>")[0]
        survival = f"{_pct(row['survival'])} <span class='ci'>[{_pct(row['survival_ci_low'])}, "
        assert survival in cells
        assert _g(row["survival_months"]) in cells


def test_report_renders_published_numbers_when_the_manifest_has_them(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _copy(runs["commons"], tmp_path)
    path = run / "commons_manifest.json"
    manifest = json.loads(path.read_text())
    entry = {"model": "m", "ci": None, "published_only": False}
    manifest["published"] = {
        "source_file": "govsim.published.yaml",
        "rounds": manifest["config"]["horizon"]["n_rounds"] + 1,
        "entries": [
            {
                **entry,
                "metric": "survival",
                "condition": "sustainable",
                "value": 0.46,
                "source": "GovSim",
                "definition": "share",
            },
            {
                **entry,
                "metric": "survival_months",
                "condition": None,
                "value": 4.5,
                "source": "GovSim",
                "definition": "<b>mean</b>",
            },
        ],
        "deviations": ["policies, not LLMs"],
    }
    path.write_text(json.dumps(manifest))
    code, _, err = run_in_process(["report", str(run)], capsys)
    assert code == 0, err
    html = (run / "report.html").read_text()
    part = html.split("<section id='published'>")[1].split("</section>")[0]
    row = pq.read_table(run / "aggregates.parquet").to_pylist()[0]
    assert "46.0%" in part and _pct(row["survival"]) in part
    assert "&lt;b&gt;mean&lt;/b&gt;" in part  # escaped text from the manifest
    assert "policies, not LLMs" in part
    assert "they are not comparable" in part  # the published numbers are over one more round


def test_compare_pgg_exact_conditions_differ_by_the_hand_difference(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _copy(runs["pgg"], tmp_path)
    code, out, err = run_in_process(["compare", str(run)], capsys)
    assert code == 0, err
    assert "comparisons.parquet written" in out
    rate = {
        c: [
            sum(sum(r["contributions"]) for r in g) / sum(sum(r["limits"]) for r in g)
            for g in games
        ]
        for c, games in _games(run).items()
    }
    rows = pq.read_table(run / "comparisons.parquet").to_pylist()
    assert {r["metric"] for r in rows} >= {"contribution_rate", "efficiency", "punish_spent"}
    (row,) = [r for r in rows if r["metric"] == "contribution_rate"]
    assert (row["baseline"], row["condition"]) == ("mixed", "cooperators")
    # policies only: every game of a condition identical, the difference exact
    assert len(set(rate["mixed"])) == 1 and len(set(rate["cooperators"])) == 1
    hand = rate["cooperators"][0] - rate["mixed"][0]
    assert row["exact"] is True
    assert row["difference"] == pytest.approx(hand, abs=1e-12)
    assert row["ci_low"] == row["ci_high"] == row["difference"]
    code, _, err = run_in_process(["report", str(run)], capsys)
    assert code == 0, err
    part = (run / "report.html").read_text().split("<section id='comparisons'>")[1]
    assert f"{row['difference']:.3g} <span class='ci'>(exact)</span>" in part


def test_compare_commons_difference_of_survival_months(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _copy(runs["commons"], tmp_path)
    code, out, err = run_in_process(["compare", str(run), "--baseline", "moderate"], capsys)
    assert code == 0, err
    assert "comparisons.parquet written" in out
    # a commons game stops at its collapse season: its months survived = seasons recorded
    months = {c: [len(g) for g in games] for c, games in _games(run).items()}
    rows = pq.read_table(run / "comparisons.parquet").to_pylist()
    picked = [r for r in rows if r["metric"] == "survival_months"]
    assert {r["condition"] for r in picked} == {"sustainable", "greedy"}
    base = sum(months["moderate"]) / len(months["moderate"])
    for row in picked:
        mean = sum(months[row["condition"]]) / len(months[row["condition"]])
        assert row["difference"] == pytest.approx(mean - base)
        assert row["ci_low"] <= row["difference"] <= row["ci_high"]
        assert row["p_holm"] >= row["p_value"]


@pytest.mark.parametrize("command", ["profile", "merge"])
def test_profile_and_merge_refuse_a_resource_run_in_one_line(
    runs: dict[str, Path], tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [command, str(runs["pgg"])]
    if command == "merge":
        args = [command, str(tmp_path / "merged"), str(runs["pgg"])]
    code, _, err = run_in_process(args, capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "a pgg run" in err
