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
        typer.Option("--dry-run", help="Print the plan and expected LLM calls; write nothing."),
    ] = False,
    overwrite: Annotated[
        bool,
        typer.Option("--overwrite", help="Replace the artifacts of an existing run directory."),
    ] = False,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Games played at once.")
    ] = 16,
) -> None:
    """Run every condition x replicate and write rounds.jsonl, run_manifest.json, aggregates.parquet."""
    from pdbench.runners.plan import describe_plan

    loaded = _load(config)
    if dry_run:
        typer.echo(describe_plan(loaded, replicates))
        typer.echo("dry run: nothing was written")
        return
    from pdbench.runners.progress import terminal_progress
    from pdbench.runners.run_experiment import run_experiment

    with terminal_progress("Playing rounds") as progress:
        summary = run_experiment(
            loaded,
            replicates=replicates,
            overwrite=overwrite,
            progress=progress,
            concurrency=concurrency,
        )
    typer.echo(
        f"run {summary.run_id}: {summary.n_games} games, {summary.n_rounds} rounds -> {summary.run_dir}"
    )
    typer.echo(_summary_table(summary.rows))


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
    command = [sys.executable, "-m", "streamlit", "run", str(app_path), "--server.headless", "true"]
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
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        _err("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
