"""The pdbench command line. Heavy libraries (pandas, pyarrow, streamlit, litellm) are imported
only inside the commands that need them, so `pdbench --help` and `pdbench validate` start fast.

The commands that read or serve finished runs live in `pdbench.cli_tools`.
`run`, `tournament` and `evolve` take the same options with the same meaning (output dir,
overwrite, resume, seed, noise, concurrency, cache); `resume RUN_DIR` continues a stopped run of
any kind. Library errors (bad config, bad run directory, a run that had to stop) print one line
per problem and exit with code 2, without a traceback; `--debug` shows the traceback.
"""

from __future__ import annotations

import inspect
import os
import signal
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pdbench import cli_tools
from pdbench.cli_tools import CacheDirOpt
from pdbench.errors import PdbenchError, RunError
from pdbench.redact import redact

if TYPE_CHECKING:
    from pdbench.runners.config.loader import LoadedConfig

# pdbench's matrix products are small (bootstrap resamples x games): OpenBLAS's extra threads
# gain little there and busy-wait after each product, which doubled the CPU time of the
# intervals and slowed them on a loaded machine. Set before numpy loads; a user's setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="pdbench: a reproducible harness for the iterated Prisoner's Dilemma between LLM and "
    "classic agents.",
)

ConfigArg = Annotated[Path, typer.Argument(help="Config file (YAML).", show_default=False)]
OutputOpt = Annotated[
    Path | None,
    typer.Option("--output-dir", "-o", help="Write here instead of run.output_dir."),
]
OverwriteOpt = Annotated[
    bool, typer.Option("--overwrite", help="Replace the artifacts of an existing output dir.")
]
ResumeOpt = Annotated[
    bool,
    typer.Option(
        "--resume", help="Continue a stopped run in its output dir, keeping finished games."
    ),
]
DryRunOpt = Annotated[
    bool,
    typer.Option("--dry-run", help="Print the plan, expected LLM calls and tokens; write nothing."),
]
SeedOpt = Annotated[
    int | None, typer.Option("--seed", min=0, help="Run seed (overrides run.seed).")
]
NoiseOpt = Annotated[
    float | None,
    typer.Option("--noise", min=0.0, max=0.5, help="Execution noise (overrides game.noise)."),
]
ConcurrencyOpt = Annotated[
    int,
    typer.Option(
        "--concurrency",
        "-c",
        min=1,
        help="Provider calls in flight at most (games in flight: 4x that; 1 = strictly sequential).",
    ),
]
NoCacheOpt = Annotated[
    bool, typer.Option("--no-cache", help="Do not read or write the response cache.")
]


class Backend(StrEnum):
    """Where games are played."""

    local = "local"
    ray = "ray"


BackendOpt = Annotated[
    Backend,
    typer.Option(
        "--backend",
        help="local: play in this process; ray: play games as Ray tasks on a Ray cluster "
        "(the ray extra; artifacts and limits as with local).",
    ),
]
RayAddressOpt = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="With --backend ray: the cluster to join (auto on a cluster node, or HOST:6379, "
        "its GCS address; the ray:// client form is not supported); default: start a local "
        "Ray instance.",
    ),
]

_err = cli_tools.err


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    """Validate, run and inspect iterated Prisoner's Dilemma experiments, tournaments and
    evolutions."""


def _load(config: Path, kind: str | None, overrides: dict[str, Any] | None = None) -> LoadedConfig:
    from pdbench.runners.config.loader import load_config

    loaded = load_config(
        config, kind, {k: v for k, v in (overrides or {}).items() if v is not None}
    )
    for warning in loaded.warnings:
        _err(f"warning: {config}: {warning}")
    return loaded


def _start(
    loaded: LoadedConfig,
    *,
    dry_run: bool = False,
    output_dir: Path | None = None,
    overwrite: bool = False,
    resume: bool = False,
    concurrency: int = 16,
    no_cache: bool = False,
    cache_dir: Path | None = None,
    backend: str = "local",
    ray_address: str | None = None,
) -> None:
    """Print the plan (dry run) or start the loaded config of any kind through the runners'
    front door (`pdbench.runners.start.start`) and print its report."""
    from pdbench.runners.plan import describe_plan

    if dry_run:
        typer.echo(describe_plan(loaded))
        typer.echo("dry run: nothing was written")
        return
    from pdbench.runners.engine.progress import run_progress
    from pdbench.runners.start import RunOptions, check_options, report, start

    units = ("rounds", "generations") if loaded.kind == "evolution" else ("rounds",)
    options = RunOptions(output_dir, overwrite, resume, cache_dir, not no_cache, concurrency)
    options.backend, options.ray_address = str(backend), ray_address
    check_options(options)  # refused before the progress bar shows
    with run_progress(units) as progress:
        options.progress = progress
        options.progress_stats = progress.watch
        result = start(loaded, options)
    for line in report(loaded, result, resumed=resume):
        typer.echo(redact(line))


@app.command(epilog="Example: pdbench validate configs/experiment.yaml")
def validate(config: ConfigArg) -> None:
    """Check a config (experiment, tournament or evolution) and every file it references;
    print its plan."""
    from pdbench.runners.plan import describe_plan

    loaded = _load(config, None)
    typer.echo(f"{config}: valid {loaded.kind} config")
    typer.echo(describe_plan(loaded))


# The options every run command shares, with the same meaning everywhere.
RUN_OPTIONS: list[tuple[str, Any, Any]] = [
    ("seed", SeedOpt, None),
    ("noise", NoiseOpt, None),
    ("dry_run", DryRunOpt, False),
    ("output_dir", OutputOpt, None),
    ("overwrite", OverwriteOpt, False),
    ("resume", ResumeOpt, False),
    ("concurrency", ConcurrencyOpt, 16),
    ("no_cache", NoCacheOpt, False),
    ("cache_dir", CacheDirOpt, None),
    ("backend", BackendOpt, Backend.local),
    ("ray_address", RayAddressOpt, None),
]
# Option name -> the config value it overrides (None when set to None or False).
OVERRIDES = {
    "replicates": "experiment.replicates",
    "repetitions": "tournament.repetitions",
    "log_rounds": "tournament.log_rounds",
    "generations": "evolution.generations",
    "seeds": "evolution.seeds",
    "seed": "run.seed",
    "shard": "run.shard",
    "noise": "game.noise",
}


def run_command(
    name: str, kind: str, example: str, own: list[tuple[str, Any, Any]]
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register a run command: `CONFIG`, the command's `own` options, then RUN_OPTIONS.

    The decorated function only documents the command (its docstring is the help text); every
    run command loads its kind of config with the overrides and starts it the same way.
    """

    def register(doc: Callable[..., None]) -> Callable[..., None]:
        def command(config: Path, **options: Any) -> None:
            overrides = {
                OVERRIDES[k]: v
                for k, v in options.items()
                if k in OVERRIDES and v is not None and v is not False
            }
            flags = {k: v for k, v in options.items() if k not in OVERRIDES}
            _start(_load(config, kind, overrides), **flags)

        keyword = inspect.Parameter.KEYWORD_ONLY
        params = [
            inspect.Parameter(
                "config", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ConfigArg
            )
        ]
        params += [
            inspect.Parameter(n, keyword, default=d, annotation=t) for n, t, d in own + RUN_OPTIONS
        ]
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__doc__ = doc.__doc__
        command.__name__ = doc.__name__
        app.command(name, epilog=f"Example: {example}")(command)
        return doc

    return register


@run_command(
    "run",
    "experiment",
    "pdbench run configs/experiment.yaml --replicates 2 --overwrite",
    [
        (
            "replicates",
            Annotated[
                int | None,
                typer.Option(
                    "--replicates", "-r", min=1, help="Replicates per condition (overrides it)."
                ),
            ],
            None,
        ),
        (
            "shard",
            Annotated[
                str | None,
                typer.Option(
                    "--shard",
                    help="i/K: play only shard i of K of the games (a cluster job array); "
                    "join the shard directories with `pdbench merge`.",
                ),
            ],
            None,
        ),
    ],
)
def run() -> None:
    """Run an experiment: every condition x replicate; writes rounds.jsonl, run_manifest.json,
    aggregates.parquet (and llm_calls.jsonl with LLM agents)."""


@run_command(
    "tournament",
    "tournament",
    "pdbench tournament configs/tournament.yaml --repetitions 5 -o data/tournaments/t5",
    [
        (
            "repetitions",
            Annotated[
                int | None,
                typer.Option("--repetitions", "-r", min=1, help="Matches per pair (overrides it)."),
            ],
            None,
        ),
        (
            "log_rounds",
            Annotated[
                bool,
                typer.Option(
                    "--log-rounds", help="Write every round of every match to rounds.jsonl."
                ),
            ],
            False,
        ),
    ],
)
def tournament() -> None:
    """Play a round-robin tournament; writes matches, leaderboard and payoff matrix (Parquet)
    and prints the leaderboard."""


@run_command(
    "evolve",
    "evolution",
    "pdbench evolve configs/evolution.yaml --noise 0.05 --overwrite",
    [
        (
            "generations",
            Annotated[
                int | None,
                typer.Option("--generations", "-g", min=0, help="Generations (overrides it)."),
            ],
            None,
        ),
        (
            "seeds",
            Annotated[
                int | None,
                typer.Option(
                    "--seeds",
                    min=1,
                    help="Independent runs of the process on the same matches; >1 writes "
                    "fixation.parquet (overrides evolution.seeds).",
                ),
            ],
            None,
        ),
    ],
)
def evolve() -> None:
    """Evolve a population of strategies; writes generations.parquet and prints the initial
    and final shares."""


@app.command("resume", epilog="Example: pdbench resume data/runs/phase1_smoke_v1")
def resume_run(
    run_dir: Annotated[
        Path, typer.Argument(help="The directory of a stopped run.", show_default=False)
    ],
    concurrency: ConcurrencyOpt = 16,
    no_cache: NoCacheOpt = False,
    cache_dir: CacheDirOpt = None,
    backend: BackendOpt = Backend.local,
    ray_address: RayAddressOpt = None,
) -> None:
    """Continue a stopped run of any kind (Ctrl-C, kill, budget, provider failure) from its
    directory, with the config, overrides and response cache it was started with."""
    from pdbench.storage.run_dir import read_manifest, run_kind

    kind = run_kind(run_dir)
    manifest = read_manifest(run_dir, kind)
    overrides = manifest.get("overrides")
    if overrides is None and kind == "experiment":  # a run from before overrides were recorded
        overrides = {"experiment.replicates": manifest.get("replicates")}
    if not manifest.get("config_path"):
        raise RunError(f"{run_dir}: the manifest names no config_path; cannot resume")
    loaded = _load(Path(manifest["config_path"]), kind, overrides or {})
    _start(  # without --cache-dir or --no-cache, the cache the run used (the front door's rule)
        loaded,
        output_dir=run_dir,
        resume=True,
        concurrency=concurrency,
        no_cache=no_cache,
        cache_dir=cache_dir,
        backend=backend,
        ray_address=ray_address,
    )


# The commands that read or serve finished runs, after the ones that run (the order of --help).
app.registered_commands += cli_tools.tools.registered_commands
app.registered_groups += cli_tools.tools.registered_groups


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM is handled like Ctrl-C: the run stops, keeps what it finished, says how to go on."""
    raise KeyboardInterrupt


def main() -> None:
    """Console entry point: run the app, turning library errors into exit code 2."""
    # One BLAS thread (unless the user chose otherwise), set before NumPy loads: the matrix
    # products of a command are small (a tournament's bootstrap: 2,000 x 100 x players), and a
    # second OpenBLAS thread costs more than the product (7 ms of CPU, then busy-waiting) while
    # giving the same values.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    debug = "--debug" in sys.argv[1:]
    signal.signal(signal.SIGTERM, _terminated)
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
