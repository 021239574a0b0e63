"""The pdbench commands declared with typer: their help, argument handling and error messages.

`pdbench.cli.main` imports this module only for command lines its fast path does not take
(`--help`, errors, the commands of `pdbench.cli_tools`). The options of the commands that load a
config are declared once, as `pdbench.cli.Opt`s; here they become typer options.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from pdbench import cli_tools
from pdbench.cli import (
    COMMANDS,
    RESUME_OPTIONS,
    RUN_OPTIONS,
    Opt,
    resume_dir,
    run_config,
    validate_config,
)
from pdbench.cli_tools import typer_option

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="pdbench: a reproducible harness for the iterated Prisoner's Dilemma between LLM and "
    "classic agents.",
)

ConfigArg = Annotated[Path, typer.Argument(help="Config file (YAML).", show_default=False)]
RunDirArg = Annotated[
    Path, typer.Argument(help="The directory of a stopped run.", show_default=False)
]


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    """Validate, run and inspect iterated Prisoner's Dilemma experiments, tournaments and
    evolutions."""


@app.command(epilog="Example: pdbench validate configs/experiment.yaml")
def validate(config: ConfigArg) -> None:
    """Check a config (experiment, tournament or evolution) and every file it references;
    print its plan."""
    validate_config(config)


def _signature(first: inspect.Parameter, options: list[tuple[str, Opt]]) -> inspect.Signature:
    """`first`, then the options as keyword-only parameters typer reads."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    return inspect.Signature(
        [first]
        + [
            inspect.Parameter(n, keyword, default=o.default, annotation=typer_option(o))
            for n, o in options
        ]
    )


def run_command(name: str, example: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register the run command `name` of `COMMANDS`: `CONFIG`, its own options, then
    RUN_OPTIONS.

    The decorated function only documents the command (its docstring is the help text); every
    run command loads its kind of config with the overrides and starts it the same way.
    """
    spec = COMMANDS[name]

    def register(doc: Callable[..., None]) -> Callable[..., None]:
        def command(config: Path, **options: Any) -> None:
            run_config(spec.kind, config, **options)

        first = inspect.Parameter(
            "config", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ConfigArg
        )
        command.__signature__ = _signature(first, spec.own + RUN_OPTIONS)  # type: ignore[attr-defined]
        command.__doc__ = doc.__doc__
        command.__name__ = doc.__name__
        app.command(name, epilog=f"Example: {example}")(command)
        return doc

    return register


@run_command("run", "pdbench run configs/experiment.yaml --replicates 2 --overwrite")
def run() -> None:
    """Run an experiment: every condition x replicate; writes rounds.jsonl, run_manifest.json,
    aggregates.parquet (and llm_calls.jsonl with LLM agents). A groups config (N-player games,
    configs/groups.yaml) writes groups_manifest.json, seats.parquet and the group tables."""


@run_command(
    "tournament",
    "pdbench tournament configs/tournament.yaml --repetitions 5 -o data/tournaments/t5",
)
def tournament() -> None:
    """Play a round-robin tournament; writes matches, leaderboard and payoff matrix (Parquet)
    and prints the leaderboard. A group tournament config plays every group of N of its
    field."""


@run_command("evolve", "pdbench evolve configs/evolution.yaml --noise 0.05 --overwrite")
def evolve() -> None:
    """Evolve a population of strategies; writes generations.parquet and prints the initial
    and final shares. A group evolution config takes fitness from group compositions."""


def resume_run(run_dir: Path, **options: Any) -> None:
    """Continue a stopped run of any kind (Ctrl-C, kill, budget, provider failure) from its
    directory, with the config, overrides and response cache it was started with."""
    resume_dir(run_dir, **options)


resume_run.__signature__ = _signature(  # type: ignore[attr-defined]
    inspect.Parameter("run_dir", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=RunDirArg),
    RESUME_OPTIONS,
)
app.command("resume", epilog="Example: pdbench resume data/runs/phase1_smoke_v1")(resume_run)

# The commands that read or serve finished runs, after the ones that run (the order of --help).
app.registered_commands += cli_tools.tools.registered_commands
app.registered_groups += cli_tools.tools.registered_groups
