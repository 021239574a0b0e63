"""What the app reads from a resource run directory (issue 31; kinds "pgg", a public goods game
with punishment, and "commons", a fishery): its manifest and conditions, one game's records
(rounds.jsonl, `pdbench.storage.record.resource_record`) and the run's tables
(`pdbench.storage.resource_aggregate`). Nothing here computes a metric: the per-round and
per-seat numbers a replay draws are the record's own fields laid out as tables.

Loaders are cached with `st.cache_data` keyed by the files' paths, mtimes and sizes, as in
`ui.data`; problems raise `ui.data.RunLoadError` subclasses with one-line messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import streamlit as st

from pdbench.storage.record.fields import ROUND_INDEX
from pdbench.storage.resource_aggregate import RESOURCE_ARTIFACTS
from pdbench.storage.schema import ROUNDS_FILE, SchemaVersionError
from pdbench.ui import data
from pdbench.ui.group_data import seat_label

KINDS = ("pgg", "commons")
GAME_NAMES = {"pgg": "public goods game", "commons": "commons (fishery)"}
TABLES = RESOURCE_ARTIFACTS  # aggregates.parquet, resource_rounds.parquet, resource_seats.parquet


@dataclass(frozen=True, slots=True)
class ResourceCondition:
    """One condition of a resource run, from its manifest: its seats (agent names in seat
    order), rules (as the manifest records them), talk, the outsider's arrival (commons, 0-based
    season or None) and its replicates."""

    name: str
    kind: str
    seats: tuple[str, ...]
    rules: Mapping[str, Any]
    talks: bool
    replicates: tuple[int, ...]
    outsider_arrival: int | None = None

    @property
    def labels(self) -> list[str]:
        """'A · NAME' for each seat."""
        return [seat_label(i, name) for i, name in enumerate(self.seats)]


def load_manifest(run_dir: str | Path, kind: str) -> dict[str, Any]:
    """The manifest of a resource run that can be shown (`ui.data.check_run`)."""
    return data.check_run(run_dir, kind)


def conditions(manifest: Mapping[str, Any], kind: str) -> list[ResourceCondition]:
    """The run's conditions in plan order (entries without a name are skipped)."""
    out = []
    for entry in manifest.get("conditions") or []:
        if not isinstance(entry, Mapping) or not entry.get("name"):
            continue
        reps = tuple(
            int(g["replicate"])
            for g in entry.get("games") or []
            if isinstance(g, Mapping) and g.get("replicate") is not None
        ) or tuple(range(int(entry.get("replicates") or 0)))
        arrival = entry.get("outsider_arrival")
        out.append(
            ResourceCondition(
                str(entry["name"]),
                kind,
                tuple(str(s) for s in entry.get("seats") or []),
                dict(entry.get("rules") or {}),
                bool(entry.get("talk")),
                reps,
                None if arrival is None else int(arrival),
            )
        )
    return out


def describe(condition: ResourceCondition) -> str:
    """One line on a condition's rules."""
    r, talk = condition.rules, "talks" if condition.talks else "no talk"
    if condition.kind == "pgg":
        punish = (
            f"punishment {r.get('punish_cost', '?')}:{r.get('punish_effect', '?')} "
            f"(cost:effect per token)"
            if r.get("punishment")
            else "no punishment"
        )
        return (
            f"{len(condition.seats)} seats · endowment {r.get('endowment', '?')} tokens · "
            f"multiplier {r.get('multiplier', '?')} · {r.get('budget', '?')} budget · {punish} · "
            f"{talk}"
        )
    outsider = (
        f" · the last seat arrives in season {condition.outsider_arrival + 1}"
        if condition.outsider_arrival is not None
        else ""
    )
    return (
        f"{len(condition.seats)} seats · lake of {r.get('capacity', '?')} tons, "
        f"×{r.get('growth', '?')} a season · collapse below {r.get('collapse_below', '?')} tons "
        f"· {r.get('n_seasons', '?')} seasons{outsider} · {talk}"
    )


# --------------------------------------------------------------------------------------------
# One game


@dataclass(frozen=True)
class ResourceGame:
    """One game's records (a line a round or season, in order) and its seats."""

    condition: str
    replicate: int
    kind: str
    names: tuple[str, ...]
    records: tuple[dict[str, Any], ...]

    @property
    def n_rounds(self) -> int:
        """Rounds (seasons) recorded."""
        return len(self.records)

    @property
    def labels(self) -> list[str]:
        """'A · NAME' for each seat."""
        return [seat_label(i, name) for i, name in enumerate(self.names)]

    @property
    def collapse_season(self) -> int | None:
        """The 1-based season the record marks collapsed (commons), None if none."""
        for t, record in enumerate(self.records):
            if record.get("collapsed"):
                return t + 1
        return None

    def messages(self, t: int) -> list[tuple[int | None, str]]:
        """Round t's (0-based) messages: (writer's seat, text)."""
        return _said(self.records[t].get("messages"))

    def reflections(self, t: int) -> list[tuple[int | None, str]]:
        """Season t's (0-based) reflections: (seat, text)."""
        return _said(self.records[t].get("reflections"))

    def decisions(self, t: int) -> list[dict[str, Any]]:
        """Round t's decisions (one per seat and stage), as recorded."""
        return [d for d in self.records[t].get("decisions") or [] if isinstance(d, Mapping)]


def _said(items: Any) -> list[tuple[int | None, str]]:
    out: list[tuple[int | None, str]] = []
    for item in items or []:
        if isinstance(item, Mapping):
            who = item.get("from", item.get("seat"))
            text = item.get("text", item.get("reflection", ""))
            out.append((None if who is None else int(who), str(text)))
        elif isinstance(item, str):
            out.append((None, item))
    return out


@st.cache_data(show_spinner=False, max_entries=8)
def _game_records(
    path: str, mtime_ns: int, size: int, condition: str, replicate: int
) -> list[dict[str, Any]]:
    del mtime_ns, size  # cache key only
    wanted = orjson.dumps(condition)
    found = []
    with open(path, "rb") as handle:
        for line in handle:
            if wanted not in line or not line.endswith(b"\n"):
                continue
            record = orjson.loads(line)
            if record.get("condition") == condition and record.get("replicate") == replicate:
                for stored in record.get("decisions") or []:
                    if isinstance(stored, dict):
                        stored.pop("calls", None)  # prompts and replies: not shown, heavy
                found.append(record)
    return sorted(found, key=lambda r: int(r.get(ROUND_INDEX, 0)))


def load_game(run_dir: str | Path, kind: str, condition: str, replicate: int) -> ResourceGame:
    """One game of a resource run; RoundsFileError when the file or the game is not there."""
    path = Path(run_dir) / ROUNDS_FILE
    if not path.is_file():
        raise data.RoundsFileError(f"{path}: rounds file not found")
    stat = path.stat()
    try:
        records = _game_records(str(path), stat.st_mtime_ns, stat.st_size, condition, replicate)
    except (orjson.JSONDecodeError, OSError, ValueError, TypeError) as exc:
        raise data.RoundsFileError(f"{path}: unreadable ({data.first_line(exc)})") from None
    if not records:
        raise data.RoundsFileError(
            f"{path}: no rounds of {condition!r} replicate {replicate} (not played yet?)"
        )
    names = tuple(str(s) for s in records[0].get("seats") or [])
    return ResourceGame(condition, int(replicate), kind, names, tuple(records))


def pgg_seat_rounds(game: ResourceGame) -> pd.DataFrame:
    """Per seat and round of a public goods game, the record's numbers: round (1-based), seat
    label, contribution, could contribute (limit), punishment spent and received, balance."""
    rows = []
    for t, r in enumerate(game.records):
        for i, label in enumerate(game.labels):
            rows.append(
                {
                    "round": t + 1,
                    "seat": label,
                    "contribution": _at(r.get("contributions"), i),
                    "limit": _at(r.get("limits"), i),
                    "punish_spent": _at(r.get("punish_spent"), i),
                    "punish_received": _at(r.get("punish_received"), i),
                    "balance": _at(r.get("balances"), i),
                }
            )
    return pd.DataFrame(rows)


def pgg_punishments(game: ResourceGame) -> pd.DataFrame:
    """Every punishment act recorded: round (1-based), punisher and target labels, tokens."""
    labels = game.labels
    rows = [
        {"round": t + 1, "from": labels[int(i)], "to": labels[int(j)], "tokens": float(v)}
        for t, r in enumerate(game.records)
        for i, j, v in r.get("punish_tokens") or []
    ]
    return pd.DataFrame(rows, columns=["round", "from", "to", "tokens"])


def commons_seasons(game: ResourceGame) -> pd.DataFrame:
    """Per season of a commons game: season (1-based), stock before the harvest, left after it,
    the next season's stock and whether it collapsed."""
    return pd.DataFrame(
        [
            {
                "season": t + 1,
                "stock": r.get("stock"),
                "left": r.get("left"),
                "next_stock": r.get("next_stock"),
                "collapsed": bool(r.get("collapsed")),
            }
            for t, r in enumerate(game.records)
        ]
    )


def commons_catches(game: ResourceGame) -> pd.DataFrame:
    """Per seat and season: season (1-based), seat label, requested, caught, present."""
    rows = []
    for t, r in enumerate(game.records):
        present = r.get("present") or []
        for i, label in enumerate(game.labels):
            rows.append(
                {
                    "season": t + 1,
                    "seat": label,
                    "requested": _at(r.get("requested"), i),
                    "caught": _at(r.get("caught"), i),
                    "present": bool(present[i]) if i < len(present) else True,
                }
            )
    return pd.DataFrame(rows)


def _at(values: Sequence[Any] | None, i: int) -> float | None:
    if not values or i >= len(values) or values[i] is None:
        return None
    return float(values[i])


# --------------------------------------------------------------------------------------------
# The run's tables


@st.cache_data(show_spinner=False, max_entries=16)
def _read_parquet(path: str, mtime_ns: int, size: int) -> pd.DataFrame:
    del mtime_ns, size  # cache key only
    from pdbench.storage.parquet import read_frame

    return read_frame(Path(path))


def load_table(run_dir: str | Path, name: str) -> pd.DataFrame | None:
    """One of a resource run's TABLES; None when absent, ArtifactError when unreadable or
    empty, NewerSchema for a newer one."""
    if name not in TABLES:
        raise ValueError(f"not a resource table: {name} (valid: {', '.join(TABLES)})")
    path = Path(run_dir) / name
    if not path.is_file():
        return None
    stat = path.stat()
    try:
        table = _read_parquet(str(path), stat.st_mtime_ns, stat.st_size)
    except SchemaVersionError as exc:
        raise data.NewerSchema(data.first_line(exc)) from None
    except Exception as exc:  # pyarrow raises several unrelated types for broken files
        raise data.ArtifactError(f"{path}: unreadable ({data.first_line(exc)})") from None
    if table.empty:
        raise data.ArtifactError(f"{path}: no rows")
    return table
