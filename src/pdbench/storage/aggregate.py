"""aggregates.parquet: written after a run, and recomputed from the run's rounds by `pdbench
aggregate`, one condition at a time."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from pdbench.core.metrics import CollapseParams, GameOutcome, aggregate_rows
from pdbench.core.payoff import PayoffMatrix
from pdbench.errors import PdbenchError, RunError
from pdbench.storage.intervals import interval_settings, metric_designs, with_intervals
from pdbench.storage.parquet import write_rows
from pdbench.storage.run_dir import RunLock, read_manifest
from pdbench.storage.schema import (
    AGGREGATE_INPUT_FIELDS,
    AGGREGATES_FILE,
    CALLS_FILE,
    ROUNDS_COLUMNS_DIR,
    ROUNDS_FILE,
    USAGE_FIELDS,
    aggregates_arrow_schema,
    check_version,
    rounds_arrow_schema,
)


class RunDirError(PdbenchError):
    """A run directory that is missing, empty or broken."""


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


def read_rounds_table(
    path: Path,
    fields: tuple[str, ...] = AGGREGATE_INPUT_FIELDS,
    required: tuple[str, ...] | None = None,
) -> Any:
    """Record fields of rounds.jsonl as a pyarrow Table (fast, multithreaded): the columns the
    metrics need by default. Types come from the schema; other fields are skipped.

    A trailing partial line (a crash mid-write) is ignored; any other bad line, an empty file,
    a `required` field (default: all of `fields`) absent from every record, or a record newer
    than this pdbench is an error (RunDirError or SchemaVersionError, one line).
    """
    import pyarrow as pa
    import pyarrow.json as pj

    if not path.is_file():
        raise RunDirError(f"{path}: rounds file not found")
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
    if not data.strip():
        raise RunDirError(f"{path}: no rounds recorded")
    fields = tuple(dict.fromkeys(("schema_version", *fields)))
    options = pj.ParseOptions(
        explicit_schema=rounds_arrow_schema(fields), unexpected_field_behavior="ignore"
    )
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            parse_options=options,
            read_options=pj.ReadOptions(block_size=1 << 24),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise RunDirError(
            f"{path}: not valid rounds JSON Lines ({str(exc).splitlines()[0]})"
        ) from None
    check_version(str(path), pc_max(table.column("schema_version")))
    if required is None:  # P(C) is null wherever it was not recorded
        wanted = tuple(f for f in fields[1:] if not f.endswith("_p_cooperate"))
    else:
        wanted = required
    missing = [name for name in wanted if table.column(name).null_count == len(table)]
    if missing:
        raise RunDirError(f"{path}: records lack required fields: {', '.join(missing)}")
    return table


ACTIONS = ("C", "D")


def planned_lengths(manifest: dict[str, Any]) -> dict[tuple[str, int], int] | None:
    """(condition, replicate) -> the game's length, as the manifest planned it (None when the
    manifest lists no games: an older pdbench); a malformed plan is a one-line RunDirError."""
    conditions = manifest.get("conditions")
    if not isinstance(conditions, list) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) for c in conditions
    ):
        raise RunDirError(
            "run_manifest.json: conditions is not a list of named conditions (a damaged or "
            "hand-edited manifest)"
        )
    if not any("games" in c for c in conditions):
        return None  # an older pdbench, which did not record the plan
    out: dict[tuple[str, int], int] = {}
    for i, condition in enumerate(conditions):
        games = condition.get("games")
        try:
            for game in games:
                n = game["n_rounds"]
                replicate = game["replicate"]
                if not all(type(v) is int for v in (n, replicate)) or n < 1 or replicate < 0:
                    raise TypeError
                out[(str(condition["name"]), replicate)] = n
        except (KeyError, TypeError):
            raise RunDirError(
                f"run_manifest.json: conditions[{i}].games is not a list of games with "
                "replicate and n_rounds (edited by hand?)"
            ) from None
    return out


def check_rounds(table: Any, manifest: dict[str, Any], path: Path) -> None:
    """Refuse rounds that the run could not have recorded, naming the first: an action other
    than C or D, a payoff that is not a finite number, a game the manifest does not plan, or a
    game whose rounds are not exactly 0..n-1 of the length the manifest planned (a torn line,
    a deleted or duplicated round). One-line RunDirError naming the file and the record."""
    n = len(table)
    for side in ("agent_a", "agent_b"):
        actions = table.column(f"{side}_action").to_numpy(zero_copy_only=False)
        bad = np.flatnonzero(~np.isin(actions, ACTIONS))
        if len(bad):
            raise RunDirError(
                f"{path}: record {int(bad[0]) + 1}: {side}_action must be C or D "
                f"(got {_shown(actions[bad[0]])}); the file was damaged or edited"
            )
        payoffs = table.column(f"{side}_payoff").to_numpy(zero_copy_only=False)
        values = np.array([np.nan if v is None else v for v in payoffs], dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            raise RunDirError(
                f"{path}: record {int(bad[0]) + 1}: {side}_payoff is not a finite number; "
                "the file was damaged or edited"
            )
    _check_payoffs(table, manifest, path)
    for name in ("condition", "replicate", "round_index"):
        if table.column(name).null_count:
            row = int(
                np.flatnonzero(table.column(name).is_null().to_numpy(zero_copy_only=False))[0]
            )
            raise RunDirError(
                f"{path}: record {row + 1}: no {name}; the file was damaged or edited"
            )
    plan = planned_lengths(manifest)
    if plan is None or n == 0:
        return
    conditions = table.column("condition").to_numpy(zero_copy_only=False).astype(str)
    replicates = table.column("replicate").to_numpy(zero_copy_only=False).astype(np.int64)
    rounds = table.column("round_index").to_numpy(zero_copy_only=False).astype(np.int64)
    seen: dict[tuple[str, int], list[int]] = {}
    for row, key in enumerate(zip(conditions.tolist(), replicates.tolist(), strict=True)):
        seen.setdefault(key, []).append(row)
    for (condition, replicate), rows in seen.items():
        if (condition, replicate) not in plan:
            raise RunDirError(
                f"{path}: record {rows[0] + 1}: condition {condition!r} replicate {replicate}: "
                "not a game of this run's plan (run_manifest.json)"
            )
    for (condition, replicate), rows in seen.items():
        planned = plan[(condition, replicate)]
        where = f"{path}: record {rows[0] + 1}: condition {condition!r} replicate {replicate}"
        got = np.sort(rounds[rows])
        if len(got) != planned or not np.array_equal(got, np.arange(planned)):
            indexes = rounds[rows]
            outside = np.flatnonzero((indexes < 0) | (indexes >= planned))
            _, first = np.unique(indexes, return_index=True)
            repeated = np.setdiff1d(np.arange(len(rows)), first)
            if len(outside) or len(repeated):
                row = rows[int((outside if len(outside) else repeated)[0])]
                where = f"{path}: record {row + 1}: condition {condition!r} replicate {replicate}"
            raise RunDirError(
                f"{where}: {len(got)} round records where the plan has rounds 0..{planned - 1}"
                " (a torn, deleted, duplicated or edited line); resume the run or restore the file"
            )
    if manifest.get("status") == "completed":
        missing = [k for k in plan if k not in seen]
        if missing:
            condition, replicate = missing[0]
            raise RunDirError(
                f"{path}: condition {condition!r} replicate {replicate}: no rounds, but the "
                f"run is marked completed ({len(missing)} planned games missing)"
            )


def _check_payoffs(table: Any, manifest: dict[str, Any], path: Path) -> None:
    """Each record's payoffs are the game's payoffs for its two (actual) actions, from the
    payoff matrix the manifest's config records (skipped when it records none)."""
    game = (manifest.get("config") or {}).get("game") if isinstance(manifest, dict) else None
    if not isinstance(game, dict) or "payoff_matrix" not in game:
        return
    try:
        matrix = PayoffMatrix.from_nested(game["payoff_matrix"])
    except (ValueError, TypeError):
        raise RunDirError(
            f"{path.parent / 'run_manifest.json'}: config.game.payoff_matrix is not a valid "
            "payoff matrix (a damaged or hand-edited manifest)"
        ) from None
    a = table.column("agent_a_action").to_numpy(zero_copy_only=False) == "C"
    b = table.column("agent_b_action").to_numpy(zero_copy_only=False) == "C"
    cells = {
        (x, y): matrix.payoffs("C" if x else "D", "C" if y else "D") for x in (0, 1) for y in (0, 1)
    }
    for side, k in (("agent_a", 0), ("agent_b", 1)):
        got = table.column(f"{side}_payoff").to_numpy(zero_copy_only=False).astype(np.float64)
        want = np.select(
            [a & b, a & ~b, ~a & b, ~a & ~b],
            [cells[(1, 1)][k], cells[(1, 0)][k], cells[(0, 1)][k], cells[(0, 0)][k]],
        )
        bad = np.flatnonzero(~np.isclose(got, want, rtol=1e-12, atol=1e-9))
        if len(bad):
            raise RunDirError(
                f"{path}: record {int(bad[0]) + 1}: {side}_payoff is not the payoff matrix's "
                "value for the two actions; the file was damaged or edited"
            )


def _shown(value: Any) -> str:
    """A value from a damaged record for a message: repr, cut short."""
    text = repr(value)
    return text if len(text) <= 40 else text[:36] + "...'"


def _floats(values: np.ndarray) -> np.ndarray:
    """Probabilities as float64, NaN where none was recorded (null reads as None or NaN)."""
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def outcomes_from_table(table: Any) -> list[GameOutcome]:
    """Split a rounds table into games (condition, replicate), each sorted by round."""
    cols = {
        name: table.column(name).to_numpy(zero_copy_only=False) for name in AGGREGATE_INPUT_FIELDS
    }
    conditions = cols["condition"].astype(str)
    replicates = cols["replicate"].astype(np.int64)
    keys = np.char.add(np.char.add(conditions, "\x1f"), replicates.astype(str))
    uniq, first_index, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.lexsort((cols["round_index"], inverse))
    bounds = np.searchsorted(inverse[order], np.arange(len(uniq) + 1))
    out: list[GameOutcome] = []
    for g in range(len(uniq)):
        idx = order[bounds[g] : bounds[g + 1]]
        first = first_index[g]
        rounds = cols["round_index"][idx]
        if len(np.unique(rounds)) != len(rounds):
            raise RunDirError(
                f"condition {conditions[first]!r} replicate {replicates[first]}: duplicated round indexes"
            )
        out.append(
            GameOutcome(
                condition=str(conditions[first]),
                replicate=int(replicates[first]),
                agent_a_name=str(cols["agent_a_name"][first]),
                agent_b_name=str(cols["agent_b_name"][first]),
                a_coop=cols["agent_a_action"][idx] == "C",
                b_coop=cols["agent_b_action"][idx] == "C",
                a_payoffs=cols["agent_a_payoff"][idx].astype(np.float64),
                b_payoffs=cols["agent_b_payoff"][idx].astype(np.float64),
                a_parse_failures=int(np.sum(cols["agent_a_parse_failure"][idx] == True)),  # noqa: E712
                b_parse_failures=int(np.sum(cols["agent_b_parse_failure"][idx] == True)),  # noqa: E712
                a_fallback=cols["agent_a_parse_failure"][idx] == True,  # noqa: E712
                b_fallback=cols["agent_b_parse_failure"][idx] == True,  # noqa: E712
                a_p_cooperate=_floats(cols["agent_a_p_cooperate"][idx]),
                b_p_cooperate=_floats(cols["agent_b_p_cooperate"][idx]),
            )
        )
    return out


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
    games = (
        (condition, outcomes_from_table(table))
        for condition, table in checked_condition_tables(run_dir, manifest)
    )
    return aggregate_games(run_dir, manifest, games)


def aggregate_games(
    run_dir: Path,
    manifest: dict[str, Any],
    games: Iterable[tuple[str | None, list[GameOutcome]]],
) -> list[dict[str, Any]]:
    """The one aggregate pipeline: per condition its rows (`aggregate_rows`), then the LLM
    usage columns, the intervals and the sweep coordinates; writes aggregates.parquet and
    returns the rows. Every setting is read from the run's manifest (collapse, conditions and
    their order, interval settings, metric designs, sweep). `games` gives the games one
    condition at a time ((condition, its outcomes); condition None: games of any conditions),
    so a caller holds one condition's rounds at a time: `pdbench run` from memory, `pdbench
    aggregate` and `merge` from the rounds on disk."""
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
    rows: list[dict[str, Any]] = []
    for condition, outcomes in games:
        order = condition_order if condition is None else [condition]
        rows += aggregate_rows(manifest.get("run_id", ""), outcomes, order, collapse)
    rows = add_usage_columns(rows, usage_by_game(run_dir))
    rows = with_intervals(rows, settings, designs)
    rows = add_sweep_columns(rows, coordinates)
    write_aggregates(rows, run_dir / AGGREGATES_FILE)
    return rows


def checked_condition_tables(
    run_dir: Path, manifest: dict[str, Any], fields: tuple[str, ...] = AGGREGATE_INPUT_FIELDS
) -> Iterator[tuple[str | None, Any]]:
    """The run's rounds one condition at a time (`record.reader.condition_tables`), each
    checked against the manifest's plan (`check_rounds`) before it is used."""
    from pdbench.storage.record.reader import condition_tables, uses_columns

    where = run_dir / (ROUNDS_COLUMNS_DIR if uses_columns(run_dir, manifest) else ROUNDS_FILE)
    for condition, table in condition_tables(run_dir, manifest, fields):
        if condition is None:
            check_rounds(table, manifest, where)
        else:
            planned = [
                c
                for c in manifest.get("conditions", [])
                if isinstance(c, dict) and c.get("name") == condition
            ]
            # one condition's games against its plan; a condition not planned, against all
            check_rounds(table, {**manifest, "conditions": planned} if planned else manifest, where)
        yield condition, table


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


def pc_max(column: Any) -> Any:
    """The largest value of a pyarrow column (None when every value is null)."""
    import pyarrow.compute as pc

    return pc.max(column).as_py()
