"""The groups commands as a user types them: run, aggregate (idempotent), compare (the numbers
of the per-game rows), report, and one-line config errors with exit code 2."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from tests.support.cli import run_process

REPO = Path(__file__).resolve().parents[2]
TABLES = (
    "aggregates.parquet",
    "seats.parquet",
    "group_rounds.parquet",
    "group_conditional.parquet",
)


@pytest.fixture(scope="module")
def groups_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """configs/groups.yaml run once for the module, 3 replicates."""
    root = tmp_path_factory.mktemp("groups_cli")
    shutil.copytree(REPO / "configs", root / "configs")
    out = root / "out"
    done = run_process(["run", "configs/groups.yaml", "-r", "3", "-o", str(out)], root)
    assert done.returncode == 0, done.stderr
    for name in ("conditional_plus_free_rider", "conditional_only", "talking_LLM_group"):
        assert name in done.stdout
    assert "intervals: 95%, the game as the unit" in done.stdout
    return out


def test_aggregate_rewrites_the_same_tables(groups_run: Path) -> None:
    before = {name: pq.read_table(groups_run / name).to_pylist() for name in TABLES}
    done = run_process(["aggregate", str(groups_run)], groups_run.parent)
    assert done.returncode == 0, done.stderr
    after = {name: pq.read_table(groups_run / name).to_pylist() for name in TABLES}
    assert after == before


def test_compare_gives_the_difference_of_the_games_means(groups_run: Path) -> None:
    done = run_process(
        ["compare", str(groups_run), "--metric", "group_payoff_per_round"], groups_run.parent
    )
    assert done.returncode == 0, done.stderr
    rows = pq.read_table(groups_run / "aggregates.parquet").to_pylist()
    per_game: dict[str, list[float]] = {}
    for row in rows:
        if row["scope"] == "replicate":
            per_game.setdefault(row["condition"], []).append(row["group_payoff_per_round"])
    base = sum(per_game["conditional_plus_free_rider"]) / 3
    compared = pq.read_table(groups_run / "comparisons.parquet").to_pylist()
    assert {r["baseline"] for r in compared} == {"conditional_plus_free_rider"}
    for row in compared:
        mean = sum(per_game[row["condition"]]) / 3
        assert row["difference"] == pytest.approx(mean - base)
        assert row["n_condition"] == 3
    bad = run_process(["compare", str(groups_run), "--metric", "nope"], groups_run.parent)
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "unknown group metric 'nope'" in bad.stderr


def test_report_has_a_groups_section(groups_run: Path) -> None:
    done = run_process(["report", str(groups_run)], groups_run.parent)
    assert done.returncode == 0, done.stderr
    page = (groups_run / "report.html").read_text(encoding="utf-8")
    assert "<h2>Groups</h2>" in page
    for name in ("conditional_plus_free_rider", "volunteers_of_three", "talking_LLM_group"):
        assert name in page


def _error_of(tmp_path: Path, body: dict) -> str:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    done = run_process(["validate", str(path)], tmp_path)
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stderr
    return done.stderr


BASE = {
    "run": {"run_id": "bad", "seed": 1, "output_dir": "out"},
    "horizon": {"type": "fixed", "n_rounds": 5},
    "group_game": {"kind": "public_goods", "r": 3},
}


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (
            {"communication": {"mode": "every_round", "order": "a_first"}},
            "bad.yaml: communication.order: 'a_first' is not an order of 4 players "
            "(valid: simultaneous, round_robin)",
        ),
        (
            {"seats": [{"type": "policy", "policy": "CC", "params": {"m": 9}}]},
            "bad.yaml: groups.conditions[0].seats[0].params: CC's m must be 1..3 in a group of 4 "
            "(got 9)",
        ),
        (
            {"seats": ["axelrod:TitForTat"]},
            "bad.yaml: groups.conditions[0].seats[0]: Axelrod strategies play pairs only",
        ),
        (
            {"seats": ["NICE"]},
            "bad.yaml: groups.conditions[0].seats[0].policy: unknown group "
            "policy (valid: ALLC, ALLD, CC, GRIM, RANDOM, TFT, WSLS) (got 'NICE')",
        ),
        ({"run": {"shard": "3/2"}}, "bad.yaml: run.shard: must be i/K with 1 <= i <= K"),
        (
            {"run": {"rounds_log": "columns"}},
            "bad.yaml: run.rounds_log: groups keep their rounds "
            "in rounds.jsonl only (valid: jsonl) (got 'columns')",
        ),
        (
            {"group_game": {"kind": "public_goods", "r": 3, "b": 2}},
            "b: a public_goods game does not read it (its parameters: r, c) (got 2.0)",
        ),
    ],
)
def test_config_errors_are_one_line_each(tmp_path: Path, change: dict, line: str) -> None:
    body = yaml.safe_load(yaml.safe_dump(BASE))
    seats: list = ["TFT", "ALLD", "CC", "WSLS"]
    for key, value in change.items():
        if key == "seats":
            seats = [*value, *seats[len(value) :]]
        elif key == "run":
            body["run"].update(value)
        else:
            body[key] = value
    body["groups"] = {"conditions": [{"name": "g", "seats": seats}]}
    stderr = _error_of(tmp_path, body)
    assert line in stderr, stderr
    assert all(
        row.startswith(str(tmp_path / "bad.yaml")) or row.startswith("bad.yaml")
        for row in stderr.strip().splitlines()
    )


def test_compare_across_runs_says_it_takes_experiments(groups_run: Path) -> None:
    done = run_process(
        ["compare", str(groups_run), str(groups_run), "--across-runs"], groups_run.parent
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"{groups_run}: a groups run; --across-runs compares the agents of experiment runs "
        "(compare a groups run's conditions with `pdbench compare RUN_DIR`)"
    )


def test_a_public_goods_game_with_r_at_least_n_is_named_no_dilemma(tmp_path: Path) -> None:
    body = yaml.safe_load(yaml.safe_dump(BASE))
    body["group_game"]["r"] = 4
    body["groups"] = {"conditions": [{"name": "four", "seats": ["TFT", "ALLD", "CC", "WSLS"]}]}
    path = tmp_path / "r4.yaml"
    path.write_text(yaml.safe_dump(body))
    done = run_process(["validate", str(path)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        "groups.conditions[0] (four): r = 4 is at least N = 4, so defecting pays no more than "
        "cooperating: not a social dilemma (r < N makes one)"
    ) in done.stderr
