"""CLI commands `pdbench tournament` and `pdbench evolve` (registered by pdbench.cli).

Typer-annotated functions: `app.command("tournament")(tournament)`. Imports stay light at module
level (no numpy, pandas or pyarrow); bad input raises ConfigError / RunError, which the CLI's
main() prints as one-line messages with exit code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigArg = Annotated[Path, typer.Argument(help="Config file (YAML).", show_default=False)]
OutputOpt = Annotated[
    Path | None,
    typer.Option("--output-dir", "-o", help="Where to write (default: run.output_dir)."),
]
OverwriteOpt = Annotated[
    bool, typer.Option("--overwrite", help="Replace the artifacts of an existing output dir.")
]


def _warn(config: Path, warnings: list[str]) -> None:
    for warning in warnings:
        typer.echo(f"warning: {config}: {warning}", err=True)


def tournament(
    config: ConfigArg,
    output_dir: OutputOpt = None,
    overwrite: OverwriteOpt = False,
    log_rounds: Annotated[
        bool, typer.Option("--log-rounds", help="Also write rounds.parquet (every round).")
    ] = False,
    repetitions: Annotated[
        int | None,
        typer.Option("--repetitions", "-r", min=1, help="Matches per pair (overrides the config)."),
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Round-by-round matches played at once.")
    ] = 16,
) -> None:
    """Play a round-robin tournament and print the leaderboard."""
    from pdbench.runners.games_config import load_tournament
    from pdbench.runners.progress import terminal_progress
    from pdbench.runners.tournament import format_leaderboard, run_tournament

    loaded = load_tournament(config)
    _warn(config, loaded.warnings)
    with terminal_progress("Playing rounds") as progress:
        result = run_tournament(
            loaded,
            output_dir,
            overwrite,
            progress,
            log_rounds=True if log_rounds else None,
            repetitions=repetitions,
            concurrency=concurrency,
        )
    totals = result.manifest["totals"]
    typer.echo(
        f"tournament {loaded.config.run.run_id}: {len(result.players)} players, "
        f"{totals['matches']} matches, {totals['rounds']} rounds -> {result.output_dir}"
    )
    typer.echo(format_leaderboard(result))


def evolve(
    config: ConfigArg,
    output_dir: OutputOpt = None,
    overwrite: OverwriteOpt = False,
    noise: Annotated[
        float | None,
        typer.Option("--noise", min=0.0, max=0.5, help="Execution noise (overrides the config)."),
    ] = None,
    generations: Annotated[
        int | None,
        typer.Option("--generations", "-g", min=0, help="Generations (overrides the config)."),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", min=0, help="Run seed (overrides the config).")
    ] = None,
) -> None:
    """Evolve a population of strategies and print the initial and final shares."""
    from pdbench.runners.evolve import format_shares, run_evolution
    from pdbench.runners.games_config import load_evolution
    from pdbench.runners.progress import terminal_progress

    loaded = load_evolution(config)
    _warn(config, loaded.warnings)
    with terminal_progress("Generations") as progress:
        result = run_evolution(
            loaded,
            output_dir,
            overwrite,
            progress,
            noise=noise,
            generations=generations,
            seed=seed,
        )
    manifest = result.manifest
    typer.echo(
        f"evolution {loaded.config.run.run_id}: {manifest['process']} "
        f"(fitness {manifest['fitness']}, noise {manifest['noise']:g}) -> {result.output_dir}"
    )
    typer.echo(format_shares(result))
