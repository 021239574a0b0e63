"""The report's talk section (runs with a message channel): per condition and agent, what it
said (its messages as the partner read them) and what it privately declared, and whether its
moves followed each, from aggregates.parquet (never recomputed). Labels and readings come from
`core.talk_metrics.TALK_LABELS`; the reader line from `core.talk_metrics.reader_note`."""

from __future__ import annotations

from typing import Any

from pdbench.core.talk_metrics import (
    DECLARED,
    SAID,
    TALK_LABELS,
    TALK_POOLED_COLUMNS,
    reader_note,
    retired_talk_note,
)
from pdbench.report.format import fmt
from pdbench.report.markup import text
from pdbench.report.svg import Point, interval_dots

AGENT_COLORS = {"a": "#3b6fd8", "b": "#e08a1e"}
# The rates of each table, in order (names after `agent_x_`; labels in TALK_LABELS).
SAID_RATES: tuple[str, ...] = (
    "unread_rate",
    "said_promise_rate",
    "said_promise_kept_rate",
    "said_deception_rate",
    "said_standing_kept_rate",
    "said_standing_deception_rate",
    "said_agreement_rate",
    "said_trust_rate",
)
DECLARED_RATES: tuple[str, ...] = (
    "declared_promise_rate",
    "declared_promise_kept_rate",
    "declared_deception_rate",
    "declared_agreement_rate",
)


def _talks(row: dict[str, Any]) -> bool:
    return any(row.get(f"agent_{side}_messages") for side in "ab")


def _cell(row: dict[str, Any], side: str, rate: str) -> str:
    column = f"agent_{side}_{rate}"
    value = fmt(row.get(column), row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high"), True)
    count = row.get(TALK_POOLED_COLUMNS[column])
    of = "" if count is None else f" <span class='ci'>of {int(count):,}</span>"
    return f"<td>{value}{of}</td>"


def _table(talking: list[dict[str, Any]], rates: tuple[str, ...], title: str) -> str:
    head = "".join(f"<th>{text(TALK_LABELS[rate][0])}</th>" for rate in rates)
    body = ""
    for row in talking:
        for side in "ab":
            name = str(row.get(f"agent_{side}_name"))
            messages = int(row.get(f"agent_{side}_messages") or 0)
            cells = "".join(_cell(row, side, rate) for rate in rates)
            body += (
                f"<tr><td>{text(row['condition'])}</td><td>{side.upper()} · "
                f"{text(name)}</td><td>{messages:,}</td>{cells}</tr>"
            )
    return (
        f"<h3>{text(title)}</h3><div class='scroll'><table><tr><th>condition</th><th>agent</th>"
        f"<th>messages</th>{head}</tr>{body}</table></div>"
    )


def talk_section(conditions: list[dict[str, Any]]) -> str:
    """The talk tables (said, declared) and a chart of said deception per agent ('' without
    talk; a one-line note when the aggregates hold the metrics' names from before issue 29)."""
    retired = retired_talk_note(conditions[0] if conditions else ())
    if retired is not None:
        return (
            "<section id='talk'><h2>Talk: words and moves</h2>"
            f"<p class='note'>{text(retired)}</p></section>"
        )
    talking = [r for r in conditions if _talks(r)]
    if not talking:
        return ""
    points: list[Point] = []
    for row in talking:
        for side in "ab":
            column = f"agent_{side}_said_deception_rate"
            points.append(
                Point(
                    f"{row['condition']} · {side.upper()}",
                    row.get(column),
                    row.get(f"{column}_ci_low"),
                    row.get(f"{column}_ci_high"),
                    AGENT_COLORS[side],
                )
            )
    chart = interval_dots(
        points,
        "Deception: said C (as the partner read it), then chose D, next move "
        "(95% interval, games as the unit)",
        "share of said promises broken",
        legend=[("A", AGENT_COLORS["a"]), ("B", AGENT_COLORS["b"])],
    )
    return (
        "<section id='talk'><h2>Talk: words and moves</h2><p class='note'>Two readings of each "
        f"message, kept apart. <b>{text(SAID.capitalize())}</b>: the message text as the other "
        "player saw it, read by the message reader (a promise of C, of D, a conditional "
        "promise, no statement, or unread); trust is computed on it. "
        f"<b>{text(DECLARED.capitalize())}</b>: the intention an LLM gave in its structured "
        "reply or a policy's rule planned, never shown to the other player. A statement binds "
        "the writer's next move; under the <i>standing</i> reading an 'always', 'never', "
        "'from now on' or pregame statement binds every later move until another statement "
        "replaces it. A conditional promise ('I'll cooperate if you do') is kept or broken "
        "when the other player cooperated in that round and void (not counted) when it "
        "defected. Moves are the chosen ones, before execution noise. Each rate is pooled "
        "over the condition's games (counts shown as <i>of n</i>), with a 95% interval that "
        f"keeps the game as the unit. {text(reader_note())}.</p>"
        f"{_table(talking, SAID_RATES, 'Said (as the partner read it)')}"
        f"{_table(talking, DECLARED_RATES, 'Declared (private intention)')}"
        f"{chart}</section>"
    )
