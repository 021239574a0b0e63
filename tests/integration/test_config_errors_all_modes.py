"""Tournament and evolution configs (and what every kind of config shares): every problem is one
`file: dotted.path: message` line, from the one loader; a key that would do nothing is refused
with the reason."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pdbench.errors import ConfigError
from pdbench.runners.config.loader import load_config


def load_tournament(path: Path) -> Any:
    return load_config(path, "tournament")


def load_evolution(path: Path) -> Any:
    return load_config(path, "evolution")


def load_experiment(path: Path) -> Any:
    return load_config(path, "experiment")


REPO = Path(__file__).resolve().parents[2]


def tournament_data(
    players: list[Any] | None = None, horizon: dict[str, Any] | None = None, **section: Any
) -> dict[str, Any]:
    return {
        "run": {"run_id": "t", "seed": 1, "output_dir": "out"},
        "horizon": horizon or {"type": "fixed", "n_rounds": 10},
        "tournament": {"players": players or ["TFT", "ALLD"], **section},
    }


def evolution_data(**section: Any) -> dict[str, Any]:
    population = section.pop(
        "population", [{"player": "TFT", "count": 3}, {"player": "ALLD", "count": 3}]
    )
    return {
        "run": {"run_id": "e", "seed": 1, "output_dir": "out"},
        "horizon": {"type": "fixed", "n_rounds": 10},
        "evolution": {"population": population, "eliminate": 1, **section},
    }


def errors(tmp_path: Path, data: dict[str, Any], loader: Any) -> list[str]:
    shutil.copytree(REPO / "configs", tmp_path / "configs", dirs_exist_ok=True)
    path = tmp_path / "configs" / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as info:
        loader(path)
    lines = info.value.lines()
    assert all("\n" not in line for line in lines)
    return [line.split("bad.yaml: ", 1)[1] if "bad.yaml: " in line else line for line in lines]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            tournament_data(["TFT", "NOPE"]),
            "tournament.players[1].policy: unknown policy (valid: ALLC, ALLD, ALTERNATOR",
        ),
        (
            tournament_data(["TFT", {"type": "robot"}]),
            "tournament.players[1].type: unknown agent type (valid: policy, llm, axelrod, human) (got 'robot')",
        ),
        (tournament_data(["TFT", 5]), "tournament.players[1]: an agent is a policy name"),
        (
            tournament_data(["TFT", {"type": "policy", "policy": "TFT", "colour": 1}]),
            "tournament.players[1].colour: unknown key (valid: type, policy, name, history_window, params, "
            "talk, talk_text)",
        ),
        (
            tournament_data(
                ["TFT", {"type": "policy", "policy": "GTFT", "params": {"generous_prob": 2}}]
            ),
            "tournament.players[1].params.generous_prob: Input should be less than or equal to 1 (got 2)",
        ),
        (
            tournament_data(["TFT", "TFT"]),
            "tournament.players[1]: duplicate player name 'TFT' (same as entry 0)",
        ),
        (tournament_data(["TFT"]), "tournament.players: List should have at least 2 items"),
        (
            tournament_data(repetitions=0),
            "tournament.repetitions: Input should be greater than or equal to 1 (got 0)",
        ),
        (
            tournament_data(rounds=3),
            "tournament.rounds: unknown key (valid: players, repetitions, self_play, log_rounds)",
        ),
        (
            tournament_data(["TFT", "axelrod:Probber"]),
            "tournament.players[1].strategy: unknown Axelrod strategy 'Probber' (close: Prober",
        ),
        (
            tournament_data(
                ["TFT", {"ref": "agents/llm_default.yaml", "overrides": {"persona": "nobody"}}]
            ),
            "tournament.players[1].overrides.persona: unknown persona (valid: cooperative,",
        ),
    ],
)
def test_tournament_errors(tmp_path: Path, data: dict[str, Any], expected: str) -> None:
    lines = errors(tmp_path, data, load_tournament)
    assert len(lines) == 1, lines
    assert expected in lines[0] or lines[0].startswith(expected), lines


def test_override_errors_name_the_referencing_file(tmp_path: Path) -> None:
    data = tournament_data(
        ["TFT", {"ref": "agents/llm_default.yaml", "overrides": {"tempreature": 1}}]
    )
    lines = errors(tmp_path, data, load_tournament)
    assert len(lines) == 1
    assert lines[0].startswith("tournament.players[1].overrides.tempreature: override of a key")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            evolution_data(process="darwin"),
            "evolution.process: Input should be 'moran', 'wright_fisher' or 'eliminate_clone' (got 'darwin')",
        ),
        (
            evolution_data(eliminate=4),
            "evolution.eliminate: must be at most half the population, 3 (got 4)",
        ),
        (
            evolution_data(eliminate=0),
            "evolution.eliminate: Input should be greater than or equal to 1 (got 0)",
        ),
        (
            evolution_data(population=[{"player": "TFT", "count": 1}]),
            "evolution.population: needs at least 2 individuals (got 1)",
        ),
        (
            evolution_data(
                population=[{"player": "TFT", "count": -1}, {"player": "ALLD", "count": 3}]
            ),
            "evolution.population[0].count: Input should be greater than or equal to 0 (got -1)",
        ),
        (
            evolution_data(
                population=[{"player": "XYZ", "count": 2}, {"player": "ALLD", "count": 3}]
            ),
            "evolution.population[0].player.policy: unknown policy",
        ),
        (
            evolution_data(
                population=[
                    {
                        "player": {
                            "type": "policy",
                            "policy": "RANDOM",
                            "params": {"coop_prob": 7},
                        },
                        "count": 2,
                    },
                    {"player": "ALLD", "count": 3},
                ]
            ),
            "evolution.population[0].player.params.coop_prob: Input should be less than or equal to 1 (got 7)",
        ),
        (
            evolution_data(fitness="guess"),
            "evolution.fitness: Input should be 'expected' or 'sampled' (got 'guess')",
        ),
        (
            evolution_data(mutation_rate=1.5),
            "evolution.mutation_rate: Input should be less than or equal to 1 (got 1.5)",
        ),
    ],
)
def test_evolution_errors(tmp_path: Path, data: dict[str, Any], expected: str) -> None:
    lines = errors(tmp_path, data, load_evolution)
    assert len(lines) == 1, lines
    assert lines[0].startswith(expected), lines


def test_several_problems_are_all_reported(tmp_path: Path) -> None:
    data = tournament_data(["TFT", "NOPE", "ALSO_NOPE"])
    lines = errors(tmp_path, data, load_tournament)
    assert [line.split(":")[0] for line in lines] == [
        "tournament.players[1].policy",
        "tournament.players[2].policy",
    ]


def test_example_configs_validate() -> None:
    assert load_tournament(REPO / "configs" / "tournament.yaml").names
    evolution = load_evolution(REPO / "configs" / "evolution.yaml")
    raw = yaml.safe_load((REPO / "configs" / "evolution.yaml").read_text())
    assert evolution.names == [m["player"] for m in raw["evolution"]["population"]]
    section = evolution.config.evolution
    assert (section.process, section.n_eliminated, evolution.config.horizon.n_rounds) == (
        "eliminate_clone",
        5,
        raw["horizon"]["n_rounds"],
    )
    assert sum(m.count for m in section.population) == 25 and evolution.config.game.noise == 0.0


def experiment_data(**extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "run": {"run_id": "x", "seed": 1, "output_dir": "out"},
        "horizon": {"type": "fixed", "n_rounds": 10},
        "experiment": {"conditions": [{"name": "c", "agent_a": "TFT", "agent_b": "ALLD"}]},
    }
    for key, value in extra.items():
        data[key] = value
    return data


@pytest.mark.parametrize(
    ("data", "loader", "expected"),
    [
        # Keys that would do nothing are refused, with the reason.
        (
            experiment_data(metrics={"report": ["cooperation_rate"]}),
            load_experiment,
            "metrics.report: removed: every metric is always computed and written to "
            "aggregates.parquet (got ['cooperation_rate'])",
        ),
        (
            experiment_data(horizon={"type": "fixed", "n_rounds": 10, "stop_prob": 0.1}),
            load_experiment,
            "horizon.stop_prob: only a geometric horizon uses it;",
        ),
        (
            tournament_data(horizon={"type": "geometric", "stop_prob": 0.1, "n_rounds": 9}),
            load_tournament,
            "horizon.n_rounds: a geometric horizon does not use it",
        ),
        (
            tournament_data(
                ["ALLD", {"type": "policy", "policy": "TFT", "params": {"coop_prob": 0.3}}]
            ),
            load_tournament,
            "tournament.players[1].params.coop_prob: TFT does not use it (used by: RANDOM); "
            "set it to null (got 0.3)",
        ),
        (
            evolution_data(process="moran", eliminate=2),
            load_evolution,
            "evolution.eliminate: only process eliminate_clone uses it",
        ),
        # A config of another kind names the command that runs it.
        (
            tournament_data(),
            load_experiment,
            "tournament: this is a tournament config; run it with `pdbench tournament`",
        ),
        (
            {"run": {"run_id": "x", "seed": 1, "output_dir": "o"}, "horizon": {"n_rounds": 3}},
            load_experiment,
            "needs exactly one of the sections experiment, tournament, evolution",
        ),
    ],
)
def test_keys_that_do_nothing_and_wrong_kinds(
    tmp_path: Path, data: dict[str, Any], loader: Any, expected: str
) -> None:
    lines = errors(tmp_path, data, loader)
    assert len(lines) == 1, lines
    assert lines[0].startswith(expected), lines


def test_every_mode_accepts_every_agent_form(tmp_path: Path) -> None:
    """Shorthands and full mappings are the same agents in experiments, tournaments and
    evolutions (one agent model, one factory)."""
    shutil.copytree(REPO / "configs", tmp_path / "configs", dirs_exist_ok=True)
    llm = {"ref": "agents/llm_default.yaml", "overrides": {"persona": "wsls", "name": "m"}}
    experiment = experiment_data()
    experiment["experiment"]["conditions"].append({"name": "d", "agent_a": llm, "agent_b": "GTFT"})
    path = tmp_path / "configs" / "all.yaml"
    for data, kind in (
        (experiment, "experiment"),
        (tournament_data(["TFT", "ALLD", llm]), "tournament"),
        (
            evolution_data(population=[{"player": "TFT", "count": 3}, {"player": llm, "count": 3}]),
            "evolution",
        ),
    ):
        path.write_text(yaml.safe_dump(data))
        loaded = load_config(path)
        assert loaded.kind == kind
        names = [spec.name for spec in loaded.agents.values()]
        assert "m" in names and "TFT" in names
        llm_spec = next(spec for spec in loaded.agents.values() if spec.name == "m")
        assert llm_spec.templates is not None and "wsls" in llm_spec.templates.persona.lower()
