"""Sharded groups runs: `pdbench run CONFIG --shard i/K` plays the games whose index in the full
plan is i-1 modulo K, and `pdbench merge` joins the shards into a run equal to the unsharded one
(rounds.jsonl in plan order apart from timestamps, the group tables exactly, the manifest's
conditions, totals and usage), with policy groups, talking mock LLM seats and groups drawn from
a pool. A merge refuses in one line (exit 2, no output directory left) shards of different
configs or kinds, a shard missing or given twice, a game missing, a damaged game."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import run_in_process, run_uncaptured
from tests.support.group_shards import (
    GROUP_TABLES,
    N_ROUNDS,
    PLAN,
    calls_facts,
    group_tables,
    manifest,
    read_jsonl,
    rounds_without_timestamps,
    write_group_config,
)

K = 3


def _run(args: list[str]) -> None:
    code, err = run_uncaptured(args)
    assert code == 0, err


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The unsharded run ("full") and its K shards ("shards"), played once for the module."""
    root = tmp_path_factory.mktemp("gshards")
    config = write_group_config(root)
    full = root / "full"
    _run(["run", str(config), "-o", str(full), "--no-cache"])
    shards = []
    for i in range(1, K + 1):
        target = root / f"s{i}"
        _run(["run", str(config), "--shard", f"{i}/{K}", "-o", str(target), "--no-cache"])
        shards.append(target)
    return {"root": root, "config": config, "full": full, "shards": shards}


def games_in(run_dir: Path) -> list[tuple[str, int]]:
    """The (condition, replicate) games of rounds.jsonl, in file order."""
    seen: list[tuple[str, int]] = []
    for record in read_jsonl(run_dir / "rounds.jsonl"):
        key = (record["condition"], record["replicate"])
        if key not in seen:
            seen.append(key)
    return seen


def test_each_shard_plays_the_games_of_its_residue(runs: dict[str, Any]) -> None:
    # Plan order: policies 0, 1; talking 0, 1; strangers 0, 1. Shard i of 3 owns the indexes
    # i-1 and i+2.
    want = {
        1: [("policies", 0), ("talking", 1)],
        2: [("policies", 1), ("strangers", 0)],
        3: [("talking", 0), ("strangers", 1)],
    }
    assert [PLAN[i - 1] for i in (1, 4)] == want[1]  # the table above, read off the plan
    for i, shard in enumerate(runs["shards"], 1):
        assert games_in(shard) == want[i]
        assert manifest(shard)["totals"] == {"games": 2, "rounds": 2 * N_ROUNDS}
    full = {
        (r["condition"], r["replicate"], r["round_index"]): r
        for r in rounds_without_timestamps(runs["full"])
    }
    for shard in runs["shards"]:
        for record in rounds_without_timestamps(shard):
            assert record == full[(record["condition"], record["replicate"], record["round_index"])]


def test_merged_shards_equal_the_unsharded_run(
    runs: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    merged = tmp_path / "merged"
    shards = [str(runs["shards"][i]) for i in (2, 0, 1)]  # any order
    code, out, err = run_in_process(["merge", str(merged), *shards], capsys)
    assert code == 0, err
    assert f"merged {K} shards" in out and "6 games, 36 rounds" in out
    full = runs["full"]
    assert rounds_without_timestamps(merged) == rounds_without_timestamps(full)
    assert games_in(merged) == PLAN
    got, want = group_tables(merged), group_tables(full)
    for name in GROUP_TABLES:
        assert got[name].equals(want[name]), name
    assert calls_facts(merged) == calls_facts(full)
    m, ref = manifest(merged), manifest(full)
    assert m["status"] == "completed"
    for key in ("conditions", "totals", "usage", "run_id", "seed", "collapse", "intervals"):
        assert m[key] == ref[key], key
    assert [s["shard"] for s in m["sessions"]] == ["1/3", "2/3", "3/3"]
    assert m["config"]["run"]["shard"] is None
    # `pdbench aggregate` of the merged run rewrites the same tables.
    code, _, err = run_in_process(["aggregate", str(merged)], capsys)
    assert code == 0, err
    again = group_tables(merged)
    for name in GROUP_TABLES:
        assert again[name].equals(want[name]), name


# ------------------------------------------------------------------------------------------
# Refusals


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _edit_line(
    path: Path, pick: Callable[[dict[str, Any]], bool], edit: Callable[[dict], None]
) -> None:
    """Apply `edit` to the first record of a JSON Lines file that `pick` selects."""
    lines = _lines(path)
    for i, line in enumerate(lines):
        record = json.loads(line)
        if pick(record):
            edit(record)
            lines[i] = json.dumps(record).encode() + b"\n"
            path.write_bytes(b"".join(lines))
            return
    raise AssertionError("no record to edit")


def _drop_game(shards: list[Path]) -> None:
    path = shards[1] / "rounds.jsonl"  # shard 2: policies 1, strangers 0
    kept = [line for line in _lines(path) if json.loads(line)["condition"] != "strangers"]
    path.write_bytes(b"".join(kept))


def _drop_round(shards: list[Path]) -> None:
    path = shards[0] / "rounds.jsonl"
    lines = _lines(path)
    del lines[3]  # policies 0, round 3
    path.write_bytes(b"".join(lines))


def _wrong_payoff(shards: list[Path]) -> None:
    def edit(record: dict) -> None:
        record["agent_c_payoff"] += 1.0
        record["agent_c_cum_payoff"] += 1.0

    _edit_line(shards[2] / "rounds.jsonl", lambda r: r["round_index"] == 0, edit)


def _wrong_total(shards: list[Path]) -> None:
    def edit(record: dict) -> None:
        record["agent_a_cum_payoff"] += 0.5

    _edit_line(shards[0] / "rounds.jsonl", lambda r: r["round_index"] == 2, edit)


def _bad_message(shards: list[Path]) -> None:
    def edit(record: dict) -> None:
        record["exchange"][0]["from"] = "nobody"

    _edit_line(shards[2] / "rounds.jsonl", lambda r: bool(r.get("exchange")), edit)


def _wrong_seat(shards: list[Path]) -> None:
    def edit(record: dict) -> None:
        record["agent_b_name"] = "someone else"

    _edit_line(shards[1] / "rounds.jsonl", lambda r: r["condition"] == "strangers", edit)


def _game_of_another_shard(shards: list[Path]) -> None:
    with open(shards[0] / "rounds.jsonl", "ab") as fh:
        fh.write(_lines(shards[1] / "rounds.jsonl")[0])


def _stopped(shards: list[Path]) -> None:
    path = shards[1] / "groups_manifest.json"
    body = json.loads(path.read_text())
    body["status"] = "stopped"
    path.write_text(json.dumps(body))


def _no_manifest(shards: list[Path]) -> None:
    (shards[2] / "groups_manifest.json").unlink()


def _usage_edited(shards: list[Path]) -> None:
    path = shards[0] / "llm_calls.jsonl"
    lines = _lines(path)
    path.write_bytes(b"".join(lines[:-1]))  # a call lost


REFUSALS: list[tuple[str, Callable[[list[Path]], Any], list[int], str]] = [
    # (case, damage, shards given (1-based, in order), what the one line says)
    ("a shard missing", lambda s: None, [1, 3], "merge: missing shards 2/3"),
    ("a shard given twice", lambda s: None, [1, 2, 2, 3], "shard 2/3 given twice"),
    (
        "a game missing",
        _drop_game,
        [1, 2, 3],
        "condition 'strangers' replicate 0 has 0 of its 6 rounds",
    ),
    ("a round missing", _drop_round, [1, 2, 3], "round_index 4 where the plan has 3"),
    (
        "a payoff not the game's",
        _wrong_payoff,
        [1, 2, 3],
        "seat 2's payoff is not the game's for the moves",
    ),
    ("a running total off", _wrong_total, [1, 2, 3], "seat 0's running total does not add up"),
    ("a message entry damaged", _bad_message, [1, 2, 3], "a message entry is not one"),
    ("a seat renamed", _wrong_seat, [1, 2, 3], "agent_b_name 'someone else' where the plan has"),
    (
        "another shard's game",
        _game_of_another_shard,
        [1, 2, 3],
        "is a game of shard 2/3, not of this shard 1/3",
    ),
    ("a shard not completed", _stopped, [1, 2, 3], "shard not completed (status stopped)"),
    ("a call lost", _usage_edited, [1, 2, 3], "does not give the usage its manifest records"),
    ("not a groups run", _no_manifest, [1, 2, 3], "not a groups run (no groups_manifest.json)"),
]


@pytest.mark.parametrize(
    ("case", "damage", "given", "line"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
def test_merge_refuses_in_one_line(
    runs: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    damage: Callable[[list[Path]], Any],
    given: list[int],
    line: str,
) -> None:
    shards = []
    for shard in runs["shards"]:
        shutil.copytree(shard, tmp_path / shard.name)
        shards.append(tmp_path / shard.name)
    damage(shards)
    out = tmp_path / "deep" / "merged"
    code, _, err = run_in_process(["merge", str(out), *(str(shards[i - 1]) for i in given)], capsys)
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2, err
    assert len(lines) == 1 and line in lines[0], err
    assert "Traceback" not in err
    assert not (tmp_path / "deep").exists()


def test_merge_refuses_shards_of_another_config_or_kind(
    runs: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.shards import run_shards, shard_config

    config = runs["config"]
    other = tmp_path / "other_seed"
    _run(["run", str(config), "--shard", f"2/{K}", "--seed", "99", "-o", str(other), "--no-cache"])
    s1, _, s3 = (str(s) for s in runs["shards"])
    out = tmp_path / "merged"
    code, _, err = run_in_process(["merge", str(out), s1, str(other), s3], capsys)
    assert code == 2 and f"{other}: a shard of another config" in err, err
    (experiment,) = run_shards(shard_config(tmp_path / "exp"), tmp_path / "exp", k=1)
    code, _, err = run_in_process(["merge", str(out), s1, str(experiment)], capsys)
    assert code == 2 and f"{experiment}: not a groups run" in err, err
    code, _, err = run_in_process(["merge", str(out), str(experiment), s1], capsys)
    assert code == 2 and "no run_manifest.json; not a pdbench experiment directory" in err, err
    assert not out.exists()


def test_group_tournaments_are_not_sharded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    config = write_group_config(tmp_path)
    body = {
        "run": {"run_id": "gt", "seed": 1, "output_dir": str(tmp_path / "o"), "shard": "1/2"},
        "horizon": {"type": "fixed", "n_rounds": 3},
        "group_game": {"kind": "public_goods", "r": 3.0},
        "group_tournament": {"group_size": 3, "players": ["CC", "TFT", "ALLD", "WSLS"]},
    }
    path = config.parent / "gt.yaml"
    path.write_text(yaml.safe_dump(body))
    code, _, err = run_in_process(["validate", str(path)], capsys)
    assert (
        code == 2 and "run.shard: group tournaments and group evolutions are not sharded" in err
    ), err


def test_a_shard_stopped_by_its_budget_resumed_then_merged_equals_the_unsharded_run(
    runs: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.group_shards import set_budget

    config = write_group_config(tmp_path, budget={"max_calls": 5})
    shard = tmp_path / "s1"
    args = [
        "run",
        str(config),
        "--shard",
        f"1/{K}",
        "-o",
        str(shard),
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    code, _, err = run_in_process(args, capsys)
    assert code == 2 and "max_calls=5" in err, err
    merged = tmp_path / "merged"
    _, s2, s3 = (str(s) for s in runs["shards"])
    code, _, err = run_in_process(["merge", str(merged), str(shard), s2, s3], capsys)
    assert code == 2 and "shard not completed (status stopped)" in err, err
    set_budget(config, {"max_calls": None, "max_tokens": None, "max_cost_usd": None})
    code, _, err = run_in_process([*args, "--resume"], capsys)
    assert code == 0, err
    code, _, err = run_in_process(["merge", str(merged), str(shard), s2, s3], capsys)
    assert code == 0, err
    assert rounds_without_timestamps(merged) == rounds_without_timestamps(runs["full"])
    got, want = group_tables(merged), group_tables(runs["full"])
    for name in GROUP_TABLES:
        assert got[name].equals(want[name]), name
    assert len(manifest(merged)["sessions"]) == K + 1  # the stopped shard's two sessions


def test_a_shard_that_owns_no_game_has_no_rounds_to_read(tmp_path: Path) -> None:
    from pdbench.storage.record.group_shard_check import ExpectedGroupGame, group_shard_rounds

    game = ExpectedGroupGame("g", 0, 1, 7, 3, 0.0, "fixed", 3, None, ("A", "B", "C"))
    assert group_shard_rounds(tmp_path / "rounds.jsonl", 2, 2, {("g", 0): game}, "run") == {}
    with pytest.raises(Exception, match="cannot read"):
        group_shard_rounds(tmp_path / "rounds.jsonl", 1, 2, {("g", 0): game}, "run")
