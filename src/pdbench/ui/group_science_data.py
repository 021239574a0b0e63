"""What the app reads from a group tournament (`group_tournament_manifest.json`, groups.parquet,
leaderboard.parquet) and a group evolution (`group_evolution_manifest.json`,
payoff_table.parquet, generations.parquet, fixation.parquet), as the runners
`pdbench.runners.science.group_tournament` and `group_evolve` write them. Nothing here writes or
computes a number: the views show the artifacts' values.

Loaders are cached with `st.cache_data` keyed by each file's path, mtime and size (a re-run into
the directory is seen), as in `ui.data`; problems raise `ui.data.RunLoadError` subclasses with
one-line messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from pdbench.storage.schema import (
    FIXATION_FILE,
    GENERATIONS_FILE,
    GROUP_GAMES_FILE,
    LEADERBOARD_FILE,
    PAYOFF_TABLE_FILE,
    SchemaVersionError,
)
from pdbench.ui import data

TOURNAMENT_KIND, EVOLUTION_KIND = "group_tournament", "group_evolution"
# The columns each view reads (the runners write these and more).
LEADERBOARD_COLUMNS = (
    "rank",
    "player",
    "mean_payoff_per_round",
    "ci_low",
    "ci_high",
    "cooperation_rate",
    "cooperation_ci_low",
    "cooperation_ci_high",
    "games",
)
GAME_COLUMNS = (
    "game",
    "group",
    "repetition",
    "rounds",
    "members",
    "payoff_per_round",
    "group_cooperation",
    "group_payoff_per_round",
)
PAYOFF_COLUMNS = ("composition", "label", "strategy", "count", "payoff_per_round", "games")
GENERATION_COLUMNS = ("seed", "generation", "strategy", "count", "share")
FIXATION_COLUMNS = (
    "strategy",
    "fixations",
    "seeds",
    "probability",
    "ci_low",
    "ci_high",
    "exact_probability",
)


@dataclass(frozen=True)
class GroupTournament:
    """A finished group tournament: its manifest, leaderboard (best first), games (one row per
    game in plan order; `members` and `payoff_per_round` as tuples, seat order) and players'
    names in config order."""

    path: str
    manifest: dict[str, Any]
    leaderboard: pd.DataFrame
    games: pd.DataFrame
    players: tuple[str, ...]


@dataclass(frozen=True)
class GroupEvolution:
    """A finished group evolution: its manifest, payoff table (composition, then type, in file
    order), generations (every seed the file holds, by seed and generation), fixation table
    (None when the run wrote none: one seed, or mutation) and the types in population order."""

    path: str
    manifest: dict[str, Any]
    payoffs: pd.DataFrame
    generations: pd.DataFrame
    fixation: pd.DataFrame | None
    strategies: tuple[str, ...]

    @property
    def seeds(self) -> list[int]:
        """The seeds whose generations the file holds, in order (seed 0 first)."""
        return sorted(int(s) for s in self.generations["seed"].unique())

    def seed_generations(self, seed: int) -> pd.DataFrame:
        """One seed's rows of generations.parquet, by generation then type order."""
        rows = self.generations[self.generations["seed"] == seed]
        order = {name: i for i, name in enumerate(self.strategies)}
        rank = rows["strategy"].astype(str).map(order).fillna(len(order))
        return (
            rows.assign(_order=rank)
            .sort_values(["generation", "_order"], kind="stable")
            .drop(columns="_order")
            .reset_index(drop=True)
        )


@st.cache_data(show_spinner=False, max_entries=32)
def _read_parquet(path: str, mtime_ns: int, size: int) -> pd.DataFrame:
    del mtime_ns, size  # cache key only
    from pdbench.storage.parquet import read_frame

    return read_frame(Path(path))


def _table(directory: str | Path, name: str, columns: Sequence[str]) -> pd.DataFrame:
    """An artifact with at least `columns` and one row; ArtifactError or NewerSchema."""
    path = Path(directory) / name
    if not path.is_file():
        raise data.ArtifactError(f"{path}: file not found")
    try:
        stat = path.stat()
        table = _read_parquet(str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    except SchemaVersionError as exc:
        raise data.NewerSchema(data.first_line(exc)) from None
    except Exception as exc:  # pyarrow raises several unrelated types for broken files
        raise data.ArtifactError(f"{path}: unreadable ({data.first_line(exc)})") from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise data.ArtifactError(f"{path}: missing columns: {', '.join(missing)}")
    if table.empty:
        raise data.ArtifactError(f"{path}: no rows")
    return table


def _finished(directory: str | Path, kind: str) -> dict[str, Any]:
    """The manifest of a run of `kind` that wrote its tables (RunNotFinished otherwise)."""
    manifest = data.check_run(directory, kind)
    status = manifest.get("status")
    if status not in (None, "completed"):
        raise data.RunNotFinished(
            f"{data.KIND_NAMES[kind]} {manifest.get('run_id', Path(directory).name)} {status}: "
            + str(manifest.get("error") or "no error recorded").splitlines()[0]
        )
    return manifest


def _as_tuple(value: Any) -> tuple[Any, ...]:
    """A list cell of a Parquet column (an array, a list or None) as a tuple."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ()
    return tuple(value.tolist() if isinstance(value, np.ndarray) else value)


def load_group_tournament(directory: str | Path) -> GroupTournament:
    """A group tournament's manifest and tables; RunLoadError subclasses with one-line
    messages (a player of the tables missing from the manifest is one)."""
    manifest = _finished(directory, TOURNAMENT_KIND)
    board = _table(directory, LEADERBOARD_FILE, LEADERBOARD_COLUMNS)
    games = _table(directory, GROUP_GAMES_FILE, GAME_COLUMNS)
    names = [str(p.get("name")) for p in manifest.get("players") or [] if isinstance(p, dict)]
    names = names or [str(n) for n in board["player"]]
    games = games.assign(
        members=[tuple(str(m) for m in _as_tuple(v)) for v in games["members"]],
        payoff_per_round=[tuple(float(x) for x in _as_tuple(v)) for v in games["payoff_per_round"]],
    )
    named = {str(n) for n in board["player"]} | {m for ms in games["members"] for m in ms}
    strays = sorted(named - set(names))
    if strays:
        raise data.ArtifactError(
            f"{directory}: players missing from the manifest: {', '.join(strays)}"
        )
    if any(
        len(m) != len(p) for m, p in zip(games["members"], games["payoff_per_round"], strict=True)
    ):
        raise data.ArtifactError(
            f"{Path(directory) / GROUP_GAMES_FILE}: a game's members and payoffs differ in number"
        )
    return GroupTournament(
        str(Path(directory).resolve()),
        manifest,
        board.sort_values("rank", kind="stable").reset_index(drop=True),
        games.sort_values("game", kind="stable").reset_index(drop=True),
        tuple(names),
    )


def load_group_evolution(directory: str | Path) -> GroupEvolution:
    """A group evolution's manifest and tables (fixation.parquet when the run wrote it);
    RunLoadError subclasses with one-line messages."""
    manifest = _finished(directory, EVOLUTION_KIND)
    payoffs = _table(directory, PAYOFF_TABLE_FILE, PAYOFF_COLUMNS)
    generations = _table(directory, GENERATIONS_FILE, GENERATION_COLUMNS)
    fixation = None
    if (Path(directory) / FIXATION_FILE).is_file():
        fixation = _table(directory, FIXATION_FILE, FIXATION_COLUMNS).reset_index(drop=True)
    names = [str(s) for s in manifest.get("strategies") or []]
    present = list(dict.fromkeys(str(s) for s in generations["strategy"]))
    names += [s for s in present if s not in names]
    generations = generations.sort_values(["seed", "generation"], kind="stable")
    return GroupEvolution(
        str(Path(directory).resolve()),
        manifest,
        payoffs.reset_index(drop=True),
        generations.reset_index(drop=True),
        fixation,
        tuple(names),
    )


def load_result(directory: str | Path, kind: str) -> Any:
    """The saved result of `kind` (tournament, evolution or a group kind) in `directory`."""
    loaders = {
        "tournament": data.load_tournament,
        "evolution": data.load_evolution,
        TOURNAMENT_KIND: load_group_tournament,
        EVOLUTION_KIND: load_group_evolution,
    }
    if kind not in loaders:
        raise ValueError(f"not a kind of saved result: {kind} (valid: {', '.join(loaders)})")
    return loaders[kind](directory)
