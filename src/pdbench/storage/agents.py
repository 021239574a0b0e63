"""Every agent seen in saved experiment runs, and its appearances compared across runs.

An appearance is one agent in one condition of one run, on one side. Its profile is read from
what the run's commands wrote, never computed again: the condition row of aggregates.parquet
(cooperation, payoffs, memory-one probabilities, Fontana's dimensions, each with its interval
over games) and strategy_fit.parquet (`pdbench profile`: the strategy card and whether it is
adequate). The per-game values of the headline metrics come from the replicate rows of
aggregates.parquet, for the comparisons (`core/agents.py`). `pdbench compare --across-runs` and
the app's Agents tab both call `compare_appearances` and `across_runs` here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pdbench.core.agents import (
    HEADLINE_METRICS,
    AgentIdentity,
    MetricContrast,
    agent_identity,
    appearance_contrasts,
    condition_design,
    design_differences,
)
from pdbench.core.behaviour import FONTANA_DIMENSIONS, STATES
from pdbench.core.metrics import MetricDesign
from pdbench.core.strategy_card import row_ties
from pdbench.core.strategy_gof import card_verdict
from pdbench.errors import PdbenchError, RunError
from pdbench.storage.intervals import metric_designs
from pdbench.storage.parquet import numeric_columns, read_checked_rows
from pdbench.storage.run_dir import read_manifest
from pdbench.storage.schema import AGGREGATES_FILE, MANIFEST_FILES, aggregates_arrow_schema
from pdbench.storage.strategy_fit import read_strategy_fit

# The profile of an agent (per side: `agent_<side>_<metric>`), with labels, in the order shown.
PROFILE_METRICS: tuple[tuple[str, str], ...] = (
    ("cooperation_rate", "cooperation"),
    ("payoff_per_round", "payoff per round"),
    ("total_payoff", "total payoff"),
    ("retaliation_rate", "retaliation"),
    ("forgiveness_rate", "forgiveness"),
    ("first_move_cooperation", "first move C"),
    *((f"p_coop_after_{s}", f"P(C | {s.upper()})") for s in STATES),
    *((f"fontana_{d}", f"Fontana {d}") for d in FONTANA_DIMENSIONS),
)
SIDES = ("a", "b")


@dataclass(frozen=True, slots=True)
class ProfileValue:
    """One metric of an appearance: the condition mean and its 95% interval over games."""

    metric: str
    label: str
    mean: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True, slots=True)
class StrategyCard:
    """The strategy card of an appearance (`pdbench profile`): the best-ranked strategy, its
    mixture share and interval when the card is adequate, else the verdict in words."""

    strategy: str
    share: float | None
    share_low: float | None
    share_high: float | None
    adequate: bool | None
    verdict: str | None
    ties: tuple[str, ...] = ()  # strategies that explain the moves equally well (as labels)


@dataclass(frozen=True)
class Appearance:
    """One agent in one condition of one run, on one side."""

    run_dir: str
    run_label: str
    run_key: str  # run_id and start time: the same wherever the directory is
    condition: str
    side: str
    name: str  # the agent's name in the aggregates
    identity: AgentIdentity
    design: dict[str, str]
    metric_design: MetricDesign | None
    n_games: int
    profile: tuple[ProfileValue, ...]
    games: dict[str, list[float | None]] = field(repr=False)
    card: StrategyCard | None
    card_note: str | None  # why there is no card

    @property
    def key(self) -> str:
        """Unique among appearances: run, condition, side."""
        return f"{self.run_key}/{self.condition}/{self.side}"

    def design_equal(self, other: Appearance) -> bool:
        """Whether `other` faced the same opponent design."""
        return not design_differences(self.design, other.design)

    @property
    def where(self) -> str:
        """'run · condition · A'."""
        return f"{self.run_label} · {self.condition} · {self.side.upper()}"


@dataclass(frozen=True, slots=True)
class Comparison:
    """An appearance against the first one of its agent: the contrasts when the designs are
    equal, else the differences of design (and no contrast)."""

    first: Appearance
    other: Appearance
    differences: tuple[str, ...]
    contrasts: tuple[MetricContrast, ...]

    @property
    def same_design(self) -> bool:
        """Whether the two faced the same opponent design."""
        return not self.differences


def _aggregate_rows(run_dir: Path) -> list[dict[str, Any]]:
    remedy = f"run `pdbench aggregate {run_dir}` first"
    rows = read_checked_rows(
        run_dir / AGGREGATES_FILE, numeric_columns(aggregates_arrow_schema()), remedy
    )
    if rows is None:
        raise RunError(f"{run_dir}: no {AGGREGATES_FILE}; {remedy}")
    if rows and "agent_a_fontana_nice" not in rows[0]:
        raise RunError(f"{run_dir / AGGREGATES_FILE}: written by an older pdbench; {remedy}")
    return rows


def _card(fits: list[dict[str, Any]] | None, condition: str, side: str) -> StrategyCard | None:
    rows = [r for r in fits or [] if r.get("condition") == condition and r.get("agent") == side]
    if not rows:
        return None
    best = min(rows, key=lambda r: r["rank"])
    verdict = card_verdict(rows)
    return StrategyCard(
        str(best["strategy"]),
        None if verdict else best.get("share"),
        None if verdict else best.get("share_ci_low"),
        None if verdict else best.get("share_ci_high"),
        best.get("adequate"),
        verdict,
        tuple(row_ties(rows, best)),
    )


def run_appearances(run_dir: str | Path, label: str | None = None) -> list[Appearance]:
    """Every appearance of an experiment run (conditions in config order, A then B); RunError
    when the directory is not a finished-enough experiment with aggregates."""
    path = Path(run_dir)
    manifest = read_manifest(path, "experiment")
    rows = _aggregate_rows(path)
    config = manifest.get("config") or {}
    configs = {
        c["name"]: c
        for c in ((config.get("experiment") or {}).get("conditions") or [])
        if isinstance(c, dict) and "name" in c
    }
    conditions = {c["name"]: c for c in manifest.get("conditions") or [] if "name" in c}
    matrix = (config.get("game") or {}).get("payoff_matrix")
    prompt_files = manifest.get("prompt_files") or {}
    designs = metric_designs(manifest)
    try:
        fits = read_strategy_fit(path)
        card_note = None if fits is not None else f"no strategy card: run `pdbench profile {path}`"
    except Exception as exc:  # a damaged strategy_fit.parquet: the rest still shows
        fits, card_note = None, f"strategy_fit.parquet unreadable ({type(exc).__name__})"
    run_id = str(manifest.get("run_id") or path.name)
    key = run_key(manifest, path)
    summary = {str(r["condition"]): r for r in rows if r.get("scope") == "condition"}
    games: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("scope") == "replicate":
            games.setdefault(str(row["condition"]), []).append(row)
    order = [c for c in conditions if c in summary] + sorted(set(summary) - set(conditions))
    out = []
    for condition in order:
        cfg = configs.get(condition) or {}
        cond = conditions.get(condition) or {}
        row = summary[condition]
        reps = sorted(games.get(condition, []), key=lambda r: int(r.get("replicate") or 0))
        names = (str(row.get("agent_a_name") or ""), str(row.get("agent_b_name") or ""))
        identities = tuple(
            agent_identity(cfg.get(f"agent_{s}"), n, prompt_files)
            for s, n in zip(SIDES, names, strict=True)
        )
        talk = cfg.get("communication") or config.get("communication")
        for i, side in enumerate(SIDES):
            prefix = f"agent_{side}_"
            out.append(
                Appearance(
                    run_dir=str(path.resolve()),
                    run_label=label or run_id,
                    run_key=key,
                    condition=condition,
                    side=side,
                    name=names[i],
                    identity=identities[i],
                    design=condition_design(
                        side,
                        identities[1 - i],
                        names[1 - i],
                        matrix,
                        cond.get("horizon"),
                        cond.get("noise"),
                        talk,
                    ),
                    metric_design=designs.get(condition),
                    n_games=len(reps),
                    profile=tuple(
                        ProfileValue(
                            m,
                            lab,
                            row.get(prefix + m),
                            row.get(f"{prefix}{m}_ci_low"),
                            row.get(f"{prefix}{m}_ci_high"),
                        )
                        for m, lab in PROFILE_METRICS
                    ),
                    games={m: [r.get(prefix + m) for r in reps] for m, _ in HEADLINE_METRICS},
                    card=_card(fits, condition, side),
                    card_note=card_note,
                )
            )
    return out


def run_key(manifest: Mapping[str, Any], run_dir: Path) -> str:
    """Which run a directory holds: its run_id and start time, the same wherever the directory
    is (a copy of a run holds the same run); the directory itself when the manifest has no
    start time."""
    run_id = str(manifest.get("run_id") or run_dir.name)
    return f"{run_id}@{manifest.get('started_at_utc') or run_dir.resolve()}"


def _manifest_or_none(run_dir: Path) -> dict[str, Any] | None:
    """The experiment manifest of `run_dir`, None when it cannot be read (`scan_runs` says why)."""
    try:
        return read_manifest(run_dir, "experiment")
    except (PdbenchError, OSError):
        return None


def _time_text(stamp: str) -> str:
    """An ISO time as people read it ('2026-11-28 18:16:09 UTC'); as written when it is not one."""
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if moment.tzinfo else stamp


def _copies(run_dirs: Sequence[Path]) -> dict[int, tuple[Path, str]]:
    """By position: each directory holding the same run (`run_key`) as an earlier one, with
    that earlier directory and 'run_id X, started T'."""
    seen: dict[str, Path] = {}
    out = {}
    for i, d in enumerate(run_dirs):
        manifest = _manifest_or_none(d)
        if manifest is None or not manifest.get("started_at_utc"):
            continue
        key = run_key(manifest, d)
        if key in seen:
            started = _time_text(str(manifest["started_at_utc"]))
            out[i] = (seen[key], f"run_id {manifest.get('run_id') or d.name}, started {started}")
        else:
            seen[key] = d
    return out


def same_runs(run_dirs: Sequence[Path]) -> list[tuple[Path, Path, str]]:
    """Each directory holding the same run (`run_key`) as an earlier one, e.g. a copy made with
    `cp -r`: (the earlier directory, this one, 'run_id X, started T')."""
    return [(first, run_dirs[i], what) for i, (first, what) in _copies(run_dirs).items()]


def _labels(run_dirs: Sequence[Path]) -> list[str]:
    """Each run's label: its run_id, with the directory's name when two runs share it."""
    ids = []
    for d in run_dirs:
        manifest = _manifest_or_none(d)
        ids.append(str((manifest or {}).get("run_id") or d.name))
    return [
        f"{i} ({d.name})" if ids.count(i) > 1 else i for i, d in zip(ids, run_dirs, strict=True)
    ]


def _problem(run_dir: Path, exc: Exception) -> str:
    """One line naming the run that cannot be read and why."""
    if isinstance(exc, PdbenchError):
        lines = exc.lines()
        return lines[0] if lines and lines[0].strip() else f"{run_dir}: {type(exc).__name__}"
    if isinstance(exc, OSError):
        return f"{exc.filename or run_dir}: {exc.strerror or type(exc).__name__}"
    text = f"{run_dir / MANIFEST_FILES['experiment']}: not a manifest pdbench wrote, restore it"
    return f"{text} ({type(exc).__name__}: {exc})".splitlines()[0]


def scan_runs(run_dirs: Iterable[str | Path]) -> tuple[list[Appearance], list[str]]:
    """The appearances of every run (given order) and, one line each, the runs left out: those
    that could not be read and why, and copies of a run given earlier (counted once)."""
    dirs = [Path(d) for d in run_dirs]
    copies = _copies(dirs)
    kept = [i for i in range(len(dirs)) if i not in copies]
    labels = dict(zip(kept, _labels([dirs[i] for i in kept]), strict=True))
    found: list[Appearance] = []
    problems: list[str] = []
    for i, d in enumerate(dirs):
        if i in copies:
            first, what = copies[i]
            problems.append(f"{d}: the same run as {first} ({what}); counted once")
            continue
        try:
            found.extend(run_appearances(d, labels[i]))
        # One damaged run costs its line, not the others. AttributeError and the like: a
        # hand-edited manifest whose config has the wrong shapes (only its top level is checked).
        except (PdbenchError, OSError, AttributeError, KeyError, TypeError, ValueError) as exc:
            problems.append(_problem(d, exc))
    return found, problems


def compare_appearances(first: Appearance, other: Appearance) -> Comparison:
    """`other` against `first`: the headline metrics' differences (other minus first) with
    their intervals when both faced the same design, else the fields that differ."""
    differences = tuple(design_differences(first.design, other.design))
    if differences:
        return Comparison(first, other, differences, ())
    contrasts = appearance_contrasts(
        first.key, other.key, first.games, other.games, (first.metric_design, other.metric_design)
    )
    return Comparison(first, other, (), tuple(contrasts))


@dataclass(frozen=True, slots=True)
class AgentGroup:
    """One agent's appearances in the runs compared, and each later run's appearances against
    the first run's that faced the same design (or the closest one, with what differs)."""

    identity: AgentIdentity
    appearances: tuple[Appearance, ...]
    comparisons: tuple[Comparison, ...]


def _closest(first: Sequence[Appearance], other: Appearance) -> Appearance:
    """The first-run appearance with the same design, else the one differing in fewest fields
    (then the same condition name, then the first)."""
    return min(
        first,
        key=lambda a: (
            len(design_differences(a.design, other.design)),
            a.condition != other.condition,
            a.side != other.side,
        ),
    )


def pairs(
    appearances: Sequence[Appearance], agent: str | None = None
) -> list[tuple[AgentIdentity, list[Appearance], list[tuple[Appearance, Appearance]]]]:
    """The agents that appear in two or more runs (those whose label contains `agent`, any
    case, when given), in order of first appearance: each with its appearances and, for each
    appearance in a later run, the first run's appearance it is compared with (`_closest`)."""
    by_agent: dict[str, list[Appearance]] = {}
    for a in appearances:
        if agent is None or agent.lower() in a.identity.label.lower():
            by_agent.setdefault(a.identity.key, []).append(a)
    out = []
    for items in by_agent.values():
        runs = list(dict.fromkeys(a.run_key for a in items))
        if len(runs) < 2:
            continue
        first = [a for a in items if a.run_key == runs[0]]
        matched = [(_closest(first, a), a) for a in items if a.run_key != runs[0]]
        out.append((items[0].identity, items, matched))
    return out


def across_runs(appearances: Sequence[Appearance], agent: str | None = None) -> list[AgentGroup]:
    """`pairs`, each pair compared (`compare_appearances`)."""
    return [
        AgentGroup(
            identity,
            tuple(items),
            tuple(compare_appearances(first, other) for first, other in matched),
        )
        for identity, items, matched in pairs(appearances, agent)
    ]
