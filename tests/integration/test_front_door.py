"""One front door for starting runs (`pdbench.runners.start.start`): the CLI's run commands and
the app's Run, Tournament and Evolution tabs reach the modes through it alone, and its rules
(resume and overwrite exclude each other; a resume takes the cache the run used) hold there."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from tests.support.cli import run_in_process
from tests.support.configs import REPO, experiment, policy, write_config

from pdbench.core.payoff import PayoffMatrix
from pdbench.errors import RunError
from pdbench.runners import start as front
from pdbench.runners.config.loader import load_config
from pdbench.runners.start import RunOptions, resume_cache, start
from pdbench.ui import launcher
from pdbench.ui.presets import EvolutionSettings

CONFIGS = REPO / "configs"


@pytest.fixture
def reached(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Path | None, RunOptions]]:
    """Every mode the front door dispatches to replaced by a recorder: (kind, the output dir the
    options name, the options) per call; nothing runs."""
    calls: list[tuple[str, Path | None, RunOptions]] = []
    for kind in ("experiment", "tournament", "evolution"):

        def record(loaded: Any, options: RunOptions, kind: str = kind) -> Any:
            assert loaded.kind == kind
            calls.append((kind, options.output_dir, options))
            return SimpleNamespace(manifest={"run_id": loaded.config.run.run_id})

        monkeypatch.setitem(front.RUNNERS, kind, record)
    monkeypatch.setattr(front, "report", lambda loaded, result, resumed=False: ["reported"])
    return calls


def test_the_app_starts_every_kind_of_run_through_the_front_door(
    reached: list[tuple[str, Path | None, RunOptions]], tmp_path: Path
) -> None:
    options = {o.key: o for o in launcher.agent_options(CONFIGS)}
    tft, alld = options["policy:TFT"], options["policy:ALLD"]
    horizon = {"type": "fixed", "n_rounds": 5}
    request = launcher.ExperimentRequest(tft, alld, horizon, 0.0, 1, 7, PayoffMatrix())
    tournament = launcher.TournamentRequest([tft, alld], horizon, 0.0, 1, False, 7)
    settings = EvolutionSettings(
        counts={"TFT": 3, "ALLD": 2}, process="moran", generations=2, repetitions=1
    )
    paths = {
        "experiment": launcher.prepare_experiment(request, CONFIGS, tmp_path / "runs"),
        "tournament": launcher.prepare_tournament(tournament, CONFIGS, tmp_path / "tournaments"),
        "evolution": launcher.prepare_evolution(settings, tmp_path / "evolutions"),
    }
    for kind, path in paths.items():
        finished = launcher.execute(path, kind)
        assert finished.kind == kind
        assert finished.run_dir == path.parent.parent  # the run directory prepare made
        assert finished.manifest == {"run_id": path.parent.parent.name}
    assert [(kind, out) for kind, out, _ in reached] == [
        (kind, path.parent.parent) for kind, path in paths.items()
    ]
    # the app replaces what a previous attempt left in its own new directory, never resumes
    assert all(o.overwrite and not o.resume for _, _, o in reached)


@pytest.mark.parametrize(
    ("command", "kind", "section"),
    [
        ("run", "experiment", None),
        ("tournament", "tournament", {"players": ["TFT", "ALLD"], "repetitions": 1}),
        (
            "evolve",
            "evolution",
            {
                "process": "moran",
                "generations": 2,
                "repetitions": 1,
                "population": [{"player": "TFT", "count": 3}, {"player": "ALLD", "count": 2}],
            },
        ),
    ],
)
def test_the_cli_starts_every_kind_of_run_through_the_front_door(
    reached: list[tuple[str, Path | None, RunOptions]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    kind: str,
    section: dict[str, Any] | None,
) -> None:
    data = experiment(
        [("c", policy("TFT"), policy("ALLD"))], horizon={"type": "fixed", "n_rounds": 5}
    )
    if section is not None:
        del data["experiment"]
        data[kind] = section
    cfg = write_config(data, tmp_path / "cfg")
    out = tmp_path / "out"
    code, stdout, err = run_in_process([command, str(cfg), "-o", str(out), "--no-cache"], capsys)
    assert code == 0, err
    assert stdout.strip() == "reported"
    assert [(k, o) for k, o, _ in reached] == [(kind, out)]
    assert reached[0][2].use_cache is False


def test_resume_and_overwrite_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    cfg = write_config(experiment([("c", policy("TFT"), policy("ALLD"))]), tmp_path / "cfg")
    out = tmp_path / "out"
    with pytest.raises(RunError, match="--resume and --overwrite exclude each other"):
        start(load_config(cfg), RunOptions(output_dir=out, resume=True, overwrite=True))
    assert not out.exists()


def test_a_resume_takes_the_cache_the_run_was_started_with(tmp_path: Path) -> None:
    cfg = write_config(experiment([("c", policy("TFT"), policy("ALLD"))]), tmp_path / "cfg")
    cached, uncached = tmp_path / "cached", tmp_path / "uncached"
    cache = tmp_path / "the-cache"
    start(load_config(cfg), RunOptions(output_dir=cached, cache_dir=cache))
    start(load_config(cfg), RunOptions(output_dir=uncached, use_cache=False))
    assert resume_cache(cached, "experiment") == (cache.resolve(), True)
    assert resume_cache(uncached, "experiment") == (None, False)
    # no run there yet: the default cache
    assert resume_cache(tmp_path / "nothing", "experiment") == (None, True)
    # a run of another kind there: no tournament manifest, so the default cache
    assert resume_cache(cached, "tournament") == (None, True)
