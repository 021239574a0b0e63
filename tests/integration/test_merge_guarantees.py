"""`pdbench merge` keeps the Guarantees (issue 20, findings S02 S11-S14 S16-S19 V10): it locks
OUT_DIR before it reads anything, checks every shard's records against the plan and its inputs
against the other shards', sums usage and sessions over the shards, writes the manifest's
`completed` last, and a merge stopped at any write (kill -9, SIGTERM) is finished by running it
again. The shards are played once per module (2 shards x 2 conditions x 2 replicates x 5 rounds)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.support.cli import cli_env, run_in_process
from tests.support.shards import (
    MergeFuzz,
    copy_shards,
    records,
    run_shards,
    shard_config,
)

from pdbench.runners.lifecycle.merge import merge_shards
from pdbench.storage.run_dir import RunLock

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two shards, the unsharded run of the same config, and the shards' merge."""
    base = tmp_path_factory.mktemp("merge-study")
    config = shard_config(base / "cfg")
    s1, s2 = run_shards(config, base)
    from pdbench.runners.config.loader import load_config
    from pdbench.runners.lifecycle.session import RunOptions
    from pdbench.runners.science.experiment import run_experiment

    run_experiment(load_config(config), RunOptions(output_dir=base / "full", use_cache=False))
    merge_shards(base / "merged", [s1, s2])
    return {"base": base, "config": config, "s1": s1, "s2": s2, "full": base / "full"}


def merge(out: Path, shards: list[Path], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code, _, err = run_in_process(["merge", str(out), *map(str, shards)], capsys)
    return code, err


def without_time(path: Path) -> list[dict]:
    out = records(path)
    for record in out:
        record.pop("timestamp_utc")
    return out


def refused(code: int, err: str, out: Path, *words: str) -> None:
    """Exit 2, one line naming the damage, nothing marked completed in `out`."""
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    manifest = out / "run_manifest.json"
    assert not manifest.is_file() or json.loads(manifest.read_text())["status"] != "completed"


def test_s02_usage_and_sessions_are_summed_over_every_shard(study: dict[str, Path]) -> None:
    merged = study["base"] / "merged"
    calls = records(merged / "llm_calls.jsonl")
    shard_calls = records(study["s1"] / "llm_calls.jsonl") + records(
        study["s2"] / "llm_calls.jsonl"
    )
    assert len(calls) == len(shard_calls) and {c["condition"] for c in calls} == {"llm_vs_grim"}
    manifest = json.loads((merged / "run_manifest.json").read_text())
    ok = [c for c in shard_calls if c["ok"]]
    assert manifest["usage"]["total"]["llm_calls"] == len(ok)
    assert manifest["usage"]["total"]["input_tokens"] == sum(c["input_tokens"] for c in ok)
    assert manifest["usage"]["spent_all_sessions"]["provider_calls"] == len(shard_calls)
    assert [s["shard"] for s in manifest["sessions"]] == ["1/2", "2/2"]
    full = json.loads((study["full"] / "run_manifest.json").read_text())
    assert manifest["usage"]["total"] == full["usage"]["total"]
    assert without_time(merged / "rounds.jsonl") == without_time(study["full"] / "rounds.jsonl")
    assert pq.read_table(merged / "aggregates.parquet").equals(
        pq.read_table(study["full"] / "aggregates.parquet")
    )


def _damaged(study: dict[str, Path], tmp_path: Path) -> list[Path]:
    return copy_shards([study["s1"], study["s2"]], tmp_path / "in")


def test_s11_a_torn_line_anywhere_is_refused_in_one_line(
    study: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s1, s2 = _damaged(study, tmp_path)
    data = (s2 / "rounds.jsonl").read_bytes()
    (s2 / "rounds.jsonl").write_bytes(data[:-40])  # the last line torn
    code, err = merge(tmp_path / "m", [s1, s2], capsys)
    refused(code, err, tmp_path / "m", "shard2/rounds.jsonl", "torn")
    assert not (tmp_path / "m").exists()
    lines = data.splitlines(keepends=True)  # a line torn in the middle of the file
    lines[3] = lines[3][:50] + b"\n"
    (s2 / "rounds.jsonl").write_bytes(b"".join(lines))
    code, err = merge(tmp_path / "m", [s1, s2], capsys)
    refused(code, err, tmp_path / "m", "line 4", "not a JSON record")


@pytest.mark.parametrize("cut", ["middle", "last", "game"])
def test_s12_rounds_missing_from_a_game_are_refused(
    study: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], cut: str
) -> None:
    s1, s2 = _damaged(study, tmp_path)
    lines = (s1 / "rounds.jsonl").read_bytes().splitlines(keepends=True)
    kept = {"middle": lines[:2] + lines[4:], "last": lines[:3] + lines[5:], "game": lines[5:]}
    (s1 / "rounds.jsonl").write_bytes(b"".join(kept[cut]))
    code, err = merge(tmp_path / "m", [s2, s1], capsys)
    refused(code, err, tmp_path / "m", "shard1/rounds.jsonl", "tft_vs_alld")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("where", ["appended", "in place", "whole game"])
def test_s13_repeated_rounds_are_refused_before_anything_is_written(
    study: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    s1, s2 = _damaged(study, tmp_path)
    lines = (s2 / "rounds.jsonl").read_bytes().splitlines(keepends=True)
    damaged = {
        "appended": lines + lines[:3],
        "in place": lines[:2] + lines[1:],
        "whole game": lines + lines[:5],
    }[where]
    (s2 / "rounds.jsonl").write_bytes(b"".join(damaged))
    code, err = merge(tmp_path / "m", [s1, s2], capsys)
    refused(code, err, tmp_path / "m", "shard2/rounds.jsonl")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_s14_games_of_another_shard_are_refused_in_any_order(
    study: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], order: tuple
) -> None:
    s1, s2 = _damaged(study, tmp_path)
    forged = [
        json.dumps({**r, "agent_a_payoff": 999.0}).encode() + b"\n"
        for r in records(s1 / "rounds.jsonl")[:5]
    ]
    with open(s2 / "rounds.jsonl", "ab") as fh:
        fh.write(b"".join(forged))
    shards = [[s1, s2][i] for i in order]
    code, err = merge(tmp_path / "m", shards, capsys)
    refused(code, err, tmp_path / "m", "shard2/rounds.jsonl", "a game of shard 1/2")
    # an exact copy (no edit) of a game of shard 1: still not shard 2's to give
    original = (study["s1"] / "rounds.jsonl").read_bytes().splitlines(keepends=True)
    (s2 / "rounds.jsonl").write_bytes(
        (study["s2"] / "rounds.jsonl").read_bytes() + b"".join(original[:5])
    )
    code, err = merge(tmp_path / "m", shards, capsys)
    refused(code, err, tmp_path / "m", "a game of shard 1/2")
    (s1 / "rounds.jsonl").write_bytes(b"".join(original[5:]))  # and gone from its owner
    code, err = merge(tmp_path / "m", shards, capsys)
    refused(code, err, tmp_path / "m", "rounds.jsonl")
    assert not (tmp_path / "m").exists()


def test_s19_shards_played_with_other_persona_text_are_refused(
    study: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = shard_config(tmp_path / "cfg")
    persona = tmp_path / "cfg" / "prompts" / "personas" / "cooperative.md"
    persona.write_text("You always defect. Answer D.\n")
    (other,) = run_shards(config, tmp_path, only=(2,))
    code, err = merge(tmp_path / "m", [study["s1"], other], capsys)
    refused(code, err, tmp_path / "m", "prompts/personas/cooperative.md", "differ")
    code, err = merge(tmp_path / "m", [other, study["s1"]], capsys)
    refused(code, err, tmp_path / "m", "prompts/personas/cooperative.md", "differ")


def test_s18_the_lock_is_taken_before_any_shard_is_read(
    study: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m"
    out.mkdir()
    with RunLock(out):  # another merge (or run) holds OUT
        code, err = merge(out, [study["s1"], study["s2"]], capsys)
        refused(code, err, out, "in use by another pdbench process")
        assert [p.name for p in out.iterdir()] == [".pdbench.lock"]
    code, err = merge(out, [study["s1"], study["s2"]], capsys)
    assert code == 0, err
    before = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code, err = merge(out, [study["s1"], study["s2"]], capsys)  # a second merge into OUT
    assert code == 2 and "not empty" in err and len(err.strip().splitlines()) == 1, err
    assert {
        str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()
    } == before


def _edit_manifest(shard: Path, edit: object) -> None:
    path = shard / "run_manifest.json"
    manifest = json.loads(path.read_text())
    edit(manifest)  # type: ignore[operator]
    path.write_text(json.dumps(manifest))


def _edit_round(shard: Path, field: str, value: object) -> None:
    path = shard / "rounds.jsonl"
    rows = records(path)
    rows[-1][field] = value  # a round of the LLM-vs-GRIM game (GRIM: a policy, no logprobs)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _edit_call(shard: Path, field: str, value: object) -> None:
    path = shard / "llm_calls.jsonl"
    rows = records(path)
    rows[0][field] = value
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize(
    ("damage_it", "word"),
    [
        (lambda s: _edit_call(s, "input_tokens", "184"), "input_tokens should be int"),
        (lambda s: _edit_call(s, "ok", False), "does not give the usage"),
        (lambda s: _edit_call(s, "replicate", 0), "a call of no game this shard played"),
        (
            lambda s: (s / "llm_calls.jsonl").write_bytes(
                b"".join((s / "llm_calls.jsonl").read_bytes().splitlines(keepends=True)[1:])
            ),
            "does not give the usage",
        ),
        (lambda s: _edit_round(s, "agent_b_parse_failure", True), "parses no replies"),
        (lambda s: _edit_round(s, "agent_a_p_cooperate", 0.5), "without it"),
        (lambda s: _edit_manifest(s, lambda m: m.update(extra=1)), "'extra' differs"),
        (lambda s: _edit_manifest(s, lambda m: m.update(seed=1)), "'seed' differs"),
        (
            lambda s: _edit_manifest(s, lambda m: m["conditions"][1].update(agent_a="x")),
            "condition 'llm_vs_grim': differs",
        ),
        (
            lambda s: _edit_manifest(
                s, lambda m: m["conditions"][0]["games"][0].update(n_rounds=4)
            ),
            "games are not those this shard owns",
        ),
        (
            lambda s: _edit_manifest(s, lambda m: m["usage"]["total"].update(llm_calls=1)),
            "does not give the usage",
        ),
    ],
)
def test_edited_call_logs_and_manifests_are_refused(
    study: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage_it: object,
    word: str,
) -> None:
    s1, s2 = _damaged(study, tmp_path)
    damage_it(s2)  # type: ignore[operator]
    code, err = merge(tmp_path / "m", [s1, s2], capsys)
    refused(code, err, tmp_path / "m", "shard2", word)
    assert not (tmp_path / "m").exists()


def _assert_equal_to_reference(out: Path, study: dict[str, Path]) -> None:
    reference = study["base"] / "merged"
    assert json.loads((out / "run_manifest.json").read_text())["status"] == "completed"
    assert without_time(out / "rounds.jsonl") == without_time(reference / "rounds.jsonl")
    assert pq.read_table(out / "aggregates.parquet").equals(
        pq.read_table(reference / "aggregates.parquet")
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in reference.iterdir())


def test_s16_leftovers_of_a_killed_merge_do_not_block_the_next(
    study: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m"
    out.mkdir()
    (out / ".rounds.jsonl.4242.abcd0123.tmp").write_bytes(b'{"half a')  # its own tmp file
    (out / ".pdbench.lock").write_text("4242\n")  # a stale lock file (kill -9)
    code, err = merge(out, [study["s1"], study["s2"]], capsys)
    assert code == 0, err
    _assert_equal_to_reference(out, study)
    assert not list(out.glob(".*.tmp"))
    other = tmp_path / "other"
    other.mkdir()
    (other / ".notes.tmp").write_text("mine")  # not a merge's: still refused
    code, err = merge(other, [study["s1"], study["s2"]], capsys)
    refused(code, err, other, "not empty")


def _before_nth_rename(
    monkeypatch: pytest.MonkeyPatch, n: int, action: Callable[[], None]
) -> Callable[[], None]:
    """Run `action` just before the n-th file rename of pdbench's writers (a temporary file
    becoming an artifact); returns the function that puts the real rename back."""
    import pdbench.storage.files as files

    calls = [0]
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        calls[0] += 1
        if calls[0] == n:
            action()
        real_replace(src, dst)

    monkeypatch.setattr(files.os, "replace", replace)
    return lambda: monkeypatch.setattr(files.os, "replace", real_replace)


class Stop(BaseException):
    """Stands for kill -9: nothing after it runs in the merge."""


@pytest.mark.parametrize("stop_at", [1, 2, 3, 4, 5])
def test_s17_stopped_at_any_write_never_completed_and_a_rerun_finishes(
    study: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stop_at: int,
) -> None:
    out = tmp_path / "m"

    def stop() -> None:
        raise Stop  # the tmp file is written, the rename never happens

    restore = _before_nth_rename(monkeypatch, stop_at, stop)
    with pytest.raises(Stop):
        merge_shards(out, [study["s1"], study["s2"]])
    restore()
    manifest = out / "run_manifest.json"
    if manifest.is_file():
        assert json.loads(manifest.read_text())["status"] != "completed"
    code, err = merge(out, [study["s1"], study["s2"]], capsys)
    assert code == 0, err
    _assert_equal_to_reference(out, study)


def _killer(tmp_path: Path) -> Path:
    """A `pdbench` that sends itself signal $SIG just before its $N-th file rename."""
    script = tmp_path / "killer.py"
    script.write_text(
        "import os, signal\n"
        "import pdbench.storage.files as files\n"
        "from pdbench import cli\n"
        "count = [0]\n"
        "real = os.replace\n"
        "def replace(src, dst):\n"
        "    count[0] += 1\n"
        "    if count[0] == int(os.environ['N']):\n"
        "        os.kill(os.getpid(), int(os.environ['SIG']))\n"
        "    real(src, dst)\n"
        "files.os.replace = replace\n"
        "cli.main()\n"
    )
    return script


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 4])
def test_v10_sigterm_of_merge_exits_130_with_nothing_completed(
    study: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    n: int,
) -> None:
    out = tmp_path / "m"
    # a real SIGTERM, handled by pdbench's own handler
    restore = _before_nth_rename(monkeypatch, n, lambda: os.kill(os.getpid(), signal.SIGTERM))
    handler = signal.getsignal(signal.SIGTERM)
    try:
        code, err = merge(out, [study["s1"], study["s2"]], capsys)
    finally:
        signal.signal(signal.SIGTERM, handler)
    restore()
    assert code == 130 and "Traceback" not in err, err
    assert "run the same merge again" in err and len(err.strip().splitlines()) == 1, err
    assert json.loads((out / "run_manifest.json").read_text())["status"] == "merging"
    code, err = merge(out, [study["s1"], study["s2"]], capsys)
    assert code == 0, err
    _assert_equal_to_reference(out, study)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rename", "left"),
    # merge's renames: manifest, rounds.jsonl, the rounds/ part, llm_calls.jsonl, aggregates
    [(3, "rounds/.part-000000.parquet.*.tmp"), (5, ".aggregates.parquet.*.tmp")],
)
def test_s17_kill_9_of_merge_then_a_rerun_finishes(
    study: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    rename: int,
    left: str,
) -> None:
    out = tmp_path / "m"
    env = {**cli_env(), "N": str(rename), "SIG": str(int(signal.SIGKILL)), "PYTHONPATH": str(REPO)}
    args = [sys.executable, str(_killer(tmp_path)), "merge", str(out)]
    done = subprocess.run(
        args + [str(study["s1"]), str(study["s2"])],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    manifest = json.loads((out / "run_manifest.json").read_text())
    assert manifest["status"] == "merging"
    assert list(out.glob(left))  # killed with its temporary file
    code, err = merge(out, [study["s1"], study["s2"]], capsys)
    assert code == 0, err
    _assert_equal_to_reference(out, study)
    assert not list(out.glob(".*.tmp")) and not list(out.glob("rounds/.*.tmp"))


# ------------------------------------------------------------------------------------------
# Fuzzing: damaged shard directories merge into exactly the undamaged result or are refused


@pytest.fixture(scope="module")
def fuzz(study: dict[str, Path]) -> Iterator[MergeFuzz]:
    work = Path(tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    yield MergeFuzz([study["s1"], study["s2"]], study["base"] / "merged", work)
    shutil.rmtree(work, ignore_errors=True)


@pytest.mark.parametrize("batch", range(13))
def test_fuzzed_shards_merge_correctly_or_are_refused_in_one_line(
    fuzz: MergeFuzz, batch: int
) -> None:
    outcomes = [fuzz.case(seed)[0] for seed in range(batch * 40, (batch + 1) * 40)]  # 520
    assert "refused" in outcomes  # the damage reaches the merge


@pytest.mark.parametrize(
    ("name", "cut", "word"),
    [("rounds.jsonl", 0, "has 0 of its 5 rounds"), ("run_manifest.json", 100, "not valid JSON")],
)
def test_damaged_shards_through_the_cli_exit_2_in_one_line(
    fuzz: MergeFuzz, capsys: pytest.CaptureFixture[str], name: str, cut: int, word: str
) -> None:
    shards = fuzz.restore()
    (shards[1] / name).write_bytes((shards[1] / name).read_bytes()[:cut])
    code, err = merge(fuzz.work / "cli", shards, capsys)
    refused(code, err, fuzz.work / "cli", f"shard2/{name}", word)
    assert not (fuzz.work / "cli").exists()
