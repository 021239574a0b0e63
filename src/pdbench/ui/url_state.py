"""The app's view in the URL: one module owns the query parameters, their parsing (with
validation) and their writing.

A view is the open tab, the run, condition and replicate of the game tabs, the replay's place
(its round and zoom window) and the saved tournament and evolution shown; e.g.
`?tab=replay&run=data/runs/x&cond=tft_vs_alld&rep=1&round=10&zoom=1-40`. Paths are written
relative to the working directory when inside it.

How the URL and the session agree (`sync_in` at the start of a script run, `sync_out` at its
end): when the URL's view parameters differ from those the app last wrote (a new session, a
pasted link, Back or Forward, the replay reporting its place), the URL wins and its values go
into the session state, the pickers check them against what exists, and a bad or stale value
falls back to the default with a one-line note. Otherwise the session wins, and the view is
written back when it changed: Streamlit then pushes a history entry (replaces it during Back
and Forward), so Back and Forward move between views. Parameters this module does not own (the
Play tab's `game`) are left as they are.

The replay runs in the browser: it writes its round and zoom window into the page's URL
itself (history.replaceState, no new entry) and tells Streamlit with a popstate event, which
reruns the script on the new URL (see `assets/place.js`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import streamlit as st

# The query parameters, by View field (the names people read in a link).
NAMES: dict[str, str] = {
    "tab": "tab",
    "run": "run",
    "condition": "cond",
    "replicate": "rep",
    "round": "round",
    "zoom": "zoom",
    "tournament": "tournament",
    "evolution": "evolution",
}
GAME_FIELDS = ("run", "condition", "replicate")  # the game the replay's place belongs to

# Session-state keys (plain keys). The shared game selection, which follows the user from tab
# to tab (components.synced_select):
SEL_RUN, SEL_CONDITION, SEL_REPLICATE = "sel_run", "sel_condition", "sel_replicate"
SELECTION = {"run": SEL_RUN, "condition": SEL_CONDITION, "replicate": SEL_REPLICATE}
WRITTEN = "url_written"  # our parameters as last written (or read), {name: value}
FROM_URL = "url_from"  # what the URL last asked for and is not checked yet, {field: (value, text)}
PENDING = "url_pending"  # saved results a link asks for, {kind: path or None}, until drawn
SHOWN = "url_shown"  # the saved results shown, {kind: path}
PLACE = "url_place"  # the replay's place: Place
NOTES = "url_notes"  # [(script run number, note)] on bad or stale parameters
RUN_NO = "url_run_no"  # the script run's number in this session
SAVED_KINDS = ("tournament", "evolution")  # View fields that are saved results' directories


@dataclass(frozen=True, slots=True)
class View:
    """Everything the URL holds. Paths are resolved absolute path strings; the replicate is
    the data's number (from 0), the round 1-based as shown, the zoom window (first, last)."""

    tab: str | None = None
    run: str | None = None
    condition: str | None = None
    replicate: int | None = None
    round: int | None = None
    zoom: tuple[int, int] | None = None
    tournament: str | None = None
    evolution: str | None = None

    @property
    def game(self) -> tuple[str | None, str | None, int | None]:
        """(run, condition, replicate)."""
        return (self.run, self.condition, self.replicate)


@dataclass(frozen=True, slots=True)
class Place:
    """Where the replay of one game stands: its round (1-based) and zoom window."""

    game: tuple[str | None, str | None, int | None]
    round: int | None = None
    zoom: tuple[int, int] | None = None


# --------------------------------------------------------------------------------------------
# Parsing and writing (pure)


def _last(value: str | Sequence[str]) -> str:
    """A parameter's value (the last one when it is repeated)."""
    if isinstance(value, str):
        return value
    return str(value[-1]) if len(value) else ""


def decode_path(value: str, cwd: Path) -> str | None:
    """A path from the URL: relative to `cwd` unless absolute; resolved. None when it cannot
    be (a NUL byte, a symlink loop, `~nobody`, a name too long or a directory not searchable)."""
    try:
        path = Path(value).expanduser()
        return str((path if path.is_absolute() else cwd / path).resolve())
    except (OSError, ValueError, RuntimeError):  # RuntimeError: a loop, an unknown home
        return None


def quoted(text: str, width: int = 60) -> str:
    """A value from the link as a note quotes it: its repr, cut to about `width` characters
    (a 6,000-character path would fill the page)."""
    text = repr(text)
    return text if len(text) <= width else f"{text[: width - 1]}…"


def encode_path(path: str, cwd: Path) -> str:
    """A path for the URL: relative to `cwd` when inside it (shorter, and the same link works
    from another checkout laid out alike), else absolute."""
    p, base = Path(path), cwd.resolve()
    return p.relative_to(base).as_posix() if p.is_relative_to(base) else p.as_posix()


def _whole(text: str, least: int) -> int | None:
    """`text` as a whole number >= least, else None."""
    text = text.strip()
    if not text.isdigit():
        return None
    number = int(text)
    return number if number >= least else None


def parse(
    params: Mapping[str, str | Sequence[str]], tab_keys: Collection[str], cwd: Path
) -> tuple[View, list[str]]:
    """The view in `params` (a query string's parameters) and a one-line note for each value
    that cannot be read (that field is left out: the default is shown). Whether a run,
    condition or saved result exists is checked later, against the lists the pickers offer."""
    raw = {f: _last(params[n]).strip() for f, n in NAMES.items() if n in params}
    raw = {f: v for f, v in raw.items() if v}
    notes: list[str] = []
    out: dict[str, Any] = {}

    def bad(field: str, what: str, instead: str) -> None:
        notes.append(
            f"The link's {NAMES[field]}={quoted(raw[field])} is not {what}: showing {instead}."
        )

    if "tab" in raw:
        if raw["tab"] in tab_keys:
            out["tab"] = raw["tab"]
        else:
            bad("tab", f"a tab ({', '.join(tab_keys)})", "the first tab")
    for field in ("run", *SAVED_KINDS):
        if field in raw:
            out[field] = decode_path(raw[field], cwd)
            if out[field] is None:
                instead = "the first run listed" if field == "run" else "the newest"
                bad(field, "a path that can be read", instead)
    if "run" in raw and out["run"] is None:  # the game's other fields went with its run
        raw.pop("condition", None)
        raw.pop("replicate", None)
    if "condition" in raw:
        out["condition"] = raw["condition"]
    if "replicate" in raw:
        rep = _whole(raw["replicate"], 0)
        if rep is None:
            bad("replicate", "a replicate number (0, 1, ...)", "the first replicate")
        out["replicate"] = rep
    if "round" in raw:
        rnd = _whole(raw["round"], 1)
        if rnd is None:
            bad("round", "a round number (from 1)", "round 1")
        out["round"] = rnd
    if "zoom" in raw:
        lo, sep, hi = raw["zoom"].partition("-")
        first, last = _whole(lo, 1), _whole(hi, 1)
        if not sep or first is None or last is None or last < first:
            bad("zoom", "a window of rounds such as 1-40", "the first rounds")
        else:
            out["zoom"] = (first, last)
    return View(**out), notes


def encode(view: View, cwd: Path) -> dict[str, str]:
    """The query parameters of `view` (fields that are None are left out)."""
    out: dict[str, str] = {}
    for f in fields(View):
        value = getattr(view, f.name)
        if value is None:
            continue
        if f.name in ("run", "tournament", "evolution"):
            out[NAMES[f.name]] = encode_path(value, cwd)
        elif f.name == "zoom":
            out[NAMES[f.name]] = f"{value[0]}-{value[1]}"
        else:
            out[NAMES[f.name]] = str(value)
    return out


def ours(params: Mapping[str, str | Sequence[str]]) -> dict[str, str]:
    """The parameters this module owns in `params`, each with its (last) value."""
    return {n: _last(params[n]) for n in NAMES.values() if n in params}


def merged(
    current: Mapping[str, str | Sequence[str]], written: Mapping[str, str]
) -> dict[str, str | list[str]]:
    """`current` with this module's parameters replaced by `written`: the others (the Play
    tab's `game`, anything a link carries) are kept, repeated values included."""
    out: dict[str, str | list[str]] = {
        k: v if isinstance(v, str) else list(v)
        for k, v in current.items()
        if k not in NAMES.values()
    }
    out.update(written)
    return out


def place_in_game(
    place: Place | None, game: tuple[str, str, int], n_rounds: int
) -> tuple[Place | None, str | None]:
    """The place to open the replay of `game` (n_rounds long) on: `place` when it belongs to
    that game, its round and window clipped to the game, with a note when they had to be."""
    if place is None or place.game != game:
        return None, None
    note = None
    rnd = place.round
    if rnd is not None and rnd > n_rounds:
        note = (
            f"The link's round {rnd} is past this game's last round ({n_rounds}): showing round 1."
        )
        rnd = None
    zoom = place.zoom
    if zoom is not None and zoom[0] > n_rounds:
        note = note or (
            f"The link's zoom {zoom[0]}-{zoom[1]} is past this game's last round ({n_rounds}): "
            "showing the first rounds."
        )
        zoom = None
    elif zoom is not None:
        zoom = (zoom[0], min(zoom[1], n_rounds))
    return replace(place, round=rnd, zoom=zoom), note


# --------------------------------------------------------------------------------------------
# The session's side (Streamlit)


def _query() -> dict[str, list[str]]:
    return {k: st.query_params.get_all(k) for k in st.query_params}


def note(text: str) -> None:
    """Show `text` (one line) under the page's header until the view next changes."""
    st.session_state.setdefault(NOTES, []).append((st.session_state.get(RUN_NO, 0), text))


def sync_in(tab_keys: Collection[str], tab_state: str, labels: Mapping[str, str]) -> bool:
    """At the start of a script run: when the URL's view differs from the one last written,
    put it in the session state (the tab widget `tab_state` gets `labels[key]`, the first
    label without a tab) and return True."""
    ss = st.session_state
    ss[RUN_NO] = ss.get(RUN_NO, 0) + 1
    query = _query()
    if ours(query) == ss.get(WRITTEN, {}):  # a new session without a view in its URL: as set
        return False
    ss[WRITTEN] = ours(query)
    view, notes = parse(query, tab_keys, Path.cwd())
    ss[NOTES] = [(ss[RUN_NO], text) for text in notes]
    text = {f: _last(query[n]) for f, n in NAMES.items() if n in query}
    ss[FROM_URL] = {
        f.name: (getattr(view, f.name), text[f.name])
        for f in fields(View)
        if getattr(view, f.name) is not None
    }
    ss[tab_state] = labels[view.tab] if view.tab else next(iter(labels.values()))
    for field, key in SELECTION.items():
        if getattr(view, field) is None:
            ss.pop(key, None)
        else:
            ss[key] = getattr(view, field)
    has_place = view.round is not None or view.zoom is not None
    ss[PLACE] = Place(view.game, view.round, view.zoom) if has_place else None
    ss[PENDING] = {kind: getattr(view, kind) for kind in SAVED_KINDS}
    ss[SHOWN] = {kind: getattr(view, kind) for kind in SAVED_KINDS if getattr(view, kind)}
    return True


def check(field: str, shown: Any, where: str, instead: str) -> None:
    """After a picker has chosen `shown` for `field`: when the last link asked for another
    value (a run that no longer exists, a condition not in the run), a note says so;
    the fields that depend on it are then not checked (their link values went with it)."""
    given = st.session_state.get(FROM_URL) or {}
    if field not in given:
        return
    wanted, text = given.pop(field)
    if wanted == shown:
        return
    note(f"The link's {NAMES[field]}={quoted(text)} is not {where}: showing {instead}.")
    for later in GAME_FIELDS[GAME_FIELDS.index(field) + 1 :] if field in GAME_FIELDS else ():
        given.pop(later, None)


def wanted_saved(kind: str, options: Sequence[str]) -> str | None:
    """The saved `kind` (tournament or evolution) a link asks the picker to show, once: the
    first option when it asks for none; None when no link asked. An unknown directory gets a
    note and the first option."""
    pending = st.session_state.get(PENDING) or {}
    if kind not in pending:
        return None
    wanted = pending.pop(kind)
    if wanted is None or wanted in options:
        return wanted or options[0]
    text = (st.session_state.get(FROM_URL) or {}).get(kind, (None, wanted))[1]
    note(
        f"The link's {NAMES[kind]}={quoted(text)} is not among the saved {kind}s: showing the newest."
    )
    return options[0]


def show_saved(kind: str, path: str) -> None:
    """The saved `kind` the picker shows now (written to the URL)."""
    st.session_state.setdefault(SHOWN, {})[kind] = path


def opening_place(game: tuple[str, str, int], n_rounds: int) -> Place | None:
    """The place to open the replay of `game` (n_rounds long) on: the kept place when it belongs
    to that game, clipped to the game (a link's round past the end gets a note)."""
    place, problem = place_in_game(st.session_state.get(PLACE), game, n_rounds)
    if problem:
        note(problem)
        st.session_state[PLACE] = place
    return place


def replay_options(place: Place | None, game: tuple[str, str, int]) -> dict[str, Any]:
    """What the replay in the browser needs to open on `place` and keep its place in the URL:
    the round, the zoom window, the parameters' names and those naming the game."""
    return {
        "round": place.round if place else None,
        "zoom": list(place.zoom) if place and place.zoom else None,
        "names": {"round": NAMES["round"], "zoom": NAMES["zoom"]},
        "game": game_params(game),
    }


def game_params(game: tuple[str, str, int]) -> dict[str, str]:
    """The URL parameters naming `game` (the replay checks them before writing its place)."""
    return encode(View(run=game[0], condition=game[1], replicate=game[2]), Path.cwd())


def sync_out(tab: str, applied: bool) -> None:
    """At the end of a script run: write the session's view (tab key `tab`) to the URL when it
    changed, keeping the parameters this module does not own; notes from earlier script runs
    go when the user changed the view."""
    ss = st.session_state
    game = tuple(ss.get(SELECTION[f]) for f in GAME_FIELDS)
    place = ss.get(PLACE)
    if place is not None and place.game != game:
        place = ss[PLACE] = None  # another game: its place is not this one's
    shown = ss.get(SHOWN) or {}
    view = View(
        tab=tab,
        run=game[0],
        condition=game[1],
        replicate=None if game[2] is None else int(game[2]),
        round=place.round if place else None,
        zoom=place.zoom if place else None,
        tournament=shown.get("tournament"),
        evolution=shown.get("evolution"),
    )
    written = encode(view, Path.cwd())
    if written == ss.get(WRITTEN):
        return
    if not applied:
        ss[NOTES] = [(n, t) for n, t in ss.get(NOTES) or [] if n == ss.get(RUN_NO)]
    ss[WRITTEN] = written
    st.query_params.from_dict(merged(_query(), written))


def show_notes(box: Any) -> None:
    """The notes on the link's bad or stale parameters, one line each, in `box`."""
    for _, text in st.session_state.get(NOTES) or []:
        box.info(text, icon="🔗")
