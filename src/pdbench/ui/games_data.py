"""Tournament and evolution directories for the 🏆 Tournament and 🧬 Evolution tabs: listing them
and loading their artifacts (the companion of `pdbench.ui.data`, which holds experiment runs).

Loaders are cached with `st.cache_data`, keyed by each file's path, mtime and size, like the run
loaders. Every number shown comes from the files the library wrote: the leaderboard and pairwise
payoffs computed by `pdbench.core.tournament_metrics`, the per-generation counts, shares and mean
fitness written by `pdbench.runners.evolve`. Nothing here writes.

Problems raise `pdbench.ui.data.RunLoadError` subclasses with a one-line message for the page.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import streamlit as st

from pdbench.core.payoff import PayoffMatrix
from pdbench.core.tournament_metrics import LEADERBOARD_COLUMNS, PAIRWISE_COLUMNS
from pdbench.runners import evolve, tournament
from pdbench.ui.data import RunDirMissing, RunLoadError, _stat_key
from pdbench.ui.style import Profile, agent_profile, player_colors, player_key

TOURNAMENTS_ROOT = Path("data/tournaments")
# UI runs go to data/evolutions/; configs/evolution.yaml writes to data/evolution/.
EVOLUTIONS_ROOTS: tuple[Path, ...] = (Path("data/evolutions"), Path("data/evolution"))
GENERATION_COLUMNS = ("generation", "strategy", "count", "share", "mean_fitness")
MATCH_COLUMNS = ("player_a", "player_b", "rounds", "score_a", "score_b")


class NotATournament(RunLoadError):
    """The directory has no readable tournament_manifest.json."""


class NotAnEvolution(RunLoadError):
    """The directory has no readable evolution_manifest.json."""


class ArtifactError(RunLoadError):
    """A Parquet artifact is missing, unreadable or lacks columns."""


@dataclass(frozen=True, slots=True)
class SavedRun:
    """One entry of a tournament or evolution list."""

    path: str
    run_id: str
    started: str
    summary: str

    def label(self) -> str:
        """A one-line description for select boxes."""
        started = self.started[:16].replace("T", " ") if self.started else "?"
        return f"{self.run_id} · {started} · {self.summary}"


@dataclass(frozen=True, slots=True)
class Player:
    """A tournament player or an evolving strategy: its name in the artifacts and its look."""

    name: str
    config: dict[str, Any] | None
    profile: Profile
    color: str
    label: str  # unique, e.g. '🪞 Copycat · TFT'


@dataclass(frozen=True)
class Tournament:
    """A finished tournament directory."""

    path: str
    manifest: dict[str, Any]
    leaderboard: pd.DataFrame  # leaderboard.parquet, best first
    pairwise: pd.DataFrame  # payoff_matrix.parquet (long form)
    matches: pd.DataFrame  # matches.parquet
    players: list[Player]  # config order

    @property
    def by_name(self) -> dict[str, Player]:
        """Players by artifact name."""
        return {p.name: p for p in self.players}

    def matrix(self) -> PayoffMatrix:
        """The stage game's payoff matrix (the default one when the snapshot lacks it)."""
        return _matrix(self.manifest)


@dataclass(frozen=True)
class Evolution:
    """A finished evolution directory."""

    path: str
    manifest: dict[str, Any]
    generations: pd.DataFrame  # generations.parquet
    players: list[Player]  # strategy order

    @property
    def by_name(self) -> dict[str, Player]:
        """Strategies by artifact name."""
        return {p.name: p for p in self.players}

    @property
    def last_generation(self) -> int:
        """The last generation recorded."""
        return int(self.generations["generation"].max())

    def at(self, generation: int) -> pd.DataFrame:
        """The rows (one per strategy, in strategy order) of one generation."""
        rows = self.generations[self.generations["generation"] == generation]
        order = {p.name: i for i, p in enumerate(self.players)}
        return rows.sort_values("strategy", key=lambda s: s.map(order)).reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# Cached readers


@st.cache_data(show_spinner=False, max_entries=256)
def _read_json(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    del mtime_ns, size  # cache key only
    data = orjson.loads(Path(path).read_bytes())
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


@st.cache_data(show_spinner=False, max_entries=64)
def _read_parquet(path: str, mtime_ns: int, size: int) -> pd.DataFrame:
    del mtime_ns, size  # cache key only
    return pd.read_parquet(path)


def _manifest(directory: str | Path, name: str, error: type[RunLoadError], what: str) -> dict:
    directory = Path(directory)
    if not directory.is_dir():
        raise RunDirMissing(f"{directory}: directory not found")
    path = directory / name
    if not path.is_file():
        raise error(f"{directory}: not a pdbench {what} (no {name})")
    try:
        return _read_json(*_stat_key(path))
    except (ValueError, OSError) as exc:
        raise error(f"{path}: unreadable manifest ({str(exc).splitlines()[0]})") from None


def _table(directory: str | Path, name: str, columns: Sequence[str]) -> pd.DataFrame:
    path = Path(directory) / name
    if not path.is_file():
        raise ArtifactError(f"{path}: file not found")
    try:
        table = _read_parquet(*_stat_key(path))
    except Exception as exc:  # pyarrow raises several unrelated types for broken files
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ArtifactError(f"{path}: unreadable ({first})") from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ArtifactError(f"{path}: missing columns: {', '.join(missing)}")
    if table.empty:
        raise ArtifactError(f"{path}: no rows")
    return table


def _matrix(manifest: dict[str, Any]) -> PayoffMatrix:
    nested = ((manifest.get("config") or {}).get("game") or {}).get("payoff_matrix")
    try:
        return PayoffMatrix.from_nested(nested) if nested else PayoffMatrix()
    except Exception:  # a hand-edited manifest: fall back to the default game
        return PayoffMatrix()


def make_players(entries: Iterable[tuple[str, dict[str, Any] | None]]) -> list[Player]:
    """Players from (artifact name, resolved config or None): profile, color and unique label."""
    entries = list(entries)
    colors = player_colors([(name, player_key(cfg, name)) for name, cfg in entries])
    players: list[Player] = []
    seen: set[str] = set()
    for name, cfg in entries:
        profile = agent_profile(cfg, name)
        key = player_key(cfg, name)
        label = f"{profile.short} · {name}" if key else profile.short
        if label in seen:
            label = f"{label} ({name})"
        seen.add(label)
        players.append(Player(name, cfg, profile, colors[name], label))
    return players


def _list(
    roots: Iterable[Path], manifest_name: str, extra: Iterable[str | Path], info: Any
) -> list:
    found: dict[str, SavedRun] = {}
    for root in roots:
        if root.is_dir():
            for child in root.iterdir():
                if child.is_dir() and (child / manifest_name).is_file():
                    entry = info(child)
                    found[entry.path] = entry
    listed = sorted(found.values(), key=lambda r: (r.started, r.run_id), reverse=True)
    extras = [info(Path(p)) for p in extra]
    extra_paths = {e.path for e in extras}
    return extras + [r for r in listed if r.path not in extra_paths]


# --------------------------------------------------------------------------------------------
# Tournaments


def tournament_info(directory: str | Path) -> SavedRun:
    """The list entry of a tournament directory (a broken one says what is wrong)."""
    path = str(Path(directory).resolve())
    try:
        m = _manifest(directory, tournament.MANIFEST_FILE, NotATournament, "tournament")
    except RunLoadError:
        return SavedRun(path, Path(directory).name, "", "not a readable tournament")
    totals = m.get("totals") or {}
    summary = (
        f"{len(m.get('players') or [])} players · {int(totals.get('matches', 0)):,} matches · "
        f"noise {m.get('noise', 0):g}"
    )
    return SavedRun(
        path,
        str(m.get("run_id") or Path(directory).name),
        str(m.get("started_at_utc") or ""),
        summary,
    )


def list_tournaments(
    root: str | Path = TOURNAMENTS_ROOT, extra: Iterable[str | Path] = ()
) -> list[SavedRun]:
    """Directories under `root` holding a tournament manifest, newest first; `extra` on top."""
    return _list([Path(root)], tournament.MANIFEST_FILE, extra, tournament_info)


def load_tournament(directory: str | Path) -> Tournament:
    """A tournament's manifest and tables; RunLoadError subclasses with one-line messages."""
    manifest = _manifest(directory, tournament.MANIFEST_FILE, NotATournament, "tournament")
    board = _table(directory, tournament.LEADERBOARD_FILE, LEADERBOARD_COLUMNS)
    pairwise = _table(directory, tournament.PAYOFF_MATRIX_FILE, PAIRWISE_COLUMNS)
    matches = _table(directory, tournament.MATCHES_FILE, MATCH_COLUMNS)
    names = [str(p.get("name")) for p in manifest.get("players") or [] if isinstance(p, dict)]
    configs = ((manifest.get("config") or {}).get("tournament") or {}).get("players") or []
    if not names:
        names = [str(n) for n in board["player"]]
    known = set(names)
    named = [*board["player"], *pairwise["player"], *pairwise["opponent"]]
    strays = sorted({str(n) for n in named} - known)
    if strays:
        raise ArtifactError(f"{directory}: players missing from the manifest: {', '.join(strays)}")
    entries = [
        (name, configs[i] if i < len(configs) and isinstance(configs[i], dict) else None)
        for i, name in enumerate(names)
    ]
    board = board.sort_values("rank").reset_index(drop=True)
    return Tournament(
        str(Path(directory).resolve()), manifest, board, pairwise, matches, make_players(entries)
    )


# --------------------------------------------------------------------------------------------
# Evolutions


def evolution_info(directory: str | Path) -> SavedRun:
    """The list entry of an evolution directory (a broken one says what is wrong)."""
    path = str(Path(directory).resolve())
    try:
        m = _manifest(directory, evolve.MANIFEST_FILE, NotAnEvolution, "evolution")
    except RunLoadError:
        return SavedRun(path, Path(directory).name, "", "not a readable evolution")
    fixated = m.get("fixated")
    summary = (
        f"{str(m.get('process', '?')).replace('_', '-')} · noise {m.get('noise', 0):g} · "
        f"{m.get('generations_run', '?')} generations"
        + (f" · fixated on {fixated}" if fixated else "")
    )
    return SavedRun(
        path,
        str(m.get("run_id") or Path(directory).name),
        str(m.get("started_at_utc") or ""),
        summary,
    )


def list_evolutions(
    roots: Sequence[str | Path] = EVOLUTIONS_ROOTS, extra: Iterable[str | Path] = ()
) -> list[SavedRun]:
    """Directories under `roots` holding an evolution manifest, newest first; `extra` on top."""
    return _list([Path(r) for r in roots], evolve.MANIFEST_FILE, extra, evolution_info)


def load_evolution(directory: str | Path) -> Evolution:
    """An evolution's manifest and generations table; RunLoadError subclasses on problems."""
    manifest = _manifest(directory, evolve.MANIFEST_FILE, NotAnEvolution, "evolution")
    generations = _table(directory, evolve.GENERATIONS_FILE, GENERATION_COLUMNS)
    names = [str(s) for s in manifest.get("strategies") or []]
    present = list(dict.fromkeys(str(s) for s in generations["strategy"]))
    if not names or set(present) - set(names):
        names = present
    members = ((manifest.get("config") or {}).get("evolution") or {}).get("population") or []
    configs = [m.get("player") if isinstance(m, dict) else None for m in members]
    entries = [
        (name, configs[i] if i < len(configs) and isinstance(configs[i], dict) else None)
        for i, name in enumerate(names)
    ]
    generations = generations.sort_values("generation", kind="stable").reset_index(drop=True)
    return Evolution(str(Path(directory).resolve()), manifest, generations, make_players(entries))
