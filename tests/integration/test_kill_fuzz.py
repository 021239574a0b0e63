"""Kill anywhere, resume, same artifacts: `pdbench run` and `pdbench resume` killed (SIGKILL,
SIGTERM) at seeded moments (delays, during and after part writes), resumed until completed,
and compared with an uninterrupted run, for each `run.rounds_log` and for a sharded run that is
merged (tests/support/kill_fuzz.py; benchmarks/kill_fuzz.py runs hundreds of kills).

The parts and row groups are shrunk through $PDBENCH_PART_ROUNDS and $PDBENCH_ROW_GROUP_ROWS;
the first test checks those knobs themselves.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.support.cli import run_in_process
from tests.support.configs import experiment, policy, write_config
from tests.support.kill_fuzz import MODES, Design, KillFuzz

from pdbench.storage.record.parts import PART_ROUNDS_ENV, ROW_GROUP_ROWS_ENV

ROW_GROUP = 128
SHORT, LONG = 100, 300  # rounds of a game: shorter and longer than a row group


def test_part_and_row_group_knobs_shape_the_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # 2 conditions x 3 replicates x 50 rounds; a part once 100 rounds are held: 2 games a part,
    # so 3 parts of 100 rows, each in row groups of 30, 30, 30 and 10 rows.
    data = experiment(
        [("a", policy("TFT"), policy("RANDOM")), ("b", policy("GTFT"), policy("WSLS"))],
        replicates=3,
        horizon={"type": "fixed", "n_rounds": 50},
        run={"rounds_log": "columns"},
    )
    cfg = write_config(data, tmp_path / "cfg")
    monkeypatch.setenv(PART_ROUNDS_ENV, "100")
    monkeypatch.setenv(ROW_GROUP_ROWS_ENV, "30")
    code, _, err = run_in_process(["run", str(cfg), "-o", str(tmp_path / "out")], capsys)
    assert code == 0, err
    parts = sorted((tmp_path / "out" / "rounds").glob("part-*.parquet"))
    assert [p.name for p in parts] == [f"part-00000{i}.parquet" for i in range(3)]
    for part in parts:
        meta = pq.read_metadata(part)
        assert [meta.row_group(g).num_rows for g in range(meta.num_row_groups)] == [30, 30, 30, 10]

    monkeypatch.setenv(PART_ROUNDS_ENV, "1e3")
    code, _, err = run_in_process(["run", str(cfg), "-o", str(tmp_path / "bad")], capsys)
    assert code == 2
    assert (
        err.strip()
        .splitlines()[-1]
        .endswith(f"{PART_ROUNDS_ENV}: must be a positive number of rows (got '1e3')")
    )


def _fuzz(base: Path, design: Design) -> KillFuzz:
    fuzz = KillFuzz(base, design, part_rounds=400, row_group_rows=ROW_GROUP)
    if design.mode != "jsonl":  # the reference itself: several parts, games across row groups
        assert fuzz.ref.parts is not None
        assert len(list((fuzz.ref.run_dir / "rounds").glob("part-*.parquet"))) >= 3
        lengths = set(
            fuzz.ref.parts.group_by(["condition", "replicate"])
            .aggregate([("round_index", "count")])
            .column("round_index_count")
            .to_pylist()
        )
        assert lengths == {SHORT, LONG}
    return fuzz


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_killed_and_resumed_runs_equal_the_uninterrupted_run(tmp_path: Path, mode: str) -> None:
    fuzz = _fuzz(tmp_path, Design(mode, SHORT, 4, long_rounds=LONG))
    kills, differences = [], []
    for seed in (1, 3):
        result = fuzz.case(seed)
        kills += result.kills
        differences += [f"seed {seed} ({result.kills}): {d}" for d in result.differences]
    assert differences == []
    assert kills  # seeded draws, some early in the run: at least one kill is sent


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["columns", "both"])
def test_a_killed_shard_resumed_and_merged_equals_the_unsharded_run(
    tmp_path: Path, mode: str
) -> None:
    fuzz = _fuzz(tmp_path, Design(mode, SHORT, 4, shards=2, long_rounds=LONG))
    result = fuzz.case(2)
    assert result.differences == []
