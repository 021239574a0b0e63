"""A config given as a mapping (`load_mapping`, what the app's forms check) is loaded as the same
mapping written as YAML into the same directory would be: the same config, and for a bad one the
same one-line messages, with the mapping's name where the file's name would be. The oracle is
`load_config` of that file, read from its own directory (so the file's name is just `x.yaml`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from tests.support.configs import experiment, llm, policy, write_config

from pdbench.errors import ConfigError
from pdbench.runners.config.loader import load_config, load_mapping


def _tft_alld(**changes: Any) -> dict[str, Any]:
    return experiment([("c", policy("TFT"), policy("ALLD"))], **changes)


def _bad_replicates() -> dict[str, Any]:
    data = _tft_alld()
    data["experiment"]["replicates"] = 0
    return data


def _unknown_key() -> dict[str, Any]:
    data = _tft_alld()
    data["game"]["nosie"] = 0.1
    return data


def _override_missing_key() -> dict[str, Any]:
    data = experiment([("c", llm(no_such_key=1), policy("ALLD"))])
    return data


def _ref_outside_root() -> dict[str, Any]:
    return experiment([("c", {"ref": "../../elsewhere.yaml"}, policy("ALLD"))])


def _unknown_policy_and_persona() -> dict[str, Any]:
    return experiment([("c", policy("NOPE"), llm(persona="nobody"))])


def _tournament_duplicate_names() -> dict[str, Any]:
    data = _tft_alld()
    del data["experiment"]
    data["tournament"] = {"players": ["TFT", "TFT"], "repetitions": 1}
    return data


BAD = [
    _bad_replicates,
    _unknown_key,
    _override_missing_key,
    _ref_outside_root,
    _unknown_policy_and_persona,
    _tournament_duplicate_names,
]


def _file_error(data: dict[str, Any], directory: Path) -> str:
    path = write_config(data, directory, name="x.yaml")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return str(caught.value)


@pytest.mark.parametrize("make", BAD, ids=lambda f: f.__name__.strip("_"))
def test_a_bad_mapping_gives_the_messages_the_file_would(
    make: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "cfg"
    write_config({}, directory, name="unused.yaml")  # the agent and prompt files beside it
    monkeypatch.chdir(directory)  # files referenced are named relative to it, both ways
    data = make()
    before = copy.deepcopy(data)
    files_before = sorted(p.relative_to(directory) for p in directory.rglob("*"))
    with pytest.raises(ConfigError) as caught:
        load_mapping(data, "x.yaml", directory)
    assert data == before  # the caller's mapping is not changed
    assert sorted(p.relative_to(directory) for p in directory.rglob("*")) == files_before
    assert str(caught.value) == _file_error(data, directory)


def test_the_messages_name_the_mapping_and_the_files_its_refs_read(tmp_path: Path) -> None:
    directory = tmp_path / "cfg"
    write_config({}, directory, name="unused.yaml")
    with pytest.raises(ConfigError) as caught:
        load_mapping(_bad_replicates(), "Run form", directory)
    # one line: the name, the dotted path, pydantic's message and the value
    assert str(caught.value) == (
        "Run form: experiment.replicates: Input should be greater than or equal to 1 (got 0)"
    )
    with pytest.raises(ConfigError) as caught:
        load_mapping(_override_missing_key(), "Run form", directory)
    (line,) = str(caught.value).splitlines()
    assert line.startswith(
        "Run form: experiment.conditions[0].agent_a.overrides.no_such_key: override of a key that "
    )
    assert "agents/llm_default.yaml does not have" in line


def test_a_good_mapping_loads_as_its_file_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "cfg"
    data = experiment(
        [("tft", policy("TFT"), llm()), ("grim", llm(persona="grim_trigger"), policy("ALLD"))],
        replicates=2,
    )
    data["experiment"]["sweep"] = {"game.noise": [0.0, 0.1]}
    path = write_config(data, directory, name="x.yaml")
    monkeypatch.chdir(directory)
    from_file = load_config(path)
    from_mapping = load_mapping(data, "x.yaml", directory)
    assert from_mapping.kind == from_file.kind == "experiment"
    assert from_mapping.snapshot == from_file.snapshot
    assert from_mapping.config_sha256 == from_file.config_sha256
    assert from_mapping.prompt_files == from_file.prompt_files
    assert from_mapping.sweep_coordinates == from_file.sweep_coordinates
    assert len(from_mapping.sweep_coordinates) == 4  # 2 conditions x 2 noise values
    assert from_mapping.names == from_file.names
    assert from_mapping.root == from_file.root


def test_the_expected_kind_is_checked_as_for_a_file(tmp_path: Path) -> None:
    directory = tmp_path / "cfg"
    write_config({}, directory, name="unused.yaml")
    with pytest.raises(ConfigError) as caught:
        load_mapping(_tft_alld(), "Tournament form", directory, kind="tournament")
    assert str(caught.value) == (
        "Tournament form: experiment: this is an experiment config; run it with `pdbench run`"
    )
