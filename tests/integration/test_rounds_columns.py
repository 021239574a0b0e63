"""Rounds in columns (`run.rounds_log`): the columnar parts under rounds/ hold the same rounds as
rounds.jsonl, field by field; one game is read alone; a columns-only run resumes to the same
rounds after parts are lost; aggregates read from either form are equal; damage is one line.

The reference for "the same rounds" is rounds.jsonl read by the JSON reader (an independent
path: orjson lines -> pyarrow.json), never the columnar reader itself.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
from tests.support.cli import run_in_process
from tests.support.configs import experiment, llm, policy, write_config

from pdbench.storage.record import columns
from pdbench.storage.record.fields import LLM_FIELDS, MESSAGES, ROUND_FIELDS
from pdbench.storage.record.table import read_rounds_table

POLICY_CONDITIONS = [
    ("TFT_vs_RANDOM", policy("TFT"), policy("RANDOM")),
    ("GTFT_vs_WSLS", policy("GTFT"), policy("WSLS")),
]
MIXED_CONDITIONS = [*POLICY_CONDITIONS, ("LLM_vs_GRIM", llm("cooperative"), policy("GRIM"))]


def _run(
    tmp: Path,
    name: str,
    conditions: list[Any],
    capsys: pytest.CaptureFixture[str],
    rounds_log: str = "both",
    extra: list[str] | None = None,
) -> Path:
    out = tmp / name
    data = experiment(
        conditions,
        replicates=3,
        noise=0.05,
        horizon={"type": "geometric", "stop_prob": 0.1, "max_rounds": 40},
        run={"output_dir": str(out), "rounds_log": rounds_log},
    )
    cfg = write_config(data, tmp / f"cfg_{name}")
    code, _, err = run_in_process(["run", str(cfg), *(extra or [])], capsys)
    assert code == 0, err
    return out


def _jsonl_rows(run_dir: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (run_dir / "rounds.jsonl").read_bytes().splitlines()]


def test_both_forms_hold_the_same_rounds_field_by_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(tmp_path, "both", MIXED_CONDITIONS, capsys)
    expected = read_rounds_table(out / "rounds.jsonl", ROUND_FIELDS, required=())
    got = columns.read_table(out, ROUND_FIELDS)
    assert got.num_rows == expected.num_rows > 0
    for name in ROUND_FIELDS:  # running totals included: derived from the payoffs
        assert got.column(name).to_pylist() == expected.column(name).to_pylist(), name
    # prompts and replies of the LLM rounds, as JSON
    stored = columns.read_table(out, (*ROUND_FIELDS, *LLM_FIELDS))
    lines = _jsonl_rows(out)
    for name in LLM_FIELDS:
        values = stored.column(name).to_pylist()
        # prompts and replies are there; a run without talk has no message exchange
        assert any(v is not None for v in values) == (name != MESSAGES)
        assert [None if v is None else orjson.loads(v) for v in values] == [
            r.get(name) for r in lines
        ]


def test_columns_only_run_writes_no_jsonl_and_the_same_rounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    both = _run(tmp_path, "both", POLICY_CONDITIONS, capsys)
    only = _run(tmp_path, "only", POLICY_CONDITIONS, capsys, rounds_log="columns")
    assert not (only / "rounds.jsonl").exists()
    fields = tuple(f for f in ROUND_FIELDS if f != "timestamp_utc")
    expected = read_rounds_table(both / "rounds.jsonl", fields, required=())
    assert columns.read_table(only, fields).equals(expected)
    a = pq.read_table(both / "aggregates.parquet")
    b = pq.read_table(only / "aggregates.parquet")
    assert a.equals(b)


def test_one_game_is_read_alone_in_round_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(tmp_path, "both", POLICY_CONDITIONS, capsys)
    lines = [r for r in _jsonl_rows(out) if (r["condition"], r["replicate"]) == ("GTFT_vs_WSLS", 1)]
    game = columns.read_game(out, "GTFT_vs_WSLS", 1, ("round_index", "agent_a_action"))
    assert game is not None
    assert game.column_names == ["round_index", "agent_a_action"]
    assert game.column("round_index").to_pylist() == list(range(len(lines)))
    assert game.column("agent_a_action").to_pylist() == [r["agent_a_action"] for r in lines]
    assert columns.read_game(out, "GTFT_vs_WSLS", 99) is None


def test_a_game_spanning_row_groups_is_read_from_them_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(columns, "ROW_GROUP_ROWS", 7)  # games of up to 40 rounds span groups
    out = _run(tmp_path, "both", POLICY_CONDITIONS, capsys)
    rows = _jsonl_rows(out)
    read: list[list[int]] = []
    original = pq.ParquetFile.read_row_groups

    def spy(self: pq.ParquetFile, groups: list[int], *args: Any, **kwargs: Any) -> Any:
        read.append(list(groups))
        return original(self, groups, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    for condition, replicate in (("TFT_vs_RANDOM", 0), ("GTFT_vs_WSLS", 2)):
        want = [r for r in rows if (r["condition"], r["replicate"]) == (condition, replicate)]
        game = columns.read_game(out, condition, replicate, ("agent_b_payoff",))
        assert game is not None
        assert game.column("agent_b_payoff").to_pylist() == [r["agent_b_payoff"] for r in want]
        first = rows.index(want[0])
        assert read[-1] == list(range(first // 7, (first + len(want) - 1) // 7 + 1))


def _killed_copy(whole: Path, broken: Path) -> None:
    """A copy of a finished run whose manifest says `running`, as a kill -9 leaves it."""
    shutil.copytree(whole, broken)
    manifest = orjson.loads((broken / "run_manifest.json").read_bytes())
    manifest["status"] = "running"
    (broken / "run_manifest.json").write_bytes(orjson.dumps(manifest))


def _resume_equals(
    tmp_path: Path, whole: Path, broken: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[str, ...]:
    """Resume `broken` with the whole run's config; its columns equal the whole run's. Returns
    the fields compared (timestamps aside)."""
    cfg = tmp_path / "cfg_whole" / "config.yaml"
    code, _, err = run_in_process(
        ["run", str(cfg), "--resume", "--output-dir", str(broken)], capsys
    )
    assert code == 0, err
    fields = tuple(f for f in ROUND_FIELDS if f != "timestamp_utc")
    assert columns.read_table(broken, fields).equals(columns.read_table(whole, fields))
    return fields


def test_columns_only_resume_after_lost_parts_gives_the_same_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pdbench.storage.record import writer

    monkeypatch.setattr(writer, "PART_ROUNDS", 50)  # a part every few games
    whole = _run(tmp_path, "whole", POLICY_CONDITIONS, capsys, rounds_log="columns")
    parts = columns.part_paths(whole)
    assert len(parts) >= 3
    broken = tmp_path / "broken"
    _killed_copy(whole, broken)
    (broken / "aggregates.parquet").unlink()
    for path in columns.part_paths(broken)[1:]:  # parts not written before the kill
        path.unlink()
    _resume_equals(tmp_path, whole, broken, capsys)
    assert pq.read_table(broken / "aggregates.parquet").equals(
        pq.read_table(whole / "aggregates.parquet")
    )


def test_both_resume_rebuilds_the_columns_from_rounds_jsonl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = _run(tmp_path, "whole", POLICY_CONDITIONS, capsys)
    broken = tmp_path / "broken"
    _killed_copy(whole, broken)
    shutil.rmtree(broken / "rounds")  # the parts lag rounds.jsonl after a kill
    data = (broken / "rounds.jsonl").read_bytes()
    (broken / "rounds.jsonl").write_bytes(data[: len(data) // 2 + 17])  # a torn line
    fields = _resume_equals(tmp_path, whole, broken, capsys)
    assert read_rounds_table(broken / "rounds.jsonl", fields, required=()).equals(
        read_rounds_table(whole / "rounds.jsonl", fields, required=())
    )


def test_aggregate_reads_either_form_to_the_same_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(tmp_path, "both", MIXED_CONDITIONS, capsys)
    written = pq.read_table(out / "aggregates.parquet")
    code, _, err = run_in_process(["aggregate", str(out)], capsys)
    assert code == 0, err
    from_columns = pq.read_table(out / "aggregates.parquet")
    shutil.rmtree(out / "rounds")
    code, _, err = run_in_process(["aggregate", str(out)], capsys)
    assert code == 0, err
    from_jsonl = pq.read_table(out / "aggregates.parquet")
    assert from_columns.equals(written)
    assert from_jsonl.equals(written)


@pytest.mark.parametrize("damage", ["truncated", "not_parquet", "foreign_parquet"])
def test_a_damaged_part_is_one_line_and_exit_2(
    tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(tmp_path, "only", POLICY_CONDITIONS, capsys, rounds_log="columns")
    (part,) = columns.part_paths(out)
    if damage == "truncated":
        part.write_bytes(part.read_bytes()[:-100])
    elif damage == "not_parquet":
        part.write_text("hello")
    else:
        pq.write_table(pq.read_table(part).replace_schema_metadata({}), part)
    code, out_text, err = run_in_process(["aggregate", str(out)], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "part-000000.parquet" in lines[0], err
    assert "Traceback" not in err + out_text


def test_columns_only_refuses_llm_agents_in_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = experiment(MIXED_CONDITIONS, run={"rounds_log": "columns"})
    cfg = write_config(data, tmp_path)
    code, _, err = run_in_process(["validate", str(cfg)], capsys)
    assert code == 2
    assert "run.rounds_log" in err and "both or jsonl" in err and "(got 'columns')" in err


def test_a_wrong_rounds_log_lists_the_choices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(experiment(POLICY_CONDITIONS, run={"rounds_log": "parquet"}), tmp_path)
    code, _, err = run_in_process(["validate", str(cfg)], capsys)
    assert code == 2
    assert "run.rounds_log" in err and "jsonl" in err and "columns" in err and "both" in err


def test_overwrite_removes_the_old_parts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(tmp_path, "run", POLICY_CONDITIONS, capsys, rounds_log="columns")
    assert len(columns.game_index(out)) == 6
    cfg = tmp_path / "cfg_run" / "config.yaml"
    code, _, err = run_in_process(
        ["run", str(cfg), "--overwrite", "--replicates", "1", "--output-dir", str(out)], capsys
    )
    assert code == 0, err
    assert sorted(columns.game_index(out)) == [("GTFT_vs_WSLS", 0), ("TFT_vs_RANDOM", 0)]


@pytest.mark.parametrize("rounds_log", ["columns", "both"])
def test_merged_shards_hold_the_rounds_of_one_run(
    tmp_path: Path, rounds_log: str, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = _run(tmp_path, "whole", POLICY_CONDITIONS, capsys, rounds_log=rounds_log)
    cfg = tmp_path / "cfg_whole" / "config.yaml"
    shards = []
    for i in (1, 2):
        shard = tmp_path / f"shard{i}"
        code, _, err = run_in_process(
            ["run", str(cfg), "--shard", f"{i}/2", "--output-dir", str(shard)], capsys
        )
        assert code == 0, err
        shards.append(str(shard))
    merged = tmp_path / "merged"
    code, _, err = run_in_process(["merge", str(merged), *shards], capsys)
    assert code == 0, err
    fields = tuple(f for f in ROUND_FIELDS if f != "timestamp_utc")
    assert columns.read_table(merged, fields).equals(columns.read_table(whole, fields))
    assert (merged / "rounds.jsonl").is_file() == (rounds_log == "both")
    assert pq.read_table(merged / "aggregates.parquet").equals(
        pq.read_table(whole / "aggregates.parquet")
    )


def test_aggregate_and_profile_in_small_batches_equal_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A condition read in many batches (a few games each) gives the aggregates and strategy
    fits that rounds.jsonl read whole gives."""
    from pdbench.storage.record import reader

    out = _run(tmp_path, "both", MIXED_CONDITIONS, capsys)
    batched = tmp_path / "batched"
    shutil.copytree(out, batched)
    shutil.rmtree(out / "rounds")  # out is read from rounds.jsonl, whole
    monkeypatch.setattr(reader, "BATCH_ROUNDS", 30)  # games of up to 40 rounds: 1-2 a batch
    for run_dir in (out, batched):
        for command in ("aggregate", "profile"):
            code, _, err = run_in_process([command, str(run_dir)], capsys)
            assert code == 0, err
    for name in ("aggregates.parquet", "strategy_fit.parquet"):
        assert pq.read_table(batched / name).equals(pq.read_table(out / name)), name


def test_a_stopped_session_leaves_rounds_jsonl_as_the_log_and_resume_rebuilds_the_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A budget stops the run: rounds/ is not written from its games (nothing slow on the way
    out) and the manifest has no stamp, so readers take rounds.jsonl; the resumed run's rounds/
    holds exactly rounds.jsonl's rounds."""
    out = tmp_path / "run"
    data = experiment(
        MIXED_CONDITIONS,
        replicates=3,
        horizon={"type": "fixed", "n_rounds": 12},
        run={"output_dir": str(out), "budget": {"max_calls": 20}},
    )
    cfg = write_config(data, tmp_path / "cfg")
    code, _, err = run_in_process(["run", str(cfg), "--no-cache"], capsys)
    assert code != 0 and "budget" in err
    manifest = orjson.loads((out / "run_manifest.json").read_bytes())
    assert manifest["status"] == "stopped" and "rounds_jsonl_stamp" not in manifest
    assert not columns.part_paths(out)
    data["run"]["budget"] = {"max_calls": None}
    cfg = write_config(data, tmp_path / "cfg")
    code, _, err = run_in_process(["resume", str(out), "--no-cache"], capsys)
    assert code == 0, err
    expected = read_rounds_table(out / "rounds.jsonl", ROUND_FIELDS, required=())
    assert expected.num_rows == 3 * 3 * 12
    assert columns.read_table(out, ROUND_FIELDS).equals(expected)
