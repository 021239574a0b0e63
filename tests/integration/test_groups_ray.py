"""Groups runs on the Ray backend (`--backend ray`) against the local backend, on a local Ray
instance started offline once for the module (2 CPUs, no dashboard, no usage statistics, its
files under a short temporary directory): vectorized policy groups, a talking group of mock LLM
seats and a talking policy, and groups drawn from a pool give the same rounds.jsonl (timestamps
aside), calls and group tables; the budget holds on Ray and the run it stops resumes to the same
result. The local backend's engine is made to refuse, so Ray tasks really play the games."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import run_in_process
from tests.support.group_shards import (
    GROUP_TABLES,
    calls_facts,
    group_tables,
    manifest,
    rounds_without_timestamps,
    set_budget,
    write_group_config,
)

from pdbench.runners.lifecycle.group_session import GroupRunSession

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    """A local Ray instance for the module (the environment restored afterwards)."""
    names = ("RAY_USAGE_STATS_ENABLED", "RAY_ENABLE_UV_RUN_RUNTIME_ENV")
    saved = {name: os.environ.get(name) for name in names}
    for name in names:
        os.environ.setdefault(name, "0")
    import ray

    temp = tempfile.mkdtemp(prefix="pdgray", dir="/tmp")  # Ray's socket paths must stay short
    ray.init(num_cpus=2, _temp_dir=temp, include_dashboard=False, logging_level="warning")
    try:
        yield ray
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def on_ray(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`pdbench ARGS --backend ray`, failing if the local backend's engine plays any game."""

    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("the local backend played games")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(GroupRunSession, "_play", refuse)
        return run_in_process([*args, "--backend", "ray"], capsys)


def test_groups_on_ray_equal_the_local_backend(
    ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_group_config(tmp_path)
    local, remote = tmp_path / "local", tmp_path / "ray"
    code, _, err = run_in_process(
        ["run", str(config), "-o", str(local), "--cache-dir", str(tmp_path / "c1")], capsys
    )
    assert code == 0, err
    code, _, err = on_ray(
        ["run", str(config), "-o", str(remote), "--cache-dir", str(tmp_path / "c2")], capsys
    )
    assert code == 0, err
    assert manifest(remote)["status"] == "completed"
    assert rounds_without_timestamps(remote) == rounds_without_timestamps(local)
    assert calls_facts(remote) == calls_facts(local)
    got, want = group_tables(remote), group_tables(local)
    for name in GROUP_TABLES:
        assert got[name].equals(want[name]), name
    for key in ("conditions", "totals", "usage"):
        assert manifest(remote)[key] == manifest(local)[key], key


def test_budget_holds_on_ray_and_the_stopped_run_resumes_to_the_local_result(
    ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = tmp_path / "reference"
    config = write_group_config(reference)
    code, _, err = run_in_process(
        ["run", str(config), "-o", str(reference / "out"), "--no-cache"], capsys
    )
    assert code == 0, err
    root = tmp_path / "budget"
    config = write_group_config(root, budget={"max_calls": 20})
    out = root / "out"
    args = ["run", str(config), "-o", str(out), "--cache-dir", str(root / "cache")]
    code, _, err = on_ray(args, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "max_calls=20" in lines[0], err
    assert manifest(out)["status"] == "stopped"
    assert manifest(out)["usage"]["spent_all_sessions"]["provider_calls"] <= 20
    set_budget(config, {"max_calls": None, "max_tokens": None, "max_cost_usd": None})
    code, _, err = on_ray([*args, "--resume"], capsys)
    assert code == 0, err
    assert manifest(out)["status"] == "completed"
    assert rounds_without_timestamps(out) == rounds_without_timestamps(reference / "out")
    got, want = group_tables(out), group_tables(reference / "out")
    for name in GROUP_TABLES:
        assert got[name].equals(want[name]), name
