"""Issue 28 (C01-C05): resume of a columnar run keeps every finished game whatever the part and
row-group boundaries; a part that is not this run's (another run's, renamed, stray, missing a
column, a column of another type) is refused by every reader in one line; resume keeps no
record `aggregate` would refuse: a damaged policy game is played again and named, a damaged
LLM game stops the resume naming it.

The reference for "the same rounds" is an uninterrupted run of the same config and seed, read
back through rounds.jsonl's JSON reader where the run keeps one, else compared field by field.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.support.cli import run_in_process, run_uncaptured
from tests.support.configs import experiment, llm, policy, write_config

from pdbench.storage.record import columns, writer
from pdbench.storage.record.fields import ROUND_FIELDS
from pdbench.storage.record.parts import RoundsColumnsError

FIELDS = tuple(f for f in ROUND_FIELDS if f != "timestamp_utc")
CONDITIONS = [
    ("TFT_vs_RANDOM", policy("TFT"), policy("RANDOM")),
    ("GTFT_vs_WSLS", policy("GTFT"), policy("WSLS")),
]


def _config(tmp: Path, name: str, rounds: int, replicates: int, log: str, **run: Any) -> Path:
    data = experiment(
        CONDITIONS,
        replicates=replicates,
        noise=0.05,
        horizon={"type": "fixed", "n_rounds": rounds},
        run={"output_dir": str(tmp / name), "rounds_log": log, **run},
    )
    return write_config(data, tmp / f"cfg_{name}")


def _run(cfg: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> None:
    code, _, err = run_in_process(["run", str(cfg), "-o", str(out), *extra], capsys)
    assert code == 0, err


def _stopped(run_dir: Path) -> None:
    """Mark a run `running`, as a kill -9 after its last part leaves it."""
    path = run_dir / "run_manifest.json"
    manifest = orjson.loads(path.read_bytes())
    manifest["status"] = "running"
    path.write_bytes(orjson.dumps(manifest))


def _resume(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run_in_process(["resume", str(run_dir)], capsys)


def _rows(run_dir: Path) -> pa.Table:
    return columns.read_table(run_dir, FIELDS)


def _status(run_dir: Path) -> str:
    return orjson.loads((run_dir / "run_manifest.json").read_bytes())["status"]


# --------------------------------------------------------------------------------------------
# C01: resume keeps every finished game, whatever the part and row-group boundaries


@pytest.mark.parametrize(
    ("rounds", "replicates", "group", "part"),
    [
        (40, 3, 7, 10_000),  # games longer than a row group, every game straddling groups
        (40, 3, 7, 50),  # ... and a part every game or two
        (500, 1, 64, 10_000),  # 1 game a condition, of 8 row groups
        (3, 400, 16, 500),  # many short games, straddling groups now and then
    ],
)
def test_resume_of_a_finished_columns_run_keeps_every_game(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    rounds: int,
    replicates: int,
    group: int,
    part: int,
) -> None:
    monkeypatch.setattr(columns, "ROW_GROUP_ROWS", group)
    monkeypatch.setattr(writer, "PART_ROUNDS", part)
    cfg = _config(tmp_path, "whole", rounds, replicates, "columns")
    whole = tmp_path / "whole"
    _run(cfg, whole, capsys)
    expected = _rows(whole)
    assert len(expected) == 2 * rounds * replicates
    for session in range(2):  # a resume, then a resume of the resumed run
        code, _, err = _resume(whole, capsys)
        assert code == 0, err
        assert _status(whole) == "completed"
        assert _rows(whole).equals(expected), f"resume {session + 1} changed rounds/"
    code, _, err = run_in_process(["aggregate", str(whole)], capsys)
    assert code == 0, err


@pytest.mark.parametrize("keep_parts", [0, 1, 2])
def test_resume_after_lost_parts_with_games_across_row_groups(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    keep_parts: int,
) -> None:
    monkeypatch.setattr(columns, "ROW_GROUP_ROWS", 11)
    monkeypatch.setattr(writer, "PART_ROUNDS", 100)
    cfg = _config(tmp_path, "whole", 60, 4, "columns")
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    _run(cfg, whole, capsys)
    shutil.copytree(whole, broken)
    _stopped(broken)
    (broken / "aggregates.parquet").unlink()
    for path in columns.part_paths(broken)[keep_parts:]:  # not written before the kill
        path.unlink()
    code, out, err = _resume(broken, capsys)
    assert code == 0, err
    assert _rows(broken).equals(_rows(whole))
    assert pq.read_table(broken / "aggregates.parquet").equals(
        pq.read_table(whole / "aggregates.parquet")
    )


def test_a_game_read_back_in_several_chunks_is_one_game_of_its_part(tmp_path: Path) -> None:
    """The writer lists a game split over a table's chunks (the row groups it was read from)
    once, with all its rounds: the cause of C01."""
    rows = [
        {"condition": "c", "replicate": r, "round_index": i, "agent_a_action": "C"}
        for r, n in ((0, 5), (1, 9), (2, 4))
        for i in range(n)
    ]
    whole = columns.records_batch(rows)
    table = pa.Table.from_batches([whole.slice(0, 3), whole.slice(3, 6), whole.slice(9, 9)])
    assert table.column("round_index").num_chunks == 3  # game 1 spans the second and third
    (tmp_path / "run_manifest.json").write_bytes(orjson.dumps({"run_id": "r", "seed": 1}))
    out = writer.ColumnarRoundsWriter(tmp_path, {"run_id": "r", "seed": 1, "plan": None})
    out.add_table(table)
    out.close()
    index = columns.game_index(tmp_path)
    assert {key: n for key, (_, _, n) in index.items()} == {("c", 0): 5, ("c", 1): 9, ("c", 2): 4}


def test_a_rewrite_that_would_lose_a_game_changes_nothing(tmp_path: Path) -> None:
    rows = [{"condition": "c", "replicate": 0, "round_index": i} for i in range(4)]
    origin = {"run_id": "r", "seed": 1, "plan": None}
    (tmp_path / "run_manifest.json").write_bytes(orjson.dumps({"run_id": "r", "seed": 1}))
    columns.rewrite_columns(tmp_path, [columns.records_batch(rows)], origin, {("c", 0): 4})
    before = columns.part_paths(tmp_path)
    with pytest.raises(RoundsColumnsError, match="would change 1 games"):
        columns.rewrite_columns(tmp_path, [columns.records_batch(rows[:3])], origin, {("c", 0): 4})
    assert columns.part_paths(tmp_path) == before
    assert columns.game_index(tmp_path)[("c", 0)][2] == 4


# --------------------------------------------------------------------------------------------
# C02-C04: parts this run did not write


READERS = (
    ["aggregate"],
    ["profile"],
    ["report"],
    ["resume"],
)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A finished columns run `mine`, and `other`: same conditions, another run id and seed,
    and `more`: the same run id and seed with another number of replicates."""
    tmp = tmp_path_factory.mktemp("finished")
    runs = {}
    for name, run, reps in (
        ("mine", {"run_id": "mine", "seed": 5}, 3),
        ("other", {"run_id": "other", "seed": 9}, 3),
        ("more", {"run_id": "mine", "seed": 5}, 4),
    ):
        cfg = _config(tmp, name, 30, reps, "columns", **run)
        code, err = run_uncaptured(["run", str(cfg), "-o", str(tmp / name)])
        assert code == 0, err
        runs[name] = tmp / name
    return runs


def _damaged_copy(finished: dict[str, Path], tmp_path: Path, how: str) -> tuple[Path, Path]:
    """A copy of `mine` damaged as `how` says; (its directory, the file a reader must name)."""
    run = tmp_path / "run"
    shutil.copytree(finished["mine"], run)
    rounds = run / "rounds"
    (mine_part,) = columns.part_paths(run)
    if how in ("another run", "another plan"):
        source = finished["other" if how == "another run" else "more"]
        bad = rounds / "part-000001.parquet"
        shutil.copy(columns.part_paths(source)[0], bad)
    elif how == "renamed":
        bad = rounds / "part-000007.parquet"
        mine_part.rename(bad)
    elif how == "stray copy":
        bad = rounds / "part-copy.parquet"
        shutil.copy(mine_part, bad)
    elif how == "stray text":
        bad = rounds / "notes.txt"
        bad.write_text("hello\n")
    elif how in ("no column", "other type"):
        bad = mine_part
        table = pq.read_table(bad)
        meta = table.schema.metadata
        i = table.schema.get_field_index("agent_a_payoff")
        if how == "no column":
            table = table.remove_column(i)
        else:
            values = pa.array([str(v) for v in table.column(i).to_pylist()])
            table = table.set_column(i, "agent_a_payoff", values)
        pq.write_table(table.replace_schema_metadata(meta), bad)
    elif how in ("no origin", "old part of another run"):
        # a part written before parts recorded their origin: its rows must say whose it is
        source = finished["mine" if how == "no origin" else "other"]
        bad = mine_part if how == "no origin" else rounds / "part-000001.parquet"
        table = pq.read_table(columns.part_paths(source)[0])
        meta = {k: v for k, v in table.schema.metadata.items() if k != b"pdbench.origin"}
        pq.write_table(table.replace_schema_metadata(meta), bad)
    else:
        raise AssertionError(how)
    return run, bad


DAMAGES = (
    "another run",
    "another plan",
    "renamed",
    "stray copy",
    "stray text",
    "no column",
    "other type",
    "old part of another run",
)


@pytest.mark.parametrize("how", DAMAGES)
def test_every_reader_refuses_a_part_this_run_did_not_write_in_one_line(
    finished: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:
    run, bad = _damaged_copy(finished, tmp_path, how)
    aggregates = (run / "aggregates.parquet").read_bytes()
    for args in READERS:
        if args == ["resume"]:
            _stopped(run)
        code, out, err = run_in_process([*args, str(run)], capsys)
        lines = err.strip().splitlines()
        assert code == 2, (args, how, out, err)
        assert len(lines) == 1 and str(bad) in lines[0], (args, how, err)
        assert "Traceback" not in err
    assert (run / "aggregates.parquet").read_bytes() == aggregates
    assert _status(run) == "running"  # never completed on them


@pytest.mark.parametrize("how", ["another run", "stray text", "no column"])
def test_merge_refuses_a_shard_with_a_part_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], finished: dict[str, Path], how: str
) -> None:
    cfg = _config(tmp_path, "s", 30, 3, "columns", run_id="mine", seed=5)
    shards = [tmp_path / f"s{i}" for i in (1, 2)]
    for i, shard in enumerate(shards, 1):
        _run(cfg, shard, capsys, "--shard", f"{i}/2")
    # damage shard 1 as `mine` is damaged by _damaged_copy, by moving its files in
    run, bad = _damaged_copy({**finished, "mine": shards[0]}, tmp_path / "d", how)
    shutil.rmtree(shards[0])
    shutil.move(run, shards[0])
    named = shards[0] / "rounds" / bad.name
    code, _, err = run_in_process(["merge", str(tmp_path / "all"), *map(str, shards)], capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(named) in lines[0], err


def test_the_app_names_a_damaged_part_in_one_line(
    finished: dict[str, Path], tmp_path: Path
) -> None:
    from pdbench.ui.data import RoundsFileError, load_game_rounds

    for how in ("another run", "stray text", "no column"):
        run, bad = _damaged_copy(finished, tmp_path / how.replace(" ", "_"), how)
        with pytest.raises(RoundsFileError) as info:
            load_game_rounds(run, "TFT_vs_RANDOM", 0)
        assert str(bad) in str(info.value) and "\n" not in str(info.value)


def test_a_part_from_before_origins_is_read_when_its_rows_are_this_runs(
    finished: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Parts written before parts recorded their origin are this run's when their rows' run id
    and games' seeds are the plan's: read by every reader (a columns-only run made with the
    previous version keeps its games)."""
    run, bad = _damaged_copy(finished, tmp_path, "no origin")
    assert b"pdbench.origin" not in (pq.read_schema(bad).metadata or {})
    for args in (["aggregate"], ["profile"], ["report"]):
        code, _, err = run_in_process([*args, str(run)], capsys)
        assert code == 0, (args, err)
    assert _rows(run).equals(_rows(finished["mine"]))
    _stopped(run)
    code, _, err = _resume(run, capsys)
    assert code == 0, err
    assert _rows(run).equals(_rows(finished["mine"]))


def test_a_half_written_part_is_ignored_by_readers_and_removed_by_resume(
    finished: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished["mine"], run)
    (part,) = columns.part_paths(run)
    tmp = run / "rounds" / ".part-000001.parquet.4242.0badf00d.tmp"
    tmp.write_bytes(part.read_bytes()[:100])
    code, _, err = run_in_process(["aggregate", str(run)], capsys)
    assert code == 0, err
    _stopped(run)
    # and the temporary files of atomic writes a kill stopped (the kill fuzzer found one)
    atomic = [run / ".aggregates.parquet.4242.0badf00d.tmp", run / ".rounds.jsonl.17.ab12cd34.tmp"]
    for path in atomic:
        path.write_bytes(b"half")
    code, _, err = _resume(run, capsys)
    assert code == 0, err
    assert not tmp.exists() and not any(path.exists() for path in atomic)
    assert _rows(run).equals(_rows(finished["mine"]))


# --------------------------------------------------------------------------------------------
# C05: resume trusts nothing it did not check


def _edit_jsonl(run: Path, line: int, **values: Any) -> None:
    path = run / "rounds.jsonl"
    lines = path.read_bytes().splitlines()
    record = orjson.loads(lines[line])
    record.update(values)
    lines[line] = orjson.dumps(record)
    path.write_bytes(b"\n".join(lines) + b"\n")


def _edit_part(run: Path, row: int, column: str, value: Any) -> None:
    (path,) = columns.part_paths(run)
    table = pq.read_table(path)
    i = table.schema.get_field_index(column)
    values = table.column(i).to_pylist()
    values[row] = value
    kind = table.schema.field(i).type
    if pa.types.is_dictionary(kind):
        array = pa.array(values, kind.value_type).dictionary_encode()
    else:
        array = pa.array(values, kind)
    table = table.set_column(i, column, array)
    pq.write_table(table, path)


EDITS = [
    ("agent_a_payoff", 99.0),
    ("agent_b_payoff", float("nan")),
    ("agent_b_action", "X"),
]


@pytest.mark.parametrize("log", ["jsonl", "columns", "both"])
@pytest.mark.parametrize(("field", "value"), EDITS)
def test_resume_plays_a_damaged_policy_game_again_and_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], log: str, field: str, value: Any
) -> None:
    cfg = _config(tmp_path, "ref", 30, 3, log)
    ref, run = tmp_path / "ref", tmp_path / "run"
    _run(cfg, ref, capsys)
    shutil.copytree(ref, run)
    _stopped(run)
    row = 30 + 7  # replicate 1 of the first condition, its 8th round
    if log == "columns":
        _edit_part(run, row, field, value)
    else:
        _edit_jsonl(run, row, **{field: value})
    code, out, err = _resume(run, capsys)
    assert code == 0, err
    assert _status(run) == "completed"
    assert "1 damaged game(s) played again" in out
    assert "'TFT_vs_RANDOM' replicate 1" in out and field in out
    assert pq.read_table(run / "aggregates.parquet").equals(
        pq.read_table(ref / "aggregates.parquet")
    )
    if log != "jsonl":
        assert _rows(run).equals(_rows(ref))
    code, _, err = run_in_process(["aggregate", str(run)], capsys)
    assert code == 0, err


def test_resume_refuses_a_damaged_llm_game_naming_it_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = experiment(
        [("LLM_vs_GRIM", llm("cooperative"), policy("GRIM"))],
        replicates=2,
        horizon={"type": "fixed", "n_rounds": 5},
        run={"output_dir": str(tmp_path / "run")},
    )
    cfg = write_config(data, tmp_path / "cfg")
    run = tmp_path / "run"
    _run(cfg, run, capsys)
    _stopped(run)
    _edit_jsonl(run, 6, agent_a_payoff=99.0)
    before = (run / "rounds.jsonl").read_bytes()
    code, _, err = _resume(run, capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "'LLM_vs_GRIM' replicate 1" in lines[0] and "agent_a_payoff" in lines[0]
    assert (run / "rounds.jsonl").read_bytes() == before
    assert _status(run) != "completed"


def test_the_plan_fingerprint_is_the_plan_not_its_spelling() -> None:
    """The same games in another order, or the manifest rewritten by a tool that reads numbers
    as doubles (jq: 0.0 -> 0, seeds rounded), are the same plan; another game, another agent,
    another length or noise are another plan."""
    from pdbench.storage.record.parts import plan_fingerprint

    def manifest(**change: Any) -> dict[str, Any]:
        games = [{"replicate": r, "n_rounds": 10, "seed": 3788859244433342204 + r} for r in (0, 1)]
        a = {"name": "a", "agent_a": "TFT", "agent_b": "ALLD", "noise": 0.0, "games": games}
        b = {"name": "b", "agent_a": "GRIM", "agent_b": "ALLC", "noise": 0.1, "games": games}
        conditions = [a, b]
        for key, value in change.items():
            conditions[0] = {**conditions[0], key: value}
        return {"conditions": conditions}

    base = plan_fingerprint(manifest())
    assert base is not None
    swapped = manifest()
    swapped["conditions"] = swapped["conditions"][::-1]
    swapped["conditions"][0]["games"] = swapped["conditions"][0]["games"][::-1]
    jq = orjson.loads(orjson.dumps(manifest()).replace(b'"noise":0.0', b'"noise":0'))
    for game in jq["conditions"][0]["games"]:
        game["seed"] = float(game["seed"])
    assert plan_fingerprint(swapped) == base
    assert plan_fingerprint(jq) == base
    others = [
        manifest(agent_b="ALLC"),
        manifest(noise=0.05),
        manifest(games=[{"replicate": 0, "n_rounds": 10}]),
        manifest(games=[{"replicate": r, "n_rounds": 11} for r in (0, 1)]),
        manifest(name="c"),
    ]
    assert len({base, *map(plan_fingerprint, others)}) == len(others) + 1
    assert plan_fingerprint({"conditions": []}) is None


@pytest.mark.parametrize("kind", ["tournament", "evolution"])
def test_resume_of_a_tournament_or_evolution_checks_its_records_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """Their manifests list no conditions: resume checks their records against the session's
    plan and the config's payoff matrix all the same (a damaged LLM match: one line, exit 2,
    nothing rewritten; the undamaged run resumes to completed)."""
    import yaml

    repo = Path(__file__).resolve().parents[2]
    shutil.copytree(repo / "configs", tmp_path / "cfg")
    player = {"ref": "agents/llm_default.yaml", "overrides": {"name": "mock-tft"}}
    data: dict[str, Any] = {
        "run": {"run_id": kind, "seed": 3, "output_dir": "unused"},
        "horizon": {"type": "fixed", "n_rounds": 4},
    }
    if kind == "tournament":
        data["tournament"] = {"players": ["ALLD", "TFT", player], "repetitions": 1}
    else:
        data["evolution"] = {
            "process": "eliminate_clone",
            "eliminate": 1,
            "generations": 2,
            "repetitions": 1,
            "population": [{"player": "ALLD", "count": 2}, {"player": player, "count": 2}],
        }
    cfg = tmp_path / "cfg" / f"{kind}.yaml"
    cfg.write_text(yaml.safe_dump(data), encoding="utf-8")
    out = tmp_path / "out"
    command = "tournament" if kind == "tournament" else "evolve"
    code, _, err = run_in_process([command, str(cfg), "-o", str(out)], capsys)
    assert code == 0, err
    manifest_path = out / f"{kind}_manifest.json"
    manifest = orjson.loads(manifest_path.read_bytes())
    manifest["status"] = "running"
    manifest_path.write_bytes(orjson.dumps(manifest))
    code, _, err = _resume(out, capsys)  # nothing damaged: completed
    assert code == 0, err
    manifest = orjson.loads(manifest_path.read_bytes())
    manifest["status"] = "running"
    manifest_path.write_bytes(orjson.dumps(manifest))
    record = orjson.loads((out / "rounds.jsonl").read_bytes().splitlines()[1])
    _edit_jsonl(out, 1, agent_a_payoff=99.0)
    before = (out / "rounds.jsonl").read_bytes()
    code, _, err = _resume(out, capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "agent_a_payoff" in lines[0], err
    assert f"{record['condition']!r} replicate {record['replicate']}" in lines[0]
    assert (out / "rounds.jsonl").read_bytes() == before
