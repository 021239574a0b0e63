"""The report of a resource run (issue 31): a public goods game with punishment (kind `pgg`,
PGG-Bench's design) or a commons (kind `commons`, GovSim's fishery).

Read from the tables `storage.resource_aggregate` writes (aggregates.parquet one row a
condition, resource_rounds.parquet a condition x round, resource_seats.parquet a condition x
seat) and from the manifest, never recomputed: the condition metrics with their 95% intervals
(the game as the unit), contribution and punishment over rounds (pgg) or the stock over
seasons against the collapse threshold and the share of games still going (commons), each
seat's numbers, how the replies were read, and, when the manifest has a `published` entry, the
published numbers beside this run's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pdbench.core.commons_conditions import COMMONS_METRIC_COLUMNS
from pdbench.core.exact import identical_note, is_exact_row
from pdbench.core.pgg_conditions import PGG_METRIC_COLUMNS, interval_ends
from pdbench.report.experiment import cell
from pdbench.report.format import fmt
from pdbench.report.markup import text
from pdbench.report.svg import Point, Series, band_chart, interval_dots, xy_chart
from pdbench.storage.integer_replies import integer_reader_line
from pdbench.storage.parquet import read_checked_rows
from pdbench.storage.schema import AGGREGATES_FILE, RESOURCE_ROUNDS_FILE, RESOURCE_SEATS_FILE

PALETTE = ("#3b6fd8", "#e08a1e", "#2e9e4f", "#d64545", "#8e5bd0", "#1f9aa8", "#a89a3c", "#6b7280")
REMEDY = "run `pdbench aggregate RUN_DIR`"
READING_COLUMNS = ("decisions", "parse_failures", "fallbacks", "clamped")
# (column, label, percent) of the condition table, per kind.
METRICS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "pgg": (
        ("contribution_rate", "contribution rate", True),
        ("efficiency", "efficiency", False),
        ("gini_final", "Gini of final balances", False),
        ("punish_spent", "punishment spent per game (tokens)", False),
        ("punish_spent_fraction", "share of balances spent punishing", True),
        ("free_riding_rate", "free riding (pooled)", True),
        ("retaliation_rate", "retaliation (pooled)", True),
        ("antisocial_rate", "antisocial punishment (pooled)", True),
        ("reward_given", "rewards given per game (tokens)", False),  # reward stage on only
        ("reward_given_fraction", "share of balances spent rewarding", True),
    ),
    "commons": (
        ("survival", "games that survived", True),
        ("time_to_collapse", "collapse season (collapsed games)", False),
        ("survival_months", "months survived", False),
        ("efficiency", "efficiency", False),
        ("catch_gini", "Gini of catches", False),
        ("group_sustainability_gap", "over-harvest (fish)", False),
        ("overuse_rate", "requests above the sustainable share (pooled)", True),
    ),
}
SEAT_METRICS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "pgg": (
        ("contribution_rate", "contribution rate", True),
        ("punish_spent", "punishment spent (tokens)", False),
        ("punish_received", "punishment received (tokens)", False),
        ("final_balance", "final balance", False),
    ),
    "commons": (
        ("total_caught", "total catch (fish)", False),
        ("overuse_rate", "requests above the sustainable share", True),
    ),
}
ROUND_COLUMNS: dict[str, tuple[str, ...]] = {
    "pgg": ("contribution_rate", "punish_spent"),
    "commons": ("stock", "catch", "going"),
}
NOTES = {
    "pgg": (
        "Contribution rate: tokens contributed over tokens that could have been. Efficiency: the "
        "group's gain over full cooperation's. Punishment spent: tokens the whole group paid to "
        "punish in a game. Free riding: seat-rounds contributing 0 while another seat "
        "contributed; retaliation: punishing a seat that punished you the round before, over "
        "such chances; antisocial: punishing a seat that contributed at least as much. The "
        "pooled rates are acts over chances summed over the condition's games."
    ),
    "commons": (
        "Survival: the share of games in which the stock never fell below the collapse "
        "threshold. Collapse season: over the games that collapsed only, seasons numbered from "
        "1. Months survived: GovSim's count (the collapse season, or every season played). "
        "Efficiency: the total catch over the most a group could take sustainably over the "
        "horizon (capped at 1). Over-harvest: the catch above what lets the stock grow back, "
        "summed over seasons. Requests above the sustainable share: pooled over agent-seasons."
    ),
}


def _rows(run_dir: Path, name: str, numbers: Sequence[str]) -> list[dict[str, Any]]:
    """A table's rows, checked (numbers where numbers belong, condition names present)."""
    return read_checked_rows(run_dir / name, numbers, REMEDY, texts=("condition",)) or []


def resource_sections(run_dir: Path, manifest: dict[str, Any]) -> list[str]:
    """The report's sections (HTML) for a pgg or commons run directory."""
    kind = str(manifest.get("kind"))
    columns = PGG_METRIC_COLUMNS if kind == "pgg" else COMMONS_METRIC_COLUMNS
    counts = ("n_games", "n_seats", "collapsed_games", *READING_COLUMNS)
    aggregates = _rows(run_dir, AGGREGATES_FILE, (*columns, *interval_ends(columns), *counts))
    by_round = _rows(
        run_dir,
        RESOURCE_ROUNDS_FILE,
        ("round", "games", *ROUND_COLUMNS[kind], *interval_ends(ROUND_COLUMNS[kind])),
    )
    seat_cols = [c for c, _, _ in SEAT_METRICS[kind]]
    seats = _rows(run_dir, RESOURCE_SEATS_FILE, ("seat", *seat_cols, *interval_ends(seat_cols)))
    sections = [conditions_section(kind, manifest, aggregates)]
    if kind == "pgg":
        sections.append(pgg_rounds_section(aggregates, by_round))
    else:
        sections.append(commons_seasons_section(manifest, aggregates, by_round))
    sections.append(seats_section(kind, aggregates, seats))
    sections.append(readings_section(aggregates, kind))
    compared = comparisons_section(run_dir, columns)
    if compared:
        sections.append(compared)
    published = published_section(kind, manifest, aggregates)
    if published:
        sections.append(published)
    sections.append(setup_section(manifest))
    return sections


def conditions_section(kind: str, manifest: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The condition table: each metric's value and 95% interval, the game as the unit (the
    reward columns only when the run has them)."""
    metrics = [m for m in METRICS[kind] if not rows or m[0] in rows[0]]
    head = "".join(f"<th>{text(label)}</th>" for _, label, _ in metrics)
    body = "".join(
        f"<tr><td>{text(r['condition'])}</td><td>{r.get('n_games')}</td>"
        + "".join(f"<td>{cell(r, c, pct)}</td>" for c, _, pct in metrics)
        + "</tr>"
        for r in rows
    )
    headline = "contribution_rate" if kind == "pgg" else "survival"
    title = (
        "Contribution rate per condition (95% interval over games)"
        if kind == "pgg"
        else "Share of games that survived per condition (95% interval over games)"
    )
    chart = interval_dots(
        [
            Point(
                str(r["condition"]),
                r.get(headline),
                r.get(f"{headline}_ci_low"),
                r.get(f"{headline}_ci_high"),
                PALETTE[i % len(PALETTE)],
                f"{r.get('n_games')} games",
            )
            for i, r in enumerate(rows)
        ],
        title,
        "share of tokens contributed" if kind == "pgg" else "share of games",
    )
    what = "public goods game with punishment" if kind == "pgg" else "commons (fishery)"
    return (
        f"<section id='conditions'><h2>Conditions: {text(what)}</h2><p class='note'>Each value "
        "is over the condition's games, with a 95% interval in brackets that treats the game "
        "as the unit (games are independent replicates; rounds and seats within a game are "
        f"not). {text(NOTES[kind])} Methods: {text(_methods(manifest))}</p>"
        f"{_exactness(kind, manifest, rows)}<figure>{chart}</figure><div class='scroll'><table>"
        f"<tr><th>condition</th><th>games</th>{head}</tr>{body}</table></div></section>"
    )


def _methods(manifest: dict[str, Any]) -> str:
    methods = (manifest.get("intervals") or {}).get("methods") or {}
    if not isinstance(methods, dict) or not methods:
        return "as the manifest's intervals entry records."
    return " ".join(f"{k.replace('_', ' ')}: {v}." for k, v in methods.items())


def _exactness(kind: str, manifest: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """Which conditions are exact, and why an identical condition's interval is still wide."""
    exact = [text(r["condition"]) for r in rows if is_exact_row(r)]
    out = []
    if exact:
        out.append(
            "<p class='note'>Exact (deterministic by construction: every game is the same game, "
            f"so each value is exact and has no interval): {', '.join(exact)}.</p>"
        )
    entries = {str(c.get("name")): c for c in manifest.get("conditions") or []}
    for r in rows:
        rules = entries.get(str(r["condition"]), {}).get("rules") or {}
        why = ["the random allocation"] if rules.get("allocation") == "stochastic" else []
        note = identical_note({**r, "n_replicates": r.get("n_games")}, why)
        if note:
            out.append(f"<p class='note'>{text(r['condition'])}: {text(note)}.</p>")
    return "".join(out)


def _of(rows: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return sorted((r for r in rows if r["condition"] == name), key=lambda r: int(r["round"]))


def pgg_rounds_section(conditions: list[dict[str, Any]], rounds: list[dict[str, Any]]) -> str:
    """Per condition: the contribution rate per round with its 95% band, and the punishment
    spent per round (mean over games, with its interval)."""
    parts = [
        "<section id='rounds'><h2>Rounds</h2><p class='note'>Per round, the mean over the games "
        "that reached it; bands and whiskers are 95% intervals over games. Contribution rate: "
        "the group's tokens contributed over tokens that could have been; punishment spent: "
        "tokens the group paid to punish in that round.</p>"
    ]
    for i, c in enumerate(conditions):
        name = str(c["condition"])
        ordered = _of(rounds, name)
        if not ordered:
            continue
        color = PALETTE[i % len(PALETTE)]
        parts.append(f"<h3>{text(name)}</h3><figure>")
        parts.append(
            band_chart(
                [float(r.get("contribution_rate") or 0.0) for r in ordered],
                [r.get("contribution_rate_ci_low") for r in ordered],
                [r.get("contribution_rate_ci_high") for r in ordered],
                f"{name}: contribution rate per round, 95% band over games",
                color,
            )
        )
        spent = [r.get("punish_spent") for r in ordered]
        highs = [r.get("punish_spent_ci_high") for r in ordered]
        top = max([float(v) for v in spent + highs if v is not None] + [1.0])
        parts.append(
            xy_chart(
                [float(r["round"]) for r in ordered],
                [
                    Series(
                        "punishment spent (tokens)",
                        spent,
                        color,
                        [r.get("punish_spent_ci_low") for r in ordered],
                        highs,
                    )
                ],
                f"{name}: punishment spent per round (tokens, mean over games, 95% interval)",
                "round",
                (0.0, top),
                percent=False,
            )
        )
        parts.append("</figure>")
    parts.append("</section>")
    return "".join(parts)


def commons_seasons_section(
    manifest: dict[str, Any], conditions: list[dict[str, Any]], rounds: list[dict[str, Any]]
) -> str:
    """The stock before each season's harvest per condition with the collapse threshold drawn
    across, and the share of games still going per season."""
    entries = {str(c.get("name")): c for c in manifest.get("conditions") or []}
    names = [str(c["condition"]) for c in conditions]
    seasons = sorted({int(r["round"]) for r in rounds})
    by_season = {(r["condition"], int(r["round"])): r for r in rounds}
    first = (entries.get(names[0], {}) if names else {}).get("rules") or {}
    capacity = float(first.get("capacity") or 100)
    thresholds = {(entries.get(n, {}).get("rules") or {}).get("collapse_below") for n in names} - {
        None
    }

    def series(column: str) -> list[Series]:
        out = []
        for i, name in enumerate(names):
            got = [by_season.get((name, s)) for s in seasons]
            out.append(
                Series(
                    name,
                    [None if g is None else g.get(column) for g in got],
                    PALETTE[i % len(PALETTE)],
                    [None if g is None else g.get(f"{column}_ci_low") for g in got],
                    [None if g is None else g.get(f"{column}_ci_high") for g in got],
                )
            )
        return out

    lines = [(float(t), f"collapse threshold: stock below {t:g}") for t in sorted(thresholds)]
    stock = xy_chart(
        [float(s) for s in seasons],
        series("stock"),
        "Stock before the harvest per season (mean over the games still going, 95% interval)",
        "season",
        (0.0, capacity),
        percent=False,
        hlines=lines,
    )
    going = xy_chart(
        [float(s) for s in seasons],
        series("going"),
        "Share of games still going at the start of each season (95% interval)",
        "season",
    )
    return (
        "<section id='seasons'><h2>Seasons</h2><p class='note'>The stock is the mean over the "
        "games that reached the season (a collapsed game stops, as in GovSim); the dashed line "
        "is the collapse threshold of the rules. The share still going is over all the "
        f"condition's games.</p><figure>{stock}</figure><figure>{going}</figure></section>"
    )


def seats_section(kind: str, conditions: list[dict[str, Any]], seats: list[dict[str, Any]]) -> str:
    """Per condition, each seat's numbers: means over games with 95% intervals."""
    metrics = SEAT_METRICS[kind]
    head = "".join(f"<th>{text(label)}</th>" for _, label, _ in metrics)
    parts = [
        "<section id='seats'><h2>Seats</h2><p class='note'>Each seat's mean over the "
        "condition's games with a 95% interval over games (Student-t).</p>"
    ]
    for c in conditions:
        name = str(c["condition"])
        flag = {"exact": c.get("exact")}
        mine = sorted((s for s in seats if s["condition"] == name), key=lambda s: int(s["seat"]))
        body = "".join(
            f"<tr><td>{int(s['seat']) + 1}</td><td>{text(s.get('name') or '')}</td>"
            + "".join(f"<td>{cell({**s, **flag}, col, pct)}</td>" for col, _, pct in metrics)
            + "</tr>"
            for s in mine
        )
        parts.append(
            f"<h3>{text(name)}</h3><div class='scroll'><table><tr><th>seat</th><th>agent</th>"
            f"{head}</tr>{body}</table></div>"
        )
    parts.append("</section>")
    return "".join(parts)


def readings_section(conditions: list[dict[str, Any]], kind: str | None = None) -> str:
    """How the replies were read: the readers' measured accuracy on the labelled replies of the
    game kind (`storage.integer_replies`), then parse failures, fallbacks and clamped answers per
    condition (aggregates.parquet's counts)."""
    body = "".join(
        f"<tr><td>{text(r['condition'])}</td>"
        + "".join(f"<td>{_count(r.get(c))}</td>" for c in READING_COLUMNS)
        + "</tr>"
        for r in conditions
    )
    return (
        "<section id='readings'><h2>Readings of the replies</h2><p class='note'>How replies "
        "are read: a commons harvest as GovSim's code reads it (the first integer after "
        "\u201cAnswer:\u201d); a contribution or punishment from PGG-Bench's tags "
        "(<code>&lt;contribution&gt;N&lt;/contribution&gt;</code>, <code>&lt;punish&gt;"
        "...&lt;/punish&gt;</code>), the last tag counting. Decisions: every seat's decisions, "
        "scripted seats included (a scripted seat is never misread). Parse failures: replies "
        "that could not be read (the seat is asked again); fallbacks: decisions where no reply "
        "was readable and the stated fallback was used; clamped: answers brought into the "
        "allowed range (or punishment cut to the rules), each recorded.</p>"
        f"<p class='note'>Measured: {text(integer_reader_line(kind))}.</p><table><tr>"
        "<th>condition</th><th>decisions</th><th>parse failures</th><th>fallbacks</th>"
        f"<th>clamped</th></tr>{body}</table></section>"
    )


COMPARISONS_FILE = "comparisons.parquet"
COMPARISON_NUMBERS = (
    "n_baseline",
    "n_condition",
    "baseline_mean",
    "condition_mean",
    "difference",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
)


def comparisons_section(run_dir: Path, columns: Sequence[str]) -> str | None:
    """`pdbench compare`'s contrasts (comparisons.parquet) of this run's metrics, as written;
    None when the run has none."""
    rows = read_checked_rows(
        run_dir / COMPARISONS_FILE,
        COMPARISON_NUMBERS,
        "run `pdbench compare RUN_DIR`",
        texts=("metric", "baseline", "condition"),
    )
    rows = [r for r in rows or [] if r["metric"] in columns]
    if not rows:
        return None

    def p(value: Any) -> str:
        return "-" if value is None else f"{float(value):.4f}"

    body = "".join(
        f"<tr><td>{text(r['metric'])}</td><td>{text(r['condition'])} \u2212 "
        f"{text(r['baseline'])}</td><td>"
        + (
            fmt(r.get("difference"), exact="exact")
            if r.get("exact")
            else fmt(r.get("difference"), r.get("ci_low"), r.get("ci_high"))
        )
        + f"</td><td>{p(r.get('p_value'))}</td><td>{p(r.get('p_holm'))}</td></tr>"
        for r in rows
    )
    return (
        "<section id='comparisons'><h2>Comparisons</h2><p class='note'>From comparisons.parquet "
        "(<code>pdbench compare RUN_DIR</code>): each condition minus the baseline, the "
        "difference of means over games with a 95% interval (the game as the unit: the hull "
        "of a bootstrap over games and MOVER), a permutation p-value and Holm's adjustment over "
        "each metric's contrasts. Pooled ratios are compared as the mean of per-game rates.</p><div class='scroll'><table><tr><th>metric</th><th>contrast</th>"
        f"<th>difference [95%]</th><th>p</th><th>p (Holm)</th></tr>{body}</table></div>"
        "</section>"
    )


def _count(value: Any) -> str:
    return "-" if value is None else f"{int(value):,}"


def published_section(
    kind: str, manifest: dict[str, Any], conditions: list[dict[str, Any]]
) -> str | None:
    """The manifest's published numbers (`published`: source file, entries, deviations, the
    rounds they were measured over) beside this run's (None when it records none)."""
    published = manifest.get("published")
    if not isinstance(published, dict) or not published.get("entries"):
        return None
    percent = {c: pct for c, _, pct in METRICS.get(kind, ())}
    by_name = {str(r["condition"]): r for r in conditions}
    rows = []
    for entry in published["entries"]:
        if not isinstance(entry, dict):
            continue
        metric = str(entry.get("metric", ""))
        condition = entry.get("condition")
        pct = percent.get(metric, False)
        value = entry.get("value")
        shown = fmt(value, percent=pct) if isinstance(value, int | float) else text(value)
        if entry.get("published_only"):
            ours = "not measured (published only)"
        elif condition is not None:
            row = by_name.get(str(condition))
            ours = cell(row, metric, pct) if row and metric in row else "not in this run"
        else:
            ours = "; ".join(
                f"{text(n)}: {cell(r, metric, pct)}" for n, r in by_name.items() if metric in r
            )
            ours = ours or "not in this run"
        rows.append(
            f"<tr><td>{text(metric)}</td><td>{text(entry.get('model', ''))}</td>"
            f"<td>{text('-' if condition is None else condition)}</td><td>{shown}</td>"
            f"<td>{ours}</td><td>{text(entry.get('source', ''))}</td>"
            f"<td>{text(entry.get('definition', ''))}</td></tr>"
        )
    deviations = published.get("deviations")
    dev = ""
    if isinstance(deviations, list) and deviations:
        items = "".join(f"<li>{text(d)}</li>" for d in deviations)
        dev = f"<p>Where this run's design deviates from the published one:</p><ul>{items}</ul>"
    theirs = published.get("rounds")
    ours_rounds = ((manifest.get("config") or {}).get("horizon") or {}).get("n_rounds")
    length = ""
    if theirs and ours_rounds and theirs != ours_rounds:
        length = (
            f"<p class='warn'>This run plays {text(ours_rounds)} rounds; the published numbers "
            f"are over {text(theirs)}: they are not comparable, shown for reference only.</p>"
        )
    source = text(published.get("source_file", ""))
    return (
        "<section id='published'><h2>Published vs this run</h2><p class='note'>The published "
        f"numbers ({source}) beside this run's value with its 95% interval "
        "(the game as the unit); no condition: the run's value of every condition.</p>"
        f"{length}<div class='scroll'><table><tr><th>metric</th><th>model</th><th>condition</th>"
        "<th>published</th><th>this run [95%]</th><th>source</th><th>definition</th></tr>"
        f"{''.join(rows)}</table></div>{dev}</section>"
    )


def setup_section(manifest: dict[str, Any]) -> str:
    """The run's setup: its id, seed, status and each condition's seats and rules."""
    keys = ("run_id", "kind", "status", "seed", "replicates")
    kv = "".join(f"<tr><th>{k}</th><td>{text(manifest.get(k))}</td></tr>" for k in keys)
    conditions = "".join(
        f"<tr><td>{text(c.get('name'))}</td><td>{text(', '.join(map(str, c.get('seats') or [])))}"
        f"</td><td><code>{text(json.dumps(c.get('rules'), sort_keys=True))}</code></td></tr>"
        for c in manifest.get("conditions") or []
        if isinstance(c, dict)
    )
    return (
        f"<section id='setup'><h2>Setup</h2><table class='kv'>{kv}</table><table><tr>"
        f"<th>condition</th><th>seats</th><th>rules</th></tr>{conditions}</table></section>"
    )
