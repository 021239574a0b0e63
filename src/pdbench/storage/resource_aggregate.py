"""The tables of a resource run (issue 31), computed from rounds.jsonl alone, so `pdbench
aggregate` and a resumed run write them identically.

- aggregates.parquet: one row per condition, the game as the unit: the public goods metrics
  (`pdbench.core.pgg_conditions`) or the commons metrics (`commons_conditions`) with their 95%
  intervals, and the LLM seats' parse failures, fallbacks and clamped answers.
- resource_rounds.parquet: per condition and round (season), over games: the mean contribution
  rate and punishment spent (pgg), or the mean stock before the harvest, the share of games still
  going and the mean catch (commons), each with a Student-t 95% interval over the games that
  reached that round.
- resource_seats.parquet: per condition and seat: contribution rate, punishment spent and
  received (pgg), or total catch and requests over the sustainable share (commons), each mean
  over games with its interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pdbench.core.commons import CommonsRules, sustainable_catch
from pdbench.core.commons_conditions import commons_condition_summary, commons_game_values
from pdbench.core.commons_metrics import commons_metrics
from pdbench.core.pgg import PGGRules
from pdbench.core.pgg_conditions import GameValue, pgg_condition_summary, pgg_game_values
from pdbench.core.pgg_metrics import pgg_game_metrics
from pdbench.core.stats import IntervalSettings, t_interval
from pdbench.errors import RunError
from pdbench.storage.intervals import interval_generators, interval_settings
from pdbench.storage.record.resource_record import read_games, round_result, season_result
from pdbench.storage.schema import AGGREGATES_FILE, RESOURCE_ROUNDS_FILE, RESOURCE_SEATS_FILE

RESOURCE_ARTIFACTS = (AGGREGATES_FILE, RESOURCE_ROUNDS_FILE, RESOURCE_SEATS_FILE)


def rules_from_manifest(game: str, entry: Mapping[str, Any]) -> PGGRules | CommonsRules:
    """A condition's rules as the manifest records them."""
    values = dict(entry["rules"])
    return PGGRules(**values) if game == "pgg" else CommonsRules(**values)


def _mean_ci(values: Sequence[float], bounds: tuple[float, float] | None = None) -> list[Any]:
    arr = [float(v) for v in values]
    mean = sum(arr) / len(arr) if arr else None
    low, high = t_interval(arr, bounds) if len(arr) > 1 else (None, None)
    return [mean, low, high]


def _reading_counts(games: Sequence[Sequence[dict[str, Any]]]) -> dict[str, int]:
    counts = {"decisions": 0, "parse_failures": 0, "fallbacks": 0, "clamped": 0}
    for records in games:
        for record in records:
            for d in record.get("decisions", ()):
                counts["decisions"] += 1
                counts["parse_failures"] += int(d.get("parse_failures", 0))
                counts["fallbacks"] += int(bool(d.get("fallback")))
                counts["clamped"] += int(bool(d.get("clamped")))
    return counts


def _pgg_tables(
    name: str,
    rules: PGGRules,
    games: list[list[dict[str, Any]]],
    settings: IntervalSettings,
    rng: np.random.Generator,
    exact: bool,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    rounds_of = [[round_result(r) for r in records] for records in games]
    metrics = [_game_metrics(rules, records) for records in games]
    row = pgg_condition_summary(rules, metrics, settings, rng, exact)
    by_round = []
    for t in range(max(len(r) for r in rounds_of)):
        reached = [g for g in rounds_of if len(g) > t]
        rate = [g[t].total / sum(g[t].limits) if sum(g[t].limits) else 0.0 for g in reached]
        spent = [sum(g[t].punish_spent) for g in reached]
        mean, low, high = _mean_ci(rate, (0.0, 1.0))
        p_mean, p_low, p_high = _mean_ci(spent, (0.0, float("inf")))
        by_round.append(
            {
                "condition": name,
                "round": t + 1,
                "games": len(reached),
                "contribution_rate": mean,
                "contribution_rate_ci_low": low,
                "contribution_rate_ci_high": high,
                "punish_spent": p_mean,
                "punish_spent_ci_low": p_low,
                "punish_spent_ci_high": p_high,
            }
        )
    seats = []
    names = games[0][0]["seats"]
    for i, seat_name in enumerate(names):
        rate = _mean_ci([m.contribution_rate_by_seat[i] for m in metrics], (0.0, 1.0))
        spent = _mean_ci([m.punish_spent[i] for m in metrics], (0.0, float("inf")))
        got = _mean_ci([m.punish_received[i] for m in metrics], (0.0, float("inf")))
        final = _mean_ci([g[-1].balances[i] for g in rounds_of])
        seats.append(
            {
                "condition": name,
                "seat": i,
                "name": seat_name,
                "contribution_rate": rate[0],
                "contribution_rate_ci_low": rate[1],
                "contribution_rate_ci_high": rate[2],
                "punish_spent": spent[0],
                "punish_spent_ci_low": spent[1],
                "punish_spent_ci_high": spent[2],
                "punish_received": got[0],
                "punish_received_ci_low": got[1],
                "punish_received_ci_high": got[2],
                "final_balance": final[0],
                "final_balance_ci_low": final[1],
                "final_balance_ci_high": final[2],
            }
        )
    return row, by_round, seats


def _commons_tables(
    name: str,
    rules: CommonsRules,
    games: list[list[dict[str, Any]]],
    settings: IntervalSettings,
    rng: np.random.Generator,
    exact: bool,
    sharing: int | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    seasons_of = [[season_result(r) for r in records] for records in games]
    metrics = [_game_metrics(rules, records, sharing) for records in games]
    row = commons_condition_summary(rules, metrics, settings, rng, exact)
    by_round = []
    for t in range(rules.n_seasons):
        reached = [g for g in seasons_of if len(g) > t]
        going = [1.0 if len(g) > t else 0.0 for g in seasons_of]
        stock = _mean_ci([g[t].stock for g in reached], (0.0, float(rules.capacity)))
        caught = _mean_ci([sum(g[t].caught) for g in reached], (0.0, float(rules.capacity)))
        alive = _mean_ci(going, (0.0, 1.0))
        by_round.append(
            {
                "condition": name,
                "round": t + 1,
                "games": len(reached),
                "stock": stock[0],
                "stock_ci_low": stock[1],
                "stock_ci_high": stock[2],
                "catch": caught[0],
                "catch_ci_low": caught[1],
                "catch_ci_high": caught[2],
                "going": alive[0],
                "going_ci_low": alive[1],
                "going_ci_high": alive[2],
            }
        )
    seats = []
    names = games[0][0]["seats"]
    n = sharing or rules.n_agents
    for i, seat_name in enumerate(names):
        total = _mean_ci([m.total_caught[i] for m in metrics], (0.0, float("inf")))
        over = []
        for records in games:  # the seasons the seat was in the lake
            asked = [
                r["requested"][i] > sustainable_catch(r["stock"], n)
                for r in records
                if r["present"][i]
            ]
            over.append(sum(asked) / len(asked) if asked else 0.0)
        overuse = _mean_ci(over, (0.0, 1.0))
        seats.append(
            {
                "condition": name,
                "seat": i,
                "name": seat_name,
                "total_caught": total[0],
                "total_caught_ci_low": total[1],
                "total_caught_ci_high": total[2],
                "overuse_rate": overuse[0],
                "overuse_rate_ci_low": overuse[1],
                "overuse_rate_ci_high": overuse[2],
            }
        )
    return row, by_round, seats


def condition_games(
    run_dir: Path, manifest: Mapping[str, Any]
) -> dict[str, list[list[dict[str, Any]]]]:
    """Each condition's games (each a list of its rounds.jsonl records), in the manifest's
    condition order and by replicate; RunError when a game is missing or belongs to no
    condition."""
    conditions = {c["name"]: c for c in manifest["conditions"]}
    games = read_games(Path(run_dir))
    by_condition: dict[str, list[list[dict[str, Any]]]] = {name: [] for name in conditions}
    for (condition, _), records in sorted(games.items(), key=lambda kv: kv[0][1]):
        if condition not in conditions:
            raise RunError(
                f"{run_dir}: a game of condition {condition!r}, which is not in the manifest "
                f"(valid: {', '.join(conditions)})"
            )
        by_condition[condition].append(records)
    for name, entry in conditions.items():
        found = by_condition[name]
        if len(found) != entry["replicates"]:
            raise RunError(
                f"{run_dir}: condition {name!r} has {len(found)} of its {entry['replicates']} "
                "games in rounds.jsonl; `pdbench resume` plays the rest"
            )
    return by_condition


def sharing_of(entry: Mapping[str, Any]) -> int | None:
    """The agents GovSim's sustainable share divides among in a manifest condition: all but the
    outsider when there is one (its threshold counts the configured agents), else None (all)."""
    if entry.get("outsider_arrival") is None:
        return None
    return len(entry["seats"]) - 1


def _game_metrics(
    rules: PGGRules | CommonsRules, records: list[dict[str, Any]], sharing: int | None = None
) -> Any:
    """One game's metrics (`PGGGameMetrics` or `CommonsMetrics`) from its records."""
    if isinstance(rules, PGGRules):
        return pgg_game_metrics(rules, [round_result(r) for r in records])
    present = [r["present"] for r in records]
    return commons_metrics(
        rules, [season_result(r) for r in records], sharing=sharing, present=present
    )


def resource_game_values(
    run_dir: Path, manifest: Mapping[str, Any]
) -> dict[str, list[dict[str, GameValue]]]:
    """Per condition (manifest order), each game's values of the condition metrics
    (`pgg_conditions.pgg_game_values` or `commons_conditions.commons_game_values`: pooled
    ratios as (acts, chances)), by replicate: the values aggregates.parquet summarizes."""
    game = str(manifest["kind"])
    entries = {c["name"]: c for c in manifest["conditions"]}
    out: dict[str, list[dict[str, GameValue]]] = {}
    for name, found in condition_games(run_dir, manifest).items():
        rules = rules_from_manifest(game, entries[name])
        metrics = [_game_metrics(rules, records, sharing_of(entries[name])) for records in found]
        if isinstance(rules, PGGRules):
            out[name] = [pgg_game_values(rules, m) for m in metrics]
        else:
            out[name] = [commons_game_values(rules, m) for m in metrics]
    return out


def resource_tables(
    run_dir: Path, manifest: Mapping[str, Any], settings: IntervalSettings | None = None
) -> dict[str, list[dict[str, Any]]]:
    """The rows of the three tables from the run's rounds.jsonl (conditions in the manifest's
    order); RunError when a game is missing or belongs to no condition."""
    settings = settings or interval_settings(dict(manifest))
    generator_for = interval_generators(settings)
    game = str(manifest["kind"])
    conditions = {c["name"]: c for c in manifest["conditions"]}
    by_condition = condition_games(run_dir, manifest)
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in RESOURCE_ARTIFACTS}
    for name, entry in conditions.items():
        found = by_condition[name]
        rules = rules_from_manifest(game, entry)
        exact = bool(entry.get("exact"))
        if game == "pgg":
            made = _pgg_tables(name, rules, found, settings, generator_for(name), exact)  # type: ignore[arg-type]
        else:
            made = _commons_tables(
                name,
                rules,
                found,
                settings,
                generator_for(name),
                exact,
                sharing_of(entry),  # type: ignore[arg-type]
            )
        row, by_round, seats = made
        row = {"condition": name, "n_seats": len(entry["seats"]), **row, **_reading_counts(found)}
        tables[AGGREGATES_FILE].append(row)
        tables[RESOURCE_ROUNDS_FILE].extend(by_round)
        tables[RESOURCE_SEATS_FILE].extend(seats)
    return tables


def _same_columns(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with every column any row has (in first-seen order), None where a row has none: a
    condition with the reward stage has columns the others lack (rows are unchanged when all
    have the same columns)."""
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    if all(len(row) == len(columns) for row in rows):
        return rows
    return [{c: row.get(c) for c in columns} for row in rows]


def write_resource_aggregates(
    run_dir: Path, manifest: Mapping[str, Any], settings: IntervalSettings | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Compute and write the three tables; returns their rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pdbench.storage.files import write_bytes_atomic

    tables = resource_tables(run_dir, manifest, settings)
    for file, rows in tables.items():
        table = pa.Table.from_pylist(_same_columns(rows))
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        write_bytes_atomic(Path(run_dir) / file, sink.getvalue().to_pybytes())
    return tables
