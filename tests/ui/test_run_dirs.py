"""The app's new run directories (`launcher.new_run_dir` / `prepare`, behind Run Experiment,
Tournament, Evolution and Play's saved game): each name is claimed by mkdir, so sessions starting
runs in the same second each get their own; a failed preparation leaves nothing behind, and a
directory that cannot be made is one line on the page."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.ui.sample import CONFIGS
from tests.ui.test_app import RUN, TOURNAMENT, make_app, show_tab

from pdbench.core.payoff import PayoffMatrix
from pdbench.ui import launcher, play_launcher

MOMENT = datetime(2026, 11, 28, 18, 16, 9)
STAMP = "ui_20261128_181609"


class _FrozenClock(datetime):
    """datetime whose now() is MOMENT: every caller is in the same second."""

    @classmethod
    def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
        return MOMENT


def test_each_call_makes_its_own_directory(tmp_path: Path) -> None:
    root = tmp_path / "runs"  # made with the first directory
    made = [launcher.new_run_dir(root, MOMENT) for _ in range(3)]
    assert [p.name for p in made] == [STAMP, f"{STAMP}_2", f"{STAMP}_3"]
    assert all(p.is_dir() and not any(p.iterdir()) for p in made)


def _experiment(root: Path) -> Path:
    options = launcher.agent_options(CONFIGS)
    request = launcher.ExperimentRequest(
        agent_a=options[0],
        agent_b=options[1],
        horizon={"type": "fixed", "n_rounds": 3},
        noise=0.0,
        replicates=1,
        seed=1,
        matrix=PayoffMatrix(),
    )
    return launcher.prepare_experiment(request, CONFIGS, root)


def _saved_game(root: Path) -> Path:
    options = {o.key: o for o in launcher.agent_options(CONFIGS)}
    request = play_launcher.PlayRequest(options["policy:TFT"], "Ana", 3, 7, PayoffMatrix())
    return play_launcher.prepare_play(request, CONFIGS, root, ["C", "D", "C"])


def _plain(kind: str) -> Any:
    return lambda root: launcher.prepare(
        kind, lambda run_id, out: {"run": {"run_id": run_id}}, root
    )


def test_sessions_starting_together_get_their_own_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streamlit runs sessions as threads of one process: 24 start a run in the same second
    (Run Experiment, a saved Play game, and tournament/evolution configs), all released at once
    into one folder. Each gets its own directory, named once, holding its own config."""
    monkeypatch.setattr(launcher, "datetime", _FrozenClock)
    root = tmp_path / "runs"
    starters = [_experiment, _saved_game, _plain("tournament"), _plain("evolution")] * 6
    barrier = threading.Barrier(len(starters))
    paths: list[Path] = []
    errors: list[BaseException] = []

    def start(prepare: Any) -> None:
        barrier.wait()
        try:
            paths.append(prepare(root))
        except BaseException as exc:  # noqa: BLE001 - the test reports every failure
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(s,)) for s in starters]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    run_dirs = [p.parent.parent for p in paths]
    expected = {STAMP} | {f"{STAMP}_{n}" for n in range(2, len(starters) + 1)}
    assert sorted(d.name for d in run_dirs) == sorted(expected)
    assert {d.name for d in root.iterdir()} == expected  # nothing else made
    for path in paths:  # each config is its own directory's (run_id and output_dir)
        run = yaml.safe_load(path.read_text(encoding="utf-8"))["run"]
        assert run["run_id"] == path.parent.parent.name


def test_a_failed_preparation_leaves_no_directory(tmp_path: Path) -> None:
    def build(run_id: str, out: Path) -> dict[str, Any]:
        raise ValueError("not a payoff")

    with pytest.raises(ValueError, match="not a payoff"):
        launcher.prepare("experiment", build, tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("tab", "button", "folder", "kind"),
    [
        (RUN, "rx_run", "data/runs", "experiment"),
        (TOURNAMENT, "tn_run", "data/tournaments", "tournament"),
    ],
)
def test_a_run_folder_that_cannot_be_made_is_one_line(
    tab: str, button: str, folder: str, kind: str
) -> None:
    Path(folder).parent.mkdir(parents=True, exist_ok=True)
    Path(folder).write_text("a file where the runs folder should be")
    at = show_tab(make_app().run(), tab)
    at.button(key=button).click().run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "\n" not in errors[0], errors
    assert errors[0].startswith(f"The {kind} was not started: ")
    assert folder in errors[0]
