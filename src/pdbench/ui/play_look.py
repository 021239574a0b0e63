"""The look of the 🎮 Play tab: its words, the move buttons' style, the last round's result
panel (the two moves flipping in and the payoffs counting up, in CSS: no extra rerun) and the
lesson card at the end of a game.

One vocabulary for the whole tab, the app's (`style.ACTION_WORD`: Cooperate / Defect): the
buttons, the result cards, the history's tooltips, the outcome line and the lesson use it.

The buttons are filled (a gradient, white text); the result cards are white panels with a
coloured coin and the move's word in its colour, so the two never look alike. Animations are
off for a browser that asks for reduced motion. No "<" may appear in the CSS: Streamlit's HTML
sanitiser drops a style element whose text looks like markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from pdbench.ui.lesson import STATE_WORDS, PlayedLike, StateCount
from pdbench.ui.style import ACTION_EMOJI, ACTION_WORD, COOP_COLOR, DEFECT_COLOR, policy_profile

MOVE_LABEL = {a: f"{ACTION_EMOJI[a]} {ACTION_WORD[a]}" for a in ("C", "D")}  # the buttons
OUTCOMES = {  # the last round in words: the person's move, then the opponent's
    "CC": "you both cooperated",
    "DD": "you both defected",
    "CD": "you cooperated, they defected",
    "DC": "you defected, they cooperated",
}

CSS = f"""<style>
.st-key-pl_move_C button, .st-key-pl_move_D button {{ min-height: 84px; border: 0;
  color: white; font-size: 26px; font-weight: 800; border-radius: 16px;
  box-shadow: 0 4px 0 rgba(0,0,0,.18); }}
.st-key-pl_move_C button p, .st-key-pl_move_D button p {{ font-size: 26px; font-weight: 800; }}
.st-key-pl_move_C button {{ background: linear-gradient(135deg, #3fb866, {COOP_COLOR}); }}
.st-key-pl_move_D button {{ background: linear-gradient(135deg, #e86363, {DEFECT_COLOR}); }}
.st-key-pl_move_C button:disabled, .st-key-pl_move_D button:disabled {{ opacity: .35; }}
.pdb-pick {{ font-size: 15px; font-weight: 700; color: #3e4c59; margin: 2px 0 -6px 0; }}
.pdb-res {{ border: 1px solid #d9dee5; border-radius: 14px; background: #f7f9fb;
  padding: 10px 14px 12px 14px; }}
.pdb-res-head {{ font-size: 14px; color: #52606d; margin-bottom: 8px; }}
.pdb-res-head b {{ color: #1f2933; }}
.pdb-res-row {{ display: flex; gap: 12px; align-items: stretch; }}
.pdb-res-vs {{ align-self: center; font-size: 14px; color: #7b8794; font-weight: 700; }}
.pdb-res-card {{ flex: 1; display: flex; align-items: center; gap: 14px; background: #fff;
  border: 1px solid #e4e7eb; border-left: 6px solid var(--pdb-c); border-radius: 10px;
  padding: 8px 14px; perspective: 400px; cursor: default; min-width: 0; }}
.pdb-res-coin {{ width: 58px; height: 58px; min-width: 58px; border-radius: 50%;
  background: var(--pdb-c); display: flex; align-items: center; justify-content: center;
  font-size: 30px; font-family: "Apple Color Emoji", "Segoe UI Emoji", "Noto Color Emoji",
  sans-serif; box-shadow: inset 0 -4px 0 rgba(0,0,0,.18);
  animation: pdb-flip .5s ease-out both; animation-delay: var(--pdb-delay); }}
.pdb-res-text {{ flex: 1; min-width: 0; }}
.pdb-res-who {{ font-size: 12px; text-transform: uppercase; letter-spacing: .04em;
  color: #7b8794; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }}
.pdb-res-word {{ font-size: 22px; font-weight: 800; color: var(--pdb-c); line-height: 1.15; }}
.pdb-res-note {{ font-size: 12px; color: #8a6100; }}
.pdb-res-pay {{ font-size: 28px; font-weight: 800; color: #1f2933;
  font-variant-numeric: tabular-nums; text-align: right; min-width: 56px; }}
.pdb-res-pay small {{ display: block; font-size: 11px; font-weight: 600; color: #7b8794; }}
@property --pdb-n {{ syntax: "\\3Cinteger\\3E"; inherits: false; initial-value: 0; }}
.pdb-res-pay .count {{ counter-reset: pdbn var(--pdb-n);
  animation: pdb-count .7s ease-out both; animation-delay: calc(var(--pdb-delay) + .35s); }}
.pdb-res-pay .count::after {{ content: counter(pdbn); }}
@keyframes pdb-flip {{ from {{ transform: rotateY(90deg) scale(.6); opacity: 0; }}
  to {{ transform: none; opacity: 1; }} }}
@keyframes pdb-count {{ from {{ --pdb-n: 0; }} }}
.pdb-lesson {{ border: 2px solid #f0c35a; background: #fffaf0; border-radius: 16px;
  padding: 14px 18px; margin: 6px 0 10px 0; animation: pdb-rise .5s ease-out both; }}
.pdb-lesson-head {{ font-size: 13px; font-weight: 800; letter-spacing: .06em;
  text-transform: uppercase; color: #8a6100; }}
.pdb-lesson-text {{ font-size: 19px; font-weight: 600; color: #1f2933; margin: 4px 0 10px 0; }}
.pdb-lesson-grid {{ display: flex; gap: 18px; flex-wrap: wrap; align-items: flex-start; }}
.pdb-lesson-like {{ flex: 1 1 260px; font-size: 15px; color: #1f2933; }}
.pdb-lesson-like .big {{ font-size: 22px; font-weight: 800; display: block; margin: 2px 0; }}
.pdb-lesson-like .pdb-verdict {{ font-size: 13px; color: #8a6100; margin-top: 4px; }}
.pdb-lesson-like .pdb-ties {{ font-size: 13px; color: #52606d; margin-top: 4px; }}
table.pdb-m1 {{ flex: 1 1 420px; border-collapse: collapse; font-size: 14px; }}
table.pdb-m1 th, table.pdb-m1 td {{ padding: 3px 8px; border-bottom: 1px solid #efe3c4;
  text-align: left; }}
table.pdb-m1 td.n {{ font-variant-numeric: tabular-nums; white-space: nowrap; }}
table.pdb-m1 .st {{ font-family: monospace; font-weight: 700; white-space: nowrap; }}
table.pdb-m1 .w {{ color: #52606d; font-size: 12px; }}
@keyframes pdb-rise {{ from {{ transform: translateY(8px); opacity: 0; }} }}
@media (prefers-reduced-motion: reduce) {{
  .pdb-res-coin, .pdb-res-pay .count, .pdb-lesson {{ animation: none; }} }}
.pdb-chat {{ display: flex; flex-direction: column; gap: 6px; margin: 4px 0 8px 0; }}
.pdb-chat-row {{ display: flex; }}
.pdb-chat-row.them {{ justify-content: flex-end; }}
.pdb-chat-msg {{ max-width: 70%; padding: 6px 12px; border-radius: 14px; font-size: 15px;
  line-height: 1.35; white-space: pre-wrap; overflow-wrap: anywhere; background: #eef2ff; }}
.pdb-chat-row.them .pdb-chat-msg {{ background: #fff4e5; }}
.pdb-chat-who {{ display: block; font-size: 12px; font-weight: 700; color: #52606d; }}
.pdb-chat-msg.none {{ font-style: italic; color: #7b8794; }}
</style>"""


def _payoff(payoff: float) -> str:
    """The payoff, counting up from 0 when it is a whole number (the final value is the
    element's own, so without animation it shows at once)."""
    if float(payoff).is_integer() and abs(payoff) < 2**31:
        sign = "+" if payoff >= 0 else ""
        return f'{sign}<span class="count" style="--pdb-n: {int(payoff)}"></span>'
    return escape(f"{payoff:+g}")


def result_card(
    who: str, played: str, intended: str, payoff: float, failed: bool, delay: float
) -> str:
    """One player's move in the last round: a coin with the move's emoji (flipping in after
    `delay` seconds), who played, the move's word, and the payoff (counting up)."""
    notes = []
    if played != intended:
        notes.append(f"⚡ meant to {ACTION_WORD.get(intended, '?').lower()}, flipped by noise")
    if failed:
        notes.append("⚠️ fallback move after invalid replies")
    note = f'<div class="pdb-res-note">{" · ".join(notes)}</div>' if notes else ""
    color = COOP_COLOR if played == "C" else DEFECT_COLOR
    return (
        f'<div class="pdb-res-card" data-move="{escape(played)}" data-payoff="{payoff:g}" '
        f'style="--pdb-c: {color}; --pdb-delay: {delay:g}s">'
        f'<div class="pdb-res-coin">{ACTION_EMOJI.get(played, "?")}</div>'
        f'<div class="pdb-res-text"><div class="pdb-res-who">{escape(who)}</div>'
        f'<div class="pdb-res-word">{ACTION_WORD.get(played, "?")}</div>{note}</div>'
        f'<div class="pdb-res-pay" aria-label="{payoff:+g} points">{_payoff(payoff)}'
        "<small>points</small></div></div>"
    )


def result_html(round_no: int, cards: Sequence[str], outcome: str) -> str:
    """The result panel of round `round_no`: the outcome in words and the two result cards
    (`result_card`: the person's, then the opponent's)."""
    you, them = cards
    return (
        f'<div class="pdb-res" data-round="{round_no}">'
        f'<div class="pdb-res-head"><b>Round {round_no}</b> · {escape(outcome)}</div>'
        f'<div class="pdb-res-row">{you}<div class="pdb-res-vs">vs</div>{them}</div></div>'
    )


def _strategy(key: str) -> str:
    """'🪞 Copycat (TFT)'."""
    return f"{policy_profile(key).short} ({key})"


def _rate(count: StateCount) -> str:
    if not count.visits:
        return "never came up"
    return f"{count.cooperations} of {count.visits} · {count.cooperations / count.visits:.0%}"


def lesson_html(
    sentence: str,
    like: PlayedLike | None,
    profiles: Sequence[Sequence[StateCount]],
    names: Sequence[str],
) -> str:
    """The lesson card: the sentence, the strategy the person played like (the strategy card's
    best named strategy, the ones that fit as well, or the card's verdict when none fits), and
    the memory-one profiles of the two players (`names`: the person's, the opponent's) side by
    side."""
    if like is None:
        played = "No strategy card: the game is too short to fit one."
    else:
        lead = "You played most like" if like.verdict else "You played like"
        played = f'{lead}<span class="big">{escape(_strategy(like.strategy))}</span>'
        if like.explained is not None:
            of = f"{like.moves} " if like.moves else ""
            played += f"which explains {like.explained:.0%} of your {of}moves."
        if like.ties:
            shown = ", ".join(escape(_strategy(k)) for k in like.ties[:3])
            more = f" and {len(like.ties) - 3} more" if len(like.ties) > 3 else ""
            played += (
                f'<div class="pdb-ties">Your moves fit {shown}{more} exactly as well: this '
                "game cannot tell them apart.</div>"
            )
        if like.verdict:
            played += f'<div class="pdb-verdict">The strategy card: {escape(like.verdict)}</div>'
    head = "".join(f"<th>{escape(n)}</th>" for n in names)
    rows = []
    for i, count in enumerate(profiles[0] if profiles else []):
        state = count.state.lower()
        cells = "".join(f'<td class="n">{_rate(p[i])}</td>' for p in profiles)
        rows.append(
            f'<tr><td><span class="st">P(C | {count.state})</span> '
            f'<span class="w">{STATE_WORDS[state]}</span></td>{cells}</tr>'
        )
    table = (
        '<table class="pdb-m1"><thead><tr><th>Cooperated in the next round…</th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return (
        '<div class="pdb-lesson"><div class="pdb-lesson-head">🎓 What this game teaches</div>'
        f'<div class="pdb-lesson-text">{escape(sentence)}</div>'
        f'<div class="pdb-lesson-grid"><div class="pdb-lesson-like">{played}</div>'
        f"{table}</div></div>"
    )
