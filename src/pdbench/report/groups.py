"""The report's groups section (runs of N-player group games): per condition the group metrics
with their intervals, each seat's, P(C | k co-players cooperated in the previous round) and
cooperation over rounds with its band. Read from the group tables `storage.group_aggregate`
writes (aggregates.parquet, seats.parquet, group_rounds.parquet, group_conditional.parquet),
never recomputed here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pdbench.core.exact import identical_note, is_exact_row
from pdbench.core.group_conditions import (
    GROUP_AGGREGATE_COLUMNS,
    GROUP_CONDITIONAL_COLUMNS,
    GROUP_ROUND_COLUMNS,
    GROUP_SEAT_TABLE_COLUMNS,
)
from pdbench.core.group_metrics import P_COOP_GIVEN_K
from pdbench.core.rounds_display import NUMBERING_NOTE, metric_label
from pdbench.report.experiment import cell
from pdbench.report.markup import text
from pdbench.report.svg import Point, band_chart, interval_dots
from pdbench.storage.group_aggregate import (
    GROUP_CONDITIONAL_FILE,
    GROUP_ROUNDS_FILE,
    SEATS_FILE,
    group_schema,
)
from pdbench.storage.parquet import numeric_columns, read_checked_rows
from pdbench.storage.schema import AGGREGATES_FILE
from pdbench.storage.talk_corpus import reader_accuracy_line

GROUP_COLOR = "#3b6fd8"
REMEDY = "run `pdbench aggregate RUN_DIR`"
# The condition table: (column, label, percent).
CONDITION_METRICS: tuple[tuple[str, str, bool], ...] = (
    ("group_cooperation_rate", "group cooperation", True),
    ("group_payoff_per_round", "payoff per round", False),
    ("efficiency", "efficiency", False),
    ("payoff_gini", "payoff Gini", False),
    ("collapsed_fraction", "games that collapsed", True),
    ("time_to_collapse", f"{metric_label('time_to_collapse')} (collapsed games)", False),
)
SEAT_METRICS: tuple[tuple[str, str, bool], ...] = (
    ("cooperation_rate", "cooperation", True),
    ("payoff_per_round", "payoff per round", False),
    ("partners_payoff_per_round", "partners' payoff per round", False),
    ("fallback_rate", "fallback moves", True),
)
# Added to a talking condition's seat table: pooled over its games (core/group_talk_rows.py).
SEAT_TALK_METRICS: tuple[tuple[str, str, bool], ...] = (
    ("said_promise_rate", "messages that promise C", True),
    ("said_promise_kept_rate", "promises kept", True),
    ("said_deception_rate", "promised C, played D", True),
    ("declared_promise_kept_rate", "declared C, kept", True),
)
_TABLES = {
    AGGREGATES_FILE: GROUP_AGGREGATE_COLUMNS,
    SEATS_FILE: GROUP_SEAT_TABLE_COLUMNS,
    GROUP_ROUNDS_FILE: GROUP_ROUND_COLUMNS,
    GROUP_CONDITIONAL_FILE: GROUP_CONDITIONAL_COLUMNS,
}


def _rows(run_dir: Path, name: str) -> list[dict[str, Any]]:
    """A group table's rows, checked (numbers where numbers belong, names present); [] when
    the file is absent."""
    rows = read_checked_rows(
        run_dir / name,
        numeric_columns(group_schema(_TABLES[name])),
        REMEDY,
        texts=("condition",),
    )
    return rows or []


def groups_section(run_dir: Path) -> str:
    """The groups section of a group run's report (HTML), from its group tables."""
    run_dir = Path(run_dir)
    aggregates = _rows(run_dir, AGGREGATES_FILE)
    conditions = [r for r in aggregates if r.get("scope") == "condition"]
    if not conditions:
        return (
            "<section id='groups'><h2>Groups</h2><p class='note'>No group metrics: run "
            f"<code>pdbench aggregate {text(run_dir)}</code>.</p></section>"
        )
    seats = [r for r in _rows(run_dir, SEATS_FILE) if r.get("scope") == "condition"]
    given = [r for r in _rows(run_dir, GROUP_CONDITIONAL_FILE) if r.get("scope") == "condition"]
    rounds = _rows(run_dir, GROUP_ROUNDS_FILE)
    head = "".join(f"<th>{text(label)}</th>" for _, label, _ in CONDITION_METRICS)
    body = "".join(
        f"<tr><td>{text(r['condition'])}</td><td>{r.get('n_players')}</td>"
        f"<td>{text(r.get('game_label') or '')}</td><td>{r.get('n_replicates')}</td>"
        + "".join(f"<td>{cell(r, c, pct)}</td>" for c, _, pct in CONDITION_METRICS)
        + "</tr>"
        for r in conditions
    )
    parts = [
        "<section id='groups'><h2>Groups</h2><p class='note'>Each value is a mean over the "
        "condition's games, with a 95% interval in brackets that treats the game as the unit. "
        "Group cooperation: the share of C among all seats' moves. Efficiency: the mean payoff "
        "per seat and round over the payoff of all cooperating (above 1 where unequal play pays "
        "more in sum). Payoff Gini: the population Gini coefficient of the seats' total payoffs "
        "(0 equal, at most (N - 1)/N), totals measured from the game's lowest payoff when it "
        "is negative. A game collapsed when some window of k rounds had at most the collapse "
        "threshold of its moves C; the collapse round is the mean over the games that "
        f"collapsed. {NUMBERING_NOTE}</p>",
        _exactness(conditions),
        _cooperation_chart(conditions),
        "<div class='scroll'><table><tr><th>condition</th><th>players</th><th>game</th>"
        f"<th>games</th>{head}</tr>{body}</table></div>",
    ]
    for row in conditions:
        name = str(row["condition"])
        parts.append(f"<h3>{text(name)}</h3>")
        parts.append(_seats_table(row, [s for s in seats if s["condition"] == name]))
        parts.append(_given_chart(row, [g for g in given if g["condition"] == name]))
        parts.append(_rounds_chart(name, [r for r in rounds if r["condition"] == name]))
    parts.append("</section>")
    return "".join(parts)


def _cooperation_chart(conditions: list[dict[str, Any]]) -> str:
    """Group cooperation per condition with its interval."""
    column = "group_cooperation_rate"
    points = [
        Point(
            str(r["condition"]),
            r.get(column),
            r.get(f"{column}_ci_low"),
            r.get(f"{column}_ci_high"),
            GROUP_COLOR,
            f"N = {r.get('n_players')}",
        )
        for r in conditions
    ]
    title = "Group cooperation per condition (95% interval over games)"
    chart = interval_dots(points, title, "share of all seats' moves that were C")
    return f"<figure>{chart}</figure>"


def _exactness(conditions: list[dict[str, Any]]) -> str:
    """Which conditions are exact, and why an identical condition's interval is still wide."""
    exact = [text(r["condition"]) for r in conditions if is_exact_row(r)]
    out = []
    if exact:
        out.append(
            "<p class='note'>Exact (deterministic by construction; every game is the same "
            f"game, so each value is exact and has no interval): {', '.join(exact)}.</p>"
        )
    for row in conditions:
        note = identical_note(row)
        if note:
            out.append(f"<p class='note'>{text(row['condition'])}: {text(note)}.</p>")
    return "".join(out)


def _seats_table(condition: dict[str, Any], seats: list[dict[str, Any]]) -> str:
    """Each seat's metrics (the condition's exactness carried to its seats' cells); with groups
    drawn anew for each game, each agent's, over the games it sat in (no seat number)."""
    flag = {"exact": condition.get("exact")}
    talks = any(s.get("messages") for s in seats)
    metrics = (*SEAT_METRICS, *SEAT_TALK_METRICS) if talks else SEAT_METRICS
    head = "".join(f"<th>{text(label)}</th>" for _, label, _ in metrics)

    def seat(s: dict[str, Any]) -> str:
        return "any" if s.get("seat") is None else str(int(s["seat"]) + 1)

    body = "".join(
        f"<tr><td>{seat(s)}</td><td>{text(s.get('name') or '')}</td>"
        + "".join(f"<td>{cell({**s, **flag}, c, pct)}</td>" for c, _, pct in metrics)
        + "</tr>"
        for s in sorted(seats, key=lambda s: (s.get("seat") is None, s.get("seat") or 0))
    )
    note = (
        "<p class='note'>Talk: rates pooled over the condition's games (every message or "
        "promise of the seat together), 95% intervals with the game as the unit; what a message "
        f"says is read from its words ({text(reader_accuracy_line())}); declared: the intention "
        "the agent stated beside its message.</p>"
        if talks
        else ""
    )
    return (
        f"<div class='scroll'><table><tr><th>seat</th><th>agent</th>{head}</tr>{body}</table></div>"
        + note
    )


def _given_chart(condition: dict[str, Any], given: list[dict[str, Any]]) -> str:
    """P(C | k co-players cooperated in the previous round), k = 0..N-1, with its cases."""
    if not given:
        return ""
    others = int(condition.get("n_players") or len(given)) - 1
    points = [
        Point(
            f"{int(g['k'])} of {others} co-players cooperated",
            g.get(P_COOP_GIVEN_K),
            g.get(f"{P_COOP_GIVEN_K}_ci_low"),
            g.get(f"{P_COOP_GIVEN_K}_ci_high"),
            GROUP_COLOR,
            f"{int(g.get('cases') or 0):,} cases",
        )
        for g in sorted(given, key=lambda g: int(g["k"]))
    ]
    title = f"{condition['condition']}: P(C) after k co-players cooperated (95% interval)"
    axis = "probability of C, pooled over seats, by how many co-players cooperated last round"
    return "<figure>" + interval_dots(points, title, axis) + "</figure>"


def _rounds_chart(name: str, rounds: list[dict[str, Any]]) -> str:
    """The share of seats that cooperated per round (mean over the games that reached the
    round) with its 95% band."""
    if not rounds:
        return ""
    ordered = sorted(rounds, key=lambda r: int(r["round"]))
    values = [float(r["cooperation"] or 0.0) for r in ordered]
    lows = [r.get("cooperation_ci_low") for r in ordered]
    highs = [r.get("cooperation_ci_high") for r in ordered]
    title = f"{name}: group cooperation per round, 95% band over games"
    return "<figure>" + band_chart(values, lows, highs, title, GROUP_COLOR) + "</figure>"
