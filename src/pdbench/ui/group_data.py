"""What the app reads from a groups run directory (kind "groups"): its manifest and conditions,
one game's rounds as per-seat arrays with its messages, and the aggregate tables. Nothing here
writes or computes a metric.

A groups run's rounds.jsonl holds its games in plan order (conditions in config order,
replicates 0..R-1, a game's rounds consecutive; `pdbench.storage.record.group_fields`). A game
is read alone: its lines are found by probes around its place in the plan
(`game_lines.probe_spans`), trusted when they are exactly the game's planned rounds, else by one
full scan of the file (cached). Loaders are cached with `st.cache_data` keyed by the files' paths,
mtimes and sizes, as in `ui.data`; problems raise `ui.data.RunLoadError` subclasses with one-line
messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import streamlit as st

from pdbench.storage.group_aggregate import GROUP_ARTIFACTS
from pdbench.storage.record.fields import MESSAGES, ROUND_INDEX
from pdbench.storage.record.group_fields import SEAT_LETTERS, seat_field
from pdbench.storage.schema import ROUNDS_FILE, SchemaVersionError, check_version
from pdbench.ui import data, game_lines

KIND = "groups"
# The run's tables (`pdbench.storage.group_aggregate` writes them): per game and condition,
# per game and seat, per condition and round, and P(C | k co-players cooperated).
TABLES = GROUP_ARTIFACTS

GameKey = tuple[str, int]  # (condition, replicate)


@dataclass(frozen=True, slots=True)
class GroupCondition:
    """One condition of a groups run, from its manifest: its group size, its seats (agent
    names in seat order; empty when each game draws its group from a `pool`), stage game,
    noise, horizon, whether it talks, and its games (replicate, planned rounds) in plan
    order."""

    name: str
    n_players: int
    seats: tuple[str, ...]
    game_label: str
    game_kind: str
    noise: float
    horizon: dict[str, Any]
    talks: bool
    games: tuple[tuple[int, int | None], ...]
    pool: tuple[str, ...] = ()

    @property
    def matching(self) -> str:
        """fixed (the same seats in every game) or random (a group drawn from the pool)."""
        return "random" if self.pool and not self.seats else "fixed"

    def members(self) -> str:
        """Who plays: the seats in order, or the pool groups are drawn from."""
        if self.matching == "random":
            return f"groups of {self.n_players} drawn from: {', '.join(self.pool)}"
        return ", ".join(self.seats)

    @property
    def replicates(self) -> list[int]:
        """The replicates planned, in plan order."""
        return [rep for rep, _ in self.games]


@dataclass(frozen=True, slots=True)
class GroupMessage:
    """One message written before a round's moves: its writer's seat, its addressee's seat
    (None: to everyone), turn, text, stated intention ("C", "D" or None), where the intention
    was read from, and whether it is a fallback (the writer gave no usable reply)."""

    writer: int
    to: int | None
    turn: int
    text: str
    intent: str | None
    source: str
    fallback: bool = False


@dataclass(frozen=True)
class GroupGameRounds:
    """One group game as the record holds it: per seat (rows, seat order) and round (columns),
    the move played and the one meant ("C"/"D"), the payoff, the running total (the record's
    cum_payoff) and whether the move was a fallback; and each round's messages."""

    condition: str
    replicate: int
    names: tuple[str, ...]
    round_index: np.ndarray  # (T,) int
    moves: np.ndarray  # (N, T) "C"/"D"
    intended: np.ndarray  # (N, T) "C"/"D"
    payoffs: np.ndarray  # (N, T) float
    totals: np.ndarray  # (N, T) float
    fallbacks: np.ndarray  # (N, T) bool
    messages: tuple[tuple[GroupMessage, ...], ...]  # per round

    @property
    def n_seats(self) -> int:
        """How many seats."""
        return len(self.names)

    @property
    def n_rounds(self) -> int:
        """How many rounds were read."""
        return int(self.moves.shape[1])

    @property
    def cooperators(self) -> np.ndarray:
        """How many seats played C in each round, (T,)."""
        return (self.moves == "C").sum(axis=0)

    @property
    def talks(self) -> bool:
        """Whether any round has messages."""
        return any(self.messages)


def seat_letter(seat: int) -> str:
    """A seat's letter as shown: 0 -> "A"."""
    return SEAT_LETTERS[seat].upper()


def seat_label(seat: int, name: str) -> str:
    """'A · TFT': a seat's letter and its agent's name."""
    return f"{seat_letter(seat)} · {name}"


# --------------------------------------------------------------------------------------------
# The manifest


def load_manifest(run_dir: str | Path) -> dict[str, Any]:
    """The manifest of a groups run that can be shown (`ui.data.check_run`: RunInProgress while
    it is written, NotARun, RunDirMissing, NewerSchema)."""
    return data.check_run(run_dir, KIND)


def conditions(manifest: Mapping[str, Any]) -> list[GroupCondition]:
    """The run's conditions in plan order (entries without a name are skipped)."""
    out = []
    for entry in manifest.get("conditions") or []:
        if not isinstance(entry, Mapping) or not entry.get("name"):
            continue
        game = entry.get("game") or {}
        games = tuple(
            (int(g["replicate"]), None if g.get("n_rounds") is None else int(g["n_rounds"]))
            for g in entry.get("games") or []
            if isinstance(g, Mapping) and g.get("replicate") is not None
        )
        if not games:
            games = tuple((rep, None) for rep in range(int(entry.get("replicates") or 0)))
        seats = tuple(str(s) for s in entry.get("seats") or [])
        out.append(
            GroupCondition(
                name=str(entry["name"]),
                n_players=int(entry.get("n_players") or len(seats)),
                seats=seats,
                pool=tuple(str(s) for s in entry.get("pool") or []),
                game_label=str(game.get("label") or game.get("kind") or "?"),
                game_kind=str(game.get("kind") or "?"),
                noise=float(entry.get("noise") or 0.0),
                horizon=dict(entry.get("horizon") or {}),
                talks=bool(entry.get("talks")),
                games=games,
            )
        )
    return out


def plan(manifest: Mapping[str, Any]) -> tuple[tuple[str, int, int | None], ...]:
    """(condition, replicate, planned rounds) of every game, in the order the run writes them."""
    return tuple((c.name, rep, n) for c in conditions(manifest) for rep, n in c.games)


def describe(condition: GroupCondition) -> str:
    """One line on a condition: seats, game, horizon, noise, talk."""
    horizon = condition.horizon
    if horizon.get("type") == "geometric":
        length = f"geometric horizon (stop prob {horizon.get('stop_prob')})"
    else:
        length = f"{horizon.get('n_rounds', '?')} rounds"
    talk = "talks before each move" if condition.talks else "no talk"
    drawn = (
        f" drawn anew each game from a pool of {len(condition.pool)}"
        if condition.matching == "random"
        else ""
    )
    return (
        f"{condition.n_players} seats{drawn} · {condition.game_label} · {length} · "
        f"noise {condition.noise:g} · {talk}"
    )


# --------------------------------------------------------------------------------------------
# One game's rounds


def _stat_key(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return str(path.resolve()), stat.st_mtime_ns, stat.st_size


@st.cache_data(show_spinner="Indexing rounds…", max_entries=4)
def _scanned_lines(path: str, mtime_ns: int, size: int) -> dict[GameKey, np.ndarray]:
    del mtime_ns, size  # cache key only
    return game_lines.scan_lines(Path(path))


def find_game_lines(
    path: Path, key: GameKey, order: Mapping[GameKey, int], expected: int | None
) -> np.ndarray | None:
    """(round_index, start, end) of one game's lines, sorted by round, found by probes around
    its place in the plan `order` when they hold exactly its `expected` rounds; None when they
    do not (the caller then scans the file)."""
    if expected is None or key not in order:
        return None
    try:
        spans = game_lines.probe_spans(path, key, order)
    except game_lines.Unreadable:
        return None
    if key not in spans:
        return None
    lines = game_lines.read_span_lines(path, spans[key], key)
    if lines is None or not (len(np.unique(lines[:, 0])) == len(lines) == expected):
        return None
    return lines


def _seat_of(value: Any, names: Sequence[str]) -> int | None:
    """The seat a message's `from` or `to` names: a record seat name ("agent_c"), else an
    agent's name; None when it names none."""
    if not isinstance(value, str):
        return None
    if value.startswith("agent_") and len(value) == 7:
        seat = SEAT_LETTERS.find(value[-1])
        if 0 <= seat < len(names):
            return seat
    return names.index(value) if value in names else None


def round_messages(entries: Any, names: Sequence[str]) -> tuple[GroupMessage, ...]:
    """A round's `exchange` entries as messages, in the order written (entries whose writer is
    not a seat are left out)."""
    out = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping):
            continue
        writer = _seat_of(entry.get("from"), names)
        if writer is None:
            continue
        intent = entry.get("intent")
        out.append(
            GroupMessage(
                writer=writer,
                to=_seat_of(entry.get("to"), names),
                turn=int(entry.get("turn") or 0),
                text=str(entry.get("text") or ""),
                intent=intent if intent in ("C", "D") else None,
                source=str(entry.get("source") or ""),
                fallback=bool(entry.get("fallback")),
            )
        )
    return tuple(out)


def game_from_lines(lines: Sequence[bytes], condition: str, replicate: int) -> GroupGameRounds:
    """A game from its records (one line per round, sorted by round); RoundsFileError when a
    line is not a record of the game's seats, NewerSchema for a newer record."""
    records = []
    for line in lines:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise data.RoundsFileError(
                f"{condition} replicate {replicate}: a line is not valid JSON"
            ) from None
        if not isinstance(record, dict):
            raise data.RoundsFileError(f"{condition} replicate {replicate}: a line is not a record")
        records.append(record)
    if not records:
        raise data.RoundsFileError(f"no rounds of {condition} replicate {replicate}")
    try:
        for version in {
            repr(r.get("schema_version")): r.get("schema_version") for r in records
        }.values():
            check_version(f"{condition} replicate {replicate}", version)
    except SchemaVersionError as exc:
        raise data.NewerSchema(data.first_line(exc)) from None
    first = records[0]
    n = 0
    while n < len(SEAT_LETTERS) and seat_field(n, "name") in first:
        n += 1
    if n < 2:
        raise data.RoundsFileError(f"{condition} replicate {replicate}: records without seats")
    names = tuple(str(first[seat_field(s, "name")]) for s in range(n))

    def column(what: str, default: Any = None) -> list[list[Any]]:
        """Every seat's values of one field, (N, T); a missing value is `default`."""
        return [[r.get(seat_field(s, what), default) for r in records] for s in range(n)]

    moves = np.array(column("action"), dtype="<U1")
    if not np.isin(moves, ("C", "D")).all():
        raise data.RoundsFileError(
            f"{condition} replicate {replicate}: a move is not C or D (valid moves: C, D)"
        )
    intended_raw = column("intended_action")
    intended = np.array(
        [[m if i is None else i for i, m in zip(seat, moves[s], strict=True)]
         for s, seat in enumerate(intended_raw)],
        dtype="<U1",
    )  # fmt: skip
    return GroupGameRounds(
        condition=condition,
        replicate=int(replicate),
        names=names,
        round_index=np.array([int(r.get(ROUND_INDEX, -1)) for r in records], dtype=np.int64),
        moves=moves,
        intended=intended,
        payoffs=np.array(column("payoff", np.nan), dtype=np.float64),
        totals=np.array(column("cum_payoff", np.nan), dtype=np.float64),
        fallbacks=np.array(column("parse_failure", False), dtype=bool),
        messages=tuple(round_messages(r.get(MESSAGES), names) for r in records),
    )


@st.cache_data(show_spinner="Reading the game…", max_entries=32)
def _group_game(
    path: str,
    mtime_ns: int,
    size: int,
    condition: str,
    replicate: int,
    planned: tuple[tuple[str, int, int | None], ...],
) -> GroupGameRounds:
    key = (condition, int(replicate))
    order = {(c, r): i for i, (c, r, _) in enumerate(planned)}
    expected = next((n for c, r, n in planned if (c, r) == key), None)
    lines = find_game_lines(Path(path), key, order, expected)
    if lines is None:
        lines = _scanned_lines(path, mtime_ns, size).get(key)
    if lines is None:
        raise data.RoundsFileError(f"{path}: no rounds of {condition} replicate {replicate}")
    return game_from_lines(game_lines.read_lines(Path(path), lines), condition, int(replicate))


def load_game(
    run_dir: str | Path, manifest: Mapping[str, Any], condition: str, replicate: int
) -> GroupGameRounds:
    """One game's rounds, reading only its lines of rounds.jsonl (RoundsFileError when the file
    or the game is not there)."""
    path = Path(run_dir) / ROUNDS_FILE
    if not path.is_file():
        raise data.RoundsFileError(f"{path}: rounds file not found")
    return _group_game(*_stat_key(path), condition, int(replicate), plan(manifest))


# --------------------------------------------------------------------------------------------
# The run's tables


@st.cache_data(show_spinner=False, max_entries=16)
def _read_parquet(path: str, mtime_ns: int, size: int) -> pd.DataFrame:
    del mtime_ns, size  # cache key only
    from pdbench.storage.parquet import read_frame

    return read_frame(Path(path))


def load_table(run_dir: str | Path, name: str) -> pd.DataFrame | None:
    """One of a groups run's TABLES; None when the file is absent, ArtifactError when it cannot
    be read or has no rows, NewerSchema for a newer one."""
    if name not in TABLES:
        raise ValueError(f"not a groups table: {name} (valid: {', '.join(TABLES)})")
    path = Path(run_dir) / name
    if not path.is_file():
        return None
    try:
        table = _read_parquet(*_stat_key(path))
    except SchemaVersionError as exc:
        raise data.NewerSchema(data.first_line(exc)) from None
    except Exception as exc:  # pyarrow raises several unrelated types for broken files
        raise data.ArtifactError(f"{path}: unreadable ({data.first_line(exc)})") from None
    if table.empty:
        raise data.ArtifactError(f"{path}: no rows")
    return table
