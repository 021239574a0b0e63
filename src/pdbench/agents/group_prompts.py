"""An LLM seat's prompts in a group game, in the game's own words.

The group templates are prompt files like the pairwise ones (`configs/prompts/group_system.md`,
`group_round.md`, personas in `configs/prompts/group_personas/`), named by an LLM agent's
`prompts` as its `system` and `round` (see `configs/agents/llm_group.yaml`), so they are read,
hashed and versioned exactly as the pairwise templates are (`core.agents.prompt_version`). They
take the placeholders below (str.format, as the pairwise ones):

- system (`GROUP_SYSTEM_FIELDS`): `{persona}` (its "Persona: x" line is what the mock reads),
  `{payoff_table}` (what C and D pay for each number of co-players choosing C, from the game's
  `pay_c`/`pay_d`), `{n_players}`, `{n_others}`, `{me}` ("Player 3"), `{others}` ("Player 1,
  Player 2, Player 4 and Player 5"), `{C}`, `{D}`, `{output_instruction}`.
- round (`GROUP_ROUND_FIELDS`): the history within the window, one line per round with each
  co-player's move by label ("Round 3: you played C; Player 2 C, Player 3 D, Player 4 C, Player 5
  D; your payoff 1.2."), the totals when disclosed, the horizon as disclosed, the messages seen.
- history_line (`GROUP_HISTORY_LINE_FIELDS`), history / first_round blocks, the message prompt
  (`DEFAULT_GROUP_MESSAGE_TEMPLATE`, `GROUP_MESSAGE_FIELDS`) as for pairs.

Moves are shown in the agent's action labels, payoffs times its payoff_scale; the answer asked for
is the pairwise one (`llm.output_instruction`), read by the same parser.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence

from pdbench.agents.llm import (
    DEFAULT_HISTORY_LINE,
    PromptTemplates,
    finish,
    horizon_text,
    output_instruction,
)
from pdbench.core.group_game import GroupGame, GroupObservation, GroupRound
from pdbench.core.parse import DEFAULT_LABELS, Labels
from pdbench.core.talk import quote_message
from pdbench.core.types import Action, SeenMessage

GROUP_SYSTEM_FIELDS = (
    "persona",
    "payoff_table",
    "n_players",
    "n_others",
    "me",
    "others",
    "C",
    "D",
    "output_instruction",
)
GROUP_ROUND_FIELDS = (
    "C",
    "D",
    "round_number",
    "horizon_text",
    "totals",
    "history",
    "history_section",
    "history_len",
    "history_window",
    "history_lines",
    "history_block",
    "last_round",
    "my_last_move",
    "output_instruction",
    "first_option",
    "second_option",
    "total_rounds",
    "n_players",
    "n_others",
    "me",
    "my_total",
    "messages",
)
GROUP_BLOCK_FIELDS = tuple(name for name in GROUP_ROUND_FIELDS if name != "history_block")
GROUP_HISTORY_LINE_FIELDS = (
    "round",
    "my_move",
    "others_moves",
    "others_cooperated",
    "n_others",
    "my_payoff",
    "C",
    "D",
)
GROUP_MESSAGE_FIELDS = ("messages", "max_chars", "message_instruction", "recipients")
_BLANK_LINES = re.compile(r"\n{3,}")
DEFAULT_GROUP_HISTORY_LINE = (
    "Round {round}: you played {my_move}; {others_moves}; your payoff {my_payoff}."
)
DEFAULT_GROUP_MESSAGE_TEMPLATE = """{horizon_text}
{history_section}
{totals}

{messages}

Before the next move you may send one message of at most {max_chars} characters {recipients}.
{message_instruction}"""


def seat_label(seat: int) -> str:
    """How a seat is called in prompts: seat 0 is "Player 1"."""
    return f"Player {seat + 1}"


def others_text(seat: int, n_players: int) -> str:
    """The co-players' labels as words: "Player 1, Player 2 and Player 4"."""
    labels = [seat_label(i) for i in range(n_players) if i != seat]
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def group_payoff_table(game: GroupGame, labels: Labels = DEFAULT_LABELS, scale: float = 1.0) -> str:
    """What each move pays for each number of co-players choosing C, one line per number
    ("- if 2 of the other 4 players choose C: you get 1.2 if you choose C, 1.6 if you choose D")."""
    c, d = labels
    m = game.n_players - 1
    rows = []
    for k in range(game.n_players):
        if m == 1:
            who = f"the other player chooses {c if k else d}"
        else:
            who = f"{k} of the other {m} players {'chooses' if k == 1 else 'choose'} {c}"
        mine_c, mine_d = game.pay_c[k] * scale, game.pay_d[k] * scale
        rows.append(
            f"- if {who}: you get {mine_c:g} if you choose {c}, {mine_d:g} if you choose {d}"
        )
    return "\n".join(rows)


def render_group_system(
    templates: PromptTemplates,
    game: GroupGame,
    seat: int,
    output_format: str,
    labels: Labels = DEFAULT_LABELS,
    payoff_scale: float = 1.0,
) -> str:
    """The system prompt of `seat` (persona, the group and the payoffs)."""
    n = game.n_players
    values: Mapping[str, object] = {
        "persona": templates.persona.strip(),
        "payoff_table": group_payoff_table(game, labels, payoff_scale),
        "n_players": n,
        "n_others": n - 1,
        "me": seat_label(seat),
        "others": others_text(seat, n),
        "C": labels[0],
        "D": labels[1],
        "output_instruction": output_instruction(output_format, labels),
    }
    return finish(templates.system.format(**values), templates.verbatim)


def _others_moves(past: GroupRound, seat: int, word: Mapping[Action, str]) -> str:
    return ", ".join(f"{seat_label(i)} {word[a]}" for i, a in enumerate(past.actions) if i != seat)


def _history_line(
    past: GroupRound, number: int, seat: int, word: Mapping[Action, str], k: float
) -> str:
    return DEFAULT_GROUP_HISTORY_LINE.format(
        round=number,
        my_move=word[past.actions[seat]],
        others_moves=_others_moves(past, seat, word),
        my_payoff=f"{past.payoffs[seat] * k:g}",
    )


def group_totals(obs: GroupObservation, k: float = 1.0) -> str:
    """The totals line ("Total so far: you 12 points; Player 2 10, Player 3 8.") or "" when
    the seat is not told them."""
    if obs.my_cumulative_payoff is None:
        return ""
    text = f"Total so far: you {obs.my_cumulative_payoff * k:g} points"
    if obs.cumulative_payoffs is not None:
        others = ", ".join(
            f"{seat_label(i)} {total * k:g}"
            for i, total in enumerate(obs.cumulative_payoffs)
            if i != obs.seat
        )
        text += f"; {others}"
    return text + "."


def _last_round(obs: GroupObservation, word: Mapping[Action, str]) -> str:
    m = obs.n_players - 1
    if not obs.history:
        return "Last round: none yet." if obs.round_index == 0 else "Last round: not shown."
    last = obs.history[-1]
    if m == 1:
        return f"Last round: the other player played {word[last.actions[1 - obs.seat]]}."
    k = last.cooperators_other_than(obs.seat)
    return f"Last round: {k} of the other {m} players played {word[Action.C]}."


def render_group_round(
    template: str,
    obs: GroupObservation,
    history_window: int | None,
    output_format: str,
    labels: Labels = DEFAULT_LABELS,
    payoff_scale: float = 1.0,
    templates: PromptTemplates | None = None,
    swap_options: bool = False,
    extra: Mapping[str, object] | None = None,
) -> str:
    """The round prompt of a group seat for `obs` (see the module docstring); as
    `llm.render_round` for pairs: moves in `labels`, payoffs times `payoff_scale`, the options D
    first with `swap_options`, `extra` values added (the message prompt's), the messages after
    the history section when the template has no `{messages}`; unless verbatim, two blank lines
    in a row (an empty placeholder's line) are one."""
    k = payoff_scale
    verbatim = templates is not None and templates.verbatim
    word = {Action.C: labels[0], Action.D: labels[1]}
    seat, m = obs.seat, obs.n_players - 1
    first_shown = obs.round_index - len(obs.history) + 1
    lines = [_history_line(h, first_shown + i, seat, word, k) for i, h in enumerate(obs.history)]
    parts = (template, templates.history or "", templates.first_round or "") if templates else ()
    wanted = any("{history_lines}" in part for part in parts)
    line_template = DEFAULT_GROUP_HISTORY_LINE
    if templates is not None and templates.history_line != DEFAULT_HISTORY_LINE:
        line_template = templates.history_line
    shown_lines = "".join(
        finish(
            line_template.format(
                round=first_shown + i,
                my_move=word[h.actions[seat]],
                others_moves=_others_moves(h, seat, word),
                others_cooperated=h.cooperators_other_than(seat),
                n_others=m,
                my_payoff=f"{h.payoffs[seat] * k:g}",
                C=labels[0],
                D=labels[1],
            ),
            verbatim,
        ).rstrip("\n")
        + "\n"
        for i, h in enumerate(obs.history if wanted else ())
    )
    if not lines:
        section = (
            "No rounds played yet." if obs.round_index == 0 else "Earlier rounds are not shown."
        )
    elif len(lines) == obs.round_index:
        section = "Rounds so far (oldest first):\n" + "\n".join(lines)
    else:
        section = f"Last {len(lines)} rounds (oldest first):\n" + "\n".join(lines)
    first, second = (labels[1], labels[0]) if swap_options else labels
    values: dict[str, object] = {
        "C": labels[0],
        "D": labels[1],
        "round_number": obs.round_number,
        "horizon_text": horizon_text(obs),
        "totals": group_totals(obs, k),
        "history": "\n".join(lines)
        if lines
        else ("(no rounds played yet)" if obs.round_index == 0 else "(not shown)"),
        "history_section": section,
        "history_len": len(lines),
        "history_window": "all" if history_window is None else history_window,
        "history_lines": shown_lines,
        "last_round": _last_round(obs, word),
        "my_last_move": word[obs.history[-1].actions[seat]] if obs.history else "none yet",
        "output_instruction": output_instruction(output_format, labels),
        "first_option": first,
        "second_option": second,
        "total_rounds": obs.total_rounds
        if obs.total_rounds is not None
        else "an unknown number of",
        "n_players": obs.n_players,
        "n_others": m,
        "me": seat_label(seat),
        "my_total": "" if obs.my_cumulative_payoff is None else f"{obs.my_cumulative_payoff * k:g}",
    }
    talk = group_messages_block(obs.messages) if obs.messages else ""
    values["messages"] = talk
    if extra:
        values.update(extra)
    if talk and "{messages}" not in template:
        if "{history_section}" in template:
            values["history_section"] = f"{section}\n\n{talk}"
        else:
            template = f"{template.rstrip()}\n\n{talk}\n"
    block = None
    if templates is not None:
        block = templates.first_round if obs.round_index == 0 else templates.history
    values["history_block"] = section if block is None else finish(block.format(**values), verbatim)
    text = template.format(**values)
    # an empty line (no totals, no last round) leaves one blank line, not two
    return finish(text if verbatim else _BLANK_LINES.sub("\n\n", text), verbatim)


# ----------------------------------------------------------------------------------------------
# Messages


def _writer(message: SeenMessage) -> str:
    """Who wrote a message and to whom, as the reader's prompt says it."""
    if message.mine:
        return "you" if message.to is None else f"you to {seat_label(message.to)}"
    who = "another player" if message.writer is None else seat_label(message.writer)
    return who if message.to is None else f"{who} to you"


def group_messages_block(messages: Sequence[SeenMessage]) -> str:
    """The messages a seat can see, one quoted line each (`quote_message`, so no message reads
    as the game's history): `- before round 2, Player 3: "..."`; the seat's own `you`, a directed
    message `Player 3 to you` / `you to Player 3`."""
    if not messages:
        return "No messages yet."
    lines = [
        f"- before round {m.round_index + 1}, {_writer(m)}: {quote_message(m.text)}"
        for m in messages
    ]
    return "Messages (oldest first):\n" + "\n".join(lines)


def group_message_instruction(labels: Labels, to: int | None = None) -> str:
    """The sentence that asks for the structured reply (to everyone, or to seat `to`)."""
    c, d = labels
    reader = "the other players" if to is None else seat_label(to)
    return (
        f'Answer with only a JSON object: {{"message": "<one sentence to {reader}>", '
        f'"intention": "{c}", "{d}" or "none"}}. The intention is the move you mean to play '
        "next; no other player sees it."
    )


def group_message_values(
    obs: GroupObservation, labels: Labels, max_chars: int, to: int | None = None
) -> dict[str, object]:
    """The values the group message template gets beside the round prompt's
    (`GROUP_MESSAGE_FIELDS`); `to`: the seat a directed message goes to (None: everyone)."""
    if to is None:
        recipients = "to the other player" if obs.n_players == 2 else "to all the other players"
    elif obs.n_players == 2:
        recipients = f"to {seat_label(to)}"
    else:
        recipients = f"to {seat_label(to)} only (the other players do not see it)"
    return {
        "messages": group_messages_block(obs.messages),
        "max_chars": max_chars,
        "message_instruction": group_message_instruction(labels, to),
        "recipients": recipients,
    }


# ----------------------------------------------------------------------------------------------
# Checking a group agent's templates


def _placeholder_problem(text: str, valid: tuple[str, ...]) -> str | None:
    try:
        fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(text)]
    except ValueError as exc:
        return f"{exc} (write {{{{ and }}}} for literal braces)"
    for name, spec, conv in fields:
        if name is None:
            continue
        if conv or spec:
            return f"placeholders take no conversion or format spec (got {{{name[:40]}...}})"
        if name not in valid:
            return f"unknown placeholder {{{name[:40]}}}"
    return None


def group_template_problem(
    templates: PromptTemplates, game: GroupGame, output_format: str = "token"
) -> tuple[str, str] | None:
    """(part, one-line message) when a group agent's template is not plain `{name}`
    placeholders of its part's valid names or does not render (for the config check of a
    group seat); else None."""
    parts = (
        ("system", templates.system, GROUP_SYSTEM_FIELDS),
        ("round", templates.round, GROUP_ROUND_FIELDS),
        ("history_line", templates.history_line, GROUP_HISTORY_LINE_FIELDS)
        if templates.history_line != DEFAULT_HISTORY_LINE
        else ("history_line", "", ()),
        ("history", templates.history or "", GROUP_BLOCK_FIELDS),
        ("first_round", templates.first_round or "", GROUP_BLOCK_FIELDS),
        ("message", templates.message or "", (*GROUP_ROUND_FIELDS, *GROUP_MESSAGE_FIELDS)),
    )
    for key, text, valid in parts:
        problem = _placeholder_problem(text, valid)
        if problem is not None:
            return key, (
                f"template error of a group seat: {problem} "
                f"(valid placeholders: {', '.join(valid)})"
            )
    n = game.n_players
    try:
        render_group_system(templates, game, 0, output_format)
        past = GroupRound((Action.C,) * n, game.payoffs([True] * n))
        for round_index, history in ((0, ()), (1, (past,))):
            obs = GroupObservation(0, n, round_index, history, game, "fixed")
            render_group_round(templates.round, obs, None, output_format, templates=templates)
    except (LookupError, ValueError, TypeError, AttributeError) as exc:
        return "round", f"template error of a group seat: {exc!s}"
    return None
