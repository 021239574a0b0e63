"""The forms' plans (`pdbench.ui.planning.plan_text`): checked from the form's mapping with the
configs folder's agent files, without writing a config anywhere; the plan is the one `validate`
prints for the config the form writes when it runs, and a problem is its one-line message
naming the form."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from tests.ui.sample import CONFIGS

from pdbench.core.payoff import PayoffMatrix
from pdbench.runners.config.loader import load_config
from pdbench.runners.plan import describe_plan
from pdbench.ui import launcher, planning
from pdbench.ui.presets import EvolutionSettings


def _files(directory: Path) -> list[tuple[Path, int]]:
    return sorted((p.relative_to(directory), p.stat().st_mtime_ns) for p in directory.rglob("*"))


@pytest.fixture
def nothing_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail a test that makes a temporary directory (where a plan used to write its YAML)."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("plan_text made a temporary directory")

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    monkeypatch.setattr(tempfile, "TemporaryDirectory", refuse)


def _experiment(n_rounds: int) -> launcher.ExperimentRequest:
    options = {o.key: o for o in launcher.agent_options(CONFIGS)}
    return launcher.ExperimentRequest(
        options["policy:TFT"],
        options["persona:grim_trigger"],
        {"type": "fixed", "n_rounds": n_rounds},
        0.05,
        3,
        11,
        PayoffMatrix(),
    )


def _without_run_line(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("run_id:"))


def test_a_forms_plan_is_the_plan_of_the_config_it_writes(
    nothing_written: None, tmp_path: Path
) -> None:
    planning._PLANS.clear()
    request = _experiment(12)
    before = _files(CONFIGS)
    text = planning.plan_text("experiment", request, CONFIGS)
    assert _files(CONFIGS) == before
    assert "games: 3   rounds: 36" in text  # 1 condition x 3 replicates x 12 rounds
    settings = EvolutionSettings(counts={"TFT": 3, "ALLD": 2}, process="moran", repetitions=2)
    evolution_text = planning.plan_text("evolution", settings, CONFIGS)
    # the oracle: the files the forms write when they run (prepare needs no temporary directory)
    written = launcher.prepare_experiment(request, CONFIGS, tmp_path / "runs")
    written_evolution = launcher.prepare_evolution(settings, tmp_path / "evolutions")
    assert text == _without_run_line(describe_plan(load_config(written, kind="experiment")))
    assert evolution_text == _without_run_line(
        describe_plan(load_config(written_evolution, kind="evolution"))
    )


def test_a_bad_form_gives_its_one_line_message(nothing_written: None) -> None:
    planning._PLANS.clear()
    text = planning.plan_text("experiment", _experiment(0), CONFIGS)
    assert text == "Run form: horizon.n_rounds: Input should be greater than or equal to 1 (got 0)"
    request = launcher.TournamentRequest(
        [o for o in launcher.agent_options(CONFIGS) if o.key == "policy:TFT"] * 2,
        {"type": "fixed", "n_rounds": 5},
        0.0,
        1,
        False,
        3,
    )
    text = planning.plan_text("tournament", request, CONFIGS)
    assert text.startswith("Tournament form: tournament.players[1]: duplicate player name 'TFT'")
