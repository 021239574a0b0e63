"""Group tournament and group evolution configs: every problem is one `file: dotted.path: message
(got value)` line from the one loader, and each kind is run by its own command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pdbench.errors import ConfigError
from pdbench.runners.config.loader import load_config


def tournament(players: list[Any] | None = None, **section: Any) -> dict[str, Any]:
    data = {
        "run": {"run_id": "t", "seed": 1, "output_dir": "out"},
        "horizon": {"type": "fixed", "n_rounds": 10},
        "group_tournament": {"players": players or ["TFT", "ALLD", "CC"], **section},
    }
    if "group_game" in section:
        data["group_game"] = data["group_tournament"].pop("group_game")  # type: ignore[attr-defined]
    return data


def evolution(population: list[Any] | None = None, **section: Any) -> dict[str, Any]:
    data = {
        "run": {"run_id": "e", "seed": 1, "output_dir": "out"},
        "horizon": {"type": "fixed", "n_rounds": 10},
        "group_evolution": {
            "population": population
            or [{"player": "TFT", "count": 3}, {"player": "ALLD", "count": 3}],
            **section,
        },
    }
    if "group_game" in section:
        data["group_game"] = data["group_evolution"].pop("group_game")  # type: ignore[attr-defined]
    return data


def lines_of(tmp_path: Path, data: dict[str, Any], kind: str | None) -> list[str]:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as info:
        load_config(path, kind)
    lines = info.value.lines()
    assert all("\n" not in line for line in lines)
    assert all(line.startswith(f"{path}: ") for line in lines), lines
    return [line.removeprefix(f"{path}: ") for line in lines]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            tournament(group_size=4),
            "group_tournament.group_size: groups of distinct players need at most as many seats "
            "as players (3); lower it or set with_replacement: true (got 4)",
        ),
        (
            tournament(group_size=1),
            "group_tournament.group_size: Input should be greater than or equal to 2 (got 1)",
        ),
        (
            tournament(["TFT", "NOPE"], group_size=2),
            "group_tournament.players[1].policy: unknown group policy (valid: ALLC, ALLD, CC, "
            "GRIM, RANDOM, TFT, WSLS) (got 'NOPE')",
        ),
        (
            tournament(["TFT", "TFT", "ALLD"]),
            "group_tournament.players[1]: duplicate player name 'TFT' (same as entry 0); give "
            "one of them a distinct `name`",
        ),
        (
            tournament(["TFT", "axelrod:Prober"], group_size=2),
            "group_tournament.players[1]: Axelrod strategies play pairs only (the library has no "
            "N-player games); seat a group policy or an LLM agent (got axelrod:Prober)",
        ),
        (
            tournament(group_game={"kind": "matrix"}),
            "group_game: a matrix game has two players (got 3 seats)",
        ),
        (
            tournament(group_game={"kind": "public_goods"}),
            "group_game.r: a public_goods game needs it (got None)",
        ),
        (
            tournament(rounds=3),
            "group_tournament.rounds: unknown key (valid: players, group_size, with_replacement, "
            "repetitions, log_rounds)",
        ),
    ],
)
def test_group_tournament_errors(tmp_path: Path, data: dict[str, Any], expected: str) -> None:
    assert lines_of(tmp_path, data, "tournament") == [expected]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            evolution(process="pairwise_comparison"),
            "group_evolution.beta: the pairwise_comparison process needs a selection intensity "
            ">= 0 (null is fitness-proportional selection, for moran and wright_fisher) "
            "(got None)",
        ),
        (
            evolution(group_size=7),
            "group_evolution.population: 6 individuals cannot form groups of 7; add individuals "
            "or lower group_size (got 6)",
        ),
        (
            evolution(beta=-1),
            "group_evolution.beta: Input should be greater than or equal to 0 (got -1)",
        ),
        (
            evolution(process="eliminate_clone"),
            "group_evolution.process: Input should be 'moran', 'wright_fisher' or "
            "'pairwise_comparison' (got 'eliminate_clone')",
        ),
        (
            evolution([{"player": "TFT", "count": 3}]),
            "group_evolution.population: List should have at least 2 items after validation, not 1 "
            "(got [{'count': 3, 'player': 'TFT'}])",
        ),
        (
            evolution([{"player": "TFT", "count": 3}, {"player": "TFT", "count": 2}]),
            "group_evolution.population[1].player: duplicate player name 'TFT' (same as entry 0);"
            " give one of them a distinct `name`",
        ),
    ],
)
def test_group_evolution_errors(tmp_path: Path, data: dict[str, Any], expected: str) -> None:
    assert lines_of(tmp_path, data, "evolution") == [expected]


@pytest.mark.parametrize(
    ("data", "command", "expected"),
    [
        (
            tournament(),
            "experiment",
            "group_tournament: this is a group_tournament config; run it with `pdbench tournament`",
        ),
        (
            evolution(),
            "tournament",
            "group_evolution: this is a group_evolution config; run it with `pdbench evolve`",
        ),
    ],
)
def test_each_kind_has_its_command(
    tmp_path: Path, data: dict[str, Any], command: str, expected: str
) -> None:
    assert lines_of(tmp_path, data, command) == [expected]


def test_command_line_options_reach_the_group_section(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(yaml.safe_dump(tournament()))
    loaded = load_config(path, "tournament", {"tournament.repetitions": 7})
    assert loaded.config.group_tournament.repetitions == 7
    assert loaded.overrides == {"group_tournament.repetitions": 7}
    path.write_text(yaml.safe_dump(evolution()))
    loaded = load_config(path, "evolution", {"evolution.seeds": 4, "run.seed": 9})
    assert (loaded.config.group_evolution.seeds, loaded.config.run.seed) == (4, 9)
