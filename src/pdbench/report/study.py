"""The report's study sections: what each sweep axis does (metrics at each value, with
intervals, and the share of the variance of game-level cooperation each axis explains), and the
run's numbers beside a study's published ones. The statistics come from `pdbench.core.axes`
(one value per game, from aggregates.parquet); nothing is computed from rounds here."""

from __future__ import annotations

from typing import Any

import numpy as np

from pdbench.core.axes import (
    AxisValue,
    axes_of,
    axis_values,
    pooled_mean,
    variance_shares,
)
from pdbench.core.published import BY_CONDITION, matches, published_value
from pdbench.core.rng import derive_seed
from pdbench.report.format import fmt
from pdbench.report.markup import text
from pdbench.report.svg import Point, Series, interval_dots, xy_chart

AXIS_METRICS: tuple[tuple[str, str], ...] = (
    ("agent_a_cooperation_rate", "A cooperation"),
    ("agent_b_cooperation_rate", "B cooperation"),
    ("overall_cooperation_rate", "overall cooperation"),
    ("agent_a_payoff_per_round", "A payoff per round"),
    ("agent_b_payoff_per_round", "B payoff per round"),
)
GAME_LEVEL = "agent_a_cooperation_rate"  # the game-level value whose variance is split
RUN_COLOR = "#3b6fd8"
PUBLISHED_COLORS = ("#e08a1e", "#2e9e4f", "#d64545", "#8e5bd0", "#1f9aa8", "#6b7280")


def is_share(metric: str) -> bool:
    """Whether a metric is a share in [0, 1] (shown as a percentage)."""
    return any(
        key in metric
        for key in ("rate", "fontana", "p_coop", "fraction", "first_move", "p_cooperate")
    )


def _rng(manifest: dict[str, Any], purpose: str) -> np.random.Generator:
    return np.random.default_rng(derive_seed(int(manifest.get("seed") or 0), "report", purpose))


def _swept_paths(manifest: dict[str, Any]) -> list[str]:
    paths = [p for c in manifest.get("conditions") or [] for p in (c.get("sweep") or {})]
    return list(dict.fromkeys(paths))


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def axes_section(manifest: dict[str, Any], aggregates: list[dict[str, Any]]) -> str:
    """Each axis of a sweep: the key metrics at each of its values, and the variance split."""
    games = [r for r in aggregates if r.get("scope") == "replicate"]
    paths = _swept_paths(manifest)
    axes = axes_of(games, paths) if paths else []
    if not axes:
        return ""
    metrics = [m for m, _ in AXIS_METRICS]
    labels = dict(AXIS_METRICS)
    values = axis_values(games, axes, metrics, _rng(manifest, "axes"))
    parts = [
        "<section id='axes'><h2>Sweep axes</h2><p class='note'>Each axis's values pool the "
        "games of every condition at that value (the other axes vary within); intervals: 95%, "
        "over games, as for a condition's means (hull of Student-t and bootstrap-t; Student-t "
        "for 2-4 games). Payoffs are per round, since an axis may change the horizon.</p>"
    ]
    for axis in axes:
        rows = [v for v in values if v.axis == axis]
        by_value: dict[Any, dict[str, AxisValue]] = {}
        for v in rows:
            by_value.setdefault(v.value, {})[v.metric] = v
        head = "".join(f"<th>{text(labels[m])}</th>" for m in metrics)
        body = "".join(
            f"<tr><td>{text(_shown(value))}</td><td>{cells[metrics[0]].games}</td>"
            + "".join(
                f"<td>{fmt(cells[m].mean, cells[m].ci_low, cells[m].ci_high, is_share(m))}</td>"
                for m in metrics
            )
            + "</tr>"
            for value, cells in by_value.items()
        )
        chart = interval_dots(
            [
                Point(
                    _shown(value),
                    cells[GAME_LEVEL].mean,
                    cells[GAME_LEVEL].ci_low,
                    cells[GAME_LEVEL].ci_high,
                    note=f"{cells[GAME_LEVEL].games} games",
                )
                for value, cells in by_value.items()
            ],
            f"A cooperation by {axis}",
            "cooperation rate of agent A",
        )
        parts.append(
            f"<h3>{text(axis)}</h3><figure>{chart}</figure><div class='scroll'><table><tr>"
            f"<th>{text(axis)}</th><th>games</th>{head}</tr>{body}</table></div>"
        )
    parts.append(_variance_part(manifest, games, axes))
    parts.append("</section>")
    return "".join(parts)


def _variance_part(manifest: dict[str, Any], games: list[dict[str, Any]], axes: list[str]) -> str:
    shares = variance_shares(games, axes, GAME_LEVEL, _rng(manifest, "variance"))
    if all(s.share is None for s in shares):
        return (
            "<h3>Variance explained</h3><p class='note'>Every game has the same cooperation "
            "rate of agent A: there is no variance to split.</p>"
        )
    chart = interval_dots(
        [Point(s.source, s.share, s.ci_low, s.ci_high) for s in shares],
        "Share of the variance of A's game-level cooperation",
        "share of the variance",
    )
    body = "".join(
        f"<tr><td>{text(s.source)}</td><td>{fmt(s.share, s.ci_low, s.ci_high, True)}</td></tr>"
        for s in shares
    )
    return (
        "<h3>Variance explained</h3><p class='note'>The game is the unit: each game's "
        "cooperation rate of agent A. An axis explains its main effect (the spread of the means "
        "at its values); interactions are what the conditions' means add beyond the main "
        "effects; game-to-game noise is the spread of games within a condition. Intervals "
        "resample games within each condition.</p>"
        f"<figure>{chart}</figure><table><tr><th>source</th><th>share [95%]</th></tr>{body}"
        "</table>"
    )


def published_section(manifest: dict[str, Any], aggregates: list[dict[str, Any]]) -> str:
    """The run's numbers beside the study's published ones (manifest `published`)."""
    published = manifest.get("published")
    if not published:
        return ""
    games = [r for r in aggregates if r.get("scope") == "replicate"]
    conditions = {r["condition"]: r for r in aggregates if r.get("scope") == "condition"}
    coordinates = {c["name"]: c.get("sweep") or {} for c in manifest.get("conditions") or []}
    parts = [
        "<section id='published'><h2>Published numbers</h2>"
        f"<p><b>{text(published['study'])}</b>. <span class='note'>Source: "
        f"{text(published['source'])}.</span></p>"
    ]
    if published.get("note"):
        parts.append(f"<p class='note'>{text(published['note'])}</p>")
    parts.append(
        f"<p class='note'>This run: {text(_models(conditions))}. The run's numbers are means "
        "over games with 95% intervals; a published number matches only when the same model "
        "plays the same design.</p>"
    )
    models = [m for c in published["comparisons"] for m in c["published"]]
    colors = {
        m: PUBLISHED_COLORS[k % len(PUBLISHED_COLORS)] for k, m in enumerate(dict.fromkeys(models))
    }  # one colour per published model across every chart
    for i, comparison in enumerate(published["comparisons"]):
        parts.append(_comparison(i, comparison, manifest, games, conditions, coordinates, colors))
    deviations = published.get("deviations") or []
    if deviations:
        items = "".join(f"<li>{text(line)}</li>" for line in deviations)
        parts.append(
            "<h3>Deviations from the authors' protocol</h3><p class='note'>What this recipe "
            f"still does differently from the authors' code:</p><ul class='note'>{items}</ul>"
        )
    left_out = published.get("not_reproduced") or []
    if left_out:
        items = "".join(f"<li>{text(line)}</li>" for line in left_out)
        parts.append(f"<h3>Not reproduced by this recipe</h3><ul class='note'>{items}</ul>")
    parts.append("</section>")
    return "".join(parts)


def _models(conditions: dict[str, dict[str, Any]]) -> str:
    names = {str(r.get("agent_a_name")) for r in conditions.values()}
    return ", ".join(sorted(names)) or "-"


def _comparison(
    index: int,
    comparison: dict[str, Any],
    manifest: dict[str, Any],
    games: list[dict[str, Any]],
    conditions: dict[str, dict[str, Any]],
    coordinates: dict[str, dict[str, Any]],
    colors: dict[str, str],
) -> str:
    metric, by, points = comparison["metric"], comparison["by"], comparison["points"]
    share = is_share(metric)
    rng = _rng(manifest, f"published {index}")
    run: list[tuple[int, float | None, float | None, float | None]] = []
    for point in points:
        names = [
            n
            for n in conditions
            if matches(point, by, n, coordinates.get(n, {}), comparison.get("where"))
        ]
        if len(names) == 1:
            row = conditions[names[0]]
            n = int(row.get("n_replicates") or 0)
            run.append(
                (n, row.get(metric), row.get(f"{metric}_ci_low"), row.get(f"{metric}_ci_high"))
            )
        else:
            chosen = [g for g in games if g["condition"] in names]
            run.append(pooled_mean(chosen, metric, rng))
    models = list(comparison["published"])
    head = "".join(f"<th>{text(m)} (published)</th>" for m in models)
    body = []
    for j, point in enumerate(points):
        n, value, low, high = run[j]
        cells = []
        for model in models:
            ref = published_value(comparison["published"][model][j])
            cells.append(
                "<td>-</td>"
                if ref is None
                else f"<td>{fmt(ref.value, *(ref.ci or (None, None)), share)}</td>"
            )
        body.append(
            f"<tr><td>{text(_shown(point))}</td><td>{n}</td>"
            f"<td><b>{fmt(value, low, high, share)}</b></td>{''.join(cells)}</tr>"
        )
    chart = ""
    numeric = by != BY_CONDITION and all(isinstance(p, int | float) for p in points)
    if numeric and len(points) > 1:
        series = [
            Series(
                "this run",
                [r[1] for r in run],
                RUN_COLOR,
                [r[2] for r in run],
                [r[3] for r in run],
            )
        ]
        for model in models:
            refs = [published_value(e) for e in comparison["published"][model]]
            series.append(
                Series(
                    model,
                    [r.value if r else None for r in refs],
                    colors[model],
                    [r.ci[0] if r and r.ci else None for r in refs],
                    [r.ci[1] if r and r.ci else None for r in refs],
                    dashed=True,
                )
            )
        chart = (
            "<figure>"
            + xy_chart([float(p) for p in points], series, comparison["title"], by)
            + "</figure>"
        )
    else:
        dots = [
            Point(f"{_shown(p)}: this run", r[1], r[2], r[3], RUN_COLOR)
            for p, r in zip(points, run, strict=True)
        ]
        for model in models:
            for p, entry in zip(points, comparison["published"][model], strict=True):
                ref = published_value(entry)
                if ref is not None:
                    dots.append(
                        Point(
                            f"{_shown(p)}: {model}",
                            ref.value,
                            *(ref.ci or (None, None)),
                            colors[model],
                        )
                    )
        values = [d.value for d in dots if d.value is not None] + [
            d.high for d in dots if d.high is not None
        ]
        top = 1.0 if share else max([1.0, *values]) * 1.05
        chart = (
            "<figure>"
            + interval_dots(dots, comparison["title"], metric, 0.0, top, share)
            + "</figure>"
        )
    where = comparison.get("where") or {}
    only = "".join(f", {text(k)} = {text(_shown(v))}" for k, v in where.items())
    return (
        f"<h3>{text(comparison['title'])}</h3><p class='note'>metric <code>{text(metric)}"
        f"</code> at {text(by)}{only}</p>{chart}<div class='scroll'><table><tr><th>{text(by)}</th>"
        f"<th>games</th><th>this run [95%]</th>{head}</tr>{''.join(body)}</table></div>"
    )
