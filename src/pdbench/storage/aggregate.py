"""aggregates.parquet: written after a run, and recomputed from the run's rounds by `pdbench
aggregate`, one condition at a time."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from pdbench.core.metrics import CollapseParams, GameOutcome, aggregate_rows
from pdbench.errors import RunError
from pdbench.storage.intervals import (
    Predrawn,
    interval_settings,
    metric_designs,
    predraw_for,
    with_intervals,
)
from pdbench.storage.parquet import write_rows
from pdbench.storage.record.fields import TALK_INPUT_FIELDS
from pdbench.storage.record.table import (
    RunDirError,
    check_all_games,
    check_rounds,
    outcomes_from_table,
    talk_settings,
)
from pdbench.storage.run_dir import RunLock, read_manifest
from pdbench.storage.schema import (
    AGGREGATE_INPUT_FIELDS,
    AGGREGATES_FILE,
    CALLS_FILE,
    ROUNDS_COLUMNS_DIR,
    ROUNDS_FILE,
    USAGE_FIELDS,
    aggregates_arrow_schema,
)

# Threads computing conditions' intervals: two where there are two cores or more.
INTERVAL_WORKERS = 2 if (os.cpu_count() or 1) >= 2 else 1


def write_aggregates(rows: list[dict[str, Any]], path: Path) -> None:
    """Write aggregate rows to Parquet (atomically); swept paths (columns named like
    `agent_a.overrides.temperature`, added by `add_sweep_columns`) come last."""
    import pyarrow as pa

    schema = aggregates_arrow_schema()
    known = set(schema.names)
    extra = [c for c in (rows[0] if rows else {}) if c not in known and "." in c]
    for column in extra:
        values = [r.get(column) for r in rows if r.get(column) is not None]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        schema = schema.append(pa.field(column, pa.float64() if numeric else pa.string()))
        if not numeric:
            for r in rows:
                if r.get(column) is not None:
                    r[column] = str(r[column])
    write_rows(path, rows, schema)


def add_sweep_columns(
    rows: list[dict[str, Any]], coordinates: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """One column per swept path holding each row's coordinate (null for conditions that were
    not swept), so any tool can group by it."""
    paths = list(dict.fromkeys(p for coords in coordinates.values() for p in coords))
    for path in paths:
        values = [coords.get(path) for coords in coordinates.values()]
        kinds = {_kind(v) for v in values if v is not None}
        as_text = len(kinds) > 1 or "other" in kinds
        for row in rows:
            value = coordinates.get(str(row.get("condition")), {}).get(path)
            row[path] = _as_text(value) if as_text and value is not None else value
    return rows


def series_cell(value: Any) -> list[Any]:
    """A JSON list stored in an aggregate cell (cooperation_rate_over_time and its interval
    columns); [] when the cell is empty or not a JSON list."""
    if not isinstance(value, str) or not value:
        return []
    try:
        data = orjson.loads(value)
    except orjson.JSONDecodeError:
        return []
    return data if isinstance(data, list) else []


def _kind(value: Any) -> str:
    """The column type a coordinate fits: number, text, flag, or other (lists, mappings)."""
    if isinstance(value, bool):
        return "flag"
    if isinstance(value, int | float):
        return "number"
    return "text" if isinstance(value, str) else "other"


def _as_text(value: Any) -> str:
    """A coordinate as text, for a column whose values are not all of one simple type."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def aggregate_run_dir(run_dir: Path) -> list[dict[str, Any]]:
    """Recompute aggregates.parquet of a run directory from its rounds.jsonl; returns the rows."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: not a directory")
    try:
        read_manifest(run_dir, "experiment")  # before locking: never leave a lock file elsewhere
    except RunError as exc:
        raise RunDirError(str(exc)) from None
    with RunLock(run_dir):
        return _aggregate_locked(run_dir)


def aggregate_held_run_dir(run_dir: Path) -> list[dict[str, Any]]:
    """`aggregate_run_dir` for a caller that already holds the run directory's lock (merge)."""
    return _aggregate_locked(Path(run_dir))


def _aggregate_locked(run_dir: Path) -> list[dict[str, Any]]:
    try:
        manifest = read_manifest(run_dir, "experiment")
    except RunError as exc:
        raise RunDirError(str(exc)) from None
    return aggregate_games(run_dir, manifest, condition_outcomes(run_dir, manifest))


def aggregate_games(
    run_dir: Path,
    manifest: dict[str, Any],
    games: Iterable[tuple[str | None, list[GameOutcome]]],
    predrawn: Predrawn | None = None,
) -> list[dict[str, Any]]:
    """The one aggregate pipeline: per condition its rows (`aggregate_rows`), then the LLM
    usage columns, the intervals and the sweep coordinates; writes aggregates.parquet and
    returns the rows. Every setting is read from the run's manifest (collapse, conditions and
    their order, interval settings, metric designs, sweep). `games` gives the games one
    condition at a time ((condition, its outcomes); condition None: games of any conditions),
    so a caller holds one condition's rounds at a time: `pdbench run` from memory, `pdbench
    aggregate` and `merge` from the rounds on disk. `predrawn`: the intervals' resampling
    weights drawn ahead (`pdbench run` starts them before play); else they are drawn from here
    on, in a thread, while the first games are read and measured."""
    if predrawn is None:
        predrawn = predraw_for(manifest)
    try:
        collapse_cfg = manifest.get("collapse", {})
        collapse = CollapseParams(
            int(collapse_cfg.get("k", 10)), float(collapse_cfg.get("threshold", 0.2))
        )
        condition_order = [str(c["name"]) for c in manifest.get("conditions", [])]
        settings = interval_settings(manifest)
        designs = metric_designs(manifest)
        coordinates = {
            c["name"]: c["sweep"] for c in manifest.get("conditions", []) if c.get("sweep")
        }
    except (AttributeError, KeyError, TypeError, ValueError):
        raise RunDirError(
            f"{run_dir / 'run_manifest.json'}: collapse, intervals or conditions malformed "
            "(a damaged or hand-edited manifest)"
        ) from None
    usage = usage_by_game(run_dir)
    # Each condition's intervals are computed in a worker thread while the next condition's
    # games are read and measured (NumPy and pyarrow work without the GIL); with two cores two
    # conditions' intervals at once. A condition's intervals use its own rows only (its games,
    # its generator), so computing them apart, in any order, changes nothing.
    with ThreadPoolExecutor(INTERVAL_WORKERS, thread_name_prefix="pdbench-intervals") as pool:
        pending = []
        for condition, outcomes in games:
            order = condition_order if condition is None else [condition]
            part = aggregate_rows(manifest.get("run_id", ""), outcomes, order, collapse)
            part = add_usage_columns(part, usage)
            pending.append(pool.submit(with_intervals, part, settings, designs, predrawn))
        rows = [row for done in pending for row in done.result()]
    rows = add_sweep_columns(rows, coordinates)
    write_aggregates(rows, run_dir / AGGREGATES_FILE)
    return rows


def condition_outcomes(
    run_dir: Path, manifest: dict[str, Any]
) -> Iterator[tuple[str | None, list[GameOutcome]]]:
    """(condition, its games' outcomes) one condition at a time, read in checked batches
    (`checked_condition_tables`): only one batch of rounds and one condition's outcomes are
    held at once."""
    current: str | None = None
    outcomes: list[GameOutcome] = []
    started = False
    talk = talk_settings(manifest)
    tables = checked_condition_tables(run_dir, manifest, input_fields(manifest), decode=False)
    for condition, table in tables:
        if started and condition != current:
            yield current, outcomes
            outcomes = []
        current, started = condition, True
        outcomes += outcomes_from_table(table, talk)
    if started:
        yield current, outcomes


def input_fields(manifest: dict[str, Any]) -> tuple[str, ...]:
    """The record fields the metrics read: with the talk fields when a condition of the run
    has a message channel."""
    conditions = manifest.get("conditions")
    talks = isinstance(conditions, list) and any(
        isinstance(c, dict) and c.get("communication") for c in conditions
    )
    return AGGREGATE_INPUT_FIELDS + TALK_INPUT_FIELDS if talks else AGGREGATE_INPUT_FIELDS


def checked_condition_tables(
    run_dir: Path,
    manifest: dict[str, Any],
    fields: tuple[str, ...] = AGGREGATE_INPUT_FIELDS,
    decode: bool = True,
) -> Iterator[tuple[str | None, Any]]:
    """The run's rounds one condition at a time (`record.reader.condition_tables`), each
    checked against the manifest's plan (`check_rounds`) before it is used; `decode=False`
    leaves the columnar parts' text dictionary-encoded (what `outcomes_from_table` reads
    fastest)."""
    from pdbench.storage.record.reader import condition_tables, uses_columns

    where = run_dir / (ROUNDS_COLUMNS_DIR if uses_columns(run_dir, manifest) else ROUNDS_FILE)
    seen: list[tuple[str, int]] = []
    for condition, table in condition_tables(run_dir, manifest, fields, decode):
        seen += check_rounds(table, manifest, where, whole_run=False)
        yield condition, table
    check_all_games(manifest, seen, where)


def usage_by_game(run_dir: Path) -> dict[tuple[str, int, str], dict[str, Any]]:
    """Per (condition, replicate, agent): the replies the game used (`llm_calls`, one per
    attempt), their tokens and their price (`cost_usd`, as charged when first made).

    Read from llm_calls.jsonl, counting the calls of the session that finished the game, served
    by the provider or by the cache alike: these describe the game, so a re-run from the cache
    or a resumed run gives the same figures as an uninterrupted first run. What each session
    spent is in the manifest (`usage`).
    """
    import orjson

    path = Path(run_dir) / CALLS_FILE
    out: dict[tuple[str, int, str], dict[str, Any]] = {}
    if not path.is_file():
        return out
    records = []
    last_session: dict[tuple[str, int], int] = {}
    for line in path.read_bytes().splitlines():
        try:
            rec = orjson.loads(line)
            key = (str(rec["condition"]), int(rec["replicate"]), str(rec["agent"]))
            session = int(rec.get("session") or 0)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
        records.append((key, session, rec))
        game = key[:2]
        last_session[game] = max(session, last_session.get(game, 0))
    for key, session, rec in records:
        # A game replayed on resume counts only the session that finished it (what an
        # uninterrupted run would show); spending across sessions is in the manifest.
        if session != last_session[key[:2]]:
            continue
        slot = out.setdefault(key, {name: 0 for name in USAGE_FIELDS})
        if not rec.get("ok"):
            continue
        slot["llm_calls"] += 1
        cost = rec.get("cost_usd")
        # An unknown cost makes the game's cost unknown (None), never a smaller number.
        slot["cost_usd"] = (
            None if cost is None or slot["cost_usd"] is None else slot["cost_usd"] + cost
        )
        slot["input_tokens"] += rec.get("input_tokens") or 0
        slot["output_tokens"] += rec.get("output_tokens") or 0
    return out


def add_usage_columns(
    rows: list[dict[str, Any]], usage: dict[tuple[str, int, str], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Append agent_{a,b}_{llm_calls,input_tokens,output_tokens,cost_usd} to rows.

    Replicate rows get that game's totals (null when the agent made no calls, e.g. a policy);
    condition rows the mean over replicates, like every other column.
    """
    llm_sides = {(cond, agent) for (cond, _rep, agent) in usage}
    for row in rows:
        for side in ("a", "b"):
            agent = f"agent_{side}"
            if (row["condition"], agent) not in llm_sides:
                for name in USAGE_FIELDS:
                    row[f"{agent}_{name}"] = None
                continue
            if row["scope"] == "replicate":
                counts = usage.get((row["condition"], int(row["replicate"]), agent), {})
                for name in USAGE_FIELDS:
                    value = counts.get(name, 0)
                    row[f"{agent}_{name}"] = None if value is None else float(value)
            else:
                reps = [
                    c
                    for (cond, _r, a), c in usage.items()
                    if cond == row["condition"] and a == agent
                ]
                n = max(1, int(row.get("n_replicates") or 1))
                for name in USAGE_FIELDS:
                    values = [c.get(name, 0) for c in reps]
                    row[f"{agent}_{name}"] = (
                        None if any(v is None for v in values) else sum(map(float, values)) / n
                    )
    return rows
