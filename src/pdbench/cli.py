"""The pdbench command line. Heavy libraries (pandas, pyarrow, streamlit, litellm) are imported
only inside the commands that need them, so `pdbench --help` and `pdbench validate` start fast.

Library errors (bad config, bad run directory, a run that had to stop) print one line per problem
and exit with code 2, without a traceback; `--debug` shows the traceback.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from pdbench import cli_games
from pdbench.errors import PdbenchError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="pdbench: a reproducible harness for the iterated Prisoner's Dilemma between LLM and classic agents.",
)

ConfigArg = Annotated[Path, typer.Argument(help="Experiment config (YAML).", show_default=False)]
EXIT_USAGE = 2


def _err(line: str) -> None:
    typer.echo(line, err=True)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    """Validate, run and inspect iterated Prisoner's Dilemma experiments."""


def _load(config: Path):  # type: ignore[no-untyped-def]
    from pdbench.runners.registry import load_experiment

    loaded = load_experiment(config)
    for warning in loaded.warnings:
        _err(f"warning: {config}: {warning}")
    return loaded


@app.command()
def validate(config: ConfigArg) -> None:
    """Check a config's schema and every file it references; print a short summary."""
    from pdbench.runners.plan import describe_plan

    loaded = _load(config)
    typer.echo(f"{config}: valid")
    typer.echo(describe_plan(loaded, None))


@app.command()
def run(
    config: ConfigArg,
    replicates: Annotated[
        int | None,
        typer.Option(
            "--replicates", "-r", min=1, help="Replicates per condition (overrides the config)."
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the plan, expected LLM calls and tokens; write nothing."
        ),
    ] = False,
    overwrite: Annotated[
        bool,
        typer.Option("--overwrite", help="Replace the artifacts of an existing run directory."),
    ] = False,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume", help="Continue a stopped run in its output dir, keeping finished games."
        ),
    ] = False,
    output_dir: Annotated[
        Path | None,
        typer.Option("--output-dir", "-o", help="Write here instead of run.output_dir."),
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            "-c",
            min=1,
            help="Provider calls in flight at most (games in flight: 4x that; 1 = strictly sequential).",
        ),
    ] = 16,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Do not read or write the response cache.")
    ] = False,
    cache_dir: Annotated[
        Path | None,
        typer.Option("--cache-dir", help="Response cache directory (default .pdbench_cache)."),
    ] = None,
) -> None:
    """Run every condition x replicate and write rounds.jsonl, run_manifest.json, aggregates.parquet."""
    from pdbench.runners.plan import describe_plan

    loaded = _load(config)
    if dry_run:
        typer.echo(describe_plan(loaded, replicates))
        typer.echo("dry run: nothing was written")
        return
    if resume and overwrite:
        from pdbench.errors import RunError

        raise RunError("--resume and --overwrite exclude each other")
    _execute(loaded, replicates, overwrite, resume, output_dir, concurrency, no_cache, cache_dir)


def _execute(
    loaded,  # type: ignore[no-untyped-def]
    replicates: int | None,
    overwrite: bool,
    resume: bool,
    output_dir: Path | None,
    concurrency: int,
    no_cache: bool,
    cache_dir: Path | None,
) -> None:
    from pdbench.runners.progress import terminal_progress
    from pdbench.runners.run_experiment import run_experiment

    with terminal_progress("Playing rounds") as progress:
        summary = run_experiment(
            loaded,
            replicates=replicates,
            overwrite=overwrite,
            progress=progress,
            concurrency=concurrency,
            output_dir=output_dir,
            resume=resume,
            cache_dir=cache_dir,
            use_cache=not no_cache,
        )
    kept = f" ({summary.games_resumed} kept from before)" if resume else ""
    typer.echo(
        f"run {summary.run_id}: {summary.n_games} games{kept}, {summary.n_rounds} rounds -> {summary.run_dir}"
    )
    usage = (summary.manifest.get("usage") or {}).get("total") or {}
    if usage:
        typer.echo(
            f"LLM calls: {usage.get('llm_calls', 0)} to providers, {usage.get('cached_calls', 0)} from cache; "
            f"tokens in/out: {usage.get('input_tokens', 0)}/{usage.get('output_tokens', 0)}; "
            f"cost: ${usage.get('cost_usd', 0):.4f}"
        )
    typer.echo(_summary_table(summary.rows))


@app.command("resume")
def resume_run(
    run_dir: Annotated[
        Path, typer.Argument(help="The directory of a stopped run.", show_default=False)
    ],
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Games in flight.")
    ] = 16,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Do not use the response cache.")
    ] = False,
    cache_dir: Annotated[
        Path | None, typer.Option("--cache-dir", help="Response cache directory.")
    ] = None,
) -> None:
    """Continue a stopped run (Ctrl-C, kill, budget, provider failure) from its directory."""
    from pdbench.runners.run_files import read_manifest

    manifest = read_manifest(run_dir)
    config_path = Path(manifest.get("config_path", ""))
    loaded = _load(config_path)
    _execute(
        loaded, manifest.get("replicates"), False, True, run_dir, concurrency, no_cache, cache_dir
    )


cache_app = typer.Typer(help="Inspect or clear the response cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")
CacheDirOpt = Annotated[
    Path | None,
    typer.Option("--cache-dir", help="Response cache directory (default .pdbench_cache)."),
]


@cache_app.command("stats")
def cache_stats(cache_dir: CacheDirOpt = None) -> None:
    """Entries, tokens and size of the response cache."""
    from pdbench.storage.cache import DEFAULT_CACHE_DIR, ResponseCache

    cache = ResponseCache(cache_dir or DEFAULT_CACHE_DIR)
    stats = cache.stats()
    cache.close()
    typer.echo(f"{stats['path']}: {stats['entries']} entries, {stats['bytes']} bytes")
    for row in stats["by_model"]:
        typer.echo(
            f"  {row['provider']}/{row['model']}: {row['entries']} entries, "
            f"tokens in/out {row['input_tokens']}/{row['output_tokens']}"
        )


@cache_app.command("clear")
def cache_clear(cache_dir: CacheDirOpt = None) -> None:
    """Delete every cached response."""
    from pdbench.storage.cache import DEFAULT_CACHE_DIR, ResponseCache

    cache = ResponseCache(cache_dir or DEFAULT_CACHE_DIR)
    removed = cache.clear()
    cache.close()
    typer.echo(f"{cache.path}: removed {removed} entries")


@app.command()
def aggregate(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.", show_default=False)],
) -> None:
    """Recompute aggregates.parquet from rounds.jsonl (idempotent)."""
    from pdbench.storage.aggregate import aggregate_run_dir

    rows = aggregate_run_dir(run_dir)
    typer.echo(f"{run_dir}: aggregates.parquet rewritten ({len(rows)} rows)")
    typer.echo(_summary_table(rows))


@app.command()
def ui(
    run_dir: Annotated[
        Path | None, typer.Argument(help="Run directory to open.", show_default=False)
    ] = None,
    print_command: Annotated[
        bool,
        typer.Option("--print-command", help="Print the streamlit command instead of running it."),
    ] = False,
    port: Annotated[int | None, typer.Option("--port", help="Port for the web server.")] = None,
) -> None:
    """Launch the Streamlit app (optionally opening a run directory)."""
    from importlib.util import find_spec

    from pdbench.errors import RunError

    if run_dir is not None and not run_dir.is_dir():
        raise RunError(f"{run_dir}: not a directory")
    app_path = Path(__file__).resolve().parent / "ui" / "streamlit_app.py"
    command = [
        sys.executable,
        "-m",
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


app.command("tournament")(cli_games.tournament)
app.command("evolve")(cli_games.evolve)


def _summary_table(rows: list[dict]) -> str:
    """Condition means as a fixed-width text table."""
    header = f"{'condition':<32} {'A':<24} {'B':<24} {'rounds':>7} {'coopA':>6} {'coopB':>6} {'payA':>8} {'payB':>8} {'collapse':>8}"
    lines = [header, "-" * len(header)]

    def fmt(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    for row in rows:
        if row["scope"] != "condition":
            continue
        lines.append(
            f"{row['condition'][:32]:<32} {row['agent_a_name'][:24]:<24} {row['agent_b_name'][:24]:<24} "
            f"{fmt(row['n_rounds'], '.1f'):>7} {fmt(row['agent_a_cooperation_rate'], '.2f'):>6} "
            f"{fmt(row['agent_b_cooperation_rate'], '.2f'):>6} {fmt(row['agent_a_total_payoff'], '.1f'):>8} "
            f"{fmt(row['agent_b_total_payoff'], '.1f'):>8} {fmt(row['time_to_collapse'], '.1f'):>8}"
        )
    return "\n".join(lines)


def main() -> None:
    """Console entry point: run the app, turning library errors into exit code 2."""
    debug = "--debug" in sys.argv[1:]
    try:
        app()
    except PdbenchError as exc:
        if debug:
            raise
        for line in exc.lines():
            _err(line)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _err("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
