"""The look of a group game in the app, as HTML: the seats drawn around the group for one round
(a ring of seat cards: letter, agent name in full, the move as a coloured token with its
letter and word, this round's payoff and the running total), the round's messages (writer ->
everyone or -> addressee, with the stated intention) and the per-seat timeline of moves (rows
seats, columns rounds, a C or D in each cell).

Everything here returns strings and reads nothing; every text from the run is escaped. The
numbers drawn are the record's (`ui.group_data.GroupGameRounds`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from pdbench.ui.group_data import GroupGameRounds, GroupMessage, seat_label, seat_letter
from pdbench.ui.style import ACTION_WORD, COOP_COLOR, DEFECT_COLOR, EMOJI_FONTS, FLIP_COLOR

# A colour per seat (its letter badge, its line in charts): A and B as in pairwise games, then
# colours far from the moves' green and red; seats past the tenth reuse them.
SEAT_COLORS = (
    "#3b6fd8",
    "#e08a1e",
    "#8e6bbf",
    "#1b9aaa",
    "#8c564b",
    "#d6619e",
    "#7a7a1a",
    "#5b6b7f",
    "#2c3e91",
    "#b8860b",
)
MOVE_PAST = {"C": "cooperated", "D": "defected"}
# A message's intention as the record has it: read from its words ("phrases"), or declared by
# its writer beside the message, unseen by the others ("declared").
INTENT_TAG = {"C": "promised C", "D": "announced D"}
DECLARED_TAG = {"C": "meant C (declared, unseen)", "D": "meant D (declared, unseen)"}
BROKEN = "✗ broken promise: promised C, chose D"
BROKEN_DECLARED = "✗ meant C, chose D"
TIMELINE_BLOCK = 50  # rounds per line of the HTML timeline


def seat_color(seat: int) -> str:
    """A seat's colour."""
    return SEAT_COLORS[seat % len(SEAT_COLORS)]


def number(value: float) -> str:
    """A payoff as text: at most two decimals, no trailing zeros ('1.4', '-0.25', '3')."""
    if value != value:  # NaN: not recorded
        return "—"
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def breakable(name: str) -> str:
    """A name as HTML that may wrap after its hyphens, underscores, dots and slashes and before
    a bracket ('mock-gpt-4o[persona]' breaks into words, not inside them; a word longer than the
    card still wraps anywhere, by the CSS), escaped."""
    out = []
    for char in name:
        if char == "[":
            out.append("<wbr>")
        out.append(escape(char))
        if char in "-_./":
            out.append("<wbr>")
    return "".join(out)


def _letter(seat: int) -> str:
    return (
        f'<span class="pdb-gletter" style="background:{seat_color(seat)}">'
        f"{seat_letter(seat)}</span>"
    )


# --------------------------------------------------------------------------------------------
# The ring


def ring_size(n_seats: int) -> tuple[int, str, int]:
    """(ring height in pixels, card width as CSS, card height in pixels) for a group of
    `n_seats`: the cards take a share of the ring's width within pixel bounds, and the ring
    grows with the group, so that neighbours do not overlap from 1280 px wide windows up."""
    if n_seats <= 4:
        return 480, "clamp(160px, 24%, 240px)", 150
    if n_seats <= 6:
        return 580, "clamp(150px, 22%, 230px)", 150
    if n_seats <= 8:
        return 680, "clamp(140px, 20%, 210px)", 160
    return 800 + 30 * max(0, n_seats - 10), "clamp(130px, 18%, 200px)", 170


def seat_positions(n_seats: int) -> list[tuple[float, float]]:
    """Each seat's place on the ring as (x, y) in [-1, 1], seat A at the top, then clockwise."""
    return [
        (
            round(math.sin(2 * math.pi * i / n_seats), 4),
            round(-math.cos(2 * math.pi * i / n_seats), 4),
        )
        for i in range(n_seats)
    ]


def seat_card(game: GroupGameRounds, seat: int, t: int, emoji: str = "") -> str:
    """One seat's card for the round at column `t` of `game` (placed by `ring_html`)."""
    played, meant = str(game.moves[seat, t]), str(game.intended[seat, t])
    notes = []
    if meant != played:
        notes.append(f"meant {meant}, flipped by noise")
    if game.fallbacks[seat, t]:
        notes.append("fallback after invalid replies")
    note = f'<div class="pdb-gseat-note">{escape(" · ".join(notes))}</div>' if notes else ""
    face = f'<span class="pdb-gseat-emoji">{escape(emoji)}</span>' if emoji else ""
    return (
        f'<div class="pdb-gseat-head">{_letter(seat)}{face}</div>'
        f'<div class="pdb-gseat-name">{breakable(game.names[seat])}</div>'
        f'<div class="pdb-gseat-move"><span class="pdb-gtoken {played.lower()}">{played}</span>'
        f'<span class="pdb-gmove-word">{MOVE_PAST.get(played, "?")}</span></div>'
        f'<div class="pdb-gseat-pay"><span>this round <b>{number(game.payoffs[seat, t])}</b>'
        f"</span><span>total <b>{number(game.totals[seat, t])}</b></span></div>{note}"
    )


def ring_html(
    game: GroupGameRounds, t: int, emojis: Sequence[str] = (), total_rounds: int | None = None
) -> str:
    """The seats around the group at the round in column `t` (0-based) of `game`: a card per
    seat on an ellipse that fills the width it is given, the round and how many cooperated in
    the middle. `emojis`: a face per seat ('' for none); `total_rounds`: the game's length when
    `game` holds only the rounds played so far (the Play tab's group game)."""
    n = game.n_seats
    height, width, card_height = ring_size(n)
    cards = []
    for seat, (x, y) in enumerate(seat_positions(n)):
        style = (
            f"left:calc(50% + {x} * (50% - var(--pdb-card) / 2 - 4px));"
            f"top:calc(50% + {y} * (50% - {card_height // 2 + 4}px))"
        )
        move = str(game.moves[seat, t])
        emoji = emojis[seat] if seat < len(emojis) else ""
        cards.append(
            f'<div class="pdb-gseat {move.lower()}" data-seat="{seat_letter(seat)}" '
            f'data-move="{move}" style="{style}">{seat_card(game, seat, t, emoji)}</div>'
        )
    k = int(game.cooperators[t])
    said = len(game.messages[t])
    middle = (
        f'<div class="pdb-gring-mid"><div class="pdb-gring-round">Round {t + 1} of '
        f"{total_rounds or game.n_rounds}</div>"
        f'<div class="pdb-gring-count">{k} of {n} cooperated</div>'
        f'<div class="pdb-gring-bar"><span style="width:{100 * k / n:.1f}%"></span></div>'
        + (
            f'<div class="pdb-gring-said">💬 {said} message{"s" * (said != 1)}</div>'
            if said
            else ""
        )
        + "</div>"
    )
    return (
        f'<div class="pdb-gring" data-round="{t + 1}" '
        f'style="height:{height}px;--pdb-card:{width}">'
        f'<div class="pdb-gring-table"></div>{middle}{"".join(cards)}</div>'
    )


# --------------------------------------------------------------------------------------------
# Messages


def _addressee(message: GroupMessage, names: Sequence[str]) -> str:
    if message.to is None:
        return '<span class="pdb-gmsg-all">everyone</span>'
    return f"{_letter(message.to)} <span>{breakable(names[message.to])}</span>"


def messages_html(game: GroupGameRounds, t: int, talks: bool, height: int) -> str:
    """The messages written before the moves of the round in column `t`: writer -> everyone or
    -> addressee, the text, its intention (read from its words, or declared by the writer
    unseen by the others: the record's `source`), and a broken promise marked (the intention
    was C and the writer then chose D). `talks`: whether the condition has a message channel."""
    head = f'<div class="pdb-gmsgs-head">💬 Messages before round {t + 1}\'s moves</div>'
    said = game.messages[t]
    if not said:
        empty = "No messages this round." if talks else "This group does not talk."
        return (
            f'<div class="pdb-gmsgs" style="max-height:{height}px">{head}'
            f'<div class="pdb-gmsgs-none">{empty}</div></div>'
        )
    items = []
    for m in said:
        tags = []
        if m.fallback:
            tags.append('<span class="pdb-gtag">no usable reply: said nothing</span>')
        elif m.intent in INTENT_TAG:
            declared = m.source == "declared"
            tag = (DECLARED_TAG if declared else INTENT_TAG)[m.intent]
            tags.append(f'<span class="pdb-gtag">{tag}</span>')
            if m.intent == "C" and str(game.intended[m.writer, t]) == "D":
                broken = BROKEN_DECLARED if declared else BROKEN
                tags.append(f'<span class="pdb-gtag broken">{broken}</span>')
        text = escape(m.text) if m.text else "<i>(empty)</i>"
        items.append(
            f'<div class="pdb-gmsg" data-writer="{seat_letter(m.writer)}" '
            f'data-to="{"" if m.to is None else seat_letter(m.to)}">'
            f'<div class="pdb-gmsg-who">{_letter(m.writer)} '
            f"<span>{breakable(game.names[m.writer])}</span>"
            f' <span class="pdb-gmsg-arrow">→</span> {_addressee(m, game.names)}</div>'
            f'<div class="pdb-gmsg-text">“{text}”</div>'
            + (f'<div class="pdb-gmsg-tags">{"".join(tags)}</div>' if tags else "")
            + "</div>"
        )
    return f'<div class="pdb-gmsgs" style="max-height:{height}px">{head}{"".join(items)}</div>'


# --------------------------------------------------------------------------------------------
# The timeline


def timeline_html(game: GroupGameRounds, current: int | None = None) -> str:
    """Rows of C/D cells, one row per seat, TIMELINE_BLOCK rounds per line; `current` (a
    column, 0-based) is ringed. Each cell's tooltip says the round, the seat, the move and the
    payoff (and a noise flip or a fallback, which are also marked)."""
    parts = ['<div class="pdb-gtl">']
    for lo in range(0, game.n_rounds, TIMELINE_BLOCK):
        hi = min(lo + TIMELINE_BLOCK, game.n_rounds)
        numbers = "".join(
            f'<span class="pdb-gtl-no">{t + 1 if (t + 1) % 5 == 0 or t == lo else ""}</span>'
            for t in range(lo, hi)
        )
        parts.append(
            f'<div class="pdb-gtl-row pdb-gtl-head"><span class="pdb-gtl-who">rounds '
            f"{lo + 1}–{hi}</span>{numbers}</div>"
        )
        for seat in range(game.n_seats):
            label = seat_label(seat, game.names[seat])
            cells = []
            for t in range(lo, hi):
                move, meant = str(game.moves[seat, t]), str(game.intended[seat, t])
                classes = ["pdb-cell", move.lower()]
                tip = (
                    f"Round {t + 1}: {label} played {move} ({ACTION_WORD.get(move, '?')}), "
                    f"{number(game.payoffs[seat, t])}"
                )
                if meant != move:
                    classes.append("flip")
                    tip += f"; meant {meant}, flipped by noise"
                if game.fallbacks[seat, t]:
                    classes.append("fail")
                    tip += "; fallback after invalid replies"
                if t == current:
                    classes.append("now")
                cells.append(
                    f'<span class="{" ".join(classes)}" title="{escape(tip)}">{move}</span>'
                )
            parts.append(
                f'<div class="pdb-gtl-row" data-seat="{seat_letter(seat)}">'
                f'<span class="pdb-gtl-who">{_letter(seat)}'
                f"<span>{breakable(game.names[seat])}</span></span>"
                f"{''.join(cells)}</div>"
            )
    parts.append("</div>")
    return "".join(parts)


GROUP_CSS = f"""
<style>
.pdb-gring, .pdb-gmsgs, .pdb-gtl {{
  font-family: "Source Sans", "Source Sans Pro", "Source Sans 3", {EMOJI_FONTS}, sans-serif;
  color: #1f2933; }}
.pdb-gring {{ position: relative; width: 100%; margin: 4px 0 8px 0; }}
.pdb-gring-table {{ position: absolute; left: 22%; right: 22%; top: 26%; bottom: 26%;
  border-radius: 50%; background: radial-gradient(#f4efe6, #e6dccb); opacity: .7; }}
.pdb-gring-mid {{ position: absolute; left: 50%; top: 50%; transform: translate(-50%, -50%);
  text-align: center; width: 190px; }}
.pdb-gring-round {{ font-size: 22px; font-weight: 700; }}
.pdb-gring-count {{ font-size: 15px; margin-top: 2px; }}
.pdb-gring-bar {{ height: 8px; border-radius: 4px; background: {DEFECT_COLOR}; margin: 6px 20px 0;
  overflow: hidden; }}
.pdb-gring-bar span {{ display: block; height: 100%; background: {COOP_COLOR}; }}
.pdb-gring-said {{ font-size: 13px; margin-top: 6px; color: #52606d; }}
.pdb-gseat {{ position: absolute; transform: translate(-50%, -50%); box-sizing: border-box;
  width: var(--pdb-card);
  background: #fff; border-radius: 12px; padding: 6px 9px 7px; border: 2px solid #d9dee3;
  box-shadow: 0 2px 8px rgba(0,0,0,.10); font-size: 13px; line-height: 1.25; }}
.pdb-gseat.c {{ border-color: {COOP_COLOR}; }}
.pdb-gseat.d {{ border-color: {DEFECT_COLOR}; }}
.pdb-gseat-head {{ display: flex; align-items: center; gap: 6px; }}
.pdb-gseat-emoji {{ font-size: 18px; font-family: {EMOJI_FONTS}, sans-serif; }}
.pdb-gseat-name {{ font-weight: 700; font-size: 14px; margin: 3px 0 4px;
  overflow-wrap: anywhere; }}
.pdb-gseat-move {{ display: flex; align-items: center; gap: 6px; font-weight: 600; }}
.pdb-gseat-pay {{ margin-top: 4px; color: #3e4c59; display: flex; flex-wrap: wrap;
  column-gap: 10px; }}
.pdb-gseat-pay span {{ white-space: nowrap; }}
.pdb-gseat-note {{ margin-top: 3px; font-size: 12px; color: #7c5e00; }}
.pdb-gletter {{ display: inline-flex; align-items: center; justify-content: center; flex: none;
  width: 20px; height: 20px; border-radius: 50%; color: #fff; font: 700 12px/1 sans-serif; }}
.pdb-gtoken {{ display: inline-flex; align-items: center; justify-content: center; flex: none;
  width: 26px; height: 26px; border-radius: 50%; color: #fff; font: 700 15px/1 sans-serif; }}
.pdb-gtoken.c {{ background: {COOP_COLOR}; }}
.pdb-gtoken.d {{ background: {DEFECT_COLOR}; }}
.pdb-gmsgs {{ overflow-y: auto; padding-right: 4px; }}
.pdb-gmsgs-head {{ font-weight: 700; font-size: 15px; margin-bottom: 8px; }}
.pdb-gmsgs-none {{ color: #616e7c; font-size: 14px; }}
.pdb-gmsg {{ background: #f5f7fa; border-radius: 10px; padding: 7px 10px; margin-bottom: 8px;
  font-size: 14px; overflow-wrap: anywhere; }}
.pdb-gmsg-who {{ display: flex; flex-wrap: wrap; align-items: center; gap: 4px;
  font-weight: 600; font-size: 13px; }}
.pdb-gmsg-arrow {{ color: #616e7c; }}
.pdb-gmsg-all {{ font-style: italic; font-weight: 600; }}
.pdb-gmsg-text {{ margin-top: 4px; white-space: pre-wrap; }}
.pdb-gmsg-tags {{ margin-top: 4px; display: flex; flex-wrap: wrap; gap: 4px; }}
.pdb-gtag {{ font-size: 12px; background: #e4e7eb; border-radius: 8px; padding: 1px 7px;
  white-space: nowrap; }}
.pdb-gtag.broken {{ background: #f1e3f8; color: #6d2a8c; }}
.pdb-gtl {{ overflow-x: auto; padding: 4px 2px 6px; }}
.pdb-gtl-row {{ display: flex; align-items: center; flex-wrap: nowrap; }}
.pdb-gtl-who {{ width: 230px; min-width: 230px; font-size: 13px; display: flex; gap: 5px;
  align-items: center; overflow-wrap: anywhere; padding-right: 6px; }}
.pdb-gtl-who > span {{ min-width: 0; overflow-wrap: anywhere; }}
.pdb-gtl-head {{ font-size: 12px; color: #667; margin-top: 6px; }}
.pdb-gtl-no {{ display: inline-block; width: 17px; min-width: 17px; margin: 0 1px;
  font: 10px/1 monospace; text-align: center; }}
.pdb-gtl .pdb-cell.flip {{ outline-color: {FLIP_COLOR}; }}
</style>
"""
