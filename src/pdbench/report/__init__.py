"""`pdbench report RUN_DIR`: one self-contained report.html (inline CSS and SVG; no script, no
font, no request at view time) for an experiment, tournament or evolution directory. It reads
the run's artifacts only (layering: report -> storage/core)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pdbench.errors import PdbenchError
from pdbench.report.experiment import experiment_sections
from pdbench.report.format import fmt
from pdbench.report.markup import page_problems, text
from pdbench.report.svg import GRID, INK, MUTED, Point, interval_dots
from pdbench.storage.files import write_bytes_atomic
from pdbench.storage.parquet import numeric_columns, read_checked_rows
from pdbench.storage.run_dir import read_manifest, run_kind
from pdbench.storage.schema import (
    AGGREGATES_FILE,
    GENERATIONS_FILE,
    LEADERBOARD_FILE,
    PAYOFF_MATRIX_FILE,
    aggregates_arrow_schema,
)
from pdbench.storage.strategy_fit import STRATEGY_FIT_FILE, strategy_fit_schema

REPORT_FILE = "report.html"
COMPARISONS_FILE = "comparisons.parquet"
PALETTE = ("#3b6fd8", "#e08a1e", "#2e9e4f", "#d64545", "#8e5bd0", "#1f9aa8", "#a89a3c", "#6b7280")

CSS = f"""
body {{ font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; color: {INK};
  margin: 0 auto; max-width: 1100px; padding: 24px 28px 60px; line-height: 1.45; }}
h1 {{ font-size: 26px; margin-bottom: 2px; }} h2 {{ margin-top: 36px; border-bottom: 2px solid
  {GRID}; padding-bottom: 4px; }} h4 {{ margin: 4px 0 8px; }}
table {{ border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }}
th, td {{ border-bottom: 1px solid {GRID}; padding: 4px 10px; text-align: left;
  vertical-align: top; }}
th {{ background: #f6f8fa; font-weight: 600; }}
table.kv th {{ width: 260px; }}
.ci {{ color: {MUTED}; white-space: nowrap; }} .muted {{ color: {MUTED}; font-weight: 400; }}
.vs {{ color: {MUTED}; }} .note {{ color: {MUTED}; font-size: 13px; }}
.scroll {{ overflow-x: auto; }} figure {{ margin: 10px 0 18px; }}
.card {{ display: inline-block; vertical-align: top; margin: 0 14px 14px 0; padding: 10px 14px;
  border: 1px solid {GRID}; border-radius: 10px; background: #fbfcfd; }}
nav a {{ margin-right: 14px; color: #3b6fd8; text-decoration: none; font-size: 14px; }}
code {{ background: #f0f2f5; padding: 1px 5px; border-radius: 4px; }}
"""


class ReportError(PdbenchError):
    """A run directory the report cannot be made from."""


def _page(title: str, subtitle: str, sections: Sequence[str]) -> str:
    ids = [
        (s.split("id='", 1)[1].split("'", 1)[0], s.split("<h2>", 1)[1].split("</h2>", 1)[0])
        for s in sections
        if "id='" in s and "<h2>" in s
    ]
    nav = "".join(f"<a href='#{i}'>{h.split(':')[0]}</a>" for i, h in ids)
    html = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{text(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{text(title)}</h1><p class='muted'>{text(subtitle)}</p><nav>{nav}</nav>"
        + "".join(sections)
        + "<p class='note'>Made by <code>pdbench report</code>: every number comes from the "
        "run's artifacts.</p></body></html>"
    )
    problems = page_problems(html)  # the last line of defence: escaping forgotten somewhere
    if problems:
        raise ReportError(
            f"report.html: markup from the run's artifacts would reach the page "
            f"({', '.join(dict.fromkeys(problems[:3]))}); report not written (a pdbench bug: "
            "please report it)"
        )
    return html


FIXATION_FILE = "fixation.parquet"
# The columns the report shows as numbers, per artifact: checked to hold numbers when the file is
# read (a damaged or hand-edited file is one line naming it, never markup in the page).
_NUMBERS: dict[str, tuple[str, ...]] = {
    COMPARISONS_FILE: (
        "n_baseline",
        "n_condition",
        "baseline_mean",
        "condition_mean",
        "difference",
        "ci_low",
        "ci_high",
        "p_value",
        "p_holm",
    ),
    LEADERBOARD_FILE: (
        "rank",
        "matches",
        "wins",
        "draws",
        "losses",
        "mean_score_per_round",
        "ci95_low",
        "ci95_high",
        "rank_ci_low",
        "rank_ci_high",
        "cooperation_rate",
    ),
    PAYOFF_MATRIX_FILE: ("mean_score_per_round",),
    GENERATIONS_FILE: ("generation", "share"),
    FIXATION_FILE: ("seeds", "probability", "ci_low", "ci_high", "fixations"),
}
# The columns the report needs in every row: text (names, labels) and numbers (ranks, sizes).
_TEXTS: dict[str, tuple[str, ...]] = {
    AGGREGATES_FILE: ("condition", "scope"),
    STRATEGY_FIT_FILE: ("condition", "agent", "strategy"),
    COMPARISONS_FILE: ("metric", "baseline", "condition"),
    LEADERBOARD_FILE: ("player",),
    PAYOFF_MATRIX_FILE: ("player", "opponent"),
    GENERATIONS_FILE: ("strategy",),
    FIXATION_FILE: ("strategy",),
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    STRATEGY_FIT_FILE: ("rank",),
    LEADERBOARD_FILE: ("rank",),
    GENERATIONS_FILE: ("generation", "share"),
    FIXATION_FILE: ("seeds",),
}
_REMEDY = {
    AGGREGATES_FILE: "run `pdbench aggregate RUN_DIR`",
    STRATEGY_FIT_FILE: "run `pdbench profile RUN_DIR`",
    COMPARISONS_FILE: "run `pdbench compare RUN_DIR`",
}


def _numbers(name: str) -> tuple[str, ...]:
    if name == AGGREGATES_FILE:
        return tuple(numeric_columns(aggregates_arrow_schema()))
    if name == STRATEGY_FIT_FILE:
        return tuple(numeric_columns(strategy_fit_schema()))
    return _NUMBERS.get(name, ())


def _rows(path: Path) -> list[dict[str, Any]] | None:
    """An artifact's rows, checked (storage.parquet.read_checked_rows): NaN and infinities read
    as missing, and text where a number belongs refuses the file in one line."""
    remedy = _REMEDY.get(path.name, "re-run the command that writes it")
    return read_checked_rows(
        path,
        _numbers(path.name),
        remedy,
        texts=_TEXTS.get(path.name, ()),
        required=_REQUIRED.get(path.name, ()),
    )


def experiment_report(run_dir: Path) -> str:
    manifest = read_manifest(run_dir, "experiment")
    aggregates = _rows(run_dir / AGGREGATES_FILE)
    if not aggregates:
        raise ReportError(f"{run_dir}: no {AGGREGATES_FILE}: run `pdbench aggregate {run_dir}`")
    if not any(r.get("scope") == "condition" for r in aggregates):
        raise ReportError(
            f"{run_dir / AGGREGATES_FILE}: no condition rows (a damaged or hand-edited file); "
            f"run `pdbench aggregate {run_dir}`"
        )
    if "collapsed_fraction" not in aggregates[0]:
        raise ReportError(
            f"{run_dir}: {AGGREGATES_FILE} has no intervals (an older pdbench wrote it): run "
            f"`pdbench aggregate {run_dir}`"
        )
    sections = experiment_sections(
        manifest,
        aggregates,
        _rows(run_dir / STRATEGY_FIT_FILE),
        _rows(run_dir / COMPARISONS_FILE),
    )
    return _page(
        f"pdbench report: {manifest.get('run_id', run_dir.name)}",
        f"experiment · {run_dir} · status {manifest.get('status')}",
        sections,
    )


def _heat(value: float | None, lo: float, hi: float) -> str:
    if value is None or hi <= lo:
        return "#ffffff"
    t = (value - lo) / (hi - lo)
    # white -> blue, readable with dark text at every step
    r, g, b = (int(255 - t * (255 - c)) for c in (120, 160, 230))
    return f"rgb({r},{g},{b})"


def tournament_report(run_dir: Path) -> str:
    manifest = read_manifest(run_dir, "tournament")
    board = _rows(run_dir / LEADERBOARD_FILE) or []
    pairs = _rows(run_dir / PAYOFF_MATRIX_FILE) or []
    lo_key, hi_key = "ci95_low", "ci95_high"
    repeated = bool(board) and "rank_ci_low" in board[0]
    scores = [r["mean_score_per_round"] for r in board if r["mean_score_per_round"] is not None]
    top = math.ceil(max([r.get(hi_key) or 0 for r in board] + scores + [1.0]) * 2) / 2
    chart = interval_dots(
        [
            Point(
                f"{r['rank']}. {r['player']}",
                r["mean_score_per_round"],
                r.get(lo_key),
                r.get(hi_key),
            )
            for r in board
        ],
        "Mean score per round (interval: "
        + ("bootstrap over repetitions)" if repeated else "normal interval over matches)"),
        "points per round",
        0.0,
        float(top),
        percent=False,
    )
    table = "".join(
        f"<tr><td>{r['rank']}</td><td>{text(r['player'])}</td>"
        f"<td>{fmt(r['mean_score_per_round'], r.get(lo_key), r.get(hi_key))}</td>"
        f"<td>{_rank_range(r)}</td><td>{r['matches']}</td><td>{r['wins']}/{r['draws']}/{r['losses']}</td>"
        f"<td>{fmt(r['cooperation_rate'], percent=True)}</td></tr>"
        for r in board
    )
    players = [r["player"] for r in board]
    values = {(p["player"], p["opponent"]): p["mean_score_per_round"] for p in pairs}
    known = [v for v in values.values() if v is not None]
    lo, hi = (min(known), max(known)) if known else (0.0, 1.0)
    heat = "".join(
        f"<tr><th>{text(a)}</th>"
        + "".join(
            f"<td style='background:{_heat(values.get((a, b)), lo, hi)}'>{fmt(values.get((a, b)))}</td>"
            for b in players
        )
        + "</tr>"
        for a in players
    )
    head = "".join(f"<th>{text(b)}</th>" for b in players)
    sections = [
        f"<section id='leaderboard'><h2>Leaderboard</h2><figure>{chart}</figure><table><tr>"
        "<th>rank</th><th>player</th><th>score per round [95%]</th><th>rank (95%)</th><th>matches</th>"
        f"<th>won/drawn/lost</th><th>cooperation</th></tr>{table}</table></section>",
        "<section id='pairwise'><h2>Pairwise payoffs</h2><p class='note'>Row player's mean "
        f"score per round against the column player.</p><div class='scroll'><table><tr><th></th>"
        f"{head}</tr>{heat}</table></div></section>",
        _setup_kv(manifest),
    ]
    return _page(
        f"pdbench report: {manifest.get('run_id', run_dir.name)}",
        f"tournament · {run_dir} · status {manifest.get('status')}",
        sections,
    )


def _rank_range(row: dict[str, Any]) -> str:
    low, high = row.get("rank_ci_low"), row.get("rank_ci_high")
    if low is None or high is None:
        return "-"
    return f"{low:.0f}" if low == high else f"{low:.0f}-{high:.0f}"


def _setup_kv(manifest: dict[str, Any]) -> str:
    keys = ("run_id", "status", "seed", "noise", "repetitions", "strategies", "fixated", "process")
    rows = "".join(
        f"<tr><th>{k}</th><td>{text(json.dumps(manifest[k]) if not isinstance(manifest[k], str) else manifest[k])}</td></tr>"
        for k in keys
        if k in manifest
    )
    return f"<section id='setup'><h2>Setup</h2><table class='kv'>{rows}</table></section>"


def evolution_report(run_dir: Path) -> str:
    manifest = read_manifest(run_dir, "evolution")
    gens = _rows(run_dir / GENERATIONS_FILE) or []
    strategies = list(dict.fromkeys(r["strategy"] for r in gens))
    last = max((r["generation"] for r in gens), default=0)
    width, height, left, top, bottom = 680, 260, 52, 30, 40
    plot_w, plot_h = width - left - 150, height - top - bottom
    lines = []
    for i, s in enumerate(strategies):
        pts = sorted((r["generation"], r["share"]) for r in gens if r["strategy"] == s)
        color = PALETTE[i % len(PALETTE)]
        path = " ".join(
            f"{left + (g / max(1, last)) * plot_w:.1f},{top + (1 - v) * plot_h:.1f}" for g, v in pts
        )
        lines.append(f"<polyline points='{path}' fill='none' stroke='{color}' stroke-width='2'/>")
        lines.append(
            f"<text x='{left + plot_w + 10}' y='{top + 14 + 16 * i}' font-size='12' fill='{color}'>"
            f"■ {text(s)}</text>"
        )
    axes = "".join(
        f"<text x='{left - 6}' y='{top + (1 - v) * plot_h + 4:.1f}' font-size='11' text-anchor='end' fill='{MUTED}'>{100 * v:.0f}%</text>"
        f"<line x1='{left}' x2='{left + plot_w}' y1='{top + (1 - v) * plot_h:.1f}' y2='{top + (1 - v) * plot_h:.1f}' stroke='{GRID}'/>"
        for v in (0, 0.25, 0.5, 0.75, 1.0)
    )
    title = "Population share of each strategy per generation"
    svg = (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' role='img' "
        f"aria-label='{title}'><title>{title}</title><text x='8' y='18' font-size='14' "
        f"font-weight='600'>{title}</text>{axes}{''.join(lines)}<text x='{left + plot_w / 2:.0f}' "
        f"y='{height - 8}' font-size='12' text-anchor='middle' fill='{MUTED}'>generation (0 to "
        f"{last})</text></svg>"
    )
    fixated = manifest.get("fixated")
    sections = [
        f"<section id='population'><h2>Population</h2><p>Fixated: <b>{text(fixated or 'none')}</b></p>"
        f"<figure>{svg}</figure></section>",
    ]
    fixation = _rows(run_dir / FIXATION_FILE)
    if fixation:
        n = fixation[0]["seeds"]
        chart = interval_dots(
            [
                Point(
                    r["strategy"],
                    r["probability"],
                    r["ci_low"],
                    r["ci_high"],
                    note=f"{r['fixations']}/{n}",
                )
                for r in fixation
            ],
            f"Fixation probability over {n} seeds of the process (Wilson 95% interval)",
            "share of seeds that fixated on the type",
        )
        sections.append(
            f"<section id='fixation'><h2>Fixation over seeds</h2><figure>{chart}</figure></section>"
        )
    sections.append(_setup_kv(manifest))
    return _page(
        f"pdbench report: {manifest.get('run_id', run_dir.name)}",
        f"evolution · {run_dir} · status {manifest.get('status')}",
        sections,
    )


def groups_report(run_dir: Path) -> str:
    """The report of a groups run: its setup and the groups section."""
    from pdbench.report.groups import groups_section

    manifest = read_manifest(run_dir, "groups")
    if not (run_dir / AGGREGATES_FILE).is_file():
        raise ReportError(f"{run_dir}: no {AGGREGATES_FILE}: run `pdbench aggregate {run_dir}`")
    return _page(
        f"pdbench report: {manifest.get('run_id', run_dir.name)}",
        f"groups · {run_dir} · status {manifest.get('status')}",
        [groups_section(run_dir)],
    )


def resources_report(run_dir: Path) -> str:
    """The report of a public goods (pgg) or commons run, from its resource tables."""
    from pdbench.report.resources import resource_sections

    kind = run_kind(run_dir)
    manifest = read_manifest(run_dir, kind)
    if not (run_dir / AGGREGATES_FILE).is_file():
        raise ReportError(f"{run_dir}: no {AGGREGATES_FILE}: run `pdbench aggregate {run_dir}`")
    what = "public goods" if kind == "pgg" else "commons"
    return _page(
        f"pdbench report: {manifest.get('run_id', run_dir.name)}",
        f"{what} · {run_dir} · status {manifest.get('status')}",
        resource_sections(run_dir, manifest),
    )


def report_html(run_dir: Path) -> str:
    """The report of a run directory as one HTML page (nothing written)."""
    run_dir = Path(run_dir)
    kind = run_kind(run_dir)
    if kind in ("group_tournament", "group_evolution"):
        from pdbench.report.group_science import group_evolution_report, group_tournament_report

        group = group_tournament_report if kind == "group_tournament" else group_evolution_report
        return group(run_dir)
    return {
        "experiment": experiment_report,
        "tournament": tournament_report,
        "evolution": evolution_report,
        "groups": groups_report,
        "pgg": resources_report,
        "commons": resources_report,
    }[kind](run_dir)


def build_report(run_dir: Path, output: Path | None = None) -> Path:
    """Write the report of a run directory (default RUN_DIR/report.html); returns its path."""
    run_dir = Path(run_dir)
    html = report_html(run_dir)
    path = Path(output) if output is not None else run_dir / REPORT_FILE
    write_bytes_atomic(path, html.encode("utf-8"))
    return path
