"""benchmarks/data_path.py measures what it says: a child's peak memory, the rounds files on disk,
and (slow) a whole smoke run of the four commands on 10,000 rounds."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "data_path.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("data_path", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["data_path"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_measure_reports_the_childs_peak_memory(tmp_path: Path) -> None:
    data_path = load_script()
    # This process's own peak must not count as the child's (a vfork-ed child's ru_maxrss starts
    # from its parent's): hold 300 MiB here while measuring.
    held = bytearray(300 * 2**20)
    held[::4096] = b"x" * len(held[::4096])
    # The child touches 200 MiB at once: its peak is at least that, plus a bare interpreter.
    child = "b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096])"
    big = data_path.measure([sys.executable, "-c", child], {}, tmp_path / "big.log")
    small = data_path.measure([sys.executable, "-c", "pass"], {}, tmp_path / "small.log")
    del held
    assert small.peak_mb < 100
    assert 200 <= big.peak_mb < 200 + small.peak_mb + 50
    assert big.seconds > 0 and big.cpu >= 0
    with pytest.raises(RuntimeError, match="exited 3"):
        data_path.measure([sys.executable, "-c", "exit(3)"], {}, tmp_path / "fail.log")


def test_rounds_files_finds_jsonl_and_columnar(tmp_path: Path) -> None:
    data_path = load_script()
    (tmp_path / "rounds.jsonl").write_bytes(b"x" * 1000)
    assert data_path.rounds_files(tmp_path) == {"rounds.jsonl": 1000}
    (tmp_path / "rounds.parquet").write_bytes(b"x" * 70)
    (tmp_path / "rounds").mkdir()
    (tmp_path / "rounds" / "part-0.bin").write_bytes(b"x" * 30)
    (tmp_path / "rounds" / "sub").mkdir()
    (tmp_path / "rounds" / "sub" / "part-1.bin").write_bytes(b"x" * 12)
    assert data_path.rounds_files(tmp_path) == {
        "rounds.jsonl": 1000,
        "rounds.parquet": 70,
        "rounds/": 42,
    }


@pytest.mark.slow
def test_quick_run_measures_every_command(tmp_path: Path) -> None:
    # About 30-60 s on the loaded 2-core machine (four pdbench processes), hence slow.
    out = tmp_path / "figures.json"
    subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--no-app", "--repeat", "1"]
        + ["--workdir", str(tmp_path), "--json", str(out)],
        check=True,
        capture_output=True,
    )
    figures = json.loads(out.read_text())
    assert figures["sizes"] == {"quick": 10 * 10 * 100}
    measures = figures["measures"]["quick"]
    assert sorted(measures) == ["aggregate", "profile", "report", "run"]
    for by_side in measures.values():
        (only,) = by_side["this"]
        assert only["seconds"] > 0 and only["peak_mb"] > 20
    # rounds.jsonl holds one JSON line of about 600 bytes per round (fields of two moves).
    jsonl = figures["disk"]["quick"]["this"]["rounds.jsonl"]
    assert 100 * 10_000 < jsonl < 2000 * 10_000
