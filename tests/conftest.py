"""Every test gets its own response cache directory (through $PDBENCH_CACHE_DIR, which child
processes inherit), so no test writes a cache into the repository or reads another's."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _own_response_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PDBENCH_CACHE_DIR", str(tmp_path / "default-cache"))
