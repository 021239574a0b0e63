"""strategy_fit.parquet: written by `pdbench profile`, read by the report and the app."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pdbench.storage.parquet import write_rows

STRATEGY_FIT_FILE = "strategy_fit.parquet"
STRATEGY_FIT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("condition", "string"),
    ("agent", "string"),
    ("agent_name", "string"),
    ("strategy", "string"),
    ("rank", "int64"),
    ("log_likelihood", "float64"),
    ("bic", "float64"),
    ("n_params", "int64"),
    ("tremble", "float64"),
    ("parameters", "string"),
    ("share", "float64"),
    ("share_ci_low", "float64"),
    ("share_ci_high", "float64"),
    ("mixture_tremble", "float64"),
    ("n_games", "int64"),
    ("n_moves", "int64"),
    ("soft_labels", "bool"),
    ("adequate", "bool"),
    ("gof_p_value", "float64"),
    ("moves_explained", "float64"),
    ("indistinguishable_from", "string"),  # JSON list of the strategies tied with this one
)
SETTINGS_KEY = b"pdbench.strategy_fit"  # the card's settings, JSON, in the file's metadata


def strategy_fit_schema(settings: dict[str, Any] | None = None) -> Any:
    """The pyarrow schema of strategy_fit.parquet, with the card's settings (library, interval
    and goodness-of-fit methods) as JSON in its metadata."""
    import pyarrow as pa

    fields = [(name, pa.type_for_alias(kind)) for name, kind in STRATEGY_FIT_COLUMNS]
    metadata = None if settings is None else {SETTINGS_KEY: json.dumps(settings).encode()}
    return pa.schema(fields, metadata=metadata)


def write_strategy_fit(
    rows: list[dict[str, Any]], path: Path, settings: dict[str, Any] | None = None
) -> None:
    """Write the rows (and the settings that produced them) atomically."""
    write_rows(path, rows, strategy_fit_schema(settings))


def read_strategy_fit_settings(path: Path) -> dict[str, Any] | None:
    """The settings recorded in a strategy_fit.parquet (None for a file written before they
    were recorded, or no file)."""
    if not Path(path).is_file():
        return None
    import pyarrow.parquet as pq

    raw = (pq.read_schema(path).metadata or {}).get(SETTINGS_KEY)
    return None if raw is None else json.loads(raw)


def write_table(
    path: Path, rows: list[dict[str, Any]], columns: tuple[tuple[str, str], ...]
) -> None:
    """Write rows with these (name, pyarrow type alias) columns atomically."""
    import pyarrow as pa

    write_rows(path, rows, pa.schema([(n, pa.type_for_alias(k)) for n, k in columns]))


def read_table_rows(path: Path) -> list[dict[str, Any]] | None:
    """The rows of a Parquet artifact, or None when there is none."""
    if not Path(path).is_file():
        return None
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def read_strategy_fit(run_dir: Path) -> list[dict[str, Any]] | None:
    """The rows of RUN_DIR/strategy_fit.parquet, or None when there is none."""
    path = Path(run_dir) / STRATEGY_FIT_FILE
    if not path.is_file():
        return None
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()
