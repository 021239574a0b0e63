"""`pdbench tournament` runs a group tournament and `pdbench evolve` a group evolution, end to end
in a fresh process: the artifacts, the printed summary; `validate` prints their plans, `report`
writes their pages, and a stopped group tournament resumes to the same artifacts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from tests.support.cli import run_in_process, run_process

RUN = {"run_id": "small", "seed": 4, "rounds_log": "jsonl"}


def write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def tournament_config(tmp_path: Path, **section: Any) -> Path:
    return write(
        tmp_path,
        {
            "run": {**RUN, "output_dir": str(tmp_path / "out")},
            "game": {"noise": 0.05},
            "horizon": {"type": "fixed", "n_rounds": 12},
            "group_game": {"kind": "public_goods", "r": 2.5},
            "group_tournament": {
                "players": ["ALLC", "ALLD", "TFT", "CC", "WSLS"],
                "group_size": 3,
                "repetitions": 3,
                **section,
            },
        },
    )


def evolution_config(tmp_path: Path) -> Path:
    return write(
        tmp_path,
        {
            "run": {**RUN, "output_dir": str(tmp_path / "out")},
            "horizon": {"type": "fixed", "n_rounds": 10},
            "group_game": {"kind": "linear_pd"},
            "group_evolution": {
                "population": [{"player": "TFT", "count": 6}, {"player": "ALLD", "count": 4}],
                "group_size": 3,
                "process": "moran",
                "beta": 1.0,
                "generations": 3000,
                "seeds": 5,
            },
        },
    )


def test_group_tournament_from_the_command_line(tmp_path: Path) -> None:
    done = run_process(["tournament", str(tournament_config(tmp_path))], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert done.stdout.startswith(
        f"group tournament small: 5 players in 10 groups of 3, 30 games, 360 rounds -> {out}"
    )
    assert "payoff/round [95%]" in done.stdout and "the game as the unit" in done.stdout
    board = pq.read_table(out / "leaderboard.parquet").to_pylist()
    assert sorted(r["player"] for r in board) == ["ALLC", "ALLD", "CC", "TFT", "WSLS"]
    assert all(r["games"] == 18 for r in board)  # C(4, 2) groups x 3 repetitions
    assert pq.read_table(out / "groups.parquet").num_rows == 30
    manifest = json.loads((out / "group_tournament_manifest.json").read_text())
    assert (manifest["kind"], manifest["status"]) == ("group_tournament", "completed")
    assert not (out / "rounds.jsonl").exists() or not (out / "rounds.jsonl").read_bytes()


def test_group_evolution_from_the_command_line(tmp_path: Path) -> None:
    done = run_process(["evolve", str(evolution_config(tmp_path))], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert done.stdout.startswith("group evolution small: moran (beta 1), groups of 3 in a ")
    assert "fixation over 5 seeds" in done.stdout and "exact" in done.stdout
    for name in ("payoff_table.parquet", "generations.parquet", "fixation.parquet"):
        assert (out / name).is_file(), name
    manifest = json.loads((out / "group_evolution_manifest.json").read_text())
    assert manifest["compositions"] == [[3, 0], [2, 1], [1, 2], [0, 3]]
    assert len(manifest["runs"]) == 5


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (tournament_config, "group tournament: 5 players in groups of 3 (10 groups of distinct"),
        (evolution_config, "group evolution: moran (beta 1), groups of 3 from a population of 10"),
    ],
)
def test_validate_prints_the_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, expected: str
) -> None:
    code, out, err = run_in_process(["validate", str(make(tmp_path))], capsys)
    assert code == 0, err
    assert expected in out


@pytest.mark.parametrize(
    ("make", "command", "sections"),
    [
        (tournament_config, "tournament", ("id='leaderboard'", "id='groups'", "class='bar'")),
        (evolution_config, "evolve", ("id='population'", "id='fixation'", "id='payoffs'")),
    ],
)
def test_report_has_a_page_for_each_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, command: str, sections: Any
) -> None:
    code, _, err = run_in_process([command, str(make(tmp_path))], capsys)
    assert code == 0, err
    code, _, err = run_in_process(["report", str(tmp_path / "out")], capsys)
    assert code == 0, err
    page = (tmp_path / "out" / "report.html").read_text()
    for section in sections:
        assert section in page


def test_a_stopped_group_tournament_resumes_to_the_same_artifacts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tournament_config(tmp_path, log_rounds=True)
    code, _, err = run_in_process(["tournament", str(config)], capsys)
    assert code == 0, err
    out = tmp_path / "out"
    whole = {
        n: pq.read_table(out / n).to_pylist() for n in ("groups.parquet", "leaderboard.parquet")
    }
    rounds = (out / "rounds.jsonl").read_bytes().splitlines(keepends=True)
    assert len(rounds) == 360
    # as a kill leaves it: 11 whole games and half of the 12th, no tables, status running
    (out / "rounds.jsonl").write_bytes(b"".join(rounds[: 11 * 12 + 6]))
    for name in whole:
        (out / name).unlink()
    manifest_path = out / "group_tournament_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest.update(status="running", finished_at_utc=None)
    manifest_path.write_text(json.dumps(manifest))
    code, stdout, err = run_in_process(["resume", str(out)], capsys)
    assert code == 0, err
    assert "30 games (11 kept from before)" in stdout
    for name, rows in whole.items():
        assert pq.read_table(out / name).to_pylist() == rows, name
    after = (out / "rounds.jsonl").read_bytes().splitlines(keepends=True)
    assert after[: 11 * 12] == rounds[: 11 * 12]  # kept games: byte for byte
    assert [untimed(line) for line in after] == [untimed(line) for line in rounds]


def untimed(line: bytes) -> dict[str, Any]:
    record = json.loads(line)
    record.pop("timestamp_utc")
    return record
