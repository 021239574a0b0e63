"""The experiment runs the app reads: run lists, manifests, rounds, aggregates, one round's prompts
(tournaments and evolutions are loaded by `pdbench.ui.games_data`, with the same cache keys and
error classes).

Loaders are cached with `st.cache_data`, keyed by the file's path, mtime and size, so re-running an
experiment into the same directory refreshes what is shown. Nothing here writes to a run directory.

rounds.jsonl is read with pyarrow's JSON reader and an explicit schema of the scalar columns
(prompts and raw replies are skipped), so runs of 100,000 rounds open in seconds. The prompts and
raw replies of a single round are read lazily: a cached index of line offsets finds the line, and
only that line is parsed.

Problems raise `RunLoadError` subclasses whose message is one line meant for the user.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import streamlit as st

from pdbench.core.metrics import CollapseParams, aggregate_rows
from pdbench.storage.schema import AGGREGATES_FILE, MANIFEST_FILE, ROUNDS_FILE

RUNS_ROOT = Path("data/runs")


class RunLoadError(Exception):
    """A run directory that cannot be shown; `level` says how the page reports it."""

    level: str = "error"


class RunDirMissing(RunLoadError):
    """The directory does not exist."""


class NotARun(RunLoadError):
    """The directory has no readable run_manifest.json."""


class RunInProgress(RunLoadError):
    """The manifest says the run is still being written."""

    level = "warning"


class RoundsFileError(RunLoadError):
    """rounds.jsonl is missing, empty or not valid JSON Lines."""


class AggregatesError(RunLoadError):
    """aggregates.parquet exists but cannot be read."""


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One line of the run list: what a run is, from its manifest."""

    path: str
    run_id: str
    status: str
    started: str
    n_conditions: int
    n_rounds: int

    def label(self) -> str:
        """A compact one-line description for select boxes."""
        started = self.started[:16].replace("T", " ") if self.started else "?"
        return (
            f"{self.run_id} · {self.status} · {started} · "
            f"{self.n_conditions} condition{'s' if self.n_conditions != 1 else ''} · "
            f"{self.n_rounds:,} rounds"
        )


# Scalar columns of rounds.jsonl read for the viewer (prompts and raw replies are skipped).
ROUND_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "string"),
    ("condition", "string"),
    ("replicate", "int64"),
    ("round_index", "int64"),
    ("agent_a_name", "string"),
    ("agent_b_name", "string"),
    ("agent_a_action", "string"),
    ("agent_b_action", "string"),
    ("agent_a_intended_action", "string"),
    ("agent_b_intended_action", "string"),
    ("agent_a_payoff", "float64"),
    ("agent_b_payoff", "float64"),
    ("agent_a_cum_payoff", "float64"),
    ("agent_b_cum_payoff", "float64"),
    ("agent_a_parse_failure", "bool"),
    ("agent_b_parse_failure", "bool"),
)
REQUIRED_ROUND_COLUMNS: tuple[str, ...] = (
    "condition",
    "replicate",
    "round_index",
    "agent_a_action",
    "agent_b_action",
    "agent_a_payoff",
    "agent_b_payoff",
    "agent_a_cum_payoff",
    "agent_b_cum_payoff",
)
LINE_COLUMN = "_line"


def _stat_key(path: Path) -> tuple[str, int, int]:
    """(absolute path, mtime_ns, size): the cache key of a file's current content."""
    stat = path.stat()
    return str(path.resolve()), stat.st_mtime_ns, stat.st_size


# --------------------------------------------------------------------------------------------
# Manifests and the run list


@st.cache_data(show_spinner=False, max_entries=512)
def _read_manifest(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    del mtime_ns, size  # cache key only
    data = orjson.loads(Path(path).read_bytes())
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def load_manifest(run_dir: str | Path) -> dict[str, Any]:
    """The run's manifest; RunDirMissing or NotARun when there is none (status is not checked)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirMissing(f"{run_dir}: directory not found")
    path = run_dir / MANIFEST_FILE
    if not path.is_file():
        raise NotARun(f"{run_dir}: not a pdbench run (no {MANIFEST_FILE})")
    try:
        return _read_manifest(*_stat_key(path))
    except (ValueError, OSError) as exc:
        raise NotARun(f"{path}: unreadable manifest ({str(exc).splitlines()[0]})") from None


def check_run(run_dir: str | Path) -> dict[str, Any]:
    """The manifest of a run that can be shown; RunInProgress while it is still being written."""
    manifest = load_manifest(run_dir)
    if manifest.get("status") == "running":
        rounds_path = Path(run_dir) / ROUNDS_FILE
        written = rounds_path.stat().st_size if rounds_path.is_file() else 0
        raise RunInProgress(
            f"run {manifest.get('run_id', Path(run_dir).name)} is still in progress "
            f"(manifest status 'running', {written / 1e6:.1f} MB of rounds so far); "
            "open it again when it has finished"
        )
    return manifest


def run_info(run_dir: str | Path) -> RunInfo:
    """The run-list entry of a directory (status 'missing' or 'not a run' when broken)."""
    path = str(Path(run_dir).resolve())
    try:
        manifest = load_manifest(run_dir)
    except RunDirMissing:
        return RunInfo(path, Path(run_dir).name, "missing", "", 0, 0)
    except NotARun:
        return RunInfo(path, Path(run_dir).name, "not a run", "", 0, 0)
    totals = manifest.get("totals") or {}
    return RunInfo(
        path=path,
        run_id=str(manifest.get("run_id") or Path(run_dir).name),
        status=str(manifest.get("status") or "unknown"),
        started=str(manifest.get("started_at_utc") or ""),
        n_conditions=len(manifest.get("conditions") or []),
        n_rounds=int(totals.get("rounds_written", totals.get("rounds", 0)) or 0),
    )


def list_runs(root: str | Path = RUNS_ROOT, extra: str | Path | None = None) -> list[RunInfo]:
    """Runs under `root` (directories with a manifest), newest first, plus `extra` on top."""
    root = Path(root)
    found: list[RunInfo] = []
    if root.is_dir():
        for child in root.iterdir():
            if child.is_dir() and (child / MANIFEST_FILE).is_file():
                found.append(run_info(child))
    found.sort(key=lambda r: (r.started, r.run_id), reverse=True)
    if extra is not None:
        first = run_info(extra)
        found = [first] + [r for r in found if r.path != first.path]
    return found


def condition_configs(manifest: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each condition's resolved config (agents, horizon, noise) from the manifest snapshot."""
    conditions = ((manifest.get("config") or {}).get("experiment") or {}).get("conditions") or []
    return {c["name"]: c for c in conditions if isinstance(c, dict) and "name" in c}


def condition_order(manifest: Mapping[str, Any]) -> list[str]:
    """Condition names in config order."""
    return [c["name"] for c in manifest.get("conditions") or [] if "name" in c]


def collapse_params(manifest: Mapping[str, Any]) -> CollapseParams:
    """The collapse parameters the run used."""
    cfg = manifest.get("collapse") or {}
    return CollapseParams(int(cfg.get("k", 10)), float(cfg.get("threshold", 0.2)))


# --------------------------------------------------------------------------------------------
# rounds.jsonl


def _complete_lines(data: bytes) -> bytes:
    """Drop a trailing partial line (a crash mid-write)."""
    if data and not data.endswith(b"\n"):
        return data[: data.rfind(b"\n") + 1]
    return data


@st.cache_data(show_spinner="Reading rounds…", max_entries=8)
def _read_rounds(path: str, mtime_ns: int, size: int) -> pd.DataFrame:
    del mtime_ns, size  # cache key only
    import pyarrow as pa
    import pyarrow.json as pj

    data = _complete_lines(Path(path).read_bytes())
    if not data.strip():
        raise RoundsFileError(f"{path}: no rounds recorded (empty file)")
    schema = pa.schema([(name, pa.type_for_alias(kind)) for name, kind in ROUND_COLUMNS])
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            parse_options=options,
            read_options=pj.ReadOptions(block_size=1 << 24),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        first = str(exc).splitlines()[0]
        raise RoundsFileError(f"{path}: not valid rounds JSON Lines ({first})") from None
    if table.num_rows == 0:
        raise RoundsFileError(f"{path}: no rounds recorded")
    missing = [n for n in REQUIRED_ROUND_COLUMNS if table.column(n).null_count == table.num_rows]
    if missing:
        raise RoundsFileError(f"{path}: records lack required fields: {', '.join(missing)}")
    df = table.to_pandas()
    df[LINE_COLUMN] = np.arange(len(df), dtype=np.int64)
    for side in ("a", "b"):
        intended = f"agent_{side}_intended_action"
        df[intended] = df[intended].fillna(df[f"agent_{side}_action"])
        failure = f"agent_{side}_parse_failure"
        df[failure] = df[failure].fillna(False).astype(bool)
        name = f"agent_{side}_name"
        df[name] = df[name].fillna(side.upper())
    df["condition"] = df["condition"].astype("category")
    return df


def load_rounds(run_dir: str | Path) -> pd.DataFrame:
    """All rounds of a run (scalar columns only), in file order, with a `_line` column."""
    path = Path(run_dir) / ROUNDS_FILE
    if not path.is_file():
        raise RoundsFileError(f"{path}: rounds file not found")
    return _read_rounds(*_stat_key(path))


def games(rounds: pd.DataFrame, order: list[str] | None = None) -> dict[str, list[int]]:
    """The replicates present for each condition, conditions in config order."""
    pairs = rounds[["condition", "replicate"]].drop_duplicates()
    out: dict[str, list[int]] = {}
    present = [str(c) for c in pairs["condition"].unique()]
    ordered = [c for c in (order or []) if c in present] + sorted(set(present) - set(order or []))
    for condition in ordered:
        reps = pairs.loc[pairs["condition"] == condition, "replicate"]
        out[condition] = sorted(int(r) for r in reps)
    return out


def game_rounds(rounds: pd.DataFrame, condition: str, replicate: int) -> pd.DataFrame:
    """The rounds of one game, sorted by round, with a 1-based `round` column."""
    mask = (rounds["condition"] == condition) & (rounds["replicate"] == replicate)
    game = rounds.loc[mask].sort_values("round_index").reset_index(drop=True)
    game["round"] = game["round_index"] + 1
    return game


# --------------------------------------------------------------------------------------------
# aggregates.parquet


@st.cache_data(show_spinner=False, max_entries=16)
def _read_aggregates(path: str, mtime_ns: int, size: int) -> pd.DataFrame:
    del mtime_ns, size  # cache key only
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several unrelated types for broken files
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise AggregatesError(f"{path}: unreadable aggregates ({first})") from None


@st.cache_data(show_spinner="Computing metrics…", max_entries=8)
def _aggregates_from_rounds(
    path: str, mtime_ns: int, size: int, manifest_json: str
) -> pd.DataFrame:
    del mtime_ns, size  # cache key only
    from pdbench.storage.aggregate import outcomes_from_table, read_rounds_table

    manifest = json.loads(manifest_json)
    table = read_rounds_table(Path(path))
    rows = aggregate_rows(
        str(manifest.get("run_id", "")),
        outcomes_from_table(table),
        condition_order(manifest),
        collapse_params(manifest),
    )
    return pd.DataFrame(rows)


def load_aggregates(run_dir: str | Path, manifest: Mapping[str, Any]) -> tuple[pd.DataFrame, str]:
    """(aggregate rows, source): from aggregates.parquet, or computed in memory from rounds.jsonl
    with the library's metric functions when the file is absent (e.g. a failed run). Never writes."""
    path = Path(run_dir) / AGGREGATES_FILE
    if path.is_file():
        return _read_aggregates(*_stat_key(path)), AGGREGATES_FILE
    rounds_path = Path(run_dir) / ROUNDS_FILE
    if not rounds_path.is_file():
        raise RoundsFileError(f"{rounds_path}: rounds file not found")
    small = {k: manifest.get(k) for k in ("run_id", "conditions", "collapse")}
    try:
        df = _aggregates_from_rounds(*_stat_key(rounds_path), json.dumps(small, default=str))
    except Exception as exc:  # the library's RunDirError or a pyarrow error
        raise RoundsFileError(str(exc).splitlines()[0]) from None
    return df, f"{ROUNDS_FILE} (computed in memory; {AGGREGATES_FILE} is missing)"


def replicate_row(aggregates: pd.DataFrame, condition: str, replicate: int) -> pd.Series | None:
    """The aggregate row of one game, or None."""
    rows = aggregates[
        (aggregates["scope"] == "replicate")
        & (aggregates["condition"] == condition)
        & (aggregates["replicate"] == replicate)
    ]
    return rows.iloc[0] if len(rows) else None


def condition_row(aggregates: pd.DataFrame, condition: str) -> pd.Series | None:
    """The condition-mean aggregate row, or None."""
    rows = aggregates[(aggregates["scope"] == "condition") & (aggregates["condition"] == condition)]
    return rows.iloc[0] if len(rows) else None


def series_from_json(value: Any) -> list[float]:
    """A JSON list stored in an aggregate cell (e.g. cooperation_rate_over_time); [] if absent."""
    if not isinstance(value, str) or not value:
        return []
    try:
        data = json.loads(value)
    except ValueError:
        return []
    return [float(v) for v in data] if isinstance(data, list) else []


# --------------------------------------------------------------------------------------------
# One round's prompts and raw replies


@st.cache_data(show_spinner="Indexing rounds…", max_entries=8)
def _line_offsets(path: str, mtime_ns: int, size: int) -> np.ndarray:
    """(start, end) byte offsets of every non-empty complete line, in file order."""
    del mtime_ns  # cache key only
    newlines: list[np.ndarray] = []
    chunk = 1 << 24
    with open(path, "rb") as fh:
        offset = 0
        while block := fh.read(chunk):
            found = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
            newlines.append(found.astype(np.int64) + offset)
            offset += len(block)
    ends = np.concatenate(newlines) if newlines else np.empty(0, dtype=np.int64)
    starts = np.concatenate(([0], ends[:-1] + 1)) if ends.size else ends
    keep = ends > starts
    del size
    return np.stack([starts[keep], ends[keep]], axis=1)


def _read_line(path: Path, start: int, end: int) -> dict[str, Any]:
    with open(path, "rb") as fh:
        fh.seek(start)
        return orjson.loads(fh.read(end - start))


def load_round_record(
    run_dir: str | Path, rounds: pd.DataFrame, condition: str, replicate: int, round_index: int
) -> dict[str, Any]:
    """The full rounds.jsonl record (with prompts and raw replies) of one round, parsing one line."""
    path = Path(run_dir) / ROUNDS_FILE
    hit = rounds[
        (rounds["condition"] == condition)
        & (rounds["replicate"] == replicate)
        & (rounds["round_index"] == round_index)
    ]
    if hit.empty:
        raise RoundsFileError(f"{condition} replicate {replicate}: no round {round_index + 1}")
    line = int(hit[LINE_COLUMN].iloc[0])
    offsets = _line_offsets(*_stat_key(path))
    want = (condition, replicate, round_index)
    if line < len(offsets):
        try:
            record = _read_line(path, int(offsets[line][0]), int(offsets[line][1]))
            if (
                record.get("condition"),
                record.get("replicate"),
                record.get("round_index"),
            ) == want:
                return record
        except orjson.JSONDecodeError:
            pass
    # The file changed shape (blank or broken lines): fall back to a scan of the lines.
    for start, end in offsets:
        try:
            record = _read_line(path, int(start), int(end))
        except orjson.JSONDecodeError:
            continue
        if (record.get("condition"), record.get("replicate"), record.get("round_index")) == want:
            return record
    raise RoundsFileError(f"{path}: round {round_index + 1} of {condition} not found")
