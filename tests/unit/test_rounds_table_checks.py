"""check_rounds and outcomes_from_table (storage/record/table.py), vectorised for issue 21, against
their record-by-record first versions kept here as the reference: on hundreds of randomly
damaged rounds tables (bad actions and payoffs, lost, repeated, moved and renamed records,
shuffled files) both refuse with the same message or both accept and split the same games.
Also: a table read in batches of whole games gives what the whole table gives."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from pdbench.core.metrics import GameOutcome
from pdbench.core.payoff import PayoffMatrix
from pdbench.storage.record.table import (
    RunDirError,
    check_all_games,
    check_rounds,
    outcomes_from_table,
    planned_lengths,
)
from pdbench.storage.schema import AGGREGATE_INPUT_FIELDS, rounds_arrow_schema

PATH = Path("run/rounds.jsonl")
MATRIX = {"C": {"C": [3, 3], "D": [0, 5]}, "D": {"C": [5, 0], "D": [1, 1]}}


# ---- the reference: the record-by-record versions --------------------------------------------


def reference_check_rounds(table: Any, manifest: dict[str, Any], path: Path) -> None:
    n = len(table)
    for side in ("agent_a", "agent_b"):
        actions = table.column(f"{side}_action").to_pylist()
        for row, action in enumerate(actions):
            if action not in ("C", "D"):
                text = repr(action)
                text = text if len(text) <= 40 else text[:36] + "...'"
                raise RunDirError(
                    f"{path}: record {row + 1}: {side}_action must be C or D "
                    f"(got {text}); the file was damaged or edited"
                )
        for row, payoff in enumerate(table.column(f"{side}_payoff").to_pylist()):
            if payoff is None or not np.isfinite(payoff):
                raise RunDirError(
                    f"{path}: record {row + 1}: {side}_payoff is not a finite number; "
                    "the file was damaged or edited"
                )
    game = manifest["config"]["game"]
    matrix = PayoffMatrix.from_nested(game["payoff_matrix"])
    a_moves, b_moves = table.column("agent_a_action"), table.column("agent_b_action")
    for side, k in (("agent_a", 0), ("agent_b", 1)):
        for row, got in enumerate(table.column(f"{side}_payoff").to_pylist()):
            want = matrix.payoffs(a_moves[row].as_py(), b_moves[row].as_py())[k]
            if not np.isclose(got, want, rtol=1e-12, atol=1e-9):
                raise RunDirError(
                    f"{path}: record {row + 1}: {side}_payoff is not the payoff matrix's "
                    "value for the two actions; the file was damaged or edited"
                )
    for name in ("condition", "replicate", "round_index"):
        values = table.column(name).to_pylist()
        if None in values:
            raise RunDirError(
                f"{path}: record {values.index(None) + 1}: no {name}; the file was damaged or "
                "edited"
            )
    plan = planned_lengths(manifest)
    if plan is None or n == 0:
        return
    rounds = table.column("round_index").to_pylist()
    seen: dict[tuple[str, int], list[int]] = {}
    conditions = table.column("condition").to_pylist()
    keys = zip(conditions, table.column("replicate").to_pylist(), strict=True)
    for row, key in enumerate(keys):
        seen.setdefault(key, []).append(row)
    for (condition, replicate), rows in seen.items():
        if (condition, replicate) not in plan:
            raise RunDirError(
                f"{path}: record {rows[0] + 1}: condition {condition!r} replicate {replicate}: "
                "not a game of this run's plan (run_manifest.json)"
            )
    for (condition, replicate), rows in seen.items():
        planned = plan[(condition, replicate)]
        indexes = [rounds[r] for r in rows]
        if sorted(indexes) != list(range(planned)):
            row = rows[0]
            outside = [i for i, x in enumerate(indexes) if not 0 <= x < planned]
            repeated = [i for i, x in enumerate(indexes) if x in indexes[:i]]
            if outside or repeated:
                row = rows[(outside or repeated)[0]]
            raise RunDirError(
                f"{path}: record {row + 1}: condition {condition!r} replicate {replicate}: "
                f"{len(rows)} round records where the plan has rounds 0..{planned - 1}"
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


def reference_outcomes(table: Any) -> list[GameOutcome]:
    records = table.to_pylist()
    games: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for record in records:
        games.setdefault((record["condition"], record["replicate"]), []).append(record)
    out = []
    for key in sorted(games, key=lambda k: f"{k[0]}\x1f{k[1]}"):
        rows = games[key]
        indexes = [r["round_index"] for r in rows]
        if len(set(indexes)) != len(indexes):
            raise RunDirError(f"condition {key[0]!r} replicate {key[1]}: duplicated round indexes")
        first = rows[0]
        rows = sorted(rows, key=lambda r: r["round_index"])

        def column(name: str, rows: list[dict[str, Any]] = rows) -> list[Any]:
            return [r[name] for r in rows]

        def floats(name: str) -> np.ndarray:
            return np.array([np.nan if v is None else v for v in column(name)], dtype=float)

        a_fallback = np.array([v is True for v in column("agent_a_parse_failure")])
        b_fallback = np.array([v is True for v in column("agent_b_parse_failure")])
        out.append(
            GameOutcome(
                condition=key[0],
                replicate=key[1],
                agent_a_name=str(first["agent_a_name"]),
                agent_b_name=str(first["agent_b_name"]),
                a_coop=np.array([v == "C" for v in column("agent_a_action")], dtype=bool),
                b_coop=np.array([v == "C" for v in column("agent_b_action")], dtype=bool),
                a_payoffs=floats("agent_a_payoff"),
                b_payoffs=floats("agent_b_payoff"),
                a_parse_failures=int(a_fallback.sum()),
                b_parse_failures=int(b_fallback.sum()),
                a_fallback=a_fallback,
                b_fallback=b_fallback,
                a_p_cooperate=floats("agent_a_p_cooperate"),
                b_p_cooperate=floats("agent_b_p_cooperate"),
            )
        )
    return out


# ---- runs and damage ------------------------------------------------------------------------


def run_records(rng: random.Random, games: int = 3, rounds: int = 6) -> list[dict[str, Any]]:
    """Two conditions of `games` games of `rounds` rounds, records in file order."""
    pay = {(x, y): MATRIX[x][y] for x in "CD" for y in "CD"}
    records = []
    for condition, names in (("TFT_vs_ALLD", ("TFT", "ALLD")), ("LLM_vs_TFT", ("mock", "TFT"))):
        for replicate in range(games):
            for t in range(rounds):
                a, b = rng.choice("CD"), rng.choice("CD")
                llm = condition.startswith("LLM")
                records.append(
                    {
                        "schema_version": 2,
                        "run_id": "r",
                        "condition": condition,
                        "replicate": replicate,
                        "round_index": t,
                        "agent_a_name": names[0],
                        "agent_b_name": names[1],
                        "agent_a_action": a,
                        "agent_b_action": b,
                        "agent_a_payoff": float(pay[(a, b)][0]),
                        "agent_b_payoff": float(pay[(a, b)][1]),
                        "agent_a_parse_failure": (rng.random() < 0.2) if llm else None,
                        "agent_b_parse_failure": False if llm else None,
                        "agent_a_p_cooperate": rng.choice([None, rng.random()]) if llm else None,
                        "agent_b_p_cooperate": None,
                    }
                )
    return records


def manifest_of(games: int = 3, rounds: int = 6, status: str = "completed") -> dict[str, Any]:
    conditions = [
        {"name": name, "games": [{"replicate": r, "n_rounds": rounds} for r in range(games)]}
        for name in ("TFT_vs_ALLD", "LLM_vs_TFT")
    ]
    return {
        "status": status,
        "conditions": conditions,
        "config": {"game": {"payoff_matrix": MATRIX}},
    }


def table_of(records: list[dict[str, Any]]) -> Any:
    return pa.Table.from_pylist(records, schema=rounds_arrow_schema(AGGREGATE_INPUT_FIELDS))


DAMAGE = {
    "action": lambda r, rng: {
        rng.choice(["agent_a_action", "agent_b_action"]): rng.choice(
            ["c", "<img src=x>", None, "", "x" * 60, "CD"]
        )
    },
    "payoff": lambda r, rng: {
        rng.choice(["agent_a_payoff", "agent_b_payoff"]): rng.choice(
            [None, float("nan"), float("inf"), 2.0, r["agent_a_payoff"] + 1e-10]
        )
    },
    "round": lambda r, rng: {"round_index": rng.choice([-1, 0, 5, 6, 99, None])},
    "condition": lambda r, rng: {"condition": rng.choice(["nope", "LLM_vs_TFT", None])},
    "replicate": lambda r, rng: {"replicate": rng.choice([0, 2, 3, 7, None])},
    "name": lambda r, rng: {"agent_a_name": rng.choice(["other", None])},
}


def damage(records: list[dict[str, Any]], rng: random.Random) -> list[str]:
    """One to three kinds of damage, applied in place; returns what was done."""
    done = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice([*DAMAGE, "delete", "duplicate", "shuffle", "swap", "none"])
        if not records:
            break
        i = rng.randrange(len(records))
        if kind in DAMAGE:
            records[i] = {**records[i], **DAMAGE[kind](records[i], rng)}
        elif kind == "delete":
            del records[i : i + rng.choice([1, 1, 6, 18])]
        elif kind == "duplicate":
            records.insert(rng.randrange(len(records) + 1), dict(records[i]))
        elif kind == "shuffle":
            rng.shuffle(records)
        elif kind == "swap":
            j = rng.randrange(len(records))
            records[i], records[j] = records[j], records[i]
        done.append(kind)
    return done


def outcome_values(outcomes: list[GameOutcome]) -> list[tuple[Any, ...]]:
    """Everything an outcome holds, arrays as (dtype, list) with NaN as None."""
    out = []
    for outcome in outcomes:
        fields = []
        for name in outcome.__dataclass_fields__:
            value = getattr(outcome, name)
            if isinstance(value, np.ndarray):
                listed = [
                    None if isinstance(v, float) and np.isnan(v) else v for v in value.tolist()
                ]
                value = (str(value.dtype), listed)
            fields.append((name, value, type(value).__name__))
        out.append(tuple(fields))
    return out


def result(function: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", function(*args)
    except RunDirError as exc:
        return "refused", str(exc)


# ---- tests ----------------------------------------------------------------------------------


def test_an_undamaged_run_gives_the_reference_games() -> None:
    records = run_records(random.Random(1))
    table = table_of(records)
    manifest = manifest_of()
    assert check_rounds(table, manifest, PATH) == [
        (c, r) for c in ("TFT_vs_ALLD", "LLM_vs_TFT") for r in range(3)
    ]
    assert outcome_values(outcomes_from_table(table)) == outcome_values(reference_outcomes(table))


@pytest.mark.parametrize("status", ["completed", "running"])
def test_damaged_tables_are_refused_or_read_as_the_reference_does(status: str) -> None:
    manifest = manifest_of(status=status)
    refused = accepted = 0
    for seed in range(400):
        rng = random.Random(seed)
        records = run_records(rng)
        done = damage(records, rng)
        table = table_of(records)
        want = result(reference_check_rounds, table, manifest, PATH)
        got = result(check_rounds, table, manifest, PATH)
        assert got[0] == want[0], (seed, done, got, want)
        if want[0] == "refused":
            assert got[1] == want[1], (seed, done)
            refused += 1
            continue
        accepted += 1
        assert outcome_values(outcomes_from_table(table)) == outcome_values(
            reference_outcomes(table)
        ), (seed, done)
    assert refused > 100 and accepted > 30, (refused, accepted)


def test_outcomes_without_the_check_match_the_reference_on_any_order_and_lengths() -> None:
    # outcomes_from_table alone (the app) takes games of any length and records in any order;
    # it refuses only repeated round indexes, naming the first game in condition order.
    for seed in range(200):
        rng = random.Random(10_000 + seed)
        records = run_records(rng, games=rng.randint(1, 4), rounds=rng.randint(1, 8))
        for _ in range(rng.randint(0, 3)):
            kind = rng.choice(["delete", "duplicate", "shuffle", "round", "replicate"])
            i = rng.randrange(len(records))
            if kind == "delete" and len(records) > 1:
                del records[i]
            elif kind == "duplicate":
                records.insert(rng.randrange(len(records)), dict(records[i]))
            elif kind == "shuffle":
                rng.shuffle(records)
            elif kind == "round":
                records[i] = {**records[i], "round_index": rng.choice([-3, 40, 2])}
            elif kind == "replicate":
                records[i] = {**records[i], "replicate": rng.choice([9, 10, -1])}
        table = table_of(records)
        want = result(reference_outcomes, table)
        got = result(outcomes_from_table, table)
        assert got[0] == want[0] and (
            got[1] == want[1]
            if got[0] == "refused"
            else outcome_values(got[1]) == outcome_values(want[1])
        ), seed


def test_games_come_in_the_order_of_their_keys_as_text() -> None:
    # "c\x1f10" sorts before "c\x1f9": the order the first version gave (np.unique of the text)
    records = run_records(random.Random(2), games=12, rounds=2)
    manifest = manifest_of(games=12, rounds=2)
    table = table_of(records)
    check_rounds(table, manifest, PATH)
    got = [(o.condition, o.replicate) for o in outcomes_from_table(table)]
    assert got[:4] == [("LLM_vs_TFT", 0), ("LLM_vs_TFT", 1), ("LLM_vs_TFT", 10), ("LLM_vs_TFT", 11)]
    assert got == [(o.condition, o.replicate) for o in reference_outcomes(table)]


def test_batches_of_whole_games_give_what_the_whole_table_gives() -> None:
    rng = random.Random(3)
    records = run_records(rng, games=4, rounds=5)
    rng.shuffle(records)  # games interleaved in the file
    manifest = manifest_of(games=4, rounds=5)
    table = table_of(records)
    whole = outcome_values(outcomes_from_table(table))
    seen: list[tuple[str, int]] = []
    batches = []
    for condition in ("TFT_vs_ALLD", "LLM_vs_TFT"):
        batch = table_of([r for r in records if r["condition"] == condition])
        seen += check_rounds(batch, manifest, PATH, whole_run=False)
        batches += outcome_values(outcomes_from_table(batch))
    check_all_games(manifest, seen, PATH)
    assert sorted(batches) == sorted(whole)
    # a batch alone lacks the other condition's games: only the whole-run check says so
    batch = table_of([r for r in records if r["condition"] == "LLM_vs_TFT"])
    games = check_rounds(batch, manifest, PATH, whole_run=False)
    with pytest.raises(RunDirError, match="replicate 0: no rounds, but the run is marked"):
        check_all_games(manifest, games, PATH)
    with pytest.raises(RunDirError, match="4 planned games missing"):
        check_rounds(batch, manifest, PATH)


def test_a_batch_names_records_from_its_first_record_number() -> None:
    records = run_records(random.Random(4))
    records[7] = {**records[7], "agent_b_action": "x"}
    table = table_of(records[6:12])
    with pytest.raises(RunDirError, match=r"record 8: agent_b_action must be C or D \(got 'x'\)"):
        check_rounds(table, manifest_of(), PATH, whole_run=False, first_record=7)


def test_dictionary_encoded_text_columns_read_the_same() -> None:
    # a columnar reader may hand text columns dictionary-encoded
    records = run_records(random.Random(5))
    table = table_of(records)
    encoded = table
    for name in ("condition", "agent_a_action", "agent_b_action", "agent_a_name"):
        i = encoded.schema.get_field_index(name)
        encoded = encoded.set_column(i, name, encoded.column(name).dictionary_encode())
    assert check_rounds(encoded, manifest_of(), PATH) == check_rounds(table, manifest_of(), PATH)
    assert outcome_values(outcomes_from_table(encoded)) == outcome_values(
        outcomes_from_table(table)
    )
    records[3] = {**records[3], "agent_a_action": "d"}
    bad = table_of(records)
    i = bad.schema.get_field_index("agent_a_action")
    bad = bad.set_column(i, "agent_a_action", bad.column("agent_a_action").dictionary_encode())
    with pytest.raises(RunDirError, match=r"record 4: agent_a_action must be C or D \(got 'd'\)"):
        check_rounds(bad, manifest_of(), PATH)
