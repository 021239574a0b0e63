"""The look of the app, after Nicky Case's "The Evolution of Trust": green C and red D, gradient
agent cards, timelines, podium and population charts as HTML.

A policy's emoji, nickname, chart colour, card gradient and description come from its class in
`pdbench.agents.policy` (`POLICY_REGISTRY[key].look`), so a new policy needs nothing here; LLM
agents, personas and unknown players have their own looks below.

Everything here returns strings (HTML/CSS) or plain values; pages decide where they go.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

import pandas as pd

from pdbench.agents.policy import POLICY_REGISTRY
from pdbench.storage.record.fields import side_field

COOP_COLOR = "#2e9e4f"
DEFECT_COLOR = "#d64545"
FLIP_COLOR = "#f5b301"
BROKEN_COLOR = "#9b3fc4"  # a broken promise: stated C, chose D
ACTION_COLORS = {"C": COOP_COLOR, "D": DEFECT_COLOR}
AGENT_COLORS = {"A": "#3b6fd8", "B": "#e08a1e"}
ACTION_EMOJI = {"C": "🤝", "D": "🗡️"}
ACTION_WORD = {"C": "Cooperate", "D": "Defect"}
TRAIL_EMOJI = {"C": "🟢", "D": "🔴"}


@dataclass(frozen=True, slots=True)
class Profile:
    """How an agent is presented: emoji, nickname, subtitle, one-line description, card colors."""

    emoji: str
    title: str
    subtitle: str
    description: str
    gradient: tuple[str, str]

    @property
    def short(self) -> str:
        """Emoji and nickname, e.g. '🪞 Copycat'."""
        return f"{self.emoji} {self.title}"


LLM_GRADIENT = ("#e0f7fa", "#95d8e4")
# An LLM agent's emoji. Not 🤖: Streamlit's font (Source Sans) has its own monochrome robot, which
# Chromium prefers to the colour emoji font wherever the app's font is used (tables, labels).
LLM_EMOJI = "💬"
HUMAN_GRADIENT = ("#fff3d6", "#f7c873")
UNKNOWN_STYLE = ("❔", ("#f2f2f2", "#d2d2d2"))

PERSONA_TEXT: dict[str, str] = {
    "cooperative": "Prefers mutual cooperation and gives the benefit of the doubt.",
    "exploitative": "Cares only about its own score; cooperates only when it pays.",
    "liar": "Says it will cooperate, privately intends to defect, and defects.",
    "tit_for_tat": "Cooperates first, then mirrors the opponent's last move.",
    "grim_trigger": "Cooperates until the first betrayal, then never again.",
    "generous_tft": "Mirrors the opponent, but sometimes forgives a defection.",
    "wsls": "Repeats a move that paid well, switches after a poor payoff.",
}


def _params_text(params: Mapping[str, Any] | None) -> str:
    """'generous_prob 0.1, coop_prob 0.3' for the parameters that are set."""
    return ", ".join(
        f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
        for k, v in (params or {}).items()
        if v is not None
    )


def policy_profile(
    key: str, display_name: str | None = None, params: Mapping[str, Any] | None = None
) -> Profile:
    """The profile of a registered (or unknown) scripted policy: its look and description come
    from the policy's class in `pdbench.agents.policy`. A custom name is the title (the policy's
    nickname then goes into the subtitle), and parameters that are set are in the subtitle, so
    two differently set agents of one policy never look alike."""
    key = key.upper()
    cls = POLICY_REGISTRY.get(key)
    nickname = (cls.look.nickname if cls is not None else "") or key
    custom = display_name if display_name and display_name.upper() != key else None
    details = _params_text(params)
    subtitle = key + (f" ({nickname})" if custom and nickname != key else "")
    subtitle += f" · {details}" if details else ""
    title = custom or nickname
    if cls is None:
        return Profile(UNKNOWN_STYLE[0], title, subtitle, "A scripted policy.", UNKNOWN_STYLE[1])
    look = cls.look
    return Profile(look.emoji, title, subtitle, cls.description, look.card)


def persona_profile(
    persona: str | None, model: str = "", provider: str = "", name: str | None = None
) -> Profile:
    """The profile of an LLM agent: titled by its custom name, else by model and persona (two
    models with one persona never look alike)."""
    who = persona.replace("_", " ") if persona else ""
    title = name or " · ".join(part for part in (model or "LLM", who) if part)
    where = f"{provider}:{model}" if provider and model else (model or provider or "llm")
    if name and who:
        where += f" · {who}"
    description = PERSONA_TEXT.get(
        persona or "", "An LLM agent" + (f" ({persona})." if persona else ".")
    )
    return Profile(LLM_EMOJI, title, where, description, LLM_GRADIENT)


def human_profile(name: str = "") -> Profile:
    """The profile of a person playing (a `type: human` agent)."""
    shown = name if name and name != "human" else "You"
    return Profile("🧑", shown, "human", "A person, playing in the app's Play tab.", HUMAN_GRADIENT)


def agent_profile(config: Mapping[str, Any] | None, name: str = "") -> Profile:
    """The profile of an agent from its resolved config (or, without one, from its name)."""
    if config and config.get("type") == "human":
        return human_profile(str(config.get("name") or ""))
    if config and config.get("type") == "policy":
        return policy_profile(
            str(config.get("policy", "")), config.get("name") or None, config.get("params")
        )
    if config and config.get("type") == "llm":
        return persona_profile(
            config.get("persona"),
            str(config.get("model", "")),
            str(config.get("provider", "")),
            config.get("name") or None,
        )
    if name.upper() in POLICY_REGISTRY:
        return policy_profile(name)
    if name.endswith("]") and "[" in name:
        model, persona = name[:-1].split("[", 1)
        return persona_profile(persona, model)
    return Profile(UNKNOWN_STYLE[0], name or "?", "", "", UNKNOWN_STYLE[1])


EMOJI_FONTS = '"Apple Color Emoji", "Segoe UI Emoji", "Noto Color Emoji"'
CSS = f"""
<style>
.pdb-card, .pdb-vs, .pdb-round, .pdb-tl .pdb-who, .pdb-tl .pdb-head {{
  font-family: "Source Sans", "Source Sans Pro", "Source Sans 3", {EMOJI_FONTS}, sans-serif; }}
.pdb-card .pdb-emoji, .pdb-t, .pdb-vs {{ font-family: {EMOJI_FONTS}, sans-serif; }}
/* st.metric cuts its value and its grey chip with an ellipsis: wrap them instead (no cut text) */
[data-testid="stMetricValue"] .stMarkdownEllipsis, [data-testid="stMetricDelta"] .stMarkdownEllipsis,
[data-testid="stMetricValue"] .stMarkdownEllipsis p, [data-testid="stMetricDelta"] .stMarkdownEllipsis p {{
  white-space: normal; overflow: visible; text-overflow: clip; }}
[data-testid="stMetricValue"] p {{ line-height: 1.15; }}
/* Streamlit's grey placeholders (an element whose code is still loading) stay still: their
   endless shimmer made Chromium draw frame after frame while the first page loaded, CPU that
   the first chart needed (a fresh View Results page had ~14 shimmering at once) */
[data-testid="stSkeleton"] {{ animation: none !important; }}
.pdb-card {{ border-radius: 16px; padding: 14px 18px; color: #1f2933;
  box-shadow: 0 2px 10px rgba(0,0,0,.12); min-height: 128px; }}
.pdb-card .pdb-emoji {{ font-size: 42px; line-height: 1.1; }}
.pdb-card .pdb-title {{ font-size: 20px; font-weight: 700; margin-top: 4px; }}
.pdb-card .pdb-sub {{ font-size: 12px; opacity: .7; font-family: monospace; }}
.pdb-card .pdb-desc {{ font-size: 14px; margin-top: 6px; }}
.pdb-card .pdb-side {{ float: right; font-size: 12px; font-weight: 700; opacity: .6; }}
.pdb-vs {{ text-align: center; font-size: 34px; padding-top: 38px; }}
.pdb-round {{ text-align: center; font-size: 18px; font-weight: 700; padding-top: 22px; }}
.pdb-tl {{ margin-bottom: 6px; }}
.pdb-tl .pdb-head {{ font-size: 12px; color: #667; margin: 4px 0 2px 0; }}
.pdb-tl .pdb-row {{ display: flex; align-items: center; flex-wrap: nowrap; }}
.pdb-tl .pdb-who {{ width: 170px; min-width: 170px; font-size: 13px; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; }}
.pdb-cell {{ display: inline-flex; width: 17px; height: 21px; min-width: 17px; margin: 1px;
  border-radius: 4px; align-items: center; justify-content: center; position: relative;
  font: 700 11px/1 monospace; color: white; }}
.pdb-cell.c {{ background: {COOP_COLOR}; }}
.pdb-cell.d {{ background: {DEFECT_COLOR}; }}
.pdb-cell.flip {{ outline: 2px dashed {FLIP_COLOR}; outline-offset: 1px; }}
.pdb-cell.fail {{ box-shadow: inset 0 0 0 2px #111; }}
.pdb-cell.fail::after {{ content: "!"; position: absolute; top: -6px; right: -5px; width: 11px;
  height: 11px; border-radius: 50%; background: #111; color: #fff; font-size: 8px;
  display: flex; align-items: center; justify-content: center; }}
.pdb-cell.now {{ transform: scale(1.25); z-index: 1; box-shadow: 0 0 0 2px #1f2933; }}
.pdb-t {{ display: inline-flex; width: 28px; min-width: 28px; height: 28px; margin: 1px;
  align-items: center; justify-content: center; border-radius: 50%; position: relative;
  font-size: 19px; }}
.pdb-t.flip {{ outline: 2px dashed {FLIP_COLOR}; }}
.pdb-t.fail::after {{ content: "!"; position: absolute; top: -3px; right: -3px; width: 12px;
  height: 12px; border-radius: 50%; background: #111; color: #fff; font-size: 9px;
  display: flex; align-items: center; justify-content: center; }}
.pdb-t.now {{ box-shadow: 0 0 0 3px #1f2933; }}
.pdb-legend {{ font-size: 13px; color: #556; line-height: 2; }}
.pdb-legend .pdb-cell {{ margin: 0 6px 0 10px; }}
</style>
"""


def card_html(profile: Profile, side: str) -> str:
    """A gradient agent card: emoji, nickname, subtitle and description."""
    c1, c2 = profile.gradient
    return (
        f'<div class="pdb-card" style="background: linear-gradient(135deg, {c1}, {c2});">'
        f'<span class="pdb-side">AGENT {escape(side)}</span>'
        f'<div class="pdb-emoji">{profile.emoji}</div>'
        f'<div class="pdb-title">{escape(profile.title)}</div>'
        f'<div class="pdb-sub">{escape(profile.subtitle)}</div>'
        f'<div class="pdb-desc">{escape(profile.description)}</div></div>'
    )


def _mark(
    classes: list[str], tip: str, played: str, intended: str, failed: bool, now: bool, text: str
) -> str:
    """A timeline cell or trail dot: a noise flip, a parse fallback and the current round are
    added to its classes and explained in its tooltip."""
    if played != intended:
        classes.append("flip")
        tip += f"; meant {intended}, flipped by noise"
    if failed:
        classes.append("fail")
        tip += "; fallback after invalid LLM replies"
    if now:
        classes.append("now")
    return f'<span class="{" ".join(classes)}" title="{escape(tip)}">{text}</span>'


def _cell(
    action: str, intended: str, failure: bool, round_no: int, who: str, payoff: float, now: bool
) -> str:
    tip = f"Round {round_no}: {who} played {action} ({ACTION_WORD.get(action, '?')}), {payoff:+g}"
    return _mark(["pdb-cell", action.lower()], tip, action, intended, failure, now, escape(action))


def timeline_html(
    game: pd.DataFrame,
    labels: Sequence[str],
    block: int = 50,
    current: int | None = None,
) -> str:
    """Rows of C/D cells for both agents, `block` rounds per line pair (for short games).

    `game` is one game's rounds (see data.game_rounds); `labels` are the two row labels;
    `current` (a 1-based round) is highlighted.
    """
    parts = ['<div class="pdb-tl">']
    n = len(game)
    cols = {
        side: (
            game[side_field(side, "action")].tolist(),
            game[side_field(side, "intended_action")].tolist(),
            game[side_field(side, "parse_failure")].tolist(),
            game[side_field(side, "payoff")].tolist(),
        )
        for side in ("a", "b")
    }
    rounds = game["round"].tolist()
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        parts.append(f'<div class="pdb-head">rounds {rounds[lo]}–{rounds[hi - 1]}</div>')
        for side, label in zip(("a", "b"), labels, strict=True):
            played, intended, failed, paid = cols[side]
            cells = "".join(
                _cell(
                    played[i],
                    intended[i],
                    bool(failed[i]),
                    rounds[i],
                    label,
                    paid[i],
                    rounds[i] == current,
                )
                for i in range(lo, hi)
            )
            parts.append(
                f'<div class="pdb-row"><span class="pdb-who" title="{escape(label)}">'
                f"{escape(label)}</span>{cells}</div>"
            )
    parts.append("</div>")
    return "".join(parts)


def trail_html(table: pd.DataFrame, labels: Sequence[str], current: int) -> str:
    """The history trail: one 🟢/🔴 per round for each agent, the current round ringed, noise
    flips outlined in gold and parse fallbacks marked '!'. `table` is the slice to show."""
    rows = []
    for side, label in zip(("a", "b"), labels, strict=True):
        cells = []
        for rnd, played, intended, failed in zip(
            table["round"],
            table[side_field(side, "action")],
            table[side_field(side, "intended_action")],
            table[side_field(side, "parse_failure")],
            strict=True,
        ):
            cells.append(
                _mark(
                    ["pdb-t"],
                    f"Round {rnd}: {played} ({ACTION_WORD.get(played, '?')})",
                    played,
                    intended,
                    bool(failed),
                    rnd == current,
                    TRAIL_EMOJI.get(played, "⚪"),
                )
            )
        rows.append(
            f'<div class="pdb-row"><span class="pdb-who">{escape(label)}</span>{"".join(cells)}</div>'
        )
    first, last = int(table["round"].iloc[0]), int(table["round"].iloc[-1])
    head = f'<div class="pdb-head">history, rounds {first}–{last}</div>'
    return f'<div class="pdb-tl pdb-trail">{head}{"".join(rows)}</div>'


LEGEND = (
    '<div class="pdb-legend">'
    '<span class="pdb-cell c">C</span> cooperate &nbsp; '
    '<span class="pdb-cell d">D</span> defect &nbsp; '
    '<span class="pdb-cell c flip">C</span> noise flipped the intended move &nbsp; '
    '<span class="pdb-cell d fail">D</span> fallback after invalid LLM replies'
    "</div>"
)


# --------------------------------------------------------------------------------------------
# Tournaments and evolving populations

# Chart colors: a policy's own (`Look.color`, a saturated shade of its card gradient, so a
# strategy looks the same on its card, in the leaderboard and in the population charts), then
# these spares for LLMs and second variants of a policy.
EXTRA_COLORS = ("#e377c2", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f", "#ff9896", "#c5b0d5")
MEDALS = {1: "🥇", 2: "🥈", 3: "🥉"}


def medal(rank: int) -> str:
    """🥇 🥈 🥉 for the podium, the number itself below it."""
    return MEDALS.get(int(rank), str(int(rank)))


def player_key(config: Mapping[str, Any] | None, name: str = "") -> str | None:
    """The policy key (e.g. 'TFT') of a scripted player, None for LLMs and unknown players."""
    if config and config.get("type") == "policy":
        return str(config.get("policy", "")).upper() or None
    if not config and name.upper() in POLICY_REGISTRY:
        return name.upper()
    return None


def player_colors(players: Sequence[tuple[str, str | None]]) -> dict[str, str]:
    """A color per player name from (name, policy key) pairs: the strategy's own color the first
    time a key is seen, otherwise the next spare color (LLMs, a second GTFT variant)."""
    used: set[str] = set()
    spare = iter(EXTRA_COLORS * (1 + len(players) // len(EXTRA_COLORS)))
    out: dict[str, str] = {}
    for name, key in players:
        cls = POLICY_REGISTRY.get(key or "")
        color = cls.look.color if cls is not None else None
        if color is None or color in used:
            color = next(spare)
        used.add(color)
        out[name] = color
    return out


@dataclass(frozen=True, slots=True)
class Player:
    """A tournament player or an evolving strategy: its name in the artifacts and its look."""

    name: str
    config: dict[str, Any] | None
    profile: Profile
    color: str
    label: str  # unique, e.g. '🪞 Copycat · TFT'


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def make_players(entries: Iterable[tuple[str, dict[str, Any] | None]]) -> list[Player]:
    """Players from (artifact name, resolved config or None): profile, color and unique label."""
    entries = list(entries)
    colors = player_colors([(name, player_key(cfg, name)) for name, cfg in entries])
    players: list[Player] = []
    seen: set[str] = set()
    for name, cfg in entries:
        profile = agent_profile(cfg, name)
        # A custom name, or an LLM's "model[persona]", is already the title: not named twice.
        named = bool(cfg and (cfg.get("name") or cfg.get("type") == "llm")) or name.endswith("]")
        shows_name = named and _letters(name) == _letters(profile.title)
        label = (
            f"{profile.short} · {name}"
            if player_key(cfg, name) and not shows_name
            else profile.short
        )
        if label in seen:
            label = f"{label} ({name})"
        seen.add(label)
        players.append(Player(name, cfg, profile, colors[name], label))
    return players


PodiumMember = tuple[Profile, str, str]  # (profile, player name, score text)
ON_STEP = 4  # players drawn on one podium step at most (the others are counted)


def _podium_member(profile: Profile, name: str, score: str) -> str:
    return (
        f'<div class="pdb-member"><div class="pdb-emoji">{profile.emoji}</div>'
        f'<div class="pdb-title">{escape(profile.title)}</div>'
        f'<div class="pdb-sub">{escape(name)}</div>'
        f'<div class="pdb-score">{escape(score)}</div></div>'
    )


def podium_html(steps: Sequence[tuple[int, Sequence[PodiumMember], str]]) -> str:
    """Up to three steps arranged like a podium (🥈 🥇 🥉): (rank, members, note) each, best
    first. Players the data do not separate share one step (one card, one medal, side by side,
    at most ON_STEP of them drawn) and its `note` says so."""
    cards = []
    place = {2: 0, 1: 1, 3: 2}  # silver left of gold, bronze right (a tie for gold: no silver)
    podium = sorted(steps, key=lambda step: place.get(int(step[0]), 3))
    for rank, members, note in podium:
        first, last = members[0][0].gradient, members[-1][0].gradient
        tied = len(members) > 1
        shown = "".join(_podium_member(*m) for m in members[:ON_STEP])
        if len(members) > ON_STEP:
            shown += f'<div class="pdb-member pdb-more">+ {len(members) - ON_STEP} more</div>'
        cards.append(
            f'<div class="pdb-podium-card r{int(rank)}{" tied" if tied else ""}" '
            f'style="background: linear-gradient(135deg, {first[0]}, {last[1]});">'
            f'<div class="pdb-medal">{medal(rank)}</div>'
            f'<div class="pdb-members">{shown}</div>'
            + (f'<div class="pdb-tie">{escape(note)}</div>' if note else "")
            + "</div>"
        )
    return f'<div class="pdb-podium">{"".join(cards)}</div>'


SMALL_STRIP = 100  # larger populations get smaller faces, twice as many a row


def population_strip_html(counts: Sequence[tuple[Profile, int]], per_row: int = 25) -> str:
    """The population as emoji, one per individual (like the players around Nicky Case's table),
    grouped by strategy; rows of `per_row` (twice as many, half as large, above SMALL_STRIP
    individuals, so 300 fit in six short rows)."""
    small = sum(int(n) for _, n in counts) > SMALL_STRIP
    cls = "pdb-ind small" if small else "pdb-ind"
    per_row = 2 * per_row if small else per_row
    faces = [
        f'<span class="{cls}" title="{escape(p.title)}">{p.emoji}</span>'
        for p, n in counts
        for _ in range(int(n))
    ]
    rows = [
        f'<div class="pdb-strip-row">{"".join(faces[i : i + per_row])}</div>'
        for i in range(0, len(faces), per_row)
    ]
    return f'<div class="pdb-strip">{"".join(rows)}</div>'


GAMES_CSS = f"""
<style>
.pdb-podium {{ display: flex; gap: 14px; align-items: flex-end; margin: 4px 0 10px 0; }}
.pdb-podium-card {{ flex: 1; border-radius: 16px; padding: 12px 16px; color: #1f2933;
  box-shadow: 0 2px 10px rgba(0,0,0,.12); text-align: center;
  font-family: "Source Sans", "Source Sans Pro", {EMOJI_FONTS}, sans-serif; }}
.pdb-podium-card.r1 {{ min-height: 200px; }}
.pdb-podium-card.r2 {{ min-height: 178px; }}
.pdb-podium-card.r3 {{ min-height: 162px; }}
.pdb-podium-card .pdb-medal {{ font-size: 30px; font-family: {EMOJI_FONTS}, sans-serif; }}
.pdb-podium-card .pdb-emoji {{ font-size: 38px; line-height: 1.1;
  font-family: {EMOJI_FONTS}, sans-serif; }}
.pdb-podium-card .pdb-title {{ font-size: 18px; font-weight: 700; }}
.pdb-podium-card .pdb-sub {{ font-size: 12px; opacity: .7; font-family: monospace; }}
.pdb-podium-card .pdb-score {{ font-size: 15px; margin-top: 4px; }}
.pdb-podium-card.tied {{ flex: 1.6; }}
.pdb-members {{ display: flex; flex-wrap: wrap; justify-content: center; gap: 4px 18px; }}
.pdb-podium-card.tied .pdb-emoji {{ font-size: 30px; }}
.pdb-podium-card.tied .pdb-title {{ font-size: 16px; }}
.pdb-more {{ align-self: center; font-size: 14px; opacity: .75; }}
.pdb-tie {{ display: inline-block; margin-top: 8px; padding: 2px 10px; border-radius: 10px;
  background: rgba(255,255,255,.65); font-size: 13px; font-weight: 600; }}
.pdb-strip {{ margin: 6px 0 4px 0; }}
.pdb-strip-row {{ display: flex; flex-wrap: nowrap; }}
.pdb-ind {{ display: inline-flex; width: 30px; height: 30px; align-items: center;
  justify-content: center; font-size: 22px; font-family: {EMOJI_FONTS}, sans-serif; }}
.pdb-ind.small {{ width: 18px; height: 18px; font-size: 13px; }}
.pdb-bars {{ font-family: "Source Sans", "Source Sans Pro", {EMOJI_FONTS}, sans-serif; }}
.pdb-bars-head {{ font-size: 15px; margin-bottom: 6px; color: #334; }}
.pdb-bar-row {{ display: flex; align-items: center; margin: 3px 0; }}
.pdb-bar-label {{ width: 230px; min-width: 230px; font-size: 14px; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; }}
.pdb-bar-track {{ flex: 1; height: 20px; background: #f1f3f5; border-radius: 6px;
  overflow: hidden; }}
.pdb-bar {{ display: block; height: 100%; border-radius: 6px; }}
.pdb-bar-value {{ width: 80px; min-width: 80px; text-align: right; font-size: 13px;
  font-family: monospace; }}
</style>
"""
