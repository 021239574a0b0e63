"""Issue 20, runs that cannot start or cannot write: an unusable cache dir or an unreachable Ray
address creates nothing (V04, Y02); a full disk or a file size limit mid-run is one line, the
manifest says failed (never running), and `pdbench resume` completes the run with the rounds
of an uninterrupted one (D01, D04)."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import run_in_process
from tests.support.configs import experiment, llm, policy, write_config

from pdbench.errors import RunError
from pdbench.runners.ray import backend as ray_backend
from pdbench.storage import files as files_module


def small_config(tmp_path: Path) -> Path:
    data = experiment(
        [("LLM_vs_TFT", llm("cooperative"), policy("TFT")), ("T", policy("TFT"), policy("ALLD"))],
        horizon={"type": "fixed", "n_rounds": 5},
        replicates=4,
    )
    return write_config(data, tmp_path / "cfg")


def one_line(code: int, err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("progress")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("kind", ["file", "dir_as_db"])
def test_v04_an_unusable_cache_dir_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    cache = tmp_path / "cache"
    if kind == "file":
        cache.write_text("x")
    else:
        (cache / "responses.sqlite").mkdir(parents=True)
    out = tmp_path / "out"
    code, _, err = run_in_process(
        ["run", str(small_config(tmp_path)), "-o", str(out), "--cache-dir", str(cache)], capsys
    )
    assert "cache" in one_line(code, err)
    assert not out.exists()  # the old session made the run dir first (status failed)


@pytest.mark.parametrize("address", ["auto", "127.0.0.1:1", "[::1]:1", "x://h:1"])
def test_y02_an_unreachable_ray_address_creates_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    address: str,
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(
        ray_backend, "RAY_CURRENT_CLUSTER", tmp_path / "no_cluster_record", raising=False
    )
    config = write_config(experiment([("a", policy("TFT"), policy("ALLD"))]), tmp_path / "c")
    out = tmp_path / "out"
    code, _, err = run_in_process(
        ["run", str(config), "-o", str(out), "--backend", "ray", "--ray-address", address], capsys
    )
    line = one_line(code, err)
    assert line.startswith(f"--ray-address {address}:"), line
    assert not out.exists()


def test_y03_the_ray_client_form_is_refused_in_one_line_and_not_documented(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Ray Client (ray://) cannot run pdbench's streaming actor methods: with ray[client]
    # installed a run connected, then failed with a RuntimeError traceback; so it is refused
    # before anything is created, and the README no longer offers it.
    config = write_config(experiment([("a", policy("TFT"), policy("ALLD"))]), tmp_path / "c")
    out = tmp_path / "out"
    for address in ("ray://127.0.0.1:10001", "ray://head.example:10001"):
        code, _, err = run_in_process(
            ["run", str(config), "-o", str(out), "--backend", "ray", "--ray-address", address],
            capsys,
        )
        assert "Ray Client form (ray://) is not supported" in one_line(code, err)
        assert not out.exists()
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "ray://HOST" not in readme


def test_y02_auto_follows_rays_record_of_the_running_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "ray_current_cluster"
    record.write_text("127.0.0.1:1\n")  # a cluster that has stopped since
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(ray_backend, "RAY_CURRENT_CLUSTER", record)
    with pytest.raises(RunError) as exc:
        ray_backend.check_address("auto")
    assert "cannot reach a Ray cluster there" in str(exc.value)


class DiskFull:
    """Writes to the run dir fail like a full disk (or a file size limit) from the Nth game on,
    the manifest's atomic rewrite too (a new file needs room)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, after: int, code: int) -> None:
        self.left, self.code, self.full = after, code, False
        real_write = files_module.JsonlAppender.write_bytes
        real_atomic = files_module.write_bytes_atomic

        def write_bytes(appender: Any, data: bytes) -> None:
            if appender.path.name == "rounds.jsonl":
                self.left -= 1
                if self.left < 0:
                    self.full = True
                    raise OSError(self.code, "No space left on device")
            real_write(appender, data)

        def atomic(path: Path, data: bytes) -> None:
            if self.full:
                raise RunError(f"{path}: cannot write (No space left on device)")
            real_atomic(path, data)

        monkeypatch.setattr(files_module.JsonlAppender, "write_bytes", write_bytes)
        monkeypatch.setattr(files_module, "write_bytes_atomic", atomic)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EFBIG], ids=["D01-ENOSPC", "D04-EFBIG"])
def test_d01_d04_a_full_disk_mid_run_is_one_line_failed_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    config = str(small_config(tmp_path))
    whole, out = tmp_path / "whole", tmp_path / "out"
    assert run_in_process(["run", config, "-o", str(whole), "--no-cache"], capsys)[0] == 0
    with monkeypatch.context() as patch:
        DiskFull(patch, after=3, code=code)
        status, _, err = run_in_process(["run", config, "-o", str(out), "--no-cache"], capsys)
    line = one_line(status, err)
    assert "cannot write" in line and f"pdbench resume {out}" in line
    manifest = json.loads((out / "run_manifest.json").read_text())
    assert manifest["status"] == "failed"  # the old session left "running"
    status, _, err = run_in_process(["resume", str(out), "--no-cache"], capsys)
    assert status == 0, err
    assert json.loads((out / "run_manifest.json").read_text())["status"] == "completed"

    def rounds(run: Path) -> list[dict[str, Any]]:
        records = [json.loads(x) for x in (run / "rounds.jsonl").read_text().splitlines()]
        for r in records:
            r.pop("timestamp_utc", None)
        return records

    assert rounds(out) == rounds(whole)
