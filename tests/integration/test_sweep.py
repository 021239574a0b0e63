"""Parameter sweeps (`experiment.sweep`): conditions expand to the product of the values, each
named from its base name and coordinates and validated like a hand-written one (errors name the
sweep entry); aggregates.parquet gets one column per swept path; extending a sweep changes no
finished game (seeds derive from condition names)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from tests.support.cli import run_in_process
from tests.support.configs import llm, policy, write_config

from pdbench.core.sweep import expand_sweep, value_text
from pdbench.errors import ConfigError
from pdbench.runners.config.loader import load_config


def config(tmp_path: Path, sweep: dict[str, list[Any]], only: list[str] | None = None) -> Path:
    data: dict[str, Any] = {
        "run": {"run_id": "sweep", "seed": 5, "output_dir": str(tmp_path / "run")},
        "horizon": {"type": "fixed", "n_rounds": 12},
        "experiment": {
            "replicates": 2,
            "sweep": sweep,
            "conditions": [
                {
                    "name": "llm_vs_random",
                    "agent_a": llm("cooperative"),
                    "agent_b": policy("RANDOM"),
                },
                {"name": "tft_vs_alld", "agent_a": policy("TFT"), "agent_b": policy("ALLD")},
            ],
        },
    }
    if only is not None:
        data["experiment"]["sweep_conditions"] = only
    return write_config(data, tmp_path)


def test_expansion_names_and_values_by_hand() -> None:
    base = [{"name": "c", "agent_a": {"temperature": 0.0}, "agent_b": {"params": {}}}]
    result = expand_sweep(
        base, {"agent_a.overrides.temperature": [0.0, 0.7], "game.noise": [0.1]}, None
    )
    assert [c["name"] for c in result.conditions] == [
        "c+temperature_0+noise_0.1",
        "c+temperature_0.7+noise_0.1",
    ]
    assert result.conditions[1]["agent_a"]["temperature"] == 0.7
    assert result.conditions[1]["noise"] == 0.1
    assert result.coordinates["c+temperature_0.7+noise_0.1"] == {
        "agent_a.overrides.temperature": 0.7,
        "game.noise": 0.1,
    }
    assert base[0]["agent_a"]["temperature"] == 0.0  # the input is not changed
    # Two paths that end alike are told apart by their whole path.
    twin = expand_sweep(base, {"agent_a.x": [1], "agent_b.x": [2]}).conditions[0]["name"]
    assert twin == "c+agent_a_x_1+agent_b_x_2"
    assert value_text("generous tft/2") == "generous-tft-2"


def test_a_2x3_sweep_runs_and_aggregates_carry_the_coordinates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config(
        tmp_path,
        {
            "agent_a.overrides.persona": ["cooperative", "exploitative"],
            "agent_b.overrides.params.coop_prob": [0.2, 0.5, 0.8],
        },
        only=["llm_vs_random"],
    )
    code, out, err = run_in_process(["run", str(path)], capsys)
    assert code == 0, err
    rows = pq.read_table(tmp_path / "run" / "aggregates.parquet").to_pylist()
    conditions = [r for r in rows if r["scope"] == "condition"]
    assert len(conditions) == 2 * 3 + 1
    swept = [r for r in conditions if r["condition"].startswith("llm_vs_random+")]
    assert {
        (r["agent_a.overrides.persona"], r["agent_b.overrides.params.coop_prob"]) for r in swept
    } == {(p, q) for p in ("cooperative", "exploitative") for q in (0.2, 0.5, 0.8)}
    plain = next(r for r in conditions if r["condition"] == "tft_vs_alld")
    assert plain["agent_a.overrides.persona"] is None
    # The sweep value reached the agent: RANDOM(0.8) cooperates more than RANDOM(0.2).
    by_q = {
        r["agent_b.overrides.params.coop_prob"]: r["agent_b_cooperation_rate"]
        for r in swept
        if r["agent_a.overrides.persona"] == "cooperative"
    }
    assert by_q[0.2] < by_q[0.8]
    manifest = json.loads((tmp_path / "run" / "run_manifest.json").read_text())
    entry = next(c for c in manifest["conditions"] if c["name"] == swept[0]["condition"])
    assert set(entry["sweep"]) == {
        "agent_a.overrides.persona",
        "agent_b.overrides.params.coop_prob",
    }
    # `pdbench aggregate` rebuilds the same columns from the manifest.
    code, _, err = run_in_process(["aggregate", str(tmp_path / "run")], capsys)
    assert code == 0, err
    again = pq.read_table(tmp_path / "run" / "aggregates.parquet").to_pylist()
    assert again == rows


def records(run_dir: Path) -> dict[tuple[str, int, int], dict[str, Any]]:
    out = {}
    for line in (run_dir / "rounds.jsonl").read_text().splitlines():
        r = json.loads(line)
        r.pop("timestamp_utc")
        out[(r["condition"], r["replicate"], r["round_index"])] = r
    return out


def test_extending_a_sweep_changes_no_finished_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    only = ["llm_vs_random"]
    small = config(tmp_path / "a", {"agent_b.overrides.params.coop_prob": [0.2, 0.5]}, only)
    bigger = config(tmp_path / "b", {"agent_b.overrides.params.coop_prob": [0.2, 0.5, 0.9]}, only)
    for path in (small, bigger):
        code, _, err = run_in_process(["run", str(path)], capsys)
        assert code == 0, err
    first, second = records(tmp_path / "a" / "run"), records(tmp_path / "b" / "run")
    assert set(first) < set(second)
    assert all(second[key] == value for key, value in first.items())


def test_errors_name_the_sweep_entry(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(
            config(tmp_path / "a", {"agent_a.overrides.temperature": [0.5, 9.0]}, ["llm_vs_random"])
        )
    lines = info.value.lines()
    assert len(lines) == 1  # only the value 9.0 is out of range
    assert "temperature" in lines[0]
    assert "from experiment.sweep (agent_a.overrides.temperature=9.0)" in lines[0]
    assert "'llm_vs_random+temperature_9'" in lines[0]
    # Sweeping a setting into a condition whose agent does not take it: named per condition.
    with pytest.raises(ConfigError) as info:
        load_config(config(tmp_path / "b", {"agent_b.overrides.params.coop_prob": [0.3]}))
    (line,) = info.value.lines()
    assert "ALLD does not use it" in line and "'tft_vs_alld+coop_prob_0.3'" in line
    with pytest.raises(ConfigError) as info:
        load_config(config(tmp_path / "c", {"foo.bar": [1]}))
    assert "experiment.sweep.foo.bar: must start with" in "\n".join(info.value.lines())
    with pytest.raises(ConfigError) as info:
        load_config(config(tmp_path / "d", {"game.noise": [0.1]}, only=["nope"]))
    assert "no condition named 'nope'" in "\n".join(info.value.lines())


def test_dry_run_counts_games_calls_and_tokens_per_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config(
        tmp_path, {"agent_b.overrides.params.coop_prob": [0.2, 0.5, 0.8]}, ["llm_vs_random"]
    )
    code, out, err = run_in_process(["run", str(path), "--dry-run"], capsys)
    assert code == 0, err
    # 3 swept conditions x 2 replicates = 6 games with one LLM agent, 12 rounds each: 72 calls,
    # up to 3x that with the mock agent's 2 parse retries.
    line = next(x for x in out.splitlines() if x.strip().startswith("mock:mock-persona-v1:"))
    assert "6 agent-games, 72 calls (up to 216)" in line
    assert "$0.0000" in line  # the mock is free
    assert not (tmp_path / "run").exists()
