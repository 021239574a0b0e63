"""A run's files offered for download from the app: each artifact as it is on disk, all of them
as one zip, and the HTML report (made in memory by `pdbench.report`, nothing written into the
run directory). The bytes are read only when the user clicks (Streamlit calls these lazily)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from pdbench.report import report_html
from pdbench.storage.schema import (
    AGGREGATES_FILE,
    CALLS_FILE,
    MANIFEST_FILE,
    ROUNDS_FILE,
)
from pdbench.storage.strategy_fit import STRATEGY_FIT_FILE

ARTIFACTS = (
    ROUNDS_FILE,
    MANIFEST_FILE,
    AGGREGATES_FILE,
    CALLS_FILE,
    STRATEGY_FIT_FILE,
    "comparisons.parquet",
)
MIME = {".jsonl": "application/jsonl", ".json": "application/json"}


def run_files(run_dir: str | Path) -> list[Path]:
    """The artifacts a run directory has, in reading order."""
    return [Path(run_dir) / name for name in ARTIFACTS if (Path(run_dir) / name).is_file()]


def mime(path: Path) -> str:
    """The MIME type a browser should save a file as."""
    return MIME.get(path.suffix, "application/octet-stream")


def zipped(run_dir: str | Path) -> bytes:
    """Every artifact of the run in one zip, under the run directory's name."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in run_files(run_dir):
            archive.write(path, f"{Path(run_dir).name}/{path.name}")
    return buffer.getvalue()


def report(run_dir: str | Path) -> bytes:
    """The run's HTML report (self-contained: inline CSS and SVG)."""
    return report_html(Path(run_dir)).encode("utf-8")
