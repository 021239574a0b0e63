"""The app's tabs, one module each. Each module has `LABEL` and `render(ctx: AppContext)`.

To add a tab, write a module with the same two names and add it to `TABS`; `tab_order` decides
where it appears.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pdbench.ui.components import AppContext
from pdbench.ui.tabs import evolution, play, replay, run_experiment, tournament, view_results


@dataclass(frozen=True, slots=True)
class Tab:
    """A tab: its label and the function drawing it."""

    label: str
    render: Callable[[AppContext], None]
    on_hidden: Callable[[], None] | None = None  # called on reruns where another tab is open


VIEW = Tab(view_results.LABEL, view_results.render)
REPLAY = Tab(replay.LABEL, replay.render)
RUN = Tab(run_experiment.LABEL, run_experiment.render)
TOURNAMENT = Tab(tournament.LABEL, tournament.render)
EVOLUTION = Tab(evolution.LABEL, evolution.render)
PLAY = Tab(play.LABEL, play.render)
TABS: dict[str, Tab] = {
    "view": VIEW,
    "replay": REPLAY,
    "run": RUN,
    "tournament": TOURNAMENT,
    "evolution": EVOLUTION,
    "play": PLAY,
}


def tab_order(run_kind: str | None, has_run_dir: bool) -> list[Tab]:
    """The tab for the run directory given at launch first: View Results for an experiment (or
    a directory that is no run, so its problem shows), the Tournament or Evolution tab for those
    kinds; without one, Run Experiment first. The others keep their usual order."""
    usual = [VIEW, REPLAY, RUN, TOURNAMENT, EVOLUTION, PLAY]
    if not has_run_dir:
        return [RUN, VIEW, REPLAY, TOURNAMENT, EVOLUTION, PLAY]
    first = {"tournament": TOURNAMENT, "evolution": EVOLUTION}.get(run_kind or "", VIEW)
    return [first, *(t for t in usual if t is not first)]
