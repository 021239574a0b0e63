"""The report's talk section (runs with a message channel): per condition and agent, what it
said and whether its words predicted its moves, from aggregates.parquet (never recomputed)."""

from __future__ import annotations

from typing import Any

from pdbench.core.talk import INTENT_PHRASES
from pdbench.report.format import fmt
from pdbench.report.markup import text
from pdbench.report.svg import Point, interval_dots

AGENT_COLORS = {"a": "#3b6fd8", "b": "#e08a1e"}
# (rate column, its count column or None, label)
TALK_RATES: tuple[tuple[str, str, str], ...] = (
    ("promise_rate", "messages", "messages promising C"),
    ("promise_kept_rate", "promises", "promises kept"),
    ("deception_rate", "promises", "deception (promised C, chose D)"),
    ("intent_agreement_rate", "stated_intentions", "stated move = chosen move"),
    ("trust_rate", "", "trust: C after the other's promise"),
)


def _talks(row: dict[str, Any]) -> bool:
    return any(row.get(f"agent_{side}_messages") for side in "ab")


def _rate(row: dict[str, Any], side: str, name: str) -> str:
    column = f"agent_{side}_{name}"
    return fmt(row.get(column), row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high"), True)


def _count(row: dict[str, Any], side: str, rate: str, count: str) -> str:
    other = "b" if side == "a" else "a"
    column = f"agent_{side}_{count}" if count else f"agent_{other}_promises"
    value = row.get(column)
    return "" if value is None else f"<span class='ci'>of {int(value):,}</span>"


def talk_section(conditions: list[dict[str, Any]]) -> str:
    """The talk table and a chart of deception and trust per agent ('' without talk)."""
    talking = [r for r in conditions if _talks(r)]
    if not talking:
        return ""
    head = "".join(f"<th>{text(label)}</th>" for _, _, label in TALK_RATES)
    body = ""
    points: list[Point] = []
    for row in talking:
        for side in "ab":
            name = str(row.get(f"agent_{side}_name"))
            messages = int(row.get(f"agent_{side}_messages") or 0)
            cells = "".join(
                f"<td>{_rate(row, side, rate)} {_count(row, side, rate, count)}</td>"
                for rate, count, _ in TALK_RATES
            )
            body += (
                f"<tr><td>{text(row['condition'])}</td><td>{side.upper()} · "
                f"{text(name)}</td><td>{messages:,}</td>{cells}</tr>"
            )
            column = f"agent_{side}_deception_rate"
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
        "Deception: promised C, then chose D (95% interval, games as the unit)",
        "share of promises broken",
        legend=[("A", AGENT_COLORS["a"]), ("B", AGENT_COLORS["b"])],
    )
    return (
        "<section id='talk'><h2>Talk: words and moves</h2><p class='note'>Each rate is pooled "
        "over the condition's games (counts shown as <i>of n</i>), with a 95% interval that "
        "keeps the game as the unit. A message's intention is the move it declares (an LLM's "
        "structured reply, a policy's rule), else the one read from its text: "
        f"{text(INTENT_PHRASES)} It is compared with the move the agent chose, before "
        "execution noise.</p>"
        f"<div class='scroll'><table><tr><th>condition</th><th>agent</th><th>messages</th>{head}"
        f"</tr>{body}</table></div>{chart}</section>"
    )
