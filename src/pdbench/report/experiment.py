"""The sections of an experiment's report, from its artifacts (aggregates.parquet,
strategy_fit.parquet, comparisons.parquet and the manifest); numbers come from those files, as
pdbench computed them, never recomputed here."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from pdbench.core.metrics import (
    AGGREGATE_COLUMNS,
    CLIPPED_COLUMN,
    PER_ROUND_OF,
    horizons_differ,
    interval_kind,
)
from pdbench.core.rounds_display import NUMBERING_NOTE, metric_label, shown_value
from pdbench.core.stats import METHODS
from pdbench.report.format import fmt
from pdbench.report.markup import text
from pdbench.report.study import axes_section, published_section
from pdbench.report.svg import Point, band_chart, interval_dots
from pdbench.report.talk import talk_section
from pdbench.storage.aggregate import series_cell

AGENT_COLORS = {"a": "#3b6fd8", "b": "#e08a1e"}
KEY_METRICS: tuple[tuple[str, str, bool], ...] = (
    # (column, label, percent)
    ("agent_a_cooperation_rate", "A cooperation", True),
    ("agent_b_cooperation_rate", "B cooperation", True),
    ("overall_cooperation_rate", "overall cooperation", True),
    ("agent_a_total_payoff", "A payoff per game", False),
    ("agent_b_total_payoff", "B payoff per game", False),
    ("agent_a_payoff_per_round", "A payoff per round", False),
    ("agent_b_payoff_per_round", "B payoff per round", False),
    ("collapsed_fraction", "games that collapsed", True),
    ("time_to_collapse", f"{metric_label('time_to_collapse')} (collapsed games)", False),
    ("agent_a_retaliation_rate", "A retaliation", True),
    ("agent_b_retaliation_rate", "B retaliation", True),
)
FALLBACK_METRICS: tuple[tuple[str, str, bool], ...] = (
    ("fallback_rate", "fallback moves", True),
    ("decided_cooperation_rate", "cooperation, fallbacks left out", True),
    ("mean_p_cooperate", "mean P(C) from log-probabilities", True),
)
METRIC_COLUMNS = frozenset(AGGREGATE_COLUMNS) | {
    f"agent_{side}_{name}"
    for side in "ab"
    for name in ("llm_calls", "input_tokens", "output_tokens", "cost_usd")
}  # not the sweep's coordinate columns
FONTANA = ("nice", "forgiving", "retaliatory", "troublemaking", "emulative")
STATES = (("cc", "after CC"), ("cd", "after CD"), ("dc", "after DC"), ("dd", "after DD"))


def key_metrics(conditions: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    """The metrics of the main table: payoff totals only when every condition has the same
    horizon (else totals are not comparable and payoffs per round stand in for them)."""
    unequal = horizons_differ({str(r["condition"]): r.get("n_rounds") for r in conditions})
    return [m for m in KEY_METRICS if not (unequal and m[0] in PER_ROUND_OF)]


def interval_methods_note(manifest: dict[str, Any]) -> str:
    """Which interval method each kind of metric gets, as the manifest records it."""
    intervals = manifest.get("intervals") or {}
    methods = intervals.get("methods")
    if not isinstance(methods, dict):
        return (
            f"{intervals.get('method', 'not recorded')}; {intervals.get('small_sample', '')}"
            " (recorded by an older pdbench)"
        )
    return "; ".join(f"{kind}: {methods.get(kind, text)}" for kind, text in METHODS.items())


def clipped_note(conditions: list[dict[str, Any]]) -> str:
    """Where intervals were clipped to their metric's feasible range, by condition."""
    parts = [
        f"{text(r['condition'])}: {text(str(r[CLIPPED_COLUMN]).replace(',', ', '))}"
        for r in conditions
        if r.get(CLIPPED_COLUMN)
    ]
    if not parts:
        return "<p class='note'>No interval reached beyond its metric's feasible range.</p>"
    return (
        "<p class='note'>Clipped to the metric's feasible range (payoffs between the rounds "
        "times the smallest and largest payoff, rates in [0, 1]): " + "; ".join(parts) + ".</p>"
    )


def cell(row: dict[str, Any], column: str, percent: bool) -> str:
    """A metric's value and interval; a round-valued metric as rounds numbered from 1."""
    low, high = row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high")
    shown = partial(shown_value, column)
    return fmt(shown(row.get(column)), shown(low), shown(high), percent)


def _agents(row: dict[str, Any]) -> str:
    return f"{text(row['agent_a_name'])} <span class='vs'>vs</span> {text(row['agent_b_name'])}"


def setup_section(manifest: dict[str, Any], conditions: list[dict[str, Any]]) -> str:
    config = manifest.get("config") or {}
    horizon = config.get("horizon") or {}
    game = config.get("game") or {}
    intervals = manifest.get("intervals") or {}
    items = [
        ("run id", manifest.get("run_id")),
        ("status", manifest.get("status")),
        ("seed", manifest.get("seed")),
        ("replicates (games per condition)", manifest.get("replicates")),
        ("horizon", ", ".join(f"{k} {v}" for k, v in horizon.items() if v is not None)),
        ("execution noise", game.get("noise")),
        ("payoffs [A, B]", json.dumps(game.get("payoff_matrix"))),
        (
            "started / finished (UTC)",
            f"{manifest.get('started_at_utc')} / {manifest.get('finished_at_utc')}",
        ),
        ("pdbench", manifest.get("pdbench_version")),
        (
            "intervals",
            f"level {intervals.get('level', '-')}, game as the unit, "
            f"{intervals.get('resamples', '-')} resamples, seed {intervals.get('seed', '-')}; "
            f"by kind of metric: {interval_methods_note(manifest)}",
        ),
    ]
    rows = "".join(f"<tr><th>{text(k)}</th><td>{text(v)}</td></tr>" for k, v in items)
    conds = "".join(
        f"<tr><td>{text(r['condition'])}</td><td>{_agents(r)}</td>"
        f"<td>{r.get('n_replicates')}</td><td>{fmt(r.get('n_rounds'))}</td></tr>"
        for r in conditions
    )
    return (
        "<section id='setup'><h2>Setup</h2><table class='kv'>" + rows + "</table>"
        "<h3>Conditions</h3><table><tr><th>condition</th><th>agents (A vs B)</th><th>games</th>"
        "<th>rounds per game</th></tr>" + conds + "</table></section>"
    )


def metrics_section(conditions: list[dict[str, Any]]) -> str:
    points = []
    for r in conditions:
        for side in ("a", "b"):
            col = f"agent_{side}_cooperation_rate"
            points.append(
                Point(
                    f"{r['condition']} · {side.upper()}",
                    r.get(col),
                    r.get(f"{col}_ci_low"),
                    r.get(f"{col}_ci_high"),
                    AGENT_COLORS[side],
                    f"n = {r.get('n_replicates')} games",
                )
            )
    chart = interval_dots(
        points,
        "Cooperation rate per condition and agent (95% interval over games)",
        "share of rounds the agent played C",
        legend=(("agent A", AGENT_COLORS["a"]), ("agent B", AGENT_COLORS["b"])),
    )
    shown = key_metrics(conditions)
    head = "".join(f"<th>{text(label)}</th>" for _, label, _ in shown)
    body = "".join(
        f"<tr><td>{text(r['condition'])}</td><td>{r.get('n_replicates')}</td>"
        + "".join(f"<td>{cell(r, c, pct)}</td>" for c, _, pct in shown)
        + "</tr>"
        for r in conditions
    )
    every = _every_metric_table(conditions)
    return (
        "<section id='metrics'><h2>Metrics with 95% intervals</h2>"
        "<p class='note'>Each value is a mean over the condition's games; the interval in "
        "brackets treats the game as the unit (never pooled moves), by the method of the "
        "metric's kind (share of games, ratio pooled over games, or mean of per-game values: "
        "see Setup and the kind column of the full table). Payoff totals of conditions with "
        "different horizons are not comparable: payoffs per round are shown instead. "
        f"{NUMBERING_NOTE}</p>"
        + clipped_note(conditions)
        + f"<figure>{chart}</figure><div class='scroll'><table><tr><th>condition</th><th>games</th>"
        f"{head}</tr>{body}</table></div>{every}</section>"
    )


def _every_metric_table(conditions: list[dict[str, Any]]) -> str:
    skip = {"run_id", "condition", "scope", "replicate", "agent_a_name", "agent_b_name"}
    columns = [
        c
        for c in conditions[0]
        if c in METRIC_COLUMNS
        and c not in skip
        and not c.endswith(("_ci_low", "_ci_high"))
        and c != "cooperation_rate_over_time"
    ]
    head = "".join(f"<th>{text(r['condition'])}</th>" for r in conditions)
    body = "".join(
        f"<tr><th>{text(metric_label(c))}</th><td>{text(interval_kind(c))}</td>"
        + "".join(f"<td>{cell(r, c, False)}</td>" for r in conditions)
        + "</tr>"
        for c in columns
    )
    return (
        "<details><summary>Every metric of every condition</summary><div class='scroll'>"
        f"<table><tr><th>metric</th><th>kind</th>{head}</tr>{body}</table></div></details>"
    )


def over_time_section(conditions: list[dict[str, Any]]) -> str:
    charts = []
    for r in conditions:
        values = series_cell(r.get("cooperation_rate_over_time"))
        lows = series_cell(r.get("cooperation_rate_over_time_ci_low"))
        highs = series_cell(r.get("cooperation_rate_over_time_ci_high"))
        charts.append(
            "<figure>"
            + band_chart(
                values,
                lows or None,
                highs or None,
                f"{r['condition']}: cooperation of both agents per round, 95% band over games",
            )
            + "</figure>"
        )
    return "<section id='over-time'><h2>Cooperation over time</h2>" + "".join(charts) + "</section>"


def memory_one_section(conditions: list[dict[str, Any]]) -> str:
    parts = []
    for r in conditions:
        for side in ("a", "b"):
            prefix = f"agent_{side}"
            points = [
                Point(
                    label,
                    r.get(f"{prefix}_p_coop_after_{s}"),
                    r.get(f"{prefix}_p_coop_after_{s}_ci_low"),
                    r.get(f"{prefix}_p_coop_after_{s}_ci_high"),
                    AGENT_COLORS[side],
                    f"{r.get(f'{prefix}_n_{s}') or 0} visits",
                )
                for s, label in STATES
            ]
            first = r.get(f"{prefix}_first_move_cooperation")
            points.insert(
                0,
                Point(
                    "first move",
                    first,
                    r.get(f"{prefix}_first_move_cooperation_ci_low"),
                    r.get(f"{prefix}_first_move_cooperation_ci_high"),
                    AGENT_COLORS[side],
                ),
            )
            name = r[f"agent_{side}_name"]
            parts.append(
                "<figure>"
                + interval_dots(
                    points,
                    f"{r['condition']} · agent {side.upper()} ({name}): P(C) after each state",
                    "probability of C (state = own previous move, then the opponent's)",
                )
                + "</figure>"
            )
    fontana = "".join(
        f"<tr><td>{text(r['condition'])}</td><td>{side.upper()}</td>"
        + "".join(f"<td>{cell(r, f'agent_{side}_fontana_{d}', False)}</td>" for d in FONTANA)
        + "</tr>"
        for r in conditions
        for side in ("a", "b")
    )
    head = "".join(f"<th>{d}</th>" for d in FONTANA)
    return (
        "<section id='memory-one'><h2>Memory-one profile</h2>"
        + "".join(parts)
        + "<h3>Behavioural dimensions (Fontana et al. 2024)</h3><table><tr><th>condition</th>"
        f"<th>agent</th>{head}</tr>{fontana}</table></section>"
    )


def strategy_section(fits: list[dict[str, Any]] | None, top: int = 3) -> str:
    from pdbench.core.strategy_card import card_ties, strategy_label
    from pdbench.core.strategy_gof import card_verdict  # here: keeps this change to the card

    if fits is None:
        return (
            "<section id='strategies'><h2>Strategy card</h2><p class='note'>No "
            "strategy_fit.parquet: run <code>pdbench profile RUN_DIR</code>.</p></section>"
        )
    cards = []
    keys = list(dict.fromkeys((f["condition"], f["agent"]) for f in fits))
    for condition, agent in keys:
        group = [f for f in fits if f["condition"] == condition and f["agent"] == agent]
        rows = sorted(group, key=lambda f: f["rank"])[:top]
        verdict = card_verdict(group)  # not None: no share, the words instead
        lines = "".join(
            f"<tr><td>{f['rank']}</td>"
            f"<td><b>{text(strategy_label(f['strategy'], f['parameters']))}</b></td>"
            f"<td>{'—' if verdict else fmt(f['share'], f['share_ci_low'], f['share_ci_high'], True)}</td>"
            f"<td>{'-' if f['tremble'] is None else f'{f["tremble"]:.3f}'}</td>"
            f"<td>{text(_params(f['parameters']))}</td></tr>"
            for f in rows
        )
        name = rows[0]["agent_name"] if rows else ""
        warning = f"<p class='note'><b>⚠ {text(verdict)}</b></p>" if verdict else ""
        ties = card_ties(group)
        if ties:
            warning = f"<p class='note'><b>{text(ties)}</b></p>" + warning
        cards.append(
            f"<div class='card'><h4>{text(condition)} · agent {text(agent.upper())} "
            f"<span class='muted'>{text(name)}</span></h4>{warning}<table><tr><th>rank</th>"
            "<th>strategy</th><th>mixture share [95%]</th><th>tremble</th><th>fitted</th></tr>"
            f"{lines}</table></div>"
        )
    return (
        "<section id='strategies'><h2>Strategy card</h2><p class='note'>Rank by BIC of each "
        "strategy fitted alone (tremble and free probabilities by maximum likelihood); shares "
        "of the Dal Bo-Frechette mixture with bootstrap intervals over games. Shares are "
        "conditional on the library: they say which listed strategy the games are closest to, "
        "not that the agent plays one. Each card's best strategy is tested against memory-"
        "three (a free P(C) for every history of the last three rounds; parametric bootstrap "
        "of the likelihood ratio, 5% level); a card that fails says so and shows no share. "
        "Strategies with the same likelihood and number of parameters are named together as "
        "indistinguishable on the games played; a player whose moves look like coin flips is "
        "named RANDOM(p), p its share of cooperation.</p>" + "".join(cards) + "</section>"
    )


def _params(text: str | None) -> str:
    try:
        data = json.loads(text or "{}")
    except ValueError:
        return ""
    return ", ".join(f"{k} {v:.2f}" for k, v in data.items())


def fallback_section(conditions: list[dict[str, Any]]) -> str:
    head = "".join(
        f"<th>{side.upper()} {text(label)}</th>"
        for side in "ab"
        for _, label, _ in FALLBACK_METRICS
    )
    body = "".join(
        f"<tr><td>{text(r['condition'])}</td>"
        + "".join(
            f"<td>{cell(r, f'agent_{side}_{c}', pct)}</td>"
            for side in "ab"
            for c, _, pct in FALLBACK_METRICS
        )
        + "</tr>"
        for r in conditions
    )
    return (
        "<section id='fallbacks'><h2>Fallback moves (LLM agents)</h2><p class='note'>A fallback "
        "is the move played after invalid replies; it is not the agent's choice.</p>"
        f"<div class='scroll'><table><tr><th>condition</th>{head}</tr>{body}</table></div></section>"
    )


def comparisons_section(rows: list[dict[str, Any]] | None) -> str:
    if not rows:
        return (
            "<section id='comparisons'><h2>Comparisons</h2><p class='note'>No comparisons "
            "(one condition, or run <code>pdbench compare RUN_DIR</code>).</p></section>"
        )
    head = rows[0]
    shown = partial(shown_value, str(head["metric"]))  # a difference of rounds is not shifted
    body = "".join(
        f"<tr><td>{text(r['condition'])}</td><td>{r['n_condition']}</td>"
        f"<td>{fmt(shown(r['condition_mean']))}</td>"
        f"<td>{fmt(r['difference'], r['ci_low'], r['ci_high'])}</td>"
        f"<td>{fmt(r['p_value'])}</td><td>{fmt(r['p_holm'])}</td></tr>"
        for r in rows
    )
    return (
        f"<section id='comparisons'><h2>Comparisons: {text(metric_label(head['metric']))}</h2>"
        f"<p class='note'>Each condition minus the baseline {text(head['baseline'])!r} "
        f"(mean {fmt(shown(head['baseline_mean']))}, {head['n_baseline']} games); bootstrap interval "
        "over games, permutation p-value, Holm-adjusted over the contrasts.</p><table><tr>"
        "<th>condition</th><th>games</th><th>mean</th><th>difference [95%]</th><th>p</th>"
        f"<th>p (Holm)</th></tr>{body}</table></section>"
    )


def experiment_sections(
    manifest: dict[str, Any],
    aggregates: list[dict[str, Any]],
    fits: list[dict[str, Any]] | None,
    comparisons: list[dict[str, Any]] | None,
) -> list[str]:
    """The report's sections in reading order."""
    conditions = [r for r in aggregates if r.get("scope") == "condition"]
    sections = [
        setup_section(manifest, conditions),
        published_section(manifest, aggregates),
        metrics_section(conditions),
        axes_section(manifest, aggregates),
        over_time_section(conditions),
        memory_one_section(conditions),
        strategy_section(fits),
        talk_section(conditions),
        fallback_section(conditions),
        comparisons_section(comparisons),
    ]
    return [s for s in sections if s]
