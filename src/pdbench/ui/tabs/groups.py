"""🫂 Groups: a groups run (N-player games, `groups_manifest.json`) in two views, Results (each
condition's group and seat metrics with their intervals, from the run's tables) and Replay (one
game round by round: the seats around the group, their moves and payoffs, the messages).
The resource games (issue 31: a public goods game, `pgg_manifest.json`, and a commons,
`commons_manifest.json`) are listed too and shown by `ui.resource_results` and
`ui.resource_replay`.

The run, condition and replicate are picked once above both views; the choice is shared with
the other tabs' pickers and kept in the URL (`url_state`), as theirs is. Read-only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from pdbench.ui import (
    data,
    group_data,
    group_replay,
    group_results,
    resource_data,
    resource_replay,
    resource_results,
    saved_runs,
    url_state,
)
from pdbench.ui.components import AppContext, show_error, synced_select
from pdbench.ui.group_look import GROUP_CSS
from pdbench.ui.url_state import SEL_CONDITION, SEL_REPLICATE, SEL_RUN

LABEL = "🫂 Groups"
KEY = "groups"  # the tab's name in the session state and the URL
POSITION = 8  # its place among the tabs, left to right
# opens first for a groups run directory, and for a resource game's
FIRST_FOR: tuple[str, ...] = (group_data.KIND, *resource_data.KINDS)
PREFIX = "grp"
VIEWS = ("📊 Results", "🎬 Replay")
VIEW_KEY = "grp_view"


@dataclass(frozen=True)
class GroupPick:
    """The groups run, condition and replicate picked."""

    path: str
    manifest: dict[str, Any]
    condition: Any  # GroupCondition, or a ResourceCondition for a resource run
    replicate: int
    conditions: tuple[Any, ...]
    kind: str = group_data.KIND


def render(ctx: AppContext) -> None:
    """Draw the tab."""
    st.html(GROUP_CSS)
    pick = pick_group_game(ctx)
    if pick is None:
        return
    containers = st.tabs(list(VIEWS), key=VIEW_KEY, on_change="rerun")
    if pick.kind in resource_data.KINDS:
        if containers[0].open:
            with containers[0]:
                resource_results.render(pick.path, pick.manifest, pick.conditions, pick.condition)
        if containers[1].open:
            with containers[1]:
                resource_replay.render(pick.path, pick.manifest, pick.condition, pick.replicate)
        return
    if containers[0].open:
        with containers[0]:
            group_results.render(pick.path, pick.manifest, pick.conditions, pick.condition)
    if containers[1].open:
        with containers[1]:
            group_replay.render(pick.path, pick.manifest, pick.condition, pick.replicate)


def pick_group_game(ctx: AppContext) -> GroupPick | None:
    """Run, condition and replicate select boxes over the saved groups runs (those under the
    runs folder, and the directory given at launch); None, with the reason shown, when there is
    nothing to show."""
    given = ctx.run_dir is not None and data.run_kind(ctx.run_dir) in FIRST_FOR
    runs = saved_runs.list_saved(FIRST_FOR, [ctx.runs_root], [ctx.run_dir] if given else [])
    if not runs:
        st.info(
            f"No groups runs yet under `{ctx.runs_root}/` (nor public goods or commons runs). "
            "Run one with `uv run pdbench run configs/groups.yaml`, or open one with "
            "`pdbench ui RUN_DIR`.",
            icon="🗂️",
        )
        return None
    by_path = {r.path: r for r in runs}
    col_run, col_cond, col_rep = st.columns([5, 4, 1.4])
    with col_run:
        path = synced_select(
            "Groups run", list(by_path), f"{PREFIX}_run", SEL_RUN, lambda p: by_path[p].label()
        )
    url_state.check("run", path, "among the saved groups runs", "the first run listed")
    if by_path[path].kind in resource_data.KINDS:
        return _pick_resource_game(path, by_path[path].kind, col_cond, col_rep)
    try:
        manifest = group_data.load_manifest(path)
    except data.RunLoadError as exc:
        show_error(exc)
        return None
    if manifest.get("status") != "completed":
        st.warning(
            f"Run status '{manifest.get('status')}': "
            f"{str(manifest.get('error') or 'no error recorded').splitlines()[0]}. "
            "Showing the games that were written.",
            icon="⚠️",
        )
    conditions = [c for c in group_data.conditions(manifest) if c.games]
    if not conditions:
        st.error(f"{Path(path).name}: its manifest lists no group games", icon="🚫")
        return None
    by_name = {c.name: c for c in conditions}
    with col_cond:
        name = synced_select(
            "Condition",
            list(by_name),
            f"{PREFIX}_condition",
            SEL_CONDITION,
            lambda c: f"{c}  ({by_name[c].n_players} seats)",
        )
    url_state.check("condition", name, "a condition of this run", f"{name!r}")
    with col_rep:
        replicate = synced_select(
            "Replicate", by_name[name].replicates, f"{PREFIX}_replicate", SEL_REPLICATE
        )
    url_state.check(
        "replicate", int(replicate), "a replicate of this condition", f"replicate {replicate}"
    )
    return GroupPick(path, manifest, by_name[name], int(replicate), tuple(conditions))


def _pick_resource_game(path: str, kind: str, col_cond: Any, col_rep: Any) -> GroupPick | None:
    """Condition and replicate of a resource run (public goods or commons)."""
    try:
        manifest = resource_data.load_manifest(path, kind)
    except data.RunLoadError as exc:
        show_error(exc)
        return None
    if manifest.get("status") != "completed":
        st.warning(
            f"Run status '{manifest.get('status')}': "
            f"{str(manifest.get('error') or 'no error recorded').splitlines()[0]}. "
            "Showing the games that were written.",
            icon="⚠️",
        )
    conditions = [c for c in resource_data.conditions(manifest, kind) if c.replicates]
    if not conditions:
        st.error(f"{Path(path).name}: its manifest lists no games", icon="🚫")
        return None
    by_name = {c.name: c for c in conditions}
    game = resource_data.GAME_NAMES[kind]
    with col_cond:
        name = synced_select(
            "Condition",
            list(by_name),
            f"{PREFIX}_condition",
            SEL_CONDITION,
            lambda c: f"{c}  ({len(by_name[c].seats)} seats, {game})",
        )
    url_state.check("condition", name, "a condition of this run", f"{name!r}")
    with col_rep:
        replicate = synced_select(
            "Replicate", list(by_name[name].replicates), f"{PREFIX}_replicate", SEL_REPLICATE
        )
    url_state.check(
        "replicate", int(replicate), "a replicate of this condition", f"replicate {replicate}"
    )
    return GroupPick(path, manifest, by_name[name], int(replicate), tuple(conditions), kind)
