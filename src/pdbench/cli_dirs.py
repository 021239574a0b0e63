"""The commands that read a finished run directory and write its artifacts -- `aggregate`,
`profile` and `report` -- without typer: their options (declared once, as `pdbench.cli.Opt`s,
for typer in `pdbench.cli_tools` and for the fast path in `pdbench.cli_fast`) and what they do.
Their plain command lines then start without importing typer and pydantic (0.1-0.2 s of a
start on a 2-core machine). Heavy libraries are imported inside each command.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pdbench.cli import Opt, echo
from pdbench.errors import RunError

LIBRARY = Opt(
    ("--library",),
    str,
    "builtin",
    "builtin: the built-in policies and the memory-one family; all: also the Axelrod "
    "library's deterministic strategies (slower; the axelrod extra).",
)
TOP = Opt(("--top",), int, 3, "Strategies shown per agent.", min=1)
REPORT_OUTPUT = Opt(
    ("--output", "-o"), Path | None, None, "Write here (default RUN_DIR/report.html)."
)


def aggregate_dir(run_dir: Path) -> None:
    """Recompute an experiment's aggregates.parquet from rounds.jsonl (idempotent)."""
    from pdbench.runners.plan import fallback_warnings, summary_table
    from pdbench.storage.run_dir import run_kind

    kind = run_kind(run_dir)
    if kind in RESOURCE_KINDS:
        aggregate_resource_dir(run_dir, kind)
        return
    if kind == "groups":
        from pdbench.runners.plan import groups_table
        from pdbench.storage.group_aggregate import aggregate_group_run

        rows = aggregate_group_run(run_dir)
        echo(f"{run_dir}: the group tables rewritten ({len(rows)} condition rows)")
        echo(groups_table(rows))
        return
    from pdbench.storage.aggregate import aggregate_run_dir

    rows = aggregate_run_dir(run_dir)
    echo(f"{run_dir}: aggregates.parquet rewritten ({len(rows)} rows)")
    echo(summary_table(rows))
    for line in fallback_warnings(rows):
        echo(line)


RESOURCE_KINDS = ("pgg", "commons")


def aggregate_resource_dir(run_dir: Path, kind: str) -> None:
    """Rewrite a public goods or commons run's three tables (aggregates.parquet,
    resource_rounds.parquet, resource_seats.parquet) from rounds.jsonl and print the
    conditions' headline metrics."""
    from pdbench.runners.science.resources import ResourceSummary, summary_lines
    from pdbench.storage.resource_aggregate import AGGREGATES_FILE, write_resource_aggregates
    from pdbench.storage.run_dir import read_manifest

    manifest = read_manifest(run_dir, kind)
    tables = write_resource_aggregates(run_dir, manifest)
    rows = tables[AGGREGATES_FILE]
    totals = manifest.get("totals") or {}
    games = sum(int(r["n_games"]) for r in rows)
    summary = ResourceSummary(
        run_dir, str(manifest.get("run_id")), kind, games, int(totals.get("rounds") or 0), rows,
        manifest, 0, games,
    )  # fmt: skip
    echo(f"{run_dir}: {', '.join(tables)} rewritten ({len(rows)} condition rows)")
    for line in summary_lines(summary)[1:]:
        echo(line)


def profile_dir(run_dir: Path, library: str = "builtin", top: int = 3) -> None:
    """Which strategy does each agent play like? Writes strategy_fit.parquet."""
    from pdbench.runners.science.profile import profile_run, strategy_table
    from pdbench.storage.run_dir import run_kind

    kind = run_kind(run_dir)
    if kind in RESOURCE_KINDS:
        raise RunError(
            f"{run_dir}: a {kind} run; `pdbench profile` fits strategies of the two-player "
            "dilemma (see `pdbench report` for the seats of a resource game)"
        )
    result = profile_run(run_dir, library)
    echo(f"{run_dir}: {result.path.name} written ({len(result.rows)} rows)")
    echo(strategy_table(result.rows, top))


def report_dir(run_dir: Path, output: Path | None = None) -> None:
    """One self-contained HTML report of a run (no network needed to view it). For an
    experiment, runs `profile` and `compare` first when their artifacts are missing."""
    from pdbench.report import COMPARISONS_FILE, build_report
    from pdbench.storage.run_dir import run_kind
    from pdbench.storage.strategy_fit import STRATEGY_FIT_FILE

    if run_kind(run_dir) == "experiment":
        if not (run_dir / STRATEGY_FIT_FILE).is_file():
            from pdbench.runners.science.profile import profile_run

            profile_run(run_dir)
        if not (run_dir / COMPARISONS_FILE).is_file():
            from pdbench.runners.science.compare import compare_run

            compare_run(run_dir)
    path = build_report(run_dir, output)
    echo(f"report written: {path}")


# command -> (what runs it, its options in --help order); RUN_DIR is its one argument
DIR_COMMANDS: dict[str, tuple[Callable[..., None], list[tuple[str, Opt]]]] = {
    "aggregate": (aggregate_dir, []),
    "profile": (profile_dir, [("library", LIBRARY), ("top", TOP)]),
    "report": (report_dir, [("output", REPORT_OUTPUT)]),
}
