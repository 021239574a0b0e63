"""Components that run in the browser: the game timeline (overview of the whole game, brush and
zoomed window of rounds), the animated replay of one game and the animated evolution.

Each is a self-contained HTML page (our CSS and JavaScript from `ui/assets/`, the frames as JSON)
shown in an iframe by `st.iframe`: playback runs on the browser's clock, with no server round
trip per frame, so 20 ms a frame is 20 ms a frame and playback always ends on the last frame.

Rounds are 1-based in everything shown ("round 1" is the first round played); the library's
`round_index` is 0-based.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pdbench.storage.record.fields import MESSAGES, side_field
from pdbench.ui import talk
from pdbench.ui.style import BROKEN_COLOR, COOP_COLOR, DEFECT_COLOR, FLIP_COLOR

ASSETS = Path(__file__).resolve().parent / "assets"
COLORS = {"C": COOP_COLOR, "D": DEFECT_COLOR, "flip": FLIP_COLOR, "broken": BROKEN_COLOR}
TIMELINE_HEIGHT = 300  # px of the iframes (fixed, so the page does not jump while loading)
REPLAY_HEIGHT = 540
REPLY_HEIGHT = 110  # px added to the replay for the LLM agents' reply panels
TALK_HEIGHT = 100  # px added to the replay for the messages beside the moves
EVOLUTION_HEIGHT = 500


@cache
def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


def _number(x: float) -> float | int:
    """An int when the value is whole (shorter JSON)."""
    return int(x) if float(x).is_integer() else round(float(x), 6)


def _numbers(values: pd.Series) -> list[float | int]:
    """`_number` of every value, whole ones found at once (a long game has a million)."""
    floats = values.to_numpy(dtype=float)
    whole = np.isfinite(floats) & (floats == np.floor(floats))
    if whole.all():
        return floats.astype(np.int64).tolist()
    return [
        int(v) if w else round(v, 6) for v, w in zip(floats.tolist(), whole.tolist(), strict=True)
    ]


def _letters(values: pd.Series) -> str:
    """A column of one-letter moves as one string."""
    return "".join(values.astype(str).tolist())


def game_data(
    table: pd.DataFrame, labels: Sequence[str], replies: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One game's rounds (`tables.game_rounds`, in round order) as the components read them:
    played and intended moves as strings of C/D, fallback flags as strings of 0/1, payoffs, the
    LLM agents' replies when given (`replies.encode`), and the messages when the table has a
    `messages` column (`talk.encode`: each message beside the move that followed it, and the
    stated intentions the timeline marks broken promises with)."""
    data: dict[str, Any] = {"n": len(table), "labels": list(labels)}
    if replies is not None:
        data["replies"] = dict(replies)
    for side in ("a", "b"):
        data[side] = _letters(table[side_field(side, "action")])
        data[f"f{side}"] = _letters(table[side_field(side, "intended_action")])
        fails = table[side_field(side, "parse_failure")].fillna(False).astype(bool).to_numpy()
        data[f"x{side}"] = (fails.astype(np.uint8) + ord("0")).tobytes().decode("ascii")
        data[f"p{side}"] = _numbers(table[side_field(side, "payoff")])
    if MESSAGES in table.columns:
        said = talk.encode(table[MESSAGES].tolist(), data["fa"], data["fb"])
        if said is not None:
            data["talk"] = said
    return data


def has_talk(table: pd.DataFrame) -> bool:
    """Whether a game's rounds (`game_data`'s table) hold messages."""
    return MESSAGES in table.columns and any(
        isinstance(v, list) and v for v in table[MESSAGES].tolist()
    )


def evolution_data(generations: pd.DataFrame, players: Sequence[Any]) -> dict[str, Any]:
    """Counts per generation (0..last) and strategy (in `players` order, each a `style.Player`)
    from generations.parquet."""
    last = int(generations["generation"].max())
    counts = (
        generations.pivot_table(
            index="generation", columns="strategy", values="count", aggfunc="sum"
        )
        .reindex(index=range(last + 1), columns=[p.name for p in players])
        .fillna(0)
        .astype(int)
    )
    return {
        "strategies": [
            {"label": p.label, "emoji": p.profile.emoji, "color": p.color} for p in players
        ],
        "counts": counts.to_numpy().tolist(),
    }


def _page(data: dict[str, Any], script: str) -> str:
    """A complete HTML page: styles, the scripts, `DATA` and `script` run on `ROOT`."""
    # "<" only occurs inside JSON strings: escaped, no text (a reply, a label) can end the script
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        f"<style>{_asset('anim.css')}</style></head>"
        '<body><div id="pdb-root" tabindex="0"></div><script>'
        f"{_asset('timeline.js')}\n{_asset('player.js')}\n{_asset('replies.js')}\n"
        f"{_asset('place.js')}\n"
        f"var DATA = {payload};\nvar COLORS = {json.dumps(COLORS)};\n"
        'var ROOT = document.getElementById("pdb-root");\n'
        f"{script}</script></body></html>"
    )


def timeline_page(table: pd.DataFrame, labels: Sequence[str]) -> str:
    """The game timeline: both agents' moves, the whole game and a zoomed window of rounds."""
    return _page(game_data(table, labels), "PDB.timeline(ROOT, PDB.prepareGame(DATA), COLORS);")


def replay_page(
    table: pd.DataFrame,
    labels: Sequence[str],
    speed_ms: int = 400,
    replies: Mapping[str, Any] | None = None,
    place: Mapping[str, Any] | None = None,
) -> str:
    """The animated replay of one game, with its timeline and jumps to the next defection,
    noise flip or fallback, and the LLM agents' replies under their moves when given. With
    `place` (`url_state.replay_options`) it opens on that round and zoom window and writes
    its place into the app's URL (`assets/place.js`)."""
    options = json.dumps(dict(place or {}), separators=(",", ":")).replace("<", "\\u003c")
    return _page(
        game_data(table, labels, replies),
        f"PDB.replay(ROOT, DATA, COLORS, {int(speed_ms)}, {options});",
    )


def evolution_page(generations: pd.DataFrame, players: Sequence[Any], speed_ms: int = 250) -> str:
    """The animated evolution: the population as a ring of members and a bar per strategy,
    starting on the last generation."""
    return _page(
        evolution_data(generations, players), f"PDB.evolution(ROOT, DATA, {int(speed_ms)});"
    )
