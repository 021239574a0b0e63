"""`pdbench compare RUN_DIR RUN_DIR... --across-runs`: the same agent in two or more runs, side
by side; the difference of each headline metric, with its interval, when the appearances faced
the same opponent design (storage/agents.py gathers and compares; this module prints)."""

from __future__ import annotations

from pathlib import Path

from pdbench.core.agents import HEADLINE_METRICS, difference_text, interval_text
from pdbench.errors import RunError
from pdbench.storage.agents import AgentGroup, Appearance, across_runs, same_runs, scan_runs


def compare_across_runs(run_dirs: list[Path], agent: str | None = None) -> list[AgentGroup]:
    """The agents seen in two or more of the runs, compared; RunError (one line each) when a
    run cannot be read, fewer than two are given, two hold the same run (a copy), or no agent
    is in two runs."""
    if len(run_dirs) < 2:
        raise RunError("--across-runs needs two or more run directories")
    for d in run_dirs:
        problem = _directory_problem(d)
        if problem:
            raise RunError(f"{d}: {problem}")
    resolved = [d.resolve() for d in run_dirs]
    if len(set(resolved)) < len(resolved):
        raise RunError("--across-runs: a run directory is given twice")
    copies = same_runs(run_dirs)
    if copies:  # a copy (cp -r) would count as one run: no agent would be in two
        first, other, what = copies[0]
        raise RunError(
            f"{first} and {other}: both directories hold the same run ({what}); "
            "--across-runs compares different runs"
        )
    appearances, problems = scan_runs(run_dirs)
    if problems:
        raise RunError(problems[0])
    groups = across_runs(appearances, agent)
    if not groups:
        which = f" matching {agent!r}" if agent else ""
        raise RunError(f"no agent{which} plays in two or more of these runs")
    return groups


def _directory_problem(path: Path) -> str | None:
    """Why `path` cannot be a run directory (None: it is a directory)."""
    try:
        return None if path.is_dir() else "not a directory"
    except OSError as exc:  # a name too long, a directory not searchable
        return f"cannot be read ({exc.strerror or type(exc).__name__})"


def _value(appearance: Appearance, metric: str) -> str:
    found = next(p for p in appearance.profile if p.metric == metric)
    return interval_text(found.mean, found.low, found.high)


HEADS = ("cooperation [95% CI]", "payoff/round [95% CI]")


def _columns(
    head: tuple[str, ...], rows: list[tuple[str, ...]], right: tuple[int, ...] = ()
) -> list[str]:
    """Rows of text in columns as wide as their widest cell (nothing is cut), indented."""
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return [
        "  "
        + " ".join(
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(r, widths, strict=True))
        ).rstrip()
        for r in [head, *rows]
    ]


def across_runs_table(groups: list[AgentGroup]) -> str:
    """The terminal text: per agent, its appearances (run, condition, side, opponent, games,
    cooperation and payoff per round with their intervals), then each later run's appearance
    against the first run's: the differences with intervals, or what differs in the design."""
    lines = [
        "agents across runs: each later run's appearance minus the first run's that faced the "
        "same opponent design (games as the unit; 95% intervals: hull of bootstrap and MOVER, "
        "as `pdbench compare`)"
    ]
    for group in groups:
        lines += ["", f"agent {group.identity.label}"]
        lines += [f"  {name}: {value}" for name, value in group.identity.details]
        rows = [
            (
                a.run_label,
                a.condition,
                a.side.upper(),
                a.design["opponent"],
                str(a.n_games),
                _value(a, "cooperation_rate"),
                _value(a, "payoff_per_round"),
            )
            for a in group.appearances
        ]
        lines += _columns(
            ("run", "condition", "side", "opponent", "games", *HEADS), rows, right=(4,)
        )
        for c in group.comparisons:
            head = f"  {c.other.where}  minus  {c.first.where}"
            if not c.same_design:
                lines.append(f"{head}: designs differ ({'; '.join(c.differences)}); no difference")
                continue
            lines.append(f"{head} (same opponent design):")
            for mc in c.contrasts:
                p = "" if mc.result.p_value is None else f"  p {mc.result.p_value:.4f}"
                lines.append(f"    {mc.label:18} {difference_text(mc.result)}{p}")
    labels = ", ".join(label for _, label in HEADLINE_METRICS)
    lines += ["", f"metrics compared: {labels} (p: permutation, not adjusted)"]
    return "\n".join(lines)
