"""Parquet artifacts (aggregates, matches, leaderboard, payoff matrix, generations): written
atomically with the schema version in the file's metadata, and read back only when this pdbench
knows that version. pyarrow is imported only here, when a Parquet file is touched."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from pdbench.storage.files import write_bytes_atomic
from pdbench.storage.schema import PARQUET_VERSION_KEY, SCHEMA_VERSION, check_version


def write_columns(path: Path, columns: dict[str, Any]) -> None:
    """Write named columns (arrays or lists of equal length)."""
    import pyarrow as pa

    table = pa.table({k: (v if isinstance(v, list) else np.asarray(v)) for k, v in columns.items()})
    _write(path, table)


def write_rows(path: Path, rows: list[dict[str, Any]], schema: Any) -> None:
    """Write rows (dicts) with an explicit pyarrow schema."""
    import pyarrow as pa

    _write(path, pa.Table.from_pylist(rows, schema=schema))


def _write(path: Path, table: Any) -> None:
    import pyarrow.parquet as pq

    metadata = dict(table.schema.metadata or {})
    metadata[PARQUET_VERSION_KEY] = str(SCHEMA_VERSION).encode()
    buffer = io.BytesIO()
    pq.write_table(table.replace_schema_metadata(metadata), buffer)
    write_bytes_atomic(path, buffer.getvalue())


def read_frame(path: Path) -> Any:
    """A Parquet artifact as a pandas DataFrame; SchemaVersionError when it is newer."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    version = (table.schema.metadata or {}).get(PARQUET_VERSION_KEY)
    check_version(str(path), version.decode() if version else None)
    return table.to_pandas()
