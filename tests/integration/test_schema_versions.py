"""Every artifact carries schema_version, and readers refuse a newer one with one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
from tests.support.cli import run_in_process
from tests.support.configs import execute, experiment, llm, policy, write_config

from pdbench.storage.parquet import read_frame
from pdbench.storage.schema import (
    PARQUET_VERSION_KEY,
    SCHEMA_VERSION,
    SchemaVersionError,
    check_version,
)

NEWER = SCHEMA_VERSION + 1


run_cli = run_in_process


@pytest.fixture
def experiment_dir(tmp_path: Path) -> Path:
    data = experiment(
        [("TFT_vs_ALLD", policy("TFT"), policy("ALLD")), ("LLM_vs_TFT", llm(), policy("TFT"))],
        horizon={"type": "fixed", "n_rounds": 4},
    )
    out = tmp_path / "out"
    execute(write_config(data, tmp_path / "cfg"), output_dir=out, cache_dir=tmp_path / "c")
    return out


def test_every_artifact_carries_the_version(experiment_dir: Path, tmp_path: Path) -> None:
    records = [orjson.loads(x) for x in (experiment_dir / "rounds.jsonl").read_bytes().splitlines()]
    assert records and all(r["schema_version"] == SCHEMA_VERSION for r in records)
    manifest = orjson.loads((experiment_dir / "run_manifest.json").read_bytes())
    assert manifest["schema_version"] == SCHEMA_VERSION and manifest["kind"] == "experiment"
    meta = pq.read_schema(experiment_dir / "aggregates.parquet").metadata
    assert meta[PARQUET_VERSION_KEY] == str(SCHEMA_VERSION).encode()

    data: dict[str, Any] = {
        "run": {"run_id": "t", "seed": 1, "output_dir": "unused"},
        "horizon": {"type": "fixed", "n_rounds": 3},
        "tournament": {"players": ["TFT", "ALLD"], "repetitions": 1, "log_rounds": True},
    }
    out = tmp_path / "tournament"
    execute(write_config(data, tmp_path / "tcfg"), output_dir=out)
    manifest = orjson.loads((out / "tournament_manifest.json").read_bytes())
    assert manifest["schema_version"] == SCHEMA_VERSION
    for name in ("matches.parquet", "leaderboard.parquet", "payoff_matrix.parquet"):
        meta = pq.read_schema(out / name).metadata
        assert meta[PARQUET_VERSION_KEY] == str(SCHEMA_VERSION).encode(), name
    rounds = [orjson.loads(x) for x in (out / "rounds.jsonl").read_bytes().splitlines()]
    assert {r["schema_version"] for r in rounds} == {SCHEMA_VERSION}


def test_aggregate_refuses_newer_rounds(
    experiment_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = experiment_dir / "rounds.jsonl"
    lines = path.read_bytes().splitlines()
    lines[3] = lines[3].replace(
        b'"schema_version":%d' % SCHEMA_VERSION, b'"schema_version":%d' % NEWER
    )
    path.write_bytes(b"\n".join(lines) + b"\n")
    code, _, err = run_cli(["aggregate", str(experiment_dir)], capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        f"{path}: written with schema_version {NEWER}, newer than this pdbench reads "
        f"({SCHEMA_VERSION}); upgrade pdbench to read it"
    ]


def test_resume_refuses_a_newer_manifest(
    experiment_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = experiment_dir / "run_manifest.json"
    manifest = orjson.loads(path.read_bytes())
    manifest["schema_version"] = NEWER
    path.write_bytes(orjson.dumps(manifest))
    code, out, err = run_cli(["resume", str(experiment_dir)], capsys)
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and f"schema_version {NEWER}" in err


def test_parquet_reader_refuses_newer(experiment_dir: Path) -> None:
    path = experiment_dir / "aggregates.parquet"
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({PARQUET_VERSION_KEY: str(NEWER).encode()}), path)
    with pytest.raises(SchemaVersionError, match=f"schema_version {NEWER}"):
        read_frame(path)


def test_check_version_reads_older_and_unversioned() -> None:
    check_version("x", None)  # artifacts from before versions were recorded
    check_version("x", SCHEMA_VERSION)
    check_version("x", "1")
    with pytest.raises(SchemaVersionError, match="not a number"):
        check_version("x", "one")
