"""Widgets shared by several tabs: the app context, error display, the run / condition /
replicate picker whose choice follows the user from tab to tab, the saved-results picker of the
tournament and evolution tabs, and running a prepared config with a progress bar."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from pdbench.errors import PdbenchError
from pdbench.ui import data, launcher, replies, saved_runs, tables, url_state
from pdbench.ui.group_science_data import load_result
from pdbench.ui.style import CSS, GAMES_CSS, Profile, agent_profile, card_html
from pdbench.ui.url_state import SEL_CONDITION as SEL_CONDITION  # the shared selection's keys
from pdbench.ui.url_state import SEL_REPLICATE as SEL_REPLICATE
from pdbench.ui.url_state import SEL_RUN as SEL_RUN

FLASH = "flash_message"


@dataclass(frozen=True, slots=True)
class AppContext:
    """What every tab gets: the run directory given at launch and where runs live."""

    run_dir: Path | None
    runs_root: Path


@dataclass(frozen=True)
class Game:
    """One selected game with everything the pages draw from."""

    run: tables.SavedRun
    manifest: dict[str, Any]
    aggregates: pd.DataFrame
    aggregates_source: str
    condition: str
    replicate: int
    table: pd.DataFrame  # this game's rounds (data.load_game_rounds, then tables.game_rounds)
    configs: tuple[dict[str, Any] | None, dict[str, Any] | None]
    profiles: tuple[Profile, Profile]

    @property
    def labels(self) -> tuple[str, str]:
        """Row/series labels such as 'A · 🪞 Copycat'."""
        return (f"A · {self.profiles[0].short}", f"B · {self.profiles[1].short}")

    @property
    def has_llm(self) -> bool:
        """Whether either agent is an LLM agent."""
        return any(c is not None and c.get("type") == "llm" for c in self.configs)


def inject_css() -> None:
    """Add the app's CSS (cards, cells, podium, population bars) to the page."""
    st.html(CSS + GAMES_CSS)


def show_error(exc: Exception) -> None:
    """One line, as st.warning or st.error depending on the error's level; never a traceback."""
    message = data.first_line(exc)
    if getattr(exc, "level", "error") == "warning":
        st.warning(message, icon="⏳")
    else:
        st.error(message, icon="🚫")


def _copy_state(widget_key: str, shared_key: str) -> None:
    st.session_state[shared_key] = st.session_state[widget_key]


def synced_select[T](
    label: str,
    options: Sequence[T],
    widget_key: str,
    shared_key: str,
    format_func: Callable[[Any], str] = str,
) -> T:
    """A select box whose value is shared across tabs through `shared_key` in session state."""
    wanted = st.session_state.get(shared_key)
    st.session_state[widget_key] = wanted if wanted in options else options[0]
    value = st.selectbox(
        label,
        options,
        key=widget_key,
        format_func=format_func,
        on_change=_copy_state,
        args=(widget_key, shared_key),
    )
    st.session_state[shared_key] = value
    return value


def condition_profiles(
    manifest: dict[str, Any], aggregates: pd.DataFrame, condition: str
) -> tuple[tuple[dict[str, Any] | None, dict[str, Any] | None], tuple[Profile, Profile]]:
    """The two agents' configs (from the manifest) and profiles of a condition (the agents'
    names from its aggregate rows)."""
    cfg = data.condition_configs(manifest).get(condition) or {}
    names = tables.agent_names(aggregates, condition)
    configs = (cfg.get("agent_a"), cfg.get("agent_b"))
    profiles = (agent_profile(configs[0], names[0]), agent_profile(configs[1], names[1]))
    return configs, profiles


def pick_game(prefix: str, ctx: AppContext) -> Game | None:
    """Run, condition and replicate select boxes; loads the game or shows why it cannot."""
    given = ctx.run_dir is not None and data.run_kind(ctx.run_dir) in (None, "experiment")
    extra = [ctx.run_dir] if given else []
    runs = saved_runs.list_saved("experiment", [ctx.runs_root], extra)
    if not runs:
        st.info(
            f"No runs yet under `{ctx.runs_root}/`. Start one in the 🧪 Run Experiment tab, or "
            "run `uv run pdbench run configs/experiment.yaml`.",
            icon="🗂️",
        )
        return None
    by_path = {r.path: r for r in runs}
    col_run, col_cond, col_rep = st.columns([5, 4, 1.4])
    with col_run:
        path = synced_select(
            "Run", list(by_path), f"{prefix}_run", SEL_RUN, lambda p: by_path[p].label()
        )
    url_state.check("run", path, "among the saved runs", "the first run listed")
    try:
        manifest = data.check_run(path)
        aggregates, source = data.load_aggregates(path, manifest)
    except data.RunLoadError as exc:
        show_error(exc)
        return None
    status = manifest.get("status")
    if status != "completed":
        st.warning(
            f"Run status '{status}': {manifest.get('error') or 'no error recorded'}. "
            "Showing the games that were written.",
            icon="⚠️",
        )
    index = tables.games(aggregates, data.condition_order(manifest))
    if not index:
        st.error(f"{source} lists no games", icon="🚫")
        return None
    profiles = {c: condition_profiles(manifest, aggregates, c)[1] for c in index}

    def cond_label(c: str) -> str:
        a, b = profiles[c]
        return f"{c}  ({a.emoji} vs {b.emoji})"

    with col_cond:
        condition = synced_select(
            "Condition", list(index), f"{prefix}_condition", SEL_CONDITION, cond_label
        )
    url_state.check("condition", condition, "a condition of this run", f"{condition!r}")
    with col_rep:
        replicate = synced_select(
            "Replicate", index[condition], f"{prefix}_replicate", SEL_REPLICATE
        )
    url_state.check(
        "replicate", int(replicate), "a replicate of this condition", f"replicate {replicate}"
    )
    configs, profs = condition_profiles(manifest, aggregates, condition)
    try:  # the rounds of this game only, read now that it is shown
        rounds = data.load_game_rounds(path, condition, int(replicate))
    except data.RunLoadError as exc:
        show_error(exc)
        return None
    return Game(
        run=by_path[path],
        manifest=manifest,
        aggregates=aggregates,
        aggregates_source=source,
        condition=condition,
        replicate=int(replicate),
        table=tables.game_rounds(rounds, condition, int(replicate)),
        configs=configs,
        profiles=profs,
    )


def game_replies(game: Game) -> dict[str, Any] | None:
    """The LLM agents' replies of the game for the replay (`replies.encode`); None when neither
    agent is an LLM agent."""
    if not game.has_llm:
        return None
    llm = tuple(c is not None and c.get("type") == "llm" for c in game.configs)
    rounds = data.load_game_replies(game.run.path, game.table, game.condition, game.replicate)
    return replies.encode(rounds, (llm[0], llm[1]))


def describe_condition(game: Game) -> str:
    """A one-line description: horizon, noise, seed and length of the selected game."""
    cond = next(
        (c for c in game.manifest.get("conditions") or [] if c.get("name") == game.condition), {}
    )
    horizon = cond.get("horizon") or {}
    if horizon.get("type") == "geometric":
        h = f"geometric horizon (stop prob {horizon.get('stop_prob')})"
    else:
        h = f"fixed horizon ({horizon.get('n_rounds', '?')} rounds)"
    seed = next(
        (g.get("seed") for g in cond.get("games") or [] if g.get("replicate") == game.replicate),
        None,
    )
    noise = cond.get("noise") or 0
    return f"{h} · noise {noise:g} · {len(game.table)} rounds played" + (
        f" · seed {seed}" if seed is not None else ""
    )


def matchup(game: Game) -> None:
    """The two agents' cards face to face, and a line on the game."""
    left, mid, right = st.columns([5, 1, 5], vertical_alignment="center")
    left.html(card_html(game.profiles[0], "A"))
    mid.html('<div class="pdb-vs">⚔️</div>')
    right.html(card_html(game.profiles[1], "B"))
    st.caption(f"**{game.condition}** · replicate {game.replicate} · {describe_condition(game)}")


def _open_typed_path(prefix: str) -> None:
    """The 'open a directory' box's callback: remember the path and select it."""
    typed = str(st.session_state.get(f"{prefix}_path") or "").strip()
    if not typed:
        return
    kinds = st.session_state.get(f"{prefix}_kind")
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds or ())
    try:  # a directory that cannot be shown is not added to the list: its problem is said once
        path = url_state.decode_path(typed, Path.cwd())
        if path is None:
            raise data.NotARun(f"{url_state.quoted(typed)}: not a path that can be read")
        if kinds:
            load_result(path, saved_runs.kind_of(path, kinds))
    except data.RunLoadError as exc:
        st.session_state[f"{prefix}_flash_error"] = data.first_line(exc)
        st.session_state[f"{prefix}_path"] = ""
        return
    extras = [p for p in st.session_state.get(f"{prefix}_extra", []) if p != path]
    st.session_state[f"{prefix}_extra"] = [path, *extras]
    st.session_state[f"{prefix}_dir"] = path
    st.session_state[f"{prefix}_path"] = ""


def saved_results(
    prefix: str,
    kind: str,
    roots: Iterable[Path],
    extra: Sequence[str],
    empty_hint: str,
    also: Sequence[str] = (),
) -> Any:
    """The results section of the tournament and evolution tabs: a select box over the saved
    runs of `kind` (and of the kinds `also`, listed with them: the group tournaments beside the
    tournaments) under `roots` (`extra` directories on top), a box to open any other
    directory, and the chosen run loaded by its kind (`group_science_data.load_result`: a
    `tables.Tournament`, `tables.Evolution` or a group one; None, with the reason shown, when it
    cannot be).

    The selection lives in session state `<prefix>_dir`, so a tab can select a directory it has
    just written before the box is drawn; `<prefix>_flash` is shown once above it."""
    st.markdown("#### 📂 Results")
    st.session_state[f"{prefix}_kind"] = (kind, *also)
    flash = st.session_state.pop(f"{prefix}_flash", None)
    if flash:
        st.success(flash, icon="✅")
    problem = st.session_state.pop(f"{prefix}_flash_error", None)
    if problem:
        st.error(problem, icon="🚫")
    left, right = st.columns([3, 2], vertical_alignment="bottom")
    with right:
        st.text_input(
            f"…or open {'an' if kind[0] in 'aeiou' else 'a'} {kind} directory",
            key=f"{prefix}_path",
            placeholder="path/to/dir, then Enter",
            on_change=_open_typed_path,
            args=(prefix,),
        )
    typed = list(st.session_state.get(f"{prefix}_extra", []))
    entries = saved_runs.list_saved((kind, *also), roots, [*typed, *extra])
    if not entries:
        left.info(empty_hint, icon="🗂️")
        return None
    by_path = {e.path: e for e in entries}
    key, kept = f"{prefix}_dir", f"{prefix}_chosen"
    linked = url_state.wanted_saved(kind, list(by_path))  # a link's choice (Back, Forward)
    if linked is not None:
        st.session_state[key] = st.session_state[kept] = linked
    elif st.session_state.get(key) not in by_path:
        # The box was not drawn while another tab was open: Streamlit forgot its value; the
        # last choice (kept under a plain key) comes back, else the newest result.
        remembered = st.session_state.get(kept)
        st.session_state[key] = remembered if remembered in by_path else entries[0].path
    with left:
        path = st.selectbox(
            f"Saved {kind}s", list(by_path), key=key, format_func=lambda p: by_path[p].label()
        )
    st.session_state[kept] = path
    url_state.show_saved(kind, path)
    try:
        return load_result(path, by_path[path].kind)
    except data.RunLoadError as exc:
        show_error(exc)
        return None


def run_prepared(prepare: Callable[[], Path], kind: str, unit: str) -> launcher.Finished | None:
    """Prepare a config in a new run directory (`prepare`, see `launcher.prepare`) and run it
    under a progress bar ('<unit>: done / total'); on failure, show the library's messages one
    line each, remove the unused run directory and return None."""
    try:
        config_path = prepare()
    except (PdbenchError, OSError, ValueError) as exc:  # a folder not writable, a full disk
        st.error(f"The {kind} was not started: {data.first_line(exc)}", icon="🚫")
        return None
    bar = st.progress(0.0, text="Starting…")
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] > 0.1:
            last[0] = now
            bar.progress(min(1.0, done / max(1, total)), text=f"{unit}: {done:,} / {total:,}")

    try:
        finished = launcher.execute(config_path, kind, progress)
    except (PdbenchError, OSError, ValueError) as exc:
        bar.empty()
        lines = exc.lines() if isinstance(exc, PdbenchError) else [f"{kind} failed: {exc}"]
        for line in lines:
            st.error(line.splitlines()[0] if line.strip() else f"{kind} failed", icon="🚫")
        launcher.discard_run(config_path)
        return None
    bar.empty()
    return finished


LAST_TAB = "pdbench_last_tab"  # the tab drawn in the previous run (set by streamlit_app)


def agent_multiselect(
    label: str, key: str, options: dict[str, launcher.AgentOption], placeholder: str
) -> list[str]:
    """A multiselect of agent options (by key, shown by label) whose saved picks that are no
    longer offered (an agent file removed) are dropped first; returns the picked keys."""
    st.session_state[key] = [k for k in st.session_state.get(key) or [] if k in options]
    return st.multiselect(
        label,
        list(options),
        key=key,
        format_func=lambda k: options[k].label,
        placeholder=placeholder,
    )


def percent_column(label: str, **kwargs: Any) -> Any:
    """A progress-bar column for a rate given in percent (see `tables.in_percent`), printed with
    one decimal ('91.7%', '0.0%') as the metric cards and interval tables print rates."""
    return st.column_config.ProgressColumn(
        label, min_value=0.0, max_value=100.0, format="%.1f%%", **kwargs
    )


def config_dir_or_error() -> Path | None:
    """The configs folder the forms offer agents from; None, with the reason shown, when there
    is none."""
    config_dir = launcher.find_config_dir()
    if config_dir is None:
        st.error(
            "No configs folder with agents/ found (looked in $PDBENCH_CONFIG_DIR, ./configs and "
            "the repository's configs/).",
            icon="🚫",
        )
    return config_dir


def restore_widgets(store: str, tab: str | None = None) -> None:
    """Put back widget values saved by `save_widgets` (a lazy tab's widgets are not drawn while
    another tab is open, and Streamlit then forgets their values, or resets them when they are
    drawn again). With `tab` (the tab's label), every saved value comes back when the previous
    run drew another tab; otherwise only the values Streamlit has dropped."""
    returning = tab is not None and st.session_state.get(LAST_TAB) != tab
    for key, value in (st.session_state.get(store) or {}).items():
        if returning or key not in st.session_state:
            st.session_state[key] = value


def save_widgets(store: str, keys: Sequence[str]) -> None:
    """Keep the current values of the widgets `keys` under the plain session key `store`."""
    st.session_state[store] = {k: st.session_state[k] for k in keys if k in st.session_state}


def text_column_width(column: Iterable[Any], cap: int = 900) -> int:
    """Pixels for a table column to show its longest text in full (about 7.5 px a character
    of the grid's 14 px font, plus padding), capped so a very long one scrolls instead."""
    longest = max((len(str(v)) for v in column), default=0)
    return int(min(cap, max(80, 7.5 * longest + 32)))
