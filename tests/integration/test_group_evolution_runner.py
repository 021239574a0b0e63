"""Group evolution runs: the payoff table of unconditional groups equals the game's own table
(`unconditional_payoffs`, an independent route), the exact fixation probability from any start
agrees with `fixation_probability` and with neutral drift, the fixation table agrees with
`fixation_statistics` and brackets the exact number, and a seed replays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from pdbench.core.group_evolution import fixation_probability, unconditional_payoffs
from pdbench.core.group_game import GroupGame
from pdbench.core.group_process import fixation_statistics
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.rng import derive_seed
from pdbench.core.stats import wilson_interval
from pdbench.runners.config.loader import load_config
from pdbench.runners.lifecycle.session import RunOptions
from pdbench.runners.science.group_evolve import (
    exact_fixation,
    plan_compositions,
    run_group_evolve,
)


def config(
    tmp_path: Path, population: list[dict[str, Any]], name: str = "cfg", **section: Any
) -> Path:
    data = {
        "run": {"run_id": name, "seed": section.pop("seed", 3), "output_dir": "out"},
        "game": {"noise": section.pop("noise", 0.0)},
        "horizon": section.pop("horizon", {"type": "fixed", "n_rounds": 5}),
        "group_game": section.pop("group_game", {"kind": "linear_pd"}),
        "group_evolution": {"population": population, **section},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def evolve(tmp_path: Path, path: Path, out: str = "run") -> Any:
    return run_group_evolve(load_config(path, "evolution"), RunOptions(output_dir=tmp_path / out))


C_AND_D = [{"player": "ALLC", "count": 6}, {"player": "ALLD", "count": 6}]


@pytest.mark.parametrize(
    ("group_game", "n", "game"),
    [
        ({"kind": "linear_pd"}, 3, GroupGame.linear_pd(3, PayoffMatrix())),
        ({"kind": "public_goods", "r": 3.0}, 4, GroupGame.public_goods(4, 3.0)),
        ({"kind": "volunteer", "b": 2.0, "c": 0.5}, 5, GroupGame.volunteer(5, 2.0, 0.5)),
        ({"kind": "stag_hunt", "threshold": 2, "r": 3.0}, 4, GroupGame.stag_hunt(4, 2, 3.0)),
    ],
)
def test_unconditional_groups_give_the_games_own_table(
    tmp_path: Path, group_game: dict[str, Any], n: int, game: GroupGame
) -> None:
    path = config(tmp_path, C_AND_D, group_game=group_game, group_size=n, generations=0)
    result = evolve(tmp_path, path)
    np.testing.assert_allclose(result.table, unconditional_payoffs(game), rtol=0, atol=1e-12)
    rows = pq.read_table(tmp_path / "run" / "payoff_table.parquet").to_pylist()
    assert len(rows) == 2 * (n + 1)
    first = [r for r in rows if r["composition"] == 0]  # all cooperators: (N, 0)
    assert first[0]["payoff_per_round"] == pytest.approx(game.all_cooperate())
    assert first[1]["count"] == 0 and first[1]["payoff_per_round"] is None


def test_compositions_seat_types_in_population_order(tmp_path: Path) -> None:
    population = [{"player": "TFT", "count": 2}, {"player": "ALLD", "count": 2}]
    loaded = load_config(config(tmp_path, population, group_size=3, repetitions=2), "evolution")
    plans = plan_compositions(loaded)
    assert [p.condition for p in plans[::2]] == [
        "TFT_vs_TFT_vs_TFT",
        "TFT_vs_TFT_vs_ALLD",
        "TFT_vs_ALLD_vs_ALLD",
        "ALLD_vs_ALLD_vs_ALLD",
    ]
    assert [p.replicate for p in plans[:2]] == [0, 1]


def test_exact_fixation_from_any_start() -> None:
    table = unconditional_payoffs(GroupGame.public_goods(4, 3.0))
    z, n, beta = 12, 4, 0.7
    one = fixation_probability(0, 1, table, n, z, beta)
    assert exact_fixation(1, table, n, z, beta) == pytest.approx(one, rel=1e-12)
    # from Z-1 of type 0, type 1 is the single invader
    last = 1.0 - fixation_probability(1, 0, table, n, z, beta)
    assert exact_fixation(z - 1, table, n, z, beta) == pytest.approx(last, rel=1e-12)
    for k in (0, 3, 7, 12):  # neutral drift: k / Z
        assert exact_fixation(k, table, n, z, 0.0) == pytest.approx(k / z)
    starts = [exact_fixation(k, table, n, z, beta) for k in range(z + 1)]
    assert starts == sorted(starts)  # more of type 0 at the start: more likely it fixes


@pytest.mark.parametrize(("process", "beta"), [("pairwise_comparison", 1.0), ("moran", 0.5)])
def test_fixation_over_seeds_matches_core_and_the_exact_number(
    tmp_path: Path, process: str, beta: float
) -> None:
    population = [{"player": "CC", "count": 4}, {"player": "ALLD", "count": 4}]
    path = config(
        tmp_path,
        population,
        group_game={"kind": "public_goods", "r": 3.0},
        group_size=3,
        process=process,
        beta=beta,
        generations=20_000,
        seeds=300,
    )
    result = evolve(tmp_path, path)
    rows = pq.read_table(tmp_path / "run" / "fixation.parquet").to_pylist()
    stats = fixation_statistics(
        [4, 4],
        result.table,
        3,
        [derive_seed(3, "group_evolution", k) for k in range(300)],
        process,
        20_000,
        beta,
    )
    assert [r["fixations"] for r in rows] == [*stats.fixations, stats.unfixed]
    exact = exact_fixation(4, result.table, 3, 8, beta)
    assert rows[0]["exact_probability"] == pytest.approx(exact)
    assert rows[1]["exact_probability"] == pytest.approx(1 - exact)
    assert rows[2]["strategy"] == "(no fixation)" and rows[2]["fixations"] == 0
    # the simulated share agrees with the exact probability (a 99.9% Wilson interval: the
    # seeds are fixed, so this fails for a wrong process or formula, not by chance)
    low, high = wilson_interval(rows[0]["fixations"], 300, level=0.999)
    assert low <= exact <= high


def test_no_exact_number_where_it_does_not_apply(tmp_path: Path) -> None:
    path = config(tmp_path, C_AND_D, process="wright_fisher", seeds=3, generations=200)
    evolve(tmp_path, path)
    rows = pq.read_table(tmp_path / "run" / "fixation.parquet").to_pylist()
    assert all(r["exact_probability"] is None for r in rows)


def test_mutation_writes_no_fixation_table(tmp_path: Path) -> None:
    path = config(tmp_path, C_AND_D, mutation_rate=0.05, seeds=2, generations=50)
    result = evolve(tmp_path, path)
    assert not (tmp_path / "run" / "fixation.parquet").exists()
    assert result.fixation is None
    assert all(len(p) == 51 for p in result.paths)  # mutation: every generation runs


def test_same_seed_replays_and_every_seed_is_written(tmp_path: Path) -> None:
    population = [{"player": "TFT", "count": 5}, {"player": "RANDOM", "count": 5}]
    path = config(tmp_path, population, noise=0.1, repetitions=3, seeds=4, generations=300)
    evolve(tmp_path, path, "one")
    evolve(tmp_path, path, "two")
    for name in ("payoff_table.parquet", "generations.parquet", "fixation.parquet"):
        one = pq.read_table(tmp_path / "one" / name).to_pylist()
        assert one == pq.read_table(tmp_path / "two" / name).to_pylist(), name
    gens = pq.read_table(tmp_path / "one" / "generations.parquet").to_pylist()
    assert sorted({r["seed"] for r in gens}) == [0, 1, 2, 3]
    start = [r for r in gens if r["generation"] == 0 and r["seed"] == 2]
    assert [(r["strategy"], r["count"], r["share"]) for r in start] == [
        ("TFT", 5, 0.5),
        ("RANDOM", 5, 0.5),
    ]
