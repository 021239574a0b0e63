"""Integration tests of the library runner: `load_experiment` + `run_experiment` on small configs.

Every config is written into tmp_path next to a copy of the real `configs/` directory (so the real
prompt files and agent files are used) and every run writes into tmp_path. Expected metric values
are computed by hand (arithmetic in comments) or by the small independent implementation below,
which reads rounds.jsonl and never calls `pdbench.core.metrics`.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.metadata
import itertools
import json
import os
import platform
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow
import pyarrow.parquet as pq
import pytest
import yaml
from tests.support.configs import execute

from pdbench.core.horizon import GeometricHorizon
from pdbench.errors import RunError
from pdbench.runners.config.loader import load_config
from pdbench.storage.aggregate import aggregate_run_dir
from pdbench.storage.schema import ROUND_FIELDS

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
ARTIFACTS = ("rounds.jsonl", "run_manifest.json", "aggregates.parquet")

# The default payoff matrix written out independently: (A's move, B's move) -> (to A, to B).
PAYOFF = {("C", "C"): (3, 3), ("C", "D"): (0, 5), ("D", "C"): (5, 0), ("D", "D"): (1, 1)}


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def policy(name: str) -> dict[str, Any]:
    return {"ref": "agents/policies.yaml", "overrides": {"policy": name}}


def llm(persona: str, invalid_rate: float = 0.0, **overrides: Any) -> dict[str, Any]:
    over: dict[str, Any] = {"persona": persona, "mock": {"invalid_rate": invalid_rate}}
    over.update(overrides)
    return {"ref": "agents/llm_default.yaml", "overrides": over}


def condition(name: str, a: dict, b: dict, **extra: Any) -> dict[str, Any]:
    return {"name": name, "agent_a": a, "agent_b": b, **extra}


def write_config(
    tmp_path: Path,
    conditions: list[dict[str, Any]],
    *,
    file_name: str = "experiment.yaml",
    out: str = "out",
    seed: int = 7,
    replicates: int = 2,
    n_rounds: int = 20,
    store_prompts: bool = True,
    store_raw_responses: bool = True,
    collapse: dict[str, Any] | None = None,
) -> Path:
    """Write an experiment config into tmp_path/cfg (a copy of configs/); output under tmp_path."""
    cfg_dir = tmp_path / "cfg"
    if not cfg_dir.exists():
        shutil.copytree(CONFIGS, cfg_dir)
    body: dict[str, Any] = {
        "run": {
            "run_id": "itest",
            "seed": seed,
            "output_dir": str(tmp_path / out),
            "store_prompts": store_prompts,
            "store_raw_responses": store_raw_responses,
        },
        "horizon": {"type": "fixed", "n_rounds": n_rounds},
        "experiment": {"replicates": replicates, "conditions": conditions},
    }
    if collapse is not None:
        body["metrics"] = {"collapse": collapse}
    path = cfg_dir / file_name
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def persona_text(persona: str) -> str:
    return (CONFIGS / "prompts" / "personas" / f"{persona}.md").read_text().strip()


def static_system_line() -> str:
    """The longest line of the system prompt template that has no placeholder."""
    lines = (CONFIGS / "prompts" / "pd_system.md").read_text().splitlines()
    return max((line for line in lines if "{" not in line), key=len).strip()


def read_rounds(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "rounds.jsonl").read_text().splitlines()]


def read_manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "run_manifest.json").read_text())


def read_aggregates(run_dir: Path) -> list[dict[str, Any]]:
    """Aggregate rows with nulls as None (pyarrow keeps them; pandas would turn them into NaN)."""
    return pq.read_table(run_dir / "aggregates.parquet").to_pylist()


def games_of(records: list[dict[str, Any]]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    games: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for rec in records:
        games.setdefault((rec["condition"], rec["replicate"]), []).append(rec)
    for game in games.values():
        game.sort(key=lambda r: r["round_index"])
    return games


def without_timestamps(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for rec in records:
        rec = dict(rec)
        del rec["timestamp_utc"]
        out.append(rec)
    return out


def independent_metrics(game: list[dict[str, Any]], k: int, threshold: float) -> dict[str, Any]:
    """The metrics of one game computed directly from its records (plain Python, no pdbench)."""
    a = [r["agent_a_action"] == "C" for r in game]
    b = [r["agent_b_action"] == "C" for r in game]
    n = len(game)
    total_a = sum(r["agent_a_payoff"] for r in game)
    total_b = sum(r["agent_b_payoff"] for r in game)

    def ret_forg(mine: list[bool], theirs: list[bool]) -> tuple[float | None, float | None]:
        provoked = [t for t in range(1, n) if not theirs[t - 1]]
        if not provoked:
            return None, None
        defected = sum(1 for t in provoked if not mine[t])
        return defected / len(provoked), (len(provoked) - defected) / len(provoked)

    collapse = None
    for t in range(0, n - k + 1):
        if (sum(a[t : t + k]) + sum(b[t : t + k])) / (2 * k) <= threshold + 1e-12:
            collapse = t
            break
    ret_a, forg_a = ret_forg(a, b)
    ret_b, forg_b = ret_forg(b, a)
    return {
        "n_rounds": n,
        "agent_a_cooperation_rate": sum(a) / n,
        "agent_b_cooperation_rate": sum(b) / n,
        "overall_cooperation_rate": (sum(a) + sum(b)) / (2 * n),
        "cooperation_rate_over_time": [(x + y) / 2 for x, y in zip(a, b, strict=True)],
        "agent_a_retaliation_rate": ret_a,
        "agent_b_retaliation_rate": ret_b,
        "agent_a_forgiveness_rate": forg_a,
        "agent_b_forgiveness_rate": forg_b,
        "agent_a_total_payoff": total_a,
        "agent_b_total_payoff": total_b,
        "agent_a_exploitability_payoff_gap": total_b - total_a,
        "agent_b_exploitability_payoff_gap": total_a - total_b,
        "time_to_collapse": collapse,
        "agent_a_parse_failures": sum(1 for r in game if r["agent_a_parse_failure"]),
        "agent_b_parse_failures": sum(1 for r in game if r["agent_b_parse_failure"]),
    }


def assert_metric_equal(actual: Any, expected: Any, what: str) -> None:
    if expected is None:
        assert actual is None, f"{what}: expected None, got {actual!r}"
    else:
        assert actual is not None, f"{what}: expected {expected!r}, got None"
        assert actual == pytest.approx(expected), f"{what}: expected {expected!r}, got {actual!r}"


def assert_row_matches(row: dict[str, Any], expected: dict[str, Any], what: str) -> None:
    for key, value in expected.items():
        got = row[key]
        if key == "cooperation_rate_over_time":
            got = json.loads(got)
            assert got == pytest.approx(value), f"{what}: {key}"
        else:
            assert_metric_equal(got, value, f"{what}: {key}")


def assert_condition_rows_are_means(rows: list[dict[str, Any]]) -> None:
    """Each condition row is the mean over its replicate rows (None ignored), computed here."""
    by_cond: dict[str, list[dict[str, Any]]] = {}
    summaries: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["scope"] == "replicate":
            by_cond.setdefault(row["condition"], []).append(row)
        else:
            assert row["scope"] == "condition"
            summaries[row["condition"]] = row
    assert set(summaries) == set(by_cond)
    numeric = [
        "n_rounds",
        "agent_a_cooperation_rate",
        "agent_b_cooperation_rate",
        "overall_cooperation_rate",
        "agent_a_retaliation_rate",
        "agent_b_retaliation_rate",
        "agent_a_forgiveness_rate",
        "agent_b_forgiveness_rate",
        "agent_a_total_payoff",
        "agent_b_total_payoff",
        "agent_a_exploitability_payoff_gap",
        "agent_b_exploitability_payoff_gap",
        "time_to_collapse",
        "agent_a_parse_failures",
        "agent_b_parse_failures",
    ]
    for cond, reps in by_cond.items():
        summary = summaries[cond]
        assert summary["n_replicates"] == len(reps)
        assert summary["replicate"] is None
        for key in numeric:
            values = [r[key] for r in reps if r[key] is not None]
            expected = sum(values) / len(values) if values else None
            assert_metric_equal(summary[key], expected, f"{cond} condition {key}")
        series = [json.loads(r["cooperation_rate_over_time"]) for r in reps]
        longest = max(len(s) for s in series)
        mean_series = []
        for t in range(longest):
            vals = [s[t] for s in series if len(s) > t]
            mean_series.append(sum(vals) / len(vals))
        assert json.loads(summary["cooperation_rate_over_time"]) == pytest.approx(mean_series)


def run(config: Path, **kwargs: Any):  # type: ignore[no-untyped-def]
    """Load and run a config from a fresh working directory under the config's tmp dir.

    Anything the runner writes relative to the working directory (e.g. a response cache) lands in
    tmp_path, and two runs never share such state.
    """
    tmp_root = config.parent.parent
    for n in itertools.count():
        cwd = tmp_root / f"cwd{n}"
        if not cwd.exists():
            break
    cwd.mkdir()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        return execute(config, **kwargs)
    finally:
        os.chdir(before)


# --------------------------------------------------------------------------------------------
# artifacts and the rounds.jsonl schema
# --------------------------------------------------------------------------------------------


def test_small_experiment_writes_artifacts_schema_and_consistent_metrics(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        [
            condition("TFT_vs_GTFT", policy("TFT"), policy("GTFT")),
            condition("LLMcoop_vs_TFT", llm("cooperative", 0.2), policy("TFT")),
            condition("LLMcoop_vs_LLMexploit", llm("cooperative"), llm("exploitative", 0.2)),
        ],
        replicates=2,
        n_rounds=20,
    )
    summary = run(config)
    run_dir = tmp_path / "out"
    assert summary.run_dir == run_dir
    for name in ARTIFACTS:
        assert (run_dir / name).is_file(), name

    records = read_rounds(run_dir)
    # 3 conditions x 2 replicates x 20 rounds
    assert len(records) == 3 * 2 * 20
    assert summary.n_games == 6 and summary.n_rounds == 120
    for rec in records:
        missing = [f for f in ROUND_FIELDS if f not in rec]
        assert not missing, f"record lacks {missing}: {rec}"
        assert rec["run_id"] == "itest"
        assert rec["horizon_type"] == "fixed"
        assert rec["fixed_n"] == 20
        assert rec["stop_prob"] is None
        assert datetime.fromisoformat(rec["timestamp_utc"]).utcoffset() is not None

    games = games_of(records)
    assert set(games) == {
        (c, r) for c in ("TFT_vs_GTFT", "LLMcoop_vs_TFT", "LLMcoop_vs_LLMexploit") for r in (0, 1)
    }
    persona_of = {
        ("LLMcoop_vs_TFT", "agent_a"): "cooperative",
        ("LLMcoop_vs_LLMexploit", "agent_a"): "cooperative",
        ("LLMcoop_vs_LLMexploit", "agent_b"): "exploitative",
    }
    llm_sides = {
        "TFT_vs_GTFT": (),
        "LLMcoop_vs_TFT": ("agent_a",),
        "LLMcoop_vs_LLMexploit": ("agent_a", "agent_b"),
    }
    for (cond, rep), game in games.items():
        assert [r["round_index"] for r in game] == list(range(20)), (cond, rep)
        cum_a = cum_b = 0.0
        for rec in game:
            # payoffs follow the matrix for the played moves; cumulative = running sum
            assert (rec["agent_a_payoff"], rec["agent_b_payoff"]) == PAYOFF[
                (rec["agent_a_action"], rec["agent_b_action"])
            ]
            cum_a += rec["agent_a_payoff"]
            cum_b += rec["agent_b_payoff"]
            assert rec["agent_a_cum_payoff"] == cum_a
            assert rec["agent_b_cum_payoff"] == cum_b
            # no noise configured: the played move is the intended move
            assert rec["agent_a_action"] == rec["agent_a_intended_action"]
            assert rec["agent_b_action"] == rec["agent_b_intended_action"]
            sides = llm_sides[cond]
            if not sides:
                assert "prompts" not in rec and "raw_responses" not in rec
                continue
            assert set(rec["prompts"]) == set(sides)
            assert set(rec["raw_responses"]) == set(sides)
            for side in sides:
                prompts = rec["prompts"][side]
                persona = persona_of[(cond, side)]
                assert persona_text(persona) in prompts["system"]
                assert static_system_line() in prompts["system"]
                assert f"round {rec['round_index'] + 1}." in prompts["round"]
                attempts = rec["raw_responses"][side]
                assert 1 <= len(attempts) <= 3  # max_retries 2 in llm_default.yaml
                for attempt in attempts:
                    assert {"prompt_sha256", "raw", "valid"} <= set(attempt)
                    assert len(attempt["prompt_sha256"]) == 64
                    int(attempt["prompt_sha256"], 16)
                    assert isinstance(attempt["raw"], str)
                    assert isinstance(attempt["valid"], bool)
                # every attempt but a successful last one is invalid
                assert not any(a["valid"] for a in attempts[:-1])
                if not rec[f"{side}_parse_failure"]:
                    assert attempts[-1]["valid"] is True
                    assert attempts[-1]["raw"].strip().upper() == rec[f"{side}_intended_action"]

    # aggregates: every replicate row equals the independent computation from rounds.jsonl
    rows = read_aggregates(run_dir)
    assert [(r["condition"], r["scope"], r["replicate"]) for r in rows] == [
        (c, scope, rep)
        for c in ("TFT_vs_GTFT", "LLMcoop_vs_TFT", "LLMcoop_vs_LLMexploit")
        for scope, rep in (("replicate", 0), ("replicate", 1), ("condition", None))
    ]
    for row in rows:
        if row["scope"] == "replicate":
            game = games[(row["condition"], row["replicate"])]
            assert row["agent_a_name"] == game[0]["agent_a_name"]
            assert row["agent_b_name"] == game[0]["agent_b_name"]
            expected = independent_metrics(game, k=10, threshold=0.2)
            assert_row_matches(row, expected, f"{row['condition']}[{row['replicate']}]")
    assert_condition_rows_are_means(rows)


def test_store_flags_off_log_no_prompt_text_and_no_raw_replies(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        [condition("LLM_vs_ALLD", llm("cooperative", 0.3), policy("ALLD"))],
        replicates=1,
        n_rounds=10,
        store_prompts=False,
        store_raw_responses=False,
    )
    run(config)
    text = (tmp_path / "out" / "rounds.jsonl").read_text()
    # text that only the rendered prompts contain
    assert persona_text("cooperative").splitlines()[0] not in text
    assert static_system_line() not in text
    records = read_rounds(tmp_path / "out")
    assert len(records) == 10
    for rec in records:
        assert "prompts" not in rec
        attempts = rec["raw_responses"]["agent_a"]
        assert attempts, rec
        for attempt in attempts:
            assert attempt["raw"] is None
            assert len(attempt["prompt_sha256"]) == 64
            assert isinstance(attempt["valid"], bool)


# --------------------------------------------------------------------------------------------
# hand-computed metrics
# --------------------------------------------------------------------------------------------


def test_tft_vs_alld_aggregates_match_hand_values(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        [condition("TFT_vs_ALLD", policy("TFT"), policy("ALLD"))],
        replicates=2,
        n_rounds=10,
        collapse={"k": 10, "threshold": 0.2},
    )
    run(config)
    records = read_rounds(tmp_path / "out")
    # TFT plays C then copies ALLD's D: A = C D D D D D D D D D, B = D x 10
    for game in games_of(records).values():
        assert "".join(r["agent_a_action"] for r in game) == "C" + "D" * 9
        assert "".join(r["agent_b_action"] for r in game) == "D" * 10

    expected = {
        "n_rounds": 10,
        "agent_a_cooperation_rate": 0.1,  # 1 C in 10 rounds
        "agent_b_cooperation_rate": 0.0,
        "overall_cooperation_rate": 0.05,  # 1 C among 20 moves
        "agent_a_total_payoff": 9.0,  # round 1 (C,D) -> 0, rounds 2-10 (D,D) -> 9 * 1
        "agent_b_total_payoff": 14.0,  # 5 + 9 * 1
        "agent_a_exploitability_payoff_gap": 5.0,  # 14 - 9
        "agent_b_exploitability_payoff_gap": -5.0,  # 9 - 14
        # A: B defected at t-1 for every t in 1..9 (9 provoked rounds), A defected in all 9
        "agent_a_retaliation_rate": 1.0,
        "agent_a_forgiveness_rate": 0.0,
        # B: A defected at t-1 only for t in 2..9 (8 provoked rounds; A cooperated in round 0),
        # B defected in all 8
        "agent_b_retaliation_rate": 1.0,
        "agent_b_forgiveness_rate": 0.0,
        # k = 10 = n: the only window is t = 0 with 1 C among 20 moves = 0.05 <= 0.2
        "time_to_collapse": 0,
        "agent_a_parse_failures": 0,
        "agent_b_parse_failures": 0,
        # round 1: one of two cooperates (0.5); then nobody does
        "cooperation_rate_over_time": [0.5] + [0.0] * 9,
    }
    rows = read_aggregates(tmp_path / "out")
    assert [(r["scope"], r["replicate"]) for r in rows] == [
        ("replicate", 0),
        ("replicate", 1),
        ("condition", None),
    ]
    for row in rows:
        assert row["condition"] == "TFT_vs_ALLD"
        assert row["run_id"] == "itest"
        assert (row["agent_a_name"], row["agent_b_name"]) == ("TFT", "ALLD")
        # both replicates are identical, so the condition mean equals them too
        assert_row_matches(row, expected, f"{row['scope']} {row['replicate']}")
    assert rows[2]["n_replicates"] == 2
    assert rows[0]["n_replicates"] == 1


def test_collapse_params_from_config_change_time_to_collapse(tmp_path: Path) -> None:
    # ALLC vs TFT cooperates forever (coop 1.0 in every window): never collapses.
    # TFT vs ALLD, 10 rounds, k=3, threshold 0.0: window t=0 holds A's C (1/6 > 0); window t=1
    # (rounds 1..3) is all D (0/6 <= 0) -> collapse at 1.
    config = write_config(
        tmp_path,
        [
            condition("ALLC_vs_TFT", policy("ALLC"), policy("TFT")),
            condition("TFT_vs_ALLD", policy("TFT"), policy("ALLD")),
        ],
        replicates=1,
        n_rounds=10,
        collapse={"k": 3, "threshold": 0.0},
    )
    run(config)
    rows = {(r["condition"], r["scope"]): r for r in read_aggregates(tmp_path / "out")}
    assert rows[("ALLC_vs_TFT", "replicate")]["time_to_collapse"] is None
    assert rows[("ALLC_vs_TFT", "condition")]["time_to_collapse"] is None
    # nobody ever defects: no provoked round, so retaliation/forgiveness are undefined
    assert rows[("ALLC_vs_TFT", "replicate")]["agent_a_retaliation_rate"] is None
    assert rows[("ALLC_vs_TFT", "replicate")]["agent_b_forgiveness_rate"] is None
    assert rows[("TFT_vs_ALLD", "replicate")]["time_to_collapse"] == 1
    manifest = read_manifest(tmp_path / "out")
    assert manifest["collapse"] == {"k": 3, "threshold": 0.0}


# --------------------------------------------------------------------------------------------
# horizons, seeds and determinism
# --------------------------------------------------------------------------------------------


def test_geometric_horizon_lengths_follow_the_seeded_stream(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        [
            condition(
                "geo",
                policy("TFT"),
                policy("GTFT"),
                horizon={"type": "geometric", "stop_prob": 0.25},
            ),
            condition(
                "geo_capped",
                policy("WSLS"),
                policy("ALLC"),
                horizon={"type": "geometric", "stop_prob": 0.05, "max_rounds": 3},
            ),
        ],
        replicates=6,
    )
    run(config)
    run_dir = tmp_path / "out"
    manifest = read_manifest(run_dir)
    games = games_of(read_rounds(run_dir))
    rows = {
        (r["condition"], r["replicate"]): r
        for r in read_aggregates(run_dir)
        if r["scope"] == "replicate"
    }
    horizons = {
        "geo": GeometricHorizon(0.25),
        "geo_capped": GeometricHorizon(0.05, 3),
    }
    for cond in manifest["conditions"]:
        name = cond["name"]
        assert [g["replicate"] for g in cond["games"]] == list(range(6))
        seeds = [g["seed"] for g in cond["games"]]
        assert len(set(seeds)) == 6, "each replicate has its own seed"
        lengths = []
        for entry in cond["games"]:
            game = games[(name, entry["replicate"])]
            expected_len = horizons[name].length(entry["seed"])
            assert len(game) == expected_len == entry["n_rounds"], (name, entry)
            assert rows[(name, entry["replicate"])]["n_rounds"] == expected_len
            assert [r["round_index"] for r in game] == list(range(expected_len))
            for rec in game:
                assert rec["seed"] == entry["seed"]
                assert rec["horizon_type"] == "geometric"
                assert rec["fixed_n"] is None
            lengths.append(expected_len)
        if name == "geo":
            assert all(r["stop_prob"] == 0.25 for rep in range(6) for r in games[(name, rep)])
            # seeded: the six replicates do not all last the same number of rounds
            assert len(set(lengths)) > 1, lengths
        else:
            assert max(lengths) <= 3, "max_rounds caps the length"
    assert manifest["totals"]["rounds"] == sum(len(g) for g in games.values())


def _determinism_config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path,
        [
            condition("GTFT_vs_LLM", policy("GTFT"), llm("exploitative", 0.3)),
            condition("LLM_vs_LLM", llm("cooperative", 0.3), llm("generous_tft", 0.3)),
            condition(
                "geo",
                llm("tit_for_tat", 0.3),
                policy("GTFT"),
                horizon={"type": "geometric", "stop_prob": 0.15},
            ),
        ],
        replicates=2,
        n_rounds=15,
    )


def test_same_config_twice_gives_identical_rounds_and_aggregates(tmp_path: Path) -> None:
    config = _determinism_config(tmp_path)
    first = run(config, output_dir=tmp_path / "run1")
    # a second, independent load; also a different concurrency, which must not change anything
    second = run(config, output_dir=tmp_path / "run2", concurrency=1)
    r1 = read_rounds(tmp_path / "run1")
    r2 = read_rounds(tmp_path / "run2")
    assert len(r1) > 0
    assert without_timestamps(r1) == without_timestamps(r2)
    t1 = pq.read_table(tmp_path / "run1" / "aggregates.parquet")
    t2 = pq.read_table(tmp_path / "run2" / "aggregates.parquet")
    assert t1.equals(t2)
    assert first.manifest["config_sha256"] == second.manifest["config_sha256"]
    # the run exercised randomness: GTFT forgave or the mock produced invalid replies somewhere
    assert any(len(a) > 1 for rec in r1 for a in rec.get("raw_responses", {}).values()), (
        "mock invalid replies were expected with invalid_rate 0.3"
    )


def test_adding_a_condition_does_not_change_another_conditions_rounds(tmp_path: Path) -> None:
    target = condition(
        "target",
        llm("cooperative", 0.3),
        policy("GTFT"),
        horizon={"type": "geometric", "stop_prob": 0.1},
    )
    alone = write_config(tmp_path, [copy.deepcopy(target)], file_name="alone.yaml", out="alone")
    # the new condition comes first, so `target` moves from position 0 to position 1
    both = write_config(
        tmp_path,
        [condition("newcomer", policy("GTFT"), llm("exploitative", 0.3)), copy.deepcopy(target)],
        file_name="both.yaml",
        out="both",
    )
    renamed_target = copy.deepcopy(target)
    renamed_target["name"] = "renamed"
    renamed = write_config(tmp_path, [renamed_target], file_name="renamed.yaml", out="renamed")
    run(alone)
    run(both)
    run(renamed)

    alone_rounds = without_timestamps(read_rounds(tmp_path / "alone"))
    both_rounds = without_timestamps(read_rounds(tmp_path / "both"))
    assert {r["condition"] for r in both_rounds} == {"newcomer", "target"}
    assert [r for r in both_rounds if r["condition"] == "target"] == alone_rounds

    alone_rows = read_aggregates(tmp_path / "alone")
    both_rows = [r for r in read_aggregates(tmp_path / "both") if r["condition"] == "target"]
    assert both_rows == alone_rows

    # the stream is keyed by the condition's name: renaming it gives other game seeds
    renamed_seeds = {r["seed"] for r in read_rounds(tmp_path / "renamed")}
    assert renamed_seeds.isdisjoint({r["seed"] for r in alone_rounds})


# --------------------------------------------------------------------------------------------
# re-aggregation
# --------------------------------------------------------------------------------------------


def test_aggregate_run_dir_reproduces_the_runs_aggregates(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        [
            # ALLC vs ALLC: retaliation/forgiveness undefined (None/NaN) and never collapses
            condition("ALLC_vs_ALLC", policy("ALLC"), policy("ALLC")),
            condition("LLM_vs_ALLD", llm("exploitative", 0.5), policy("ALLD")),
            condition(
                "geo",
                policy("GTFT"),
                policy("WSLS"),
                horizon={"type": "geometric", "stop_prob": 0.2},
            ),
        ],
        replicates=3,
        n_rounds=12,
        collapse={"k": 4, "threshold": 0.25},
    )
    summary = run(config)
    run_dir = tmp_path / "out"
    original = pd.read_parquet(run_dir / "aggregates.parquet")
    assert original["agent_a_retaliation_rate"].isna().any()  # the NaN-aware case is exercised

    rows = aggregate_run_dir(run_dir)
    again = pd.read_parquet(run_dir / "aggregates.parquet")
    pd.testing.assert_frame_equal(original, again)
    pd.testing.assert_frame_equal(pd.DataFrame(rows), pd.DataFrame(summary.rows))

    # idempotent: a second pass (and one from scratch) gives the same values
    (run_dir / "aggregates.parquet").unlink()
    rows_twice = aggregate_run_dir(run_dir)
    third = pd.read_parquet(run_dir / "aggregates.parquet")
    pd.testing.assert_frame_equal(original, third)
    pd.testing.assert_frame_equal(pd.DataFrame(rows_twice), pd.DataFrame(rows))

    # the collapse parameters come from the manifest (k=4, threshold 0.25), not the defaults
    games = games_of(read_rounds(run_dir))
    for row in read_aggregates(run_dir):
        if row["scope"] == "replicate":
            expected = independent_metrics(
                games[(row["condition"], row["replicate"])], k=4, threshold=0.25
            )
            assert_metric_equal(row["time_to_collapse"], expected["time_to_collapse"], "ttc")


# --------------------------------------------------------------------------------------------
# parse failures
# --------------------------------------------------------------------------------------------


def test_parse_failures_are_counted_and_every_attempt_is_logged(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        [condition("flaky_vs_ALLD", llm("cooperative", 0.5, max_retries=2), policy("ALLD"))],
        replicates=2,
        n_rounds=30,
    )
    run(config)
    records = read_rounds(tmp_path / "out")
    failed_by_rep = {0: 0, 1: 0}
    for rec in records:
        attempts = rec["raw_responses"]["agent_a"]
        assert [a["attempt"] for a in attempts] == list(range(len(attempts)))
        if rec["agent_a_parse_failure"]:
            failed_by_rep[rec["replicate"]] += 1
            # 1 call + max_retries 2 re-prompts, all invalid
            assert len(attempts) == 3, rec
            assert not any(a["valid"] for a in attempts)
            for a in attempts:
                assert a["raw"].strip().upper() not in ("C", "D")
            # on_parse_failure: defect (llm_default.yaml)
            assert rec["agent_a_intended_action"] == "D"
            assert rec["agent_a_action"] == "D"
        else:
            assert attempts[-1]["valid"] is True
        # re-prompts carry a correction, so their prompt differs from the first one
        for a in attempts[1:]:
            assert a["prompt_sha256"] != attempts[0]["prompt_sha256"]
        assert rec["agent_b_parse_failure"] is False
    total_failed = sum(failed_by_rep.values())
    # with invalid_rate 0.5, a round fails when 3 replies in a row are invalid (p = 1/8):
    # the run must contain at least one such round for this test to mean anything
    assert total_failed > 0
    assert total_failed < len(records)

    rows = read_aggregates(tmp_path / "out")
    reps = {r["replicate"]: r for r in rows if r["scope"] == "replicate"}
    for rep, count in failed_by_rep.items():
        assert reps[rep]["agent_a_parse_failures"] == count
        assert reps[rep]["agent_b_parse_failures"] == 0
    cond = next(r for r in rows if r["scope"] == "condition")
    assert cond["agent_a_parse_failures"] == pytest.approx(total_failed / 2)


def test_on_parse_failure_error_stops_the_run_and_keeps_finished_games(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        [
            condition("policies_first", policy("TFT"), policy("ALLD")),
            condition(
                "always_invalid",
                llm("cooperative", 1.0, on_parse_failure="error"),
                policy("ALLD"),
            ),
        ],
        replicates=2,
        n_rounds=5,
    )
    with pytest.raises(RunError) as info:
        run(config, concurrency=1)
    assert "rounds.jsonl" in str(info.value)
    run_dir = tmp_path / "out"
    manifest = read_manifest(run_dir)
    assert manifest["status"] == "failed"
    assert manifest["error"]
    assert manifest["finished_at_utc"]
    records = read_rounds(run_dir)
    # both replicates of the policy-only condition (2 x 5 rounds) finished before the failure
    assert len(records) == 10
    assert {r["condition"] for r in records} == {"policies_first"}
    assert sorted({(r["replicate"], r["round_index"]) for r in records}) == [
        (rep, i) for rep in (0, 1) for i in range(5)
    ]


# --------------------------------------------------------------------------------------------
# output directory and manifest
# --------------------------------------------------------------------------------------------


def test_non_empty_output_dir_needs_overwrite(tmp_path: Path) -> None:
    config = write_config(
        tmp_path, [condition("TFT_vs_ALLD", policy("TFT"), policy("ALLD"))], n_rounds=5
    )
    run_dir = tmp_path / "out"
    run_dir.mkdir()
    (run_dir / "notes.txt").write_text("keep me")
    with pytest.raises(RunError) as info:
        run(config)
    assert "overwrite" in str(info.value)
    assert not (run_dir / "rounds.jsonl").exists()
    assert not (run_dir / "run_manifest.json").exists()

    run(config, overwrite=True)
    assert len(read_rounds(run_dir)) == 2 * 5
    # a second run over its own artifacts: refused without overwrite, and with it the rounds
    # file is replaced, not appended to
    with pytest.raises(RunError):
        run(config)
    run(config, overwrite=True)
    assert len(read_rounds(run_dir)) == 2 * 5
    assert read_manifest(run_dir)["status"] == "completed"


def test_manifest_records_config_snapshot_hash_and_environment(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        [
            condition("TFT_vs_ALLD", policy("TFT"), policy("ALLD")),
            condition("LLM_vs_GRIM", llm("exploitative"), policy("GRIM")),
        ],
        seed=424242,
        replicates=1,
        n_rounds=6,
        collapse={"k": 5, "threshold": 0.3},
    )
    summary = run(config, replicates=2)
    manifest = read_manifest(tmp_path / "out")
    assert manifest == summary.manifest
    assert manifest["run_id"] == "itest"
    assert manifest["seed"] == 424242
    assert manifest["status"] == "completed"
    assert manifest["replicates"] == 2  # the override, not the config's 1
    assert manifest["collapse"] == {"k": 5, "threshold": 0.3}

    snapshot = manifest["config"]
    assert snapshot["run"]["seed"] == 424242
    conds = snapshot["experiment"]["conditions"]
    assert [c["name"] for c in conds] == ["TFT_vs_ALLD", "LLM_vs_GRIM"]
    for cond in conds:
        for key in ("agent_a", "agent_b"):
            assert isinstance(cond[key], dict)
            assert "ref" not in cond[key] and "overrides" not in cond[key]
    assert conds[0]["agent_a"]["type"] == "policy" and conds[0]["agent_a"]["policy"] == "TFT"
    assert conds[0]["agent_b"]["policy"] == "ALLD"
    llm_agent = conds[1]["agent_a"]
    assert llm_agent["type"] == "llm"
    assert llm_agent["persona"] == "exploitative"  # the override
    assert llm_agent["model"] == "mock-persona-v1"  # from agents/llm_default.yaml
    assert llm_agent["mock"]["invalid_rate"] == 0.0
    assert llm_agent["max_retries"] == 2

    canonical = json.dumps(snapshot, sort_keys=True, separators=(",", ":")).encode()
    assert manifest["config_sha256"] == hashlib.sha256(canonical).hexdigest()

    # a different config gives a different hash
    other = yaml.safe_load(config.read_text())
    other["run"]["seed"] = 424243
    other_path = config.with_name("other.yaml")
    other_path.write_text(yaml.safe_dump(other))
    assert load_config(other_path).config_sha256 != manifest["config_sha256"]

    env = manifest["environment"]
    assert env["python"] == platform.python_version()
    assert env["platform"] == platform.platform()
    assert env["packages"]["pdbench"] == importlib.metadata.version("pdbench")
    assert env["packages"]["pyarrow"] == pyarrow.__version__
    assert env["packages"]["pandas"] == pd.__version__

    # per-game seeds, lengths and totals
    games = {(c["name"], g["replicate"]): g for c in manifest["conditions"] for g in c["games"]}
    assert set(games) == {(n, r) for n in ("TFT_vs_ALLD", "LLM_vs_GRIM") for r in (0, 1)}
    assert all(g["n_rounds"] == 6 for g in games.values())
    assert manifest["totals"]["games"] == 4
    assert manifest["totals"]["rounds"] == 24  # 4 games x 6 rounds
    started = datetime.fromisoformat(manifest["started_at_utc"])
    finished = datetime.fromisoformat(manifest["finished_at_utc"])
    assert started <= finished
