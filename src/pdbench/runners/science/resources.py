"""Runs a resource config (issue 31): a public goods game with contributions (kind `pgg`) or a
commons (kind `commons`), every condition x replicate, into a run directory.

The session is the experiments' (`RunSession`: preflight, lock, manifest and statuses, the call
broker with its cache, budget and call log); games are played by `ResourceEngine`, their rounds
kept in rounds.jsonl, and a resume keeps every whole game (see `ResourceRunSession`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pdbench.core.config import PolicyAgentConfig
from pdbench.core.pgg import PGGRules
from pdbench.core.resource_config import CommonsConfig, PGGConfig
from pdbench.core.rng import game_seed
from pdbench.runners.config.loader import LoadedConfig
from pdbench.runners.engine.resource_engine import ResourcePlan
from pdbench.runners.lifecycle.session import RunOptions


@dataclass
class ResourceSummary:
    """What a finished resource run produced."""

    run_dir: Path
    run_id: str
    kind: str
    n_games: int
    n_rounds: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)
    games_played: int = 0
    games_resumed: int = 0


def plan_resources(loaded: LoadedConfig) -> list[ResourcePlan]:
    """Every (condition, replicate) game in deterministic order, with its seed and rules."""
    cfg: PGGConfig | CommonsConfig = loaded.config
    section = cfg.section
    n_rounds = cfg.horizon.n_rounds
    assert n_rounds is not None
    plans: list[ResourcePlan] = []
    for i, cond in enumerate(section.conditions):
        specs = tuple(
            loaded.agents[(cfg.section_name, "conditions", i, "seats", j)]
            for j in range(cond.n_players)
        )
        extra: dict[str, Any] = {}
        if isinstance(cfg, CommonsConfig):
            extra = {
                "universalization": cfg.universalization_of(cond),
                "outsider_arrival": cond.outsider_arrival,
                "system_prompt": cfg.commons.system_prompt,
            }
        for rep in range(section.replicates):
            plans.append(
                ResourcePlan(
                    index=len(plans),
                    condition=cond.name,
                    replicate=rep,
                    seed=game_seed(cfg.run.seed, cond.name, rep),
                    n_rounds=n_rounds,
                    agents=specs,
                    game=cfg.kind,
                    rules=cfg.rules_of(cond),
                    talk=cfg.talk_of(cond),
                    max_chars=section.max_chars,
                    **extra,
                )
            )
    return plans


def _exact(plans: Sequence[ResourcePlan]) -> bool:
    """Whether a condition's games are identical by construction: policies only, and no draw
    (a commons that hands out an over-subscribed lake at random draws)."""
    first = plans[0]
    policies = all(isinstance(s.config, PolicyAgentConfig) for s in first.agents)
    drawn = first.game == "commons" and getattr(first.rules, "allocation", "") == "stochastic"
    return policies and not drawn


def _rules_entry(rules: Any) -> dict[str, Any]:
    """A condition's rules as the manifest writes them (a public goods game's without the
    reward stage's fields when it is off: `PGGRules.as_dict`)."""
    if isinstance(rules, PGGRules):
        return rules.as_dict()
    return dataclasses.asdict(rules)


def manifest_conditions(loaded: LoadedConfig, plans: Sequence[ResourcePlan]) -> list[dict]:
    """The manifest's conditions: name, seats, rules, talk, replicates, the games' seeds."""
    out: list[dict[str, Any]] = []
    by_condition: dict[str, list[ResourcePlan]] = {}
    for plan in plans:
        by_condition.setdefault(plan.condition, []).append(plan)
    for name, games in by_condition.items():
        first = games[0]
        out.append(
            {
                "name": name,
                "seats": list(first.names),
                "rules": _rules_entry(first.rules),
                "talk": first.talk,
                "universalization": first.universalization,
                "outsider_arrival": first.outsider_arrival,
                "replicates": len(games),
                "exact": _exact(games),
                "llm": any(p.has_llm for p in games),
                "games": [{"replicate": p.replicate, "seed": p.seed} for p in games],
            }
        )
    return out


def run_resources(loaded: LoadedConfig, options: RunOptions | None = None) -> ResourceSummary:
    """Run (or resume) every condition x replicate and write the artifacts."""
    from pdbench.core.stats import IntervalSettings
    from pdbench.runners.lifecycle.resource_session import ResourceRunSession
    from pdbench.storage.resource_aggregate import AGGREGATES_FILE, write_resource_aggregates
    from pdbench.storage.run_dir import read_manifest

    options = options or RunOptions()
    cfg = loaded.config
    plans = plan_resources(loaded)
    intervals = IntervalSettings(seed=cfg.run.seed)
    extra = {
        "kind": cfg.kind,
        "replicates": cfg.section.replicates,
        "intervals": intervals.describe(),
        "conditions": manifest_conditions(loaded, plans),
        "totals": {"games": len(plans), "rounds": sum(p.n_rounds for p in plans)},
        **({"published": loaded.published} if loaded.published is not None else {}),
    }
    rows: list[dict[str, Any]] = []

    def finish(outcomes: dict[int, Any], run_dir: Path) -> dict[str, Any]:
        manifest = read_manifest(run_dir, cfg.kind)
        tables = write_resource_aggregates(run_dir, manifest, intervals)
        rows.extend(tables[AGGREGATES_FILE])
        return {}

    session = ResourceRunSession(loaded, plans, options, extra)  # type: ignore[arg-type]
    result = session.run(finish)
    return ResourceSummary(
        result.run_dir,
        cfg.run.run_id,
        cfg.kind,
        len(plans),
        sum(p.n_rounds for p in plans),
        rows,
        result.manifest,
        result.games_played,
        result.games_kept,
    )


def _span(value: Any, low: Any, high: Any, scale: float = 1.0, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    text = f"{value * scale:.{digits}f}"
    if low is None or high is None:
        return text
    return f"{text} [{low * scale:.{digits}f}, {high * scale:.{digits}f}]"


def summary_lines(result: ResourceSummary, resumed: bool = False) -> list[str]:
    """What `pdbench run` prints after a resource run: where it went, then one line a
    condition with its headline metrics and their 95% intervals (the game as the unit)."""
    kept = f" ({result.games_resumed} kept from before)" if resumed else ""
    what = "public goods" if result.kind == "pgg" else "commons"
    unit = "rounds" if result.kind == "pgg" else "seasons (at most)"
    lines = [
        f"{what} {result.run_id}: {result.n_games} games{kept}, {result.n_rounds} {unit} "
        f"-> {result.run_dir}"
    ]
    width = max([len("condition")] + [len(str(r["condition"])) for r in result.rows])
    if result.kind == "pgg":
        lines.append(
            f"{'condition':<{width}}  {'contribution % [95%]':<22}  {'efficiency [95%]':<20}  "
            f"{'punish spent/game [95%]':<24}  games"
        )
        for r in result.rows:
            lines.append(
                f"{r['condition']:<{width}}  "
                f"{_span(r['contribution_rate'], r['contribution_rate_ci_low'], r['contribution_rate_ci_high'], 100, 1):<22}  "
                f"{_span(r['efficiency'], r['efficiency_ci_low'], r['efficiency_ci_high']):<20}  "
                f"{_span(r['punish_spent'], r['punish_spent_ci_low'], r['punish_spent_ci_high'], 1, 1):<24}  "
                f"{r['n_games']}"
            )
    else:
        lines.append(
            f"{'condition':<{width}}  {'survival % [95%]':<22}  {'months survived [95%]':<22}  "
            f"{'efficiency [95%]':<20}  games"
        )
        for r in result.rows:
            lines.append(
                f"{r['condition']:<{width}}  "
                f"{_span(r['survival'], r['survival_ci_low'], r['survival_ci_high'], 100, 1):<22}  "
                f"{_span(r['survival_months'], r['survival_months_ci_low'], r['survival_months_ci_high'], 1, 1):<22}  "
                f"{_span(r['efficiency'], r['efficiency_ci_low'], r['efficiency_ci_high']):<20}  "
                f"{r['n_games']}"
            )
    failures = sum(int(r.get("parse_failures", 0)) for r in result.rows)
    fallbacks = sum(int(r.get("fallbacks", 0)) for r in result.rows)
    llm = any(c.get("llm") for c in result.manifest.get("conditions") or ())
    if failures or fallbacks or llm:
        from pdbench.storage.integer_replies import integer_reader_line

        lines.append(
            f"replies: {failures} unreadable (re-asked), {fallbacks} answers are the stated "
            "fallback (aggregates.parquet: parse_failures, fallbacks); "
            + integer_reader_line(result.kind)
        )
    horizon = (result.manifest.get("config") or {}).get("horizon") or {}
    return lines + published_lines(
        result.manifest.get("published"), result.rows, horizon.get("n_rounds")
    )


def published_lines(
    published: dict[str, Any] | None, rows: Sequence[dict[str, Any]], n_rounds: int | None = None
) -> list[str]:
    """The published numbers (manifest `published`) beside this run's: one line an entry,
    "metric, model (source): value", then this run's value with its 95% interval in each
    condition the entry stands beside (every condition when it names none); then the
    deviations from the authors' protocol. A run of another length than the published
    numbers' (`n_rounds` against the file's `rounds`) is told they are not comparable."""
    if not published:
        return []
    lines = [
        f"published ({published['source_file']}): the authors' models; this run: its own seats, "
        "95% intervals over games"
    ]
    theirs_rounds = published.get("rounds")
    if theirs_rounds and n_rounds and n_rounds != theirs_rounds:
        lines.append(
            f"  note: this run plays {n_rounds} rounds, the published numbers are over "
            f"{theirs_rounds}: they are not comparable, shown for reference only"
        )
    for entry in published["entries"]:
        ci = entry.get("ci")
        theirs = f"{entry['value']:.4g}" + (f" [{ci[0]:.4g}, {ci[1]:.4g}]" if ci else "")
        head = f"  {entry['metric']}, {entry['model']} ({entry['source']}): {theirs}"
        if entry.get("published_only"):
            lines.append(f"{head} | this run: not measured (published only)")
            continue
        metric = entry["metric"]
        mine = [
            f"{r['condition']} "
            + _span(r.get(metric), r.get(f"{metric}_ci_low"), r.get(f"{metric}_ci_high"), 1, 3)
            for r in rows
            if entry.get("condition") in (None, r["condition"])
        ]
        lines.append(f"{head} | this run: {'; '.join(mine) or 'no such condition'}")
    deviations = published.get("deviations") or []
    if deviations:
        lines.append("deviations from the authors' protocol:")
        lines.extend(f"  - {d}" for d in deviations)
    return lines
