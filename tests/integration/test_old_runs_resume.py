"""A run stopped by the pdbench before groups (schema_version 2, commit f078319), stored in
tests/fixtures/stopped_run_v2: today's pdbench resumes it, keeps its finished games byte for byte,
and ends with the rounds and aggregates of an uninterrupted run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
from tests.support.cli import run_process

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "stopped_run_v2"


def _without_timestamps(path: Path) -> list[dict]:
    return [
        {k: v for k, v in json.loads(line).items() if k != "timestamp_utc"}
        for line in path.read_bytes().splitlines()
    ]


def test_a_stopped_run_of_the_previous_schema_resumes(tmp_path: Path) -> None:
    work = tmp_path / "old"
    shutil.copytree(FIXTURE, work)
    config = work / "stopped.yaml"
    run_dir = work / "out"
    manifest_path = run_dir / "run_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    assert manifest["schema_version"] == 2 and manifest["status"] == "interrupted"
    manifest.update(config_path=str(config), output_dir=str(run_dir), cache_dir=None)
    manifest_path.write_text(json.dumps(manifest))
    old_lines = (run_dir / "rounds.jsonl").read_bytes().splitlines(keepends=True)
    finished = [line for line in old_lines if line.endswith(b"\n")]
    assert len(finished) == 24  # two whole games of 12 rounds, then a torn line

    done = run_process(["resume", str(run_dir)], work)
    assert done.returncode == 0, done.stderr
    assert json.loads(manifest_path.read_text())["status"] == "completed"
    resumed = (run_dir / "rounds.jsonl").read_bytes()
    assert resumed.startswith(b"".join(finished))  # kept games untouched, timestamps too

    fresh = tmp_path / "fresh"
    ran = run_process(["run", str(config), "-o", str(fresh)], work)
    assert ran.returncode == 0, ran.stderr
    assert _without_timestamps(run_dir / "rounds.jsonl") == _without_timestamps(
        fresh / "rounds.jsonl"
    )
    got = pq.read_table(run_dir / "aggregates.parquet").to_pylist()
    want = pq.read_table(fresh / "aggregates.parquet").to_pylist()
    assert got == want
