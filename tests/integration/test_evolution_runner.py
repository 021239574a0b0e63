"""Evolution runs: artifacts, the classic lessons with the example config, neutral fixation,
LLM members drawn from a pool of played matches."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
import yaml
from tests.support.configs import execute

from pdbench.runners.config.loader import load_config
from pdbench.runners.plan import shares_table
from pdbench.runners.science.evolve import simulate_evolution


def load_evolution(path: Path, **overrides: Any) -> Any:
    dotted = {"seed": "run.seed", "noise": "game.noise"}
    return load_config(path, "evolution", {dotted[k]: v for k, v in overrides.items()})


REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "configs" / "evolution.yaml"


def write_config(tmp_path: Path, population: list[dict[str, Any]], **evolution: Any) -> Path:
    shutil.copytree(REPO / "configs", tmp_path / "configs", dirs_exist_ok=True)
    horizon = evolution.pop("horizon", {"type": "fixed", "n_rounds": 10})
    noise = evolution.pop("noise", 0.0)
    data = {
        "run": {"run_id": "e", "seed": 3, "output_dir": str(tmp_path / "out")},
        "game": {"noise": noise},
        "horizon": horizon,
        "evolution": {"population": population, **evolution},
    }
    path = tmp_path / "configs" / "e.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def top(result: Any) -> str:
    return max(result.final_counts, key=result.final_counts.get)


def test_example_writes_artifacts(tmp_path: Path) -> None:
    result = execute(EXAMPLE, output_dir=tmp_path / "evo")
    table = pq.read_table(tmp_path / "evo" / "generations.parquet").to_pydict()
    assert list(table) == ["generation", "strategy", "count", "share", "mean_fitness"]
    first = {
        s: c
        for g, s, c in zip(table["generation"], table["strategy"], table["count"], strict=True)
        if g == 0
    }
    # The starting counts are the config's, read here straight from the YAML.
    members = yaml.safe_load(EXAMPLE.read_text())["evolution"]["population"]
    assert first == {m["player"]: m["count"] for m in members}
    for g in set(table["generation"]):
        assert (
            sum(c for gg, c in zip(table["generation"], table["count"], strict=True) if gg == g)
            == 25
        )
    manifest = orjson.loads((tmp_path / "evo" / "evolution_manifest.json").read_bytes())
    assert manifest["process"] == "eliminate_clone" and manifest["fitness"] == "sampled"
    assert manifest["final_counts"] == result.final_counts
    assert manifest["status"] == "completed" and manifest["kind"] == "evolution"
    text = shares_table(result.rows, result.strategies, result.final_counts)
    assert text.splitlines()[2].split()[0] == top(result)


def test_classic_lessons_with_the_example_defaults() -> None:
    # Without noise, TFT ("copycat") takes over; with 5% noise the forgiving GTFT / TF2T / WSLS
    # end on top instead. Checked over ten seeds: each lesson must hold in a clear majority.
    no_noise = [simulate_evolution(load_evolution(EXAMPLE, seed=s)) for s in range(1, 11)]
    noisy = [simulate_evolution(load_evolution(EXAMPLE, noise=0.05, seed=s)) for s in range(1, 11)]
    assert sum(top(r) == "TFT" for r in no_noise) >= 7
    assert sum(r.fixated == "TFT" for r in no_noise) >= 6
    assert sum(top(r) in ("GTFT", "TF2T", "WSLS") for r in noisy) >= 6
    assert all(r.final_counts["ALLD"] == 0 and r.final_counts["ALLC"] == 0 for r in no_noise)


def test_neutral_moran_with_two_copies_of_tft(tmp_path: Path) -> None:
    # Two TFT types under different names have equal fitness: each fixes with probability in
    # proportion to its initial count (1 of 4 here). 300 seeds; binomial 4-sigma bound.
    population = [
        {"player": {"type": "policy", "policy": "TFT", "name": "TFT-a"}, "count": 1},
        {"player": {"type": "policy", "policy": "TFT", "name": "TFT-b"}, "count": 3},
    ]
    path = write_config(tmp_path, population, process="moran", generations=10_000, repetitions=1)
    runs = 300
    wins = sum(
        simulate_evolution(load_evolution(path, seed=s)).fixated == "TFT-a" for s in range(runs)
    )
    assert abs(wins / runs - 0.25) <= 4 * math.sqrt(0.25 * 0.75 / runs)


def test_wright_fisher_expected_fitness(tmp_path: Path) -> None:
    population = [{"player": "ALLD", "count": 5}, {"player": "ALLC", "count": 5}]
    loaded = load_evolution(
        write_config(tmp_path, population, process="wright_fisher", generations=30)
    )
    result = simulate_evolution(loaded)
    # Expected payoffs per round (10 rounds, no noise): ALLD vs ALLC 5, ALLC vs ALLD 0,
    # ALLC vs ALLC 3, ALLD vs ALLD 1.
    assert result.payoff.tolist() == [[1.0, 5.0], [0.0, 3.0]]
    assert result.fixated == "ALLD"


def test_llm_members_draw_from_a_pool(tmp_path: Path) -> None:
    llm = {
        "ref": "agents/llm_default.yaml",
        "overrides": {"persona": "tit_for_tat", "name": "mock-tft", "mock": {"invalid_rate": 0.0}},
    }
    population = [
        {"player": llm, "count": 2},
        {"player": "ALLD", "count": 2},
        {"player": "TFT", "count": 2},
    ]
    loaded = load_evolution(
        write_config(
            tmp_path,
            population,
            eliminate=1,
            generations=4,
            repetitions=2,
            horizon={"type": "fixed", "n_rounds": 5},
        )
    )
    result = simulate_evolution(loaded)
    assert result.manifest["fitness"] == "sampled"
    # The pool was played once: mock-tft copies like TFT, so against ALLD it gets 0 + 4 x 1 = 4
    # in 5 rounds (0.8 per round) and against TFT 3 per round.
    assert result.payoff[0, 1] == pytest.approx(0.8) and result.payoff[0, 2] == pytest.approx(3.0)
    assert sum(result.final_counts.values()) == 6
