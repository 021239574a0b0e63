"""The manifest's package versions (`storage.files.package_version`, read from the Version
header) are what `importlib.metadata.version` (the standard library's e-mail parser) gives:
for every installed distribution, and for metadata written in unusual ways."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from pathlib import Path

import pytest

from pdbench.storage.files import package_version


def test_every_installed_distribution() -> None:
    names = sorted({d.metadata["Name"] for d in importlib.metadata.distributions()})
    assert len(names) > 20
    for name in names:
        assert package_version(name) == importlib.metadata.version(name), name


@pytest.mark.filterwarnings("ignore:Implicit None:DeprecationWarning")  # no Version header
@pytest.mark.parametrize(
    "metadata",
    [
        "Metadata-Version: 2.1\r\nName: oddpkg\r\nVersion: 1.2.3\r\n\r\nVersion: 9\r\n",
        "Metadata-Version: 2.1\nname: oddpkg\nversion:\t 4.5  \nSummary: x\n",
        "Metadata-Version: 2.1\nName: oddpkg\nVersion: 7.0\n  .post1\n",  # folded
        "Metadata-Version: 2.1\nName: oddpkg\nSummary: no version here\n",
        "Metadata-Version: 2.1\nName: oddpkg\n\nVersion: 3.0 (in the body, not a header)\n",
    ],
)
def test_unusual_metadata(metadata: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    info = tmp_path / "oddpkg-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_bytes(metadata.encode())
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _outcome(package_version, "oddpkg") == _outcome(importlib.metadata.version, "oddpkg")


def _outcome(read: Callable[[str], object], name: str) -> tuple[str, object]:
    """What `read(name)` gives, or the error it raises (metadata without a Version header:
    None with the standard library's reader, KeyError with the importlib_metadata backport's)."""
    try:
        return "value", read(name)
    except Exception as exc:  # noqa: BLE001 - compared, not handled
        return "error", type(exc)
