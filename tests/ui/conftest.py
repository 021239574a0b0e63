"""Fixtures of the UI tests: one small sample run, made once with the library, and an empty
working directory for every test (so data/runs/, data/tournaments/ and data/evolutions/ are the
test's own)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.ui.sample import make_run


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run: TFT vs ALLD, noisy GTFT vs WSLS, and two mock LLMs (some invalid replies);
    30 rounds, 2 replicates. Tests must not change it (copy it with `run_copy`)."""
    return make_run(tmp_path_factory.mktemp("sample"))


@pytest.fixture
def run_copy(sample_run: Path, tmp_path: Path) -> Path:
    """A private copy of the sample run that a test may damage."""
    target = tmp_path / "copy" / sample_run.name
    shutil.copytree(sample_run, target)
    return target


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every test in an empty working directory, without the app's environment variables."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PDBENCH_RUN_DIR", raising=False)
    monkeypatch.delenv("PDBENCH_CONFIG_DIR", raising=False)
