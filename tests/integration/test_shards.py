"""Sharded runs for clusters: `pdbench run CONFIG --shard i/K` plays a deterministic subset of
the games; `pdbench merge` joins the shards into a run equal to an unsharded one (rounds.jsonl
apart from timestamps, aggregates.parquet exactly) and refuses what does not fit, naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.support.cli import run_in_process
from tests.support.configs import experiment, llm, policy, write_config


def make_config(tmp_path: Path) -> Path:
    data = experiment(
        [
            ("tft_vs_random", policy("TFT"), policy("RANDOM")),
            ("llm_vs_grim", llm("cooperative", mock={"invalid_rate": 0.2}), policy("GRIM")),
            ("gtft_vs_wsls", policy("GTFT"), policy("WSLS")),
        ],
        replicates=4,
        noise=0.05,
        horizon={"type": "fixed", "n_rounds": 15},
    )
    return write_config(data, tmp_path)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run_in_process(args, capsys)


def rounds(run_dir: Path) -> list[dict]:
    out = []
    for line in (run_dir / "rounds.jsonl").read_text().splitlines():
        record = json.loads(line)
        record.pop("timestamp_utc")
        out.append(record)
    return out


def test_three_shards_merged_equal_the_unsharded_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(make_config(tmp_path))
    code, _, err = run(["run", config, "-o", str(tmp_path / "full")], capsys)
    assert code == 0, err
    sizes = []
    for i in (1, 2, 3):
        code, _, err = run(
            ["run", config, "--shard", f"{i}/3", "-o", str(tmp_path / f"s{i}")], capsys
        )
        assert code == 0, err
        sizes.append(len(rounds(tmp_path / f"s{i}")))
    assert sum(sizes) == len(rounds(tmp_path / "full")) and min(sizes) > 0
    shards = [str(tmp_path / f"s{i}") for i in (2, 3, 1)]  # any order
    code, out, err = run(["merge", str(tmp_path / "merged"), *shards], capsys)
    assert code == 0, err
    assert "merged 3 shards" in out
    assert rounds(tmp_path / "merged") == rounds(tmp_path / "full")
    merged = pq.read_table(tmp_path / "merged" / "aggregates.parquet")
    full = pq.read_table(tmp_path / "full" / "aggregates.parquet")
    assert merged.equals(full)


def test_merge_refuses_missing_shards_other_configs_and_used_dirs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = str(make_config(tmp_path))
    for i in (1, 2):
        code, _, err = run(
            ["run", config, "--shard", f"{i}/3", "-o", str(tmp_path / f"s{i}")], capsys
        )
        assert code == 0, err
    code, _, err = run(
        ["merge", str(tmp_path / "m"), str(tmp_path / "s1"), str(tmp_path / "s2")], capsys
    )
    assert code == 2 and "missing shards 3/3" in err
    code, _, err = run(
        ["run", config, "--shard", "3/3", "--seed", "99", "-o", str(tmp_path / "s3")], capsys
    )
    assert code == 0, err
    code, _, err = run(
        ["merge", str(tmp_path / "m"), *(str(tmp_path / f"s{i}") for i in (1, 2, 3))], capsys
    )
    assert code == 2 and "s3: a shard of another config" in err
    code, _, err = run(
        ["merge", str(tmp_path / "m"), str(tmp_path / "s1"), str(tmp_path / "s1")], capsys
    )
    assert code == 2 and "given twice" in err
    code, _, err = run(["run", config, "--shard", "4/3", "-o", str(tmp_path / "bad")], capsys)
    assert code == 2 and "1 <= i <= K" in err
    assert not (tmp_path / "m").exists()
