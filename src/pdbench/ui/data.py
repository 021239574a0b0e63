"""Everything the app reads from disk, for every kind of run (experiment, tournament, evolution):
manifests (the lists of saved runs are `ui.saved_runs`), aggregates, one game's rounds, one round's prompts, tournament
and evolution tables. Nothing here writes.

Loaders are cached with `st.cache_data`, keyed by each file's path, mtime and size, so re-running
into a directory refreshes what is shown. File names and the rounds record's fields and types
come from `pdbench.storage.schema`. Numbers are the library's artifacts (or, for a run that
failed before writing aggregates.parquet, `pdbench.core.metrics` applied to its rounds: the
only place that reads every round). A game's rounds are read when the game is shown, and only
its lines (`load_game_rounds`, found by `ui.game_lines`); so are one round's prompts and replies
and one game's replies for the replay.

Problems raise `RunLoadError` subclasses with a one-line message for the user, including an
artifact written by a newer pdbench (its schema_version).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import streamlit as st

from pdbench.core.metrics import CollapseParams, aggregate_rows
from pdbench.core.rounds_display import round_text
from pdbench.core.tournament_metrics import LEADERBOARD_COLUMNS, PAIRWISE_COLUMNS
from pdbench.errors import PdbenchError
from pdbench.storage.parquet import read_frame
from pdbench.storage.record.fields import FIXED_N, HORIZON_TYPE, MESSAGES, ROUND_INDEX, TIMESTAMP
from pdbench.storage.schema import (
    AGGREGATES_FILE,
    FIXATION_FILE,
    GENERATIONS_FILE,
    LEADERBOARD_FILE,
    MANIFEST_FILES,
    MATCHES_FILE,
    PAYOFF_MATRIX_FILE,
    ROUND_FIELDS,
    ROUNDS_COLUMNS_DIR,
    ROUNDS_FILE,
    SchemaVersionError,
    check_version,
)
from pdbench.ui import game_lines, replies, tables
from pdbench.ui.style import make_players
from pdbench.ui.tables import Evolution, Tournament

RUNS_ROOT = Path("data/runs")
TOURNAMENTS_ROOT = Path("data/tournaments")
EVOLUTIONS_ROOT = Path("data/evolutions")
KIND_NAMES = {
    "experiment": "run",
    "tournament": "tournament",
    "evolution": "evolution",
    "groups": "groups run",
    "group_tournament": "group tournament",
    "group_evolution": "group evolution",
    "pgg": "public goods run",
    "commons": "commons run",
}
# rounds.jsonl fields the viewer reads (prompts, raw replies and these are skipped).
UNUSED_ROUND_FIELDS = ("seed", HORIZON_TYPE, FIXED_N, "stop_prob", TIMESTAMP)
ROUND_COLUMNS = tuple(f for f in ROUND_FIELDS if f not in UNUSED_ROUND_FIELDS)
REQUIRED_ROUND_COLUMNS = ("condition", "replicate", ROUND_INDEX) + tuple(
    f"agent_{side}_{field}" for field in ("action", "payoff", "cum_payoff") for side in "ab"
)
GENERATION_COLUMNS = ("generation", "strategy", "count", "share", "mean_fitness")
FIXATION_COLUMNS = ("strategy", "fixations", "seeds", "probability", "ci_low", "ci_high")
MATCH_COLUMNS = ("player_a", "player_b", "rounds", "score_a", "score_b")


class RunLoadError(Exception):
    """A run directory that cannot be shown; `level` says how the page reports it."""

    level: str = "error"


class RunDirMissing(RunLoadError):
    """The directory does not exist."""


class NotARun(RunLoadError):
    """The directory has no readable manifest of the expected kind."""


class RunInProgress(RunLoadError):
    """The manifest says the run is still being written."""

    level = "warning"


class RunNotFinished(RunLoadError):
    """A tournament or evolution that stopped before writing its tables."""


class NewerSchema(RunLoadError):
    """An artifact written by a newer pdbench (a higher schema_version)."""


class RoundsFileError(RunLoadError):
    """rounds.jsonl is missing, empty or not valid JSON Lines."""


class ArtifactError(RunLoadError):
    """A Parquet artifact is missing, unreadable or lacks columns."""


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line (its type name when it has none)."""
    text = str(exc)
    return text.splitlines()[0] if text.strip() else type(exc).__name__


def _stat_key(path: Path) -> tuple[str, int, int]:
    """(absolute path, mtime_ns, size): the cache key of a file's current content."""
    stat = path.stat()
    return str(path.resolve()), stat.st_mtime_ns, stat.st_size


def _check_version(where: str, version: Any) -> None:
    try:
        check_version(where, version)
    except SchemaVersionError as exc:
        raise NewerSchema(first_line(exc)) from None


# --------------------------------------------------------------------------------------------
# Cached readers


@st.cache_data(show_spinner=False, max_entries=512)
def _read_json(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    del mtime_ns, size  # cache key only
    data = orjson.loads(Path(path).read_bytes())
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


@st.cache_data(show_spinner=False, max_entries=64)
def _read_parquet(path: str, mtime_ns: int, size: int) -> pd.DataFrame:
    del mtime_ns, size  # cache key only
    return read_frame(Path(path))  # checks the schema version in the file's metadata


def load_strategy_fit(run_dir: str | Path) -> pd.DataFrame | None:
    """strategy_fit.parquet of a run (from `pdbench profile`), or None when there is none."""
    path = Path(run_dir) / "strategy_fit.parquet"
    if not path.is_file():
        return None
    stat = path.stat()
    return _read_parquet(str(path), stat.st_mtime_ns, stat.st_size)


def _table(directory: str | Path, name: str, columns: Sequence[str]) -> pd.DataFrame:
    """A Parquet artifact with at least `columns` and one row; ArtifactError otherwise."""
    path = Path(directory) / name
    if not path.is_file():
        raise ArtifactError(f"{path}: file not found")
    try:
        table = _read_parquet(*_stat_key(path))
    except SchemaVersionError as exc:
        raise NewerSchema(first_line(exc)) from None
    except Exception as exc:  # pyarrow raises several unrelated types for broken files
        raise ArtifactError(f"{path}: unreadable ({first_line(exc)})") from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ArtifactError(f"{path}: missing columns: {', '.join(missing)}")
    if table.empty:
        raise ArtifactError(f"{path}: no rows")
    return table


# --------------------------------------------------------------------------------------------
# Manifests


def load_manifest(directory: str | Path, kind: str = "experiment") -> dict[str, Any]:
    """The manifest of a run of this kind; RunDirMissing, NotARun or NewerSchema when it cannot
    be read (its status is not checked)."""
    directory = Path(directory)
    name = MANIFEST_FILES[kind]
    path = directory / name
    try:  # a name too long, a directory not searchable: OSError, not False
        found = directory.is_dir(), path.is_file()
    except OSError as exc:
        raise NotARun(f"{directory}: cannot be read ({exc.strerror or first_line(exc)})") from None
    if not found[0]:
        raise RunDirMissing(f"{directory}: directory not found")
    if not found[1]:
        raise NotARun(f"{directory}: not a pdbench {KIND_NAMES[kind]} (no {name})")
    try:
        manifest = _read_json(*_stat_key(path))
    except (ValueError, OSError) as exc:
        raise NotARun(f"{path}: unreadable manifest ({first_line(exc)})") from None
    _check_version(str(path), manifest.get("schema_version"))
    return manifest


def check_run(directory: str | Path, kind: str = "experiment") -> dict[str, Any]:
    """The manifest of a run that can be shown; RunInProgress while it is still being written."""
    manifest = load_manifest(directory, kind)
    if manifest.get("status") == "running":
        rounds = Path(directory) / ROUNDS_FILE
        written = (
            f", {rounds.stat().st_size / 1e6:.1f} MB of rounds so far" if rounds.is_file() else ""
        )
        raise RunInProgress(
            f"{KIND_NAMES[kind]} {manifest.get('run_id', Path(directory).name)} is still in "
            f"progress (manifest status 'running'{written}); open it again when it has finished"
        )
    return manifest


def run_kind(directory: str | Path) -> str | None:
    """experiment, tournament or evolution: which manifest the directory holds (None: none)."""
    try:
        found = [k for k, name in MANIFEST_FILES.items() if (Path(directory) / name).is_file()]
    except OSError:  # a name too long, a directory not searchable: none that can be read
        return None
    return found[0] if found else None


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
# aggregates.parquet (for a failed run without it: metrics computed from rounds.jsonl)


@st.cache_data(show_spinner="Computing metrics…", max_entries=8)
def _aggregates_from_rounds(
    path: str, mtime_ns: int, size: int, manifest_json: str
) -> pd.DataFrame:
    del mtime_ns, size  # cache key only
    from pdbench.storage.intervals import interval_settings, metric_designs, with_intervals
    from pdbench.storage.record.table import (
        outcomes_from_table,
        read_rounds_table,
        talk_settings,
    )

    manifest = json.loads(manifest_json)
    rows = aggregate_rows(
        str(manifest.get("run_id", "")),
        outcomes_from_table(read_rounds_table(Path(path)), talk_settings(manifest)),
        condition_order(manifest),
        collapse_params(manifest),
    )
    designs = metric_designs(manifest)
    return pd.DataFrame(with_intervals(rows, interval_settings(manifest), designs))


def load_aggregates(run_dir: str | Path, manifest: Mapping[str, Any]) -> tuple[pd.DataFrame, str]:
    """(aggregate rows, source): from aggregates.parquet, or computed in memory from rounds.jsonl
    with the library's metric functions when the file is absent (e.g. a failed run). Never writes."""
    if (Path(run_dir) / AGGREGATES_FILE).is_file():
        return _table(
            run_dir, AGGREGATES_FILE, ("scope", "condition", "replicate")
        ), AGGREGATES_FILE
    rounds_path = Path(run_dir) / ROUNDS_FILE
    if not rounds_path.is_file():
        raise RoundsFileError(f"{rounds_path}: rounds file not found")
    small = {k: manifest.get(k) for k in ("run_id", "conditions", "collapse")}
    try:
        df = _aggregates_from_rounds(*_stat_key(rounds_path), json.dumps(small, default=str))
    except SchemaVersionError as exc:
        raise NewerSchema(first_line(exc)) from None
    except Exception as exc:  # the library's RunDirError or a pyarrow error
        raise RoundsFileError(first_line(exc)) from None
    return df, f"{ROUNDS_FILE} (computed in memory; {AGGREGATES_FILE} is missing)"


# --------------------------------------------------------------------------------------------
# One game's rounds, read when the game is shown; one round's prompts and raw replies


def _plan(run_dir: Path) -> dict[tuple[str, int], int]:
    """(condition, replicate) -> the game's planned length, in the order the run plays and
    writes its games (the manifest's plan; empty when it has none)."""
    from pdbench.storage.record.table import RunDirError, planned_lengths

    try:
        return planned_lengths(_read_json(*_stat_key(run_dir / MANIFEST_FILES["experiment"]))) or {}
    except (OSError, ValueError, RunDirError):
        return {}


def _planned_rounds(run_dir: Path, condition: str, replicate: int) -> int | None:
    """How many rounds the game has: n_rounds of its aggregates.parquet row, else the length the
    manifest planned; None when neither says (the game's lines are then found by a full scan)."""
    aggregates = run_dir / AGGREGATES_FILE
    if aggregates.is_file():
        try:
            row = tables.replicate_row(_read_parquet(*_stat_key(aggregates)), condition, replicate)
        except Exception:  # an unreadable file: the manifest may still say
            row = None
        if row is not None and pd.notna(row.get("n_rounds")):
            return int(row["n_rounds"])
    return _plan(run_dir).get((condition, replicate))


@st.cache_data(show_spinner="Finding the game…", max_entries=8)
def _probed_spans(
    path: str, mtime_ns: int, size: int
) -> dict[game_lines.GameKey, list[tuple[int, int]]]:
    del mtime_ns, size  # cache key only
    try:
        return game_lines.probe_spans(Path(path))
    except game_lines.Unreadable:  # a broken line where a probe fell: the full scan decides
        return {}


def _probed_game(
    path: str, key: game_lines.GameKey, order: dict[game_lines.GameKey, int]
) -> dict[game_lines.GameKey, list[tuple[int, int]]]:
    """The spans of one game found by probes that assume the file follows the plan `order`."""
    if key not in order:
        return {}
    try:
        return game_lines.probe_spans(Path(path), key, order)
    except game_lines.Unreadable:
        return {}


@st.cache_data(show_spinner="Indexing rounds…", max_entries=4)
def _scanned_lines(path: str, mtime_ns: int, size: int) -> dict[game_lines.GameKey, np.ndarray]:
    del mtime_ns, size  # cache key only
    return game_lines.scan_lines(Path(path))


@st.cache_data(show_spinner=False, max_entries=64)
def _game_lines(
    path: str, mtime_ns: int, size: int, condition: str, replicate: int, expected: int | None
) -> np.ndarray:
    """(round_index, start, end) of the game's lines in rounds.jsonl, sorted by round: the block
    the probes found when it holds exactly the `expected` rounds of the game (probes around the
    game's place in the plan first, then probes of the whole file), else a full scan's."""
    key = (condition, replicate)
    if expected is not None:
        order = {k: i for i, k in enumerate(_plan(Path(path).parent))}
        probes = (
            lambda: _probed_game(path, key, order),
            lambda: _probed_spans(path, mtime_ns, size),
        )
        for probe in probes:  # the second only when the first did not find the game
            spans = probe()
            if key in spans:
                lines = game_lines.read_span_lines(Path(path), spans[key], key)
                if lines is not None and len(np.unique(lines[:, 0])) == len(lines) == expected:
                    return lines
    lines = _scanned_lines(path, mtime_ns, size).get(key)
    if lines is None:
        raise RoundsFileError(f"{path}: no rounds of {condition} replicate {replicate}")
    return lines


GameId = tuple[str, int, int, str, int, int | None]  # rounds file identity, game, its length


def _game_id(run_dir: str | Path, condition: str, replicate: int) -> GameId:
    """The cache key of one game: rounds.jsonl's path, mtime and size, the condition and
    replicate, and the game's length (`_planned_rounds`)."""
    path = Path(run_dir) / ROUNDS_FILE
    if not path.is_file():
        raise RoundsFileError(f"{path}: rounds file not found")
    expected = _planned_rounds(Path(run_dir), condition, int(replicate))
    return (*_stat_key(path), condition, int(replicate), expected)


@st.cache_data(show_spinner="Reading the game…", max_entries=32)
def _game_rounds(
    path: str, mtime_ns: int, size: int, condition: str, replicate: int, expected: int | None
) -> pd.DataFrame:
    # rounds.jsonl (a run without columnar parts): the game's lines, found by probes
    lines = _game_lines(path, mtime_ns, size, condition, replicate, expected)
    raw = game_lines.read_lines(Path(path), lines)
    try:
        table = game_lines.rounds_table(Path(path), raw, ROUND_COLUMNS, REQUIRED_ROUND_COLUMNS)
    except game_lines.BadRounds as exc:
        raise RoundsFileError(str(exc)) from None
    except SchemaVersionError as exc:
        raise NewerSchema(first_line(exc)) from None
    return game_lines.with_messages(game_lines.round_frame(table), game_lines.line_messages(raw))


@st.cache_data(show_spinner="Reading the game…", max_entries=32)
def _game_rounds_from_columns(
    run_dir: str, parts: tuple[tuple[str, int, int], ...], condition: str, replicate: int
) -> pd.DataFrame:
    del parts  # cache key only
    from pdbench.storage.record.reader import read_game_rounds

    try:
        table = read_game_rounds(Path(run_dir), condition, replicate, (*ROUND_COLUMNS, MESSAGES))
    except SchemaVersionError as exc:
        raise NewerSchema(first_line(exc)) from None
    except PdbenchError as exc:  # a damaged part
        raise RoundsFileError(first_line(exc)) from None
    if table is None:
        raise RoundsFileError(
            f"{Path(run_dir) / ROUNDS_COLUMNS_DIR}: no rounds of {condition} replicate {replicate}"
        )
    said = table.column(MESSAGES).to_pylist()
    return game_lines.with_messages(game_lines.round_frame(table.drop([MESSAGES])), said)


def load_game_rounds(run_dir: str | Path, condition: str, replicate: int) -> pd.DataFrame:
    """The rounds of one game (the scalar fields ROUND_COLUMNS, and `messages`, each round's
    message entries, when the game has any: `game_lines.with_messages`), by round_index; only
    that game is read: from the columnar parts under rounds/ when the run's readers use them
    (`record.reader.uses_columns`), else from rounds.jsonl. Cached by the files' paths, mtimes
    and sizes (a re-run is seen). RoundsFileError when the file or the game is not there,
    NewerSchema for a record of a newer pdbench."""
    from pdbench.storage.record.parts import part_paths
    from pdbench.storage.record.reader import uses_columns

    run_dir = Path(run_dir)
    manifest_path = run_dir / MANIFEST_FILES["experiment"]
    try:
        manifest = _read_json(*_stat_key(manifest_path))
    except (OSError, ValueError):
        manifest = None
    try:
        columns = uses_columns(run_dir, manifest if isinstance(manifest, dict) else None)
        parts = tuple((str(p), *_stat_key(p)[1:]) for p in part_paths(run_dir)) if columns else ()
    except PdbenchError as exc:  # a stray file in rounds/
        raise RoundsFileError(first_line(exc)) from None
    if columns:
        return _game_rounds_from_columns(str(run_dir), parts, condition, int(replicate))
    return _game_rounds(*_game_id(run_dir, condition, replicate))


def load_round_record(
    run_dir: str | Path, condition: str, replicate: int, round_index: int
) -> dict[str, Any]:
    """The full rounds.jsonl record (with prompts and raw replies) of one round, parsing one line."""
    game = _game_id(run_dir, condition, replicate)
    path, lines = Path(game[0]), _game_lines(*game)
    hit = lines[lines[:, 0] == round_index]
    if not len(hit):
        raise RoundsFileError(f"{condition} replicate {replicate}: no {round_text(round_index)}")
    try:
        record = orjson.loads(game_lines.read_lines(path, hit[:1])[0])
    except orjson.JSONDecodeError:
        record = None
    if not isinstance(record, dict) or record.get(ROUND_INDEX) != round_index:
        raise RoundsFileError(f"{path}: {round_text(round_index)} of {condition} not readable")
    return record


@st.cache_data(show_spinner="Reading replies…", max_entries=8)
def _game_replies(
    path: str, mtime_ns: int, size: int, condition: str, replicate: int, expected: int | None
) -> dict[int, dict[str, list[replies.ReplyAttempt]]]:
    """round_index -> `replies.slim` of its raw_responses, for one game."""
    lines = _game_lines(path, mtime_ns, size, condition, replicate, expected)
    return game_lines.replies_by_round(Path(path), lines)


def load_game_replies(
    run_dir: str | Path, game: pd.DataFrame, condition: str, replicate: int
) -> list[dict[str, list[replies.ReplyAttempt]] | None]:
    """Each round's replies (`replies.slim`) of one game (`game`: its rounds, in the order
    wanted), None for a round whose record is not found."""
    found = _game_replies(*_game_id(run_dir, condition, replicate))
    return [found.get(int(r)) for r in game[ROUND_INDEX]]


# --------------------------------------------------------------------------------------------
# Tournaments and evolutions


def _finished_manifest(directory: str | Path, kind: str) -> dict[str, Any]:
    """The manifest of a tournament or evolution that wrote its tables."""
    manifest = check_run(directory, kind)
    status = manifest.get("status")
    if status not in (None, "completed"):
        raise RunNotFinished(
            f"{KIND_NAMES[kind]} {manifest.get('run_id', Path(directory).name)} {status}: "
            + str(manifest.get("error") or "no error recorded").splitlines()[0]
        )
    return manifest


def _entries(names: list[str], configs: Sequence[Any]) -> list[tuple[str, dict[str, Any] | None]]:
    """(name, config) pairs: the i-th config for the i-th name when it is a mapping."""
    return [
        (name, configs[i] if i < len(configs) and isinstance(configs[i], dict) else None)
        for i, name in enumerate(names)
    ]


def load_tournament(directory: str | Path) -> Tournament:
    """A tournament's manifest and tables; RunLoadError subclasses with one-line messages."""
    manifest = _finished_manifest(directory, "tournament")
    board = _table(directory, LEADERBOARD_FILE, LEADERBOARD_COLUMNS)
    pairwise = _table(directory, PAYOFF_MATRIX_FILE, PAIRWISE_COLUMNS)
    matches = _table(directory, MATCHES_FILE, MATCH_COLUMNS)
    names = [str(p.get("name")) for p in manifest.get("players") or [] if isinstance(p, dict)]
    names = names or [str(n) for n in board["player"]]
    named = [*board["player"], *pairwise["player"], *pairwise["opponent"]]
    strays = sorted({str(n) for n in named} - set(names))
    if strays:
        raise ArtifactError(f"{directory}: players missing from the manifest: {', '.join(strays)}")
    configs = ((manifest.get("config") or {}).get("tournament") or {}).get("players") or []
    return Tournament(
        str(Path(directory).resolve()),
        manifest,
        board.sort_values("rank").reset_index(drop=True),
        pairwise,
        matches,
        make_players(_entries(names, configs)),
    )


def load_evolution(directory: str | Path) -> Evolution:
    """An evolution's manifest, generations table and fixation.parquet (when it ran several
    seeds: the runner's shares and Wilson intervals); RunLoadError subclasses on problems."""
    manifest = _finished_manifest(directory, "evolution")
    generations = _table(directory, GENERATIONS_FILE, GENERATION_COLUMNS)
    fixation = None
    if (Path(directory) / FIXATION_FILE).is_file():
        fixation = _table(directory, FIXATION_FILE, FIXATION_COLUMNS).reset_index(drop=True)
    names = [str(s) for s in manifest.get("strategies") or []]
    present = list(dict.fromkeys(str(s) for s in generations["strategy"]))
    if not names or set(present) - set(names):
        names = present
    members = ((manifest.get("config") or {}).get("evolution") or {}).get("population") or []
    configs = [m.get("player") if isinstance(m, dict) else None for m in members]
    generations = generations.sort_values("generation", kind="stable").reset_index(drop=True)
    return Evolution(
        str(Path(directory).resolve()),
        manifest,
        generations,
        make_players(_entries(names, configs)),
        fixation,
    )
