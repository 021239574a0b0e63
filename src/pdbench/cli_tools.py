"""The pdbench commands that read or serve finished runs: `cache`, `aggregate`, `profile`,
`compare`, `report`, `merge` and `ui`. They are registered on the main app by `pdbench.cli_app`
(after the commands that run), which also turns their library errors into exit code 2. Heavy
libraries are imported inside each command, as in `pdbench.cli`.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from pdbench import cli_dirs
from pdbench.cli import CACHE_DIR, Opt, err
from pdbench.errors import RunError

tools = typer.Typer()
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def typer_option(opt: Opt) -> Any:
    """The typer annotation of a command option declared as a `pdbench.cli.Opt`."""
    bounds = {k: v for k, v in (("min", opt.min), ("max", opt.max)) if v is not None}
    return Annotated[opt.type, typer.Option(*opt.decls, help=opt.help, **bounds)]


CacheDirOpt = typer_option(CACHE_DIR)
LibraryOpt = typer_option(cli_dirs.LIBRARY)
TopOpt = typer_option(cli_dirs.TOP)
ReportOutputOpt = typer_option(cli_dirs.REPORT_OUTPUT)


cache_app = typer.Typer(help="Inspect or clear the response cache.", no_args_is_help=True)
tools.add_typer(cache_app, name="cache")


def _open_cache(cache_dir: Path | None) -> Any:
    from pdbench.storage.cache import ResponseCache, default_cache_dir

    return ResponseCache(cache_dir or default_cache_dir())


@cache_app.command("stats", epilog="Example: pdbench cache stats --cache-dir .pdbench_cache")
def cache_stats(cache_dir: CacheDirOpt = None) -> None:
    """Entries, tokens and size of the response cache."""
    with _open_cache(cache_dir) as cache:
        stats = cache.stats()
    typer.echo(f"{stats['path']}: {stats['entries']} entries, {stats['bytes']} bytes")
    for row in stats["by_model"]:
        typer.echo(
            f"  {row['provider']}/{row['model']}: {row['entries']} entries, "
            f"tokens in/out {row['input_tokens']}/{row['output_tokens']}"
        )


@cache_app.command("clear", epilog="Example: pdbench cache clear")
def cache_clear(cache_dir: CacheDirOpt = None) -> None:
    """Delete every cached response (a damaged cache file is removed)."""
    from pdbench.storage.cache import CacheUnusable, default_cache_dir, remove_files

    try:
        with _open_cache(cache_dir) as cache:
            typer.echo(f"{cache.path}: removed {cache.clear()} entries")
    except CacheUnusable:
        removed = remove_files(cache_dir or default_cache_dir())
        names = ", ".join(str(p) for p in removed) or "nothing"
        typer.echo(f"the cache could not be read; removed its files: {names}")


@tools.command(epilog="Example: pdbench aggregate data/runs/phase1_smoke_v1")
def aggregate(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.", show_default=False)],
) -> None:
    """Recompute an experiment's aggregates.parquet from rounds.jsonl (idempotent)."""
    cli_dirs.aggregate_dir(run_dir)


@tools.command(epilog="Example: pdbench profile data/runs/phase1_smoke_v1")
def profile(
    run_dir: Annotated[
        Path, typer.Argument(help="An experiment run directory.", show_default=False)
    ],
    library: LibraryOpt = cli_dirs.LIBRARY.default,
    top: TopOpt = cli_dirs.TOP.default,
) -> None:
    """Which strategy does each agent play like? Writes strategy_fit.parquet."""
    cli_dirs.profile_dir(run_dir, library=library, top=top)


@tools.command(
    epilog="Examples: pdbench compare data/runs/phase1_smoke_v1 --metric overall_cooperation_rate; "
    "pdbench compare data/runs/monday data/runs/friday --across-runs"
)
def compare(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="An experiment run directory (two or more with --across-runs).",
            show_default=False,
        ),
    ],
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric",
            help="A per-game metric of aggregates.parquet (default agent_a_cooperation_rate; "
            "for a groups run group_cooperation_rate; for a pgg or commons run every metric).",
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="The condition to compare with (default: the first)."),
    ] = None,
    totals: Annotated[
        bool,
        typer.Option(
            "--totals",
            help="Compare payoff totals as they are even when the conditions' horizons "
            "differ (by default they are compared per round then).",
        ),
    ] = False,
    across: Annotated[
        bool,
        typer.Option(
            "--across-runs",
            help="Put each agent seen in two or more of the runs side by side; the difference "
            "of its headline metrics, with intervals, where it faced the same opponent design.",
        ),
    ] = False,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="With --across-runs: only agents whose name contains this."),
    ] = None,
) -> None:
    """Each condition against a baseline: difference, bootstrap interval, permutation p-value
    (Holm-adjusted); writes comparisons.parquet. With --across-runs: the same agent across runs
    (writes nothing)."""
    if across:
        from pdbench.runners.science.across_runs import across_runs_table, compare_across_runs

        if metric is not None or baseline is not None or totals:
            raise RunError(
                "--across-runs compares the headline metrics: drop --metric, --baseline, --totals"
            )
        from pdbench.storage.schema import MANIFEST_FILES

        for run_dir in run_dirs:  # a run of another kind is named (others: as the reader says)
            kinds = [k for k, name in MANIFEST_FILES.items() if _is_file(run_dir / name)]
            if kinds and "experiment" not in kinds:
                raise RunError(
                    f"{run_dir}: a {kinds[0]} run; --across-runs compares the agents of "
                    "experiment runs (compare a groups run's conditions with `pdbench compare "
                    "RUN_DIR`)"
                )
        typer.echo(across_runs_table(compare_across_runs(run_dirs, agent)))
        return
    if len(run_dirs) != 1:
        raise RunError(
            "compare takes one run directory (add --across-runs to compare agents across runs)"
        )
    if agent is not None:
        raise RunError("--agent needs --across-runs")
    from pdbench.runners.science.compare import (
        DEFAULT_METRIC,
        compare_run,
        comparison_table,
        identical_games_notes,
    )

    run_dir = run_dirs[0]
    from pdbench.storage.run_dir import run_kind

    kind = run_kind(run_dir)
    if kind in ("pgg", "commons"):
        from pdbench.runners.science.resource_compare import (
            compare_resource_run,
            resource_comparison_lines,
        )

        if totals:
            raise RunError("--totals is for experiment runs; drop it for a pgg or commons run")
        rows = compare_resource_run(run_dir, metric, baseline)
        for line in resource_comparison_lines(rows):
            typer.echo(line)
        typer.echo(f"{run_dir}: comparisons.parquet written ({len(rows)} rows)")
        return
    if kind == "groups":
        from pdbench.runners.science.group_compare import compare_group_run

        rows = compare_group_run(run_dir, metric, baseline)
        typer.echo(comparison_table(rows))
        typer.echo(f"{run_dir}: comparisons.parquet written ({len(rows)} rows)")
        return
    rows = compare_run(run_dir, metric or DEFAULT_METRIC, baseline, totals)
    typer.echo(comparison_table(rows))
    for note in identical_games_notes(run_dir, rows):
        typer.echo(note)
    typer.echo(f"{run_dir}: comparisons.parquet written ({len(rows)} rows)")


@tools.command(epilog="Example: pdbench report data/runs/phase1_smoke_v1")
def report(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.", show_default=False)],
    output: ReportOutputOpt = None,
) -> None:
    """One self-contained HTML report of a run (no network needed to view it). For an
    experiment, runs `profile` and `compare` first when their artifacts are missing."""
    cli_dirs.report_dir(run_dir, output=output)


@tools.command(epilog="Example: pdbench merge data/runs/full data/runs/shard1 data/runs/shard2")
def merge(
    out_dir: Annotated[
        Path, typer.Argument(help="The merged run directory (new).", show_default=False)
    ],
    shard_dirs: Annotated[
        list[Path],
        typer.Argument(help="The shard directories (`run --shard i/K`).", show_default=False),
    ],
) -> None:
    """Join the shards of an experiment or a groups run into one run directory, equal to an
    unsharded run."""
    from pdbench.errors import RunInterrupted
    from pdbench.runners.lifecycle.merge import merge_shards
    from pdbench.storage.schema import GROUPS_MANIFEST_FILE, MANIFEST_FILES

    for shard in shard_dirs:  # a resource run is named in one line (it is never sharded)
        for kind in ("pgg", "commons"):
            if (Path(shard) / MANIFEST_FILES[kind]).is_file():
                raise RunError(
                    f"{shard}: a {kind} run; merge joins the shards of experiment or groups runs"
                )
    groups = bool(shard_dirs) and (Path(shard_dirs[0]) / GROUPS_MANIFEST_FILE).is_file()
    try:
        if groups:
            from pdbench.runners.lifecycle.group_merge import merge_group_shards

            manifest = merge_group_shards(out_dir, shard_dirs)
        else:
            manifest = merge_shards(out_dir, shard_dirs)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: nothing is marked completed
        raise RunInterrupted(
            f"interrupted: {out_dir} is not marked completed; run the same merge again to finish it"
        ) from None
    totals = manifest["totals"]
    tables = "the group tables" if groups else "aggregates.parquet"
    typer.echo(
        f"merged {len(shard_dirs)} shards -> {out_dir}: {totals['games']} games, "
        f"{totals['rounds']} rounds; {tables} written"
    )


@tools.command(epilog="Example: pdbench ui data/runs/phase1_smoke_v1 --port 8501")
def ui(
    run_dir: Annotated[
        Path | None, typer.Argument(help="Run directory to open.", show_default=False)
    ] = None,
    print_command: Annotated[
        bool,
        typer.Option("--print-command", help="Print the streamlit command instead of running it."),
    ] = False,
    port: Annotated[int | None, typer.Option("--port", help="Port for the web server.")] = None,
    address: Annotated[
        str,
        typer.Option(
            "--address",
            help="Interface to listen on; anything but this machine lets others start runs "
            "that spend your API keys.",
        ),
    ] = "127.0.0.1",
) -> None:
    """Launch the Streamlit app (optionally opening a run directory); it listens on this
    machine only unless --address says otherwise."""
    from importlib.util import find_spec

    if run_dir is not None and not run_dir.is_dir():
        raise RunError(f"{run_dir}: not a directory")
    app_path = Path(__file__).resolve().parent / "ui" / "streamlit_app.py"
    command = [  # streamlit run, after the app's imports (ui/serve.py: the first page comes sooner)
        sys.executable,
        "-m",
        "pdbench.ui.serve",
        "streamlit",
        "run",
        str(app_path),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "minimal",
        "--theme.primaryColor",
        "#4f6bed",
    ]
    command += ["--server.address", address]
    if address not in LOOPBACK:
        err(
            f"warning: the app listens on {address}: anyone who can reach it can view runs and "
            "start new ones that spend your API keys"
        )
    if port is not None:
        command += ["--server.port", str(port)]
    if run_dir is not None:
        command += ["--", "--run-dir", str(run_dir.resolve())]
    if print_command:
        typer.echo(shlex.join(command))
        return
    if find_spec("streamlit") is None:
        raise RunError("streamlit is not installed: run `uv sync`")
    raise typer.Exit(subprocess.call(command))


def _is_file(path: Path) -> bool:
    """Whether `path` is a file (False for a name the system cannot even look up)."""
    try:
        return path.is_file()
    except OSError:
        return False
