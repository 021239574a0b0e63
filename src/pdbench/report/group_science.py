"""The report pages of a group tournament and a group evolution (`pdbench report RUN_DIR`).

A group tournament's page: the leaderboard as bars with their 95% intervals (the game as the
unit) and as a table, each group's games summed up, and the setup. A group evolution's page: the
population shares over generations (seed 0), the fixation shares over seeds with their Wilson
intervals beside the exact probabilities, the payoff table by composition, and the setup. Read
from the run's artifacts only (every number checked as it is read), never recomputed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pdbench.report.format import fmt
from pdbench.report.markup import text
from pdbench.report.svg import GRID, INK, MUTED, Point, _num, _open, interval_dots, x_scale
from pdbench.storage.parquet import read_checked_rows
from pdbench.storage.run_dir import read_manifest
from pdbench.storage.schema import (
    FIXATION_FILE,
    GENERATIONS_FILE,
    GROUP_GAMES_FILE,
    LEADERBOARD_FILE,
    PAYOFF_TABLE_FILE,
)

PALETTE = ("#3b6fd8", "#e08a1e", "#2e9e4f", "#d64545", "#8e5bd0", "#1f9aa8", "#a89a3c", "#6b7280")
REMEDY = "run the command again (`pdbench tournament` / `pdbench evolve`) into a new output dir"
MAX_GROUP_ROWS = 300  # groups listed in the page (the rest are in groups.parquet)
MAX_CHART_POINTS = 600  # generations drawn per line (evenly spaced, the last one kept)
# Per artifact: (number columns, text columns, required columns).
_CHECKS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    LEADERBOARD_FILE: (
        (
            "rank",
            "mean_payoff_per_round",
            "ci_low",
            "ci_high",
            "cooperation_rate",
            "cooperation_ci_low",
            "cooperation_ci_high",
            "games",
            "groups",
        ),
        ("player",),
        ("rank",),
    ),
    GROUP_GAMES_FILE: (
        ("game", "repetition", "rounds", "group_cooperation", "group_payoff_per_round"),
        ("group",),
        (),
    ),
    PAYOFF_TABLE_FILE: (("composition", "count", "payoff_per_round"), ("label", "strategy"), ()),
    GENERATIONS_FILE: (
        ("seed", "generation", "count", "share", "fitness"),
        ("strategy",),
        ("generation", "share"),
    ),
    FIXATION_FILE: (
        ("fixations", "seeds", "probability", "ci_low", "ci_high", "exact_probability"),
        ("strategy",),
        ("seeds",),
    ),
}


def _rows(run_dir: Path, name: str) -> list[dict[str, Any]]:
    """An artifact's rows, checked; [] when the file is absent."""
    numbers, texts, required = _CHECKS[name]
    rows = read_checked_rows(run_dir / name, numbers, REMEDY, texts=texts, required=required)
    return rows or []


# ----------------------------------------------------------------------------------------------
# Charts


def interval_bars(
    points: Sequence[Point], title: str, axis_label: str, lo: float, hi: float
) -> str:
    """Horizontal bars from 0 (or the axis' end nearer 0) to each value, with the interval as a
    whisker; one row per point, labels as wide as the longest needs."""
    longest = max((len(p.label) for p in points), default=0)
    label_w, plot_w, row_h, top = max(200, int(longest * 7.2) + 16), 360, 24, 40
    width = label_w + plot_w + 120
    height = top + row_h * len(points) + 44
    base = min(max(0.0, lo), hi)
    out = _open(width, height, title)
    for k in range(6):
        v = lo + (hi - lo) * k / 5
        x = x_scale(v, lo, hi, label_w, plot_w)
        out.append(
            f"<line x1='{_num(x)}' y1='{top - 6}' x2='{_num(x)}' "
            f"y2='{top + row_h * len(points)}' stroke='{GRID}'/>"
            f"<text x='{_num(x)}' y='{top + row_h * len(points) + 16}' font-size='11' "
            f"text-anchor='middle' fill='{MUTED}'>{v:.3g}</text>"
        )
    out.append(
        f"<text x='{label_w + plot_w / 2:.0f}' y='{height - 8}' font-size='12' "
        f"text-anchor='middle' fill='{MUTED}'>{text(axis_label)}</text>"
    )
    x0 = x_scale(base, lo, hi, label_w, plot_w)
    for i, p in enumerate(points):
        y = top + row_h * i + row_h / 2
        out.append(
            f"<text x='{label_w - 8}' y='{y + 4:.0f}' font-size='12' text-anchor='end' "
            f"fill='{INK}'>{text(p.label)}</text>"
        )
        if p.value is None:
            continue
        x = x_scale(p.value, lo, hi, label_w, plot_w)
        shown = fmt(p.value) if p.low is None else f"{p.value:.3g} [{p.low:.3g}, {p.high:.3g}]"
        out.append(
            f"<polygon class='bar' points='{_box(min(x, x0), y - 7, abs(x - x0), 14)}' "
            f"fill='{p.color}' fill-opacity='0.55'>"
            f"<title>{text(p.label)}: {text(shown)}</title></polygon>"
        )
        if p.low is not None and p.high is not None and p.high > p.low:
            x1, x2 = (x_scale(v, lo, hi, label_w, plot_w) for v in (p.low, p.high))
            out.append(
                f"<line class='whisker' x1='{_num(x1)}' y1='{y:.1f}' x2='{_num(x2)}' "
                f"y2='{y:.1f}' stroke='{INK}' stroke-width='1.5'/>"
                + "".join(
                    f"<line x1='{_num(xe)}' y1='{y - 5:.1f}' x2='{_num(xe)}' y2='{y + 5:.1f}' "
                    f"stroke='{INK}' stroke-width='1.5'/>"
                    for xe in (x1, x2)
                )
            )
        out.append(
            f"<text x='{label_w + plot_w + 8}' y='{y + 4:.0f}' font-size='11' fill='{MUTED}'>"
            f"{text(p.note)}</text>"
        )
    out.append("</svg>")
    return "".join(out)


def _box(x: float, y: float, width: float, height: float) -> str:
    """The points of a rectangle (as a polygon: the report's markup has no <rect>)."""
    right, bottom = x + width, y + height
    return f"{_num(x)},{_num(y)} {_num(right)},{_num(y)} {_num(right)},{_num(bottom)} {_num(x)},{_num(bottom)}"


def shares_chart(series: dict[str, list[tuple[int, float]]], title: str) -> str:
    """Each strategy's share of the population per generation, one line each (at most
    `MAX_CHART_POINTS` points a line, evenly spaced, the last kept), the legend at the right."""
    width, height, left, top, bottom = 720, 280, 52, 34, 40
    plot_w, plot_h = width - left - 170, height - top - bottom
    last = max((g for points in series.values() for g, _ in points), default=0)
    out = _open(width, height, title)
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = top + (1 - v) * plot_h
        out.append(
            f"<line x1='{left}' x2='{left + plot_w}' y1='{y:.1f}' y2='{y:.1f}' stroke='{GRID}'/>"
            f"<text x='{left - 6}' y='{y + 4:.1f}' font-size='11' text-anchor='end' "
            f"fill='{MUTED}'>{100 * v:.0f}%</text>"
        )
    for i, (name, points) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        step = max(1, len(points) // MAX_CHART_POINTS)
        kept = points[::step] + ([points[-1]] if (len(points) - 1) % step else [])
        line = " ".join(
            f"{left + g / max(1, last) * plot_w:.1f},{top + (1 - v) * plot_h:.1f}" for g, v in kept
        )
        out.append(
            f"<polyline class='share' points='{line}' fill='none' stroke='{color}' "
            f"stroke-width='2'/><text x='{left + plot_w + 12}' y='{top + 14 + 16 * i}' "
            f"font-size='12' fill='{color}'>■ {text(name)}</text>"
        )
    out.append(
        f"<text x='{left + plot_w / 2:.0f}' y='{height - 8}' font-size='12' "
        f"text-anchor='middle' fill='{MUTED}'>generation (0 to {last})</text></svg>"
    )
    return "".join(out)


# ----------------------------------------------------------------------------------------------
# Pages


def _setup(manifest: dict[str, Any], keys: Sequence[str]) -> str:
    rows = "".join(
        f"<tr><th>{k}</th><td>{text(v if isinstance(v, str) else json.dumps(v))}</td></tr>"
        for k in keys
        if (v := manifest.get(k)) is not None
    )
    label = (manifest.get("game") or {}).get("label")
    if label:
        rows += f"<tr><th>game</th><td>{text(label)}</td></tr>"
    return f"<section id='setup'><h2>Setup</h2><table class='kv'>{rows}</table></section>"


def group_tournament_report(run_dir: Path) -> str:
    """A group tournament's report page (HTML)."""
    from pdbench.report import _page

    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir, "group_tournament")
    board = _rows(run_dir, LEADERBOARD_FILE)
    games = _rows(run_dir, GROUP_GAMES_FILE)
    exact = bool(board) and all(r.get("exact") for r in board)
    values = [
        v
        for r in board
        for v in (r["mean_payoff_per_round"], r.get("ci_low"), r.get("ci_high"))
        if v is not None
    ]
    pay = [
        *(manifest.get("game") or {}).get("pay_c", []),
        *(manifest.get("game") or {}).get("pay_d", []),
    ]
    lo = min([0.0, *values, *pay]) if values else 0.0
    hi = max([1.0, *values, *pay]) if values else 1.0
    interval = (
        "exact: every game is deterministic" if exact else "95% interval, the game as the unit"
    )
    chart = interval_bars(
        [
            Point(
                f"{r['rank']}. {r['player']}",
                r["mean_payoff_per_round"],
                r.get("ci_low"),
                r.get("ci_high"),
                PALETTE[0],
                f"{100 * r['cooperation_rate']:.0f}% C"
                if r.get("cooperation_rate") is not None
                else "",
            )
            for r in board
        ],
        f"Mean payoff per round over each player's games ({interval})",
        "payoff per round",
        lo,
        hi,
    )
    words = "exact" if exact else ""
    table = "".join(
        f"<tr><td>{r['rank']}</td><td>{text(r['player'])}</td>"
        f"<td>{fmt(r['mean_payoff_per_round'], r.get('ci_low'), r.get('ci_high'), exact=words)}</td>"
        f"<td>{fmt(r.get('cooperation_rate'), r.get('cooperation_ci_low'), r.get('cooperation_ci_high'), percent=True, exact=words)}</td>"
        f"<td>{r['games']}</td><td>{r['groups']}</td></tr>"
        for r in board
    )
    sections = [
        "<section id='leaderboard'><h2>Leaderboard</h2><p class='note'>Every group of "
        f"{text(manifest.get('group_size'))} of the field played "
        f"{text(manifest.get('repetitions'))} games. A player's value in a game is its payoff "
        "per round (a player holding several seats: their mean); the leaderboard is the mean "
        "over its games, with a 95% interval that treats the game as the unit. Ties share a "
        f"rank.</p><figure>{chart}</figure><table><tr><th>rank</th><th>player</th>"
        "<th>payoff per round [95%]</th><th>cooperation [95%]</th><th>games</th><th>groups</th>"
        f"</tr>{table}</table></section>",
        _groups_table(games),
        _setup(
            manifest,
            ("run_id", "status", "seed", "group_size", "with_replacement", "repetitions", "noise"),
        ),
    ]
    return _page(
        f"pdbench report: {manifest.get('run_id', run_dir.name)}",
        f"group tournament · {run_dir} · status {manifest.get('status')}",
        sections,
    )


def _groups_table(games: list[dict[str, Any]]) -> str:
    """Per group: its games, mean group cooperation, each member's mean payoff per round."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for game in games:
        groups.setdefault(str(game["group"]), []).append(game)
    body = []
    for label, rows in list(groups.items())[:MAX_GROUP_ROWS]:
        members = rows[0].get("members") or []
        per_seat = [r.get("payoff_per_round") or [] for r in rows]
        means = [
            sum(float(p[i]) for p in per_seat if i < len(p) and p[i] is not None) / len(per_seat)
            for i in range(len(members))
        ]
        coop = [r["group_cooperation"] for r in rows if r.get("group_cooperation") is not None]
        shown = ", ".join(f"{text(m)} {v:.3g}" for m, v in zip(members, means, strict=True))
        body.append(
            f"<tr><td>{text(label)}</td><td>{len(rows)}</td>"
            f"<td>{fmt(sum(coop) / len(coop) if coop else None, percent=True)}</td>"
            f"<td>{shown}</td></tr>"
        )
    more = (
        f"<p class='note'>The first {MAX_GROUP_ROWS} of {len(groups)} groups; all are in "
        f"{GROUP_GAMES_FILE}.</p>"
        if len(groups) > MAX_GROUP_ROWS
        else ""
    )
    return (
        "<section id='groups'><h2>Groups</h2><p class='note'>Means over each group's games.</p>"
        "<div class='scroll'><table><tr><th>group</th><th>games</th><th>group cooperation</th>"
        f"<th>payoff per round of each seat</th></tr>{''.join(body)}</table></div>{more}</section>"
    )


def group_evolution_report(run_dir: Path) -> str:
    """A group evolution's report page (HTML)."""
    from pdbench.report import _page

    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir, "group_evolution")
    gens = [r for r in _rows(run_dir, GENERATIONS_FILE) if (r.get("seed") or 0) == 0]
    series: dict[str, list[tuple[int, float]]] = {}
    for r in sorted(gens, key=lambda r: r["generation"]):
        series.setdefault(str(r["strategy"]), []).append((int(r["generation"]), float(r["share"])))
    runs = manifest.get("runs") or [{}]
    fixed = runs[0].get("fixated") if runs else None
    chart = shares_chart(series, "Population share of each strategy per generation (seed 0)")
    sections = [
        "<section id='population'><h2>Population</h2><p>Seed 0: "
        f"<b>{text(('fixated on ' + fixed) if fixed else 'no fixation')}</b> after "
        f"{text(runs[0].get('generations_run', '-'))} generations.</p>"
        f"<figure>{chart}</figure></section>",
    ]
    fixation = _rows(run_dir, FIXATION_FILE)
    if fixation:
        n = fixation[0]["seeds"]
        chart = interval_dots(
            [
                Point(
                    str(r["strategy"]),
                    r["probability"],
                    r.get("ci_low"),
                    r.get("ci_high"),
                    note=f"{r['fixations']}/{n}"
                    + (
                        f"; exact {100 * r['exact_probability']:.1f}%"
                        if r.get("exact_probability") is not None
                        else ""
                    ),
                )
                for r in fixation
            ],
            f"Fixation over {n} seeds of the process (Wilson 95% interval)",
            "share of seeds that ended with the type alone",
        )
        rows = "".join(
            f"<tr><td>{text(r['strategy'])}</td><td>{r['fixations']}/{n}</td>"
            f"<td>{fmt(r['probability'], r.get('ci_low'), r.get('ci_high'), percent=True)}</td>"
            f"<td>{fmt(r.get('exact_probability'), percent=True)}</td></tr>"
            for r in fixation
        )
        sections.append(
            "<section id='fixation'><h2>Fixation over seeds</h2><p class='note'>Simulated: the "
            "seeds whose run ended with one type alone. Exact: the probability computed from the "
            "payoff table for two types under the pairwise comparison rule (or Moran with a "
            "selection intensity), from the initial counts.</p>"
            f"<figure>{chart}</figure><table><tr><th>strategy</th><th>seeds</th>"
            f"<th>simulated [95%]</th><th>exact</th></tr>{rows}</table></section>"
        )
    sections.append(_payoff_section(_rows(run_dir, PAYOFF_TABLE_FILE)))
    sections.append(
        _setup(
            manifest,
            (
                "run_id",
                "status",
                "seed",
                "process",
                "beta",
                "group_size",
                "population_size",
                "initial_counts",
                "mutation_rate",
                "seeds",
                "repetitions",
                "noise",
            ),
        )
    )
    return _page(
        f"pdbench report: {manifest.get('run_id', run_dir.name)}",
        f"group evolution · {run_dir} · status {manifest.get('status')}",
        sections,
    )


def _payoff_section(rows: list[dict[str, Any]]) -> str:
    """The payoff table: one row per composition, a column per strategy."""
    strategies = list(dict.fromkeys(str(r["strategy"]) for r in rows))
    table: dict[int, dict[str, Any]] = {}
    labels: dict[int, str] = {}
    for r in rows:
        c = int(r["composition"])
        labels[c] = str(r["label"])
        table.setdefault(c, {})[str(r["strategy"])] = r.get("payoff_per_round")
    head = "".join(f"<th>{text(s)}</th>" for s in strategies)
    body = "".join(
        f"<tr><td>{text(labels[c])}</td>"
        + "".join(f"<td>{fmt(table[c].get(s))}</td>" for s in strategies)
        + "</tr>"
        for c in sorted(table)
    )
    return (
        "<section id='payoffs'><h2>Payoff table</h2><p class='note'>Each type's mean payoff per "
        "round in each group composition (- where the type is absent), from the games played; "
        "a type's fitness is its expected payoff over the groups its co-players can form.</p>"
        f"<div class='scroll'><table><tr><th>composition</th>{head}</tr>{body}</table></div>"
        "</section>"
    )
