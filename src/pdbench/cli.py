"""The pdbench command line. Heavy libraries (pandas, pyarrow, streamlit, litellm) are imported
only inside the commands that need them, so `pdbench --help` and `pdbench validate` start fast.

The commands are declared with typer in `pdbench.cli_app` (the commands that read or serve
finished runs in `pdbench.cli_tools`). This module holds what the commands that load a config
share: their options (`Opt`, `RUN_OPTIONS`, `COMMANDS`), loading and starting a config, and
the console entry point. `main` parses the common, well-formed command lines of `run`,
`tournament`, `evolve`, `resume` and `validate` itself (`pdbench.cli_fast`) without importing
typer (0.1-0.2 s of a start); every other command line -- `--help`, an unknown option, a value
out of range -- goes through typer, so help, error messages and exit codes are typer's.

`run`, `tournament` and `evolve` take the same options with the same meaning (output dir,
overwrite, resume, seed, noise, concurrency, cache); `resume RUN_DIR` continues a stopped run of
any kind. Library errors (bad config, bad run directory, a run that had to stop) print one line
per problem and exit with code 2, without a traceback; `--debug` shows the traceback.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pdbench.errors import PdbenchError, RunError
from pdbench.redact import redact

if TYPE_CHECKING:
    from pdbench.runners.config.loader import LoadedConfig

# pdbench's matrix products are small (bootstrap resamples x games): OpenBLAS's extra threads
# gain little there and busy-wait after each product, which doubled the CPU time of the
# intervals and slowed them on a loaded machine. Set before numpy loads; a user's setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


class Backend(StrEnum):
    """Where games are played."""

    local = "local"
    ray = "ray"


@dataclass(frozen=True)
class Opt:
    """One option of a command: its flags, type (the annotation typer reads: `bool` for a flag,
    `int | None`, `Path | None`, `Backend`, ...), default, help text and inclusive bounds."""

    decls: tuple[str, ...]
    type: Any
    default: Any
    help: str
    min: float | None = None
    max: float | None = None


CACHE_DIR = Opt(
    ("--cache-dir",),
    Path | None,
    None,
    "Response cache directory (default $PDBENCH_CACHE_DIR, else .pdbench_cache).",
)
CONCURRENCY = Opt(
    ("--concurrency", "-c"),
    int,
    16,
    "Provider calls in flight at most (games in flight: 4x that; 1 = strictly sequential).",
    min=1,
)
NO_CACHE = Opt(("--no-cache",), bool, False, "Do not read or write the response cache.")
BACKEND = Opt(
    ("--backend",),
    Backend,
    Backend.local,
    "local: play in this process; ray: play games as Ray tasks on a Ray cluster "
    "(the ray extra; artifacts and limits as with local).",
)
RAY_ADDRESS = Opt(
    ("--ray-address",),
    str | None,
    None,
    "With --backend ray: the cluster to join (auto on a cluster node, or HOST:6379, "
    "its GCS address; the ray:// client form is not supported); default: start a local "
    "Ray instance.",
)
# The options every run command shares, with the same meaning everywhere (the order of --help).
RUN_OPTIONS: list[tuple[str, Opt]] = [
    ("seed", Opt(("--seed",), int | None, None, "Run seed (overrides run.seed).", min=0)),
    (
        "noise",
        Opt(
            ("--noise",),
            float | None,
            None,
            "Execution noise (overrides game.noise).",
            min=0.0,
            max=0.5,
        ),
    ),
    (
        "dry_run",
        Opt(
            ("--dry-run",),
            bool,
            False,
            "Print the plan, expected LLM calls and tokens; write nothing.",
        ),
    ),
    (
        "output_dir",
        Opt(("--output-dir", "-o"), Path | None, None, "Write here instead of run.output_dir."),
    ),
    (
        "overwrite",
        Opt(("--overwrite",), bool, False, "Replace the artifacts of an existing output dir."),
    ),
    (
        "resume",
        Opt(
            ("--resume",),
            bool,
            False,
            "Continue a stopped run in its output dir, keeping finished games.",
        ),
    ),
    ("concurrency", CONCURRENCY),
    ("no_cache", NO_CACHE),
    ("cache_dir", CACHE_DIR),
    ("backend", BACKEND),
    ("ray_address", RAY_ADDRESS),
]
# The options of `resume RUN_DIR`.
RESUME_OPTIONS: list[tuple[str, Opt]] = [
    ("concurrency", CONCURRENCY),
    ("no_cache", NO_CACHE),
    ("cache_dir", CACHE_DIR),
    ("backend", BACKEND),
    ("ray_address", RAY_ADDRESS),
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


@dataclass(frozen=True)
class RunCommand:
    """A command that runs a kind of config: `CONFIG`, its own options, then RUN_OPTIONS (its
    help text and example are with its typer declaration in `pdbench.cli_app`)."""

    kind: str
    own: list[tuple[str, Opt]]


COMMANDS: dict[str, RunCommand] = {
    "run": RunCommand(
        "experiment",
        [
            (
                "replicates",
                Opt(
                    ("--replicates", "-r"),
                    int | None,
                    None,
                    "Replicates per condition (overrides it).",
                    min=1,
                ),
            ),
            (
                "shard",
                Opt(
                    ("--shard",),
                    str | None,
                    None,
                    "i/K: play only shard i of K of the games (a cluster job array); "
                    "join the shard directories with `pdbench merge`.",
                ),
            ),
        ],
    ),
    "tournament": RunCommand(
        "tournament",
        [
            (
                "repetitions",
                Opt(
                    ("--repetitions", "-r"),
                    int | None,
                    None,
                    "Matches per pair (overrides it).",
                    min=1,
                ),
            ),
            (
                "log_rounds",
                Opt(
                    ("--log-rounds",),
                    bool,
                    False,
                    "Write every round of every match to rounds.jsonl.",
                ),
            ),
        ],
    ),
    "evolve": RunCommand(
        "evolution",
        [
            (
                "generations",
                Opt(
                    ("--generations", "-g"),
                    int | None,
                    None,
                    "Generations (overrides it).",
                    min=0,
                ),
            ),
            (
                "seeds",
                Opt(
                    ("--seeds",),
                    int | None,
                    None,
                    "Independent runs of the process on the same matches; >1 writes "
                    "fixation.parquet (overrides evolution.seeds).",
                    min=1,
                ),
            ),
        ],
    ),
}

_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def echo(line: str, err: bool = False) -> None:
    """Print one line as typer's `echo` does: flushed, ANSI styles removed when the stream is
    not a terminal."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    if not stream.isatty():
        line = _ANSI.sub("", line)
    stream.write(line + "\n")
    stream.flush()


def err(line: str) -> None:
    """Print one line to stderr, secrets redacted."""
    echo(redact(line), err=True)


def load(config: Path, kind: str | None, overrides: dict[str, Any] | None = None) -> LoadedConfig:
    """Load and check a config of `kind` (any kind when None) with dotted overrides (a None
    value is no override); its warnings go to stderr."""
    from pdbench.runners.config.loader import load_config

    loaded = load_config(
        config, kind, {k: v for k, v in (overrides or {}).items() if v is not None}
    )
    for warning in loaded.warnings:
        err(f"warning: {config}: {warning}")
    return loaded


def start(
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
        echo(describe_plan(loaded))
        echo("dry run: nothing was written")
        return
    from pdbench.runners.engine.progress import run_progress
    from pdbench.runners.start import RunOptions, check_options, report
    from pdbench.runners.start import start as start_run

    units = ("rounds", "generations") if loaded.kind == "evolution" else ("rounds",)
    options = RunOptions(output_dir, overwrite, resume, cache_dir, not no_cache, concurrency)
    options.backend, options.ray_address = str(backend), ray_address
    check_options(options)  # refused before the progress bar shows
    with run_progress(units) as progress:
        options.progress = progress
        options.progress_stats = progress.watch
        result = start_run(loaded, options)
    for line in report(loaded, result, resumed=resume):
        echo(redact(line))


def run_config(kind: str, config: Path, **options: Any) -> None:
    """A run command (`COMMANDS`): load `config` as `kind` with the options that override config
    values, then start it with the rest."""
    overrides = {
        OVERRIDES[k]: v
        for k, v in options.items()
        if k in OVERRIDES and v is not None and v is not False
    }
    flags = {k: v for k, v in options.items() if k not in OVERRIDES}
    start(load(config, kind, overrides), **flags)


def validate_config(config: Path) -> None:
    """`pdbench validate CONFIG`: check a config of any kind and print its plan."""
    from pdbench.runners.plan import describe_plan

    loaded = load(config, None)
    echo(f"{config}: valid {loaded.kind} config")
    echo(describe_plan(loaded))


def resume_dir(run_dir: Path, **options: Any) -> None:
    """`pdbench resume RUN_DIR`: continue a stopped run with the config and overrides its
    manifest names."""
    from pdbench.storage.run_dir import read_manifest, run_kind

    kind = run_kind(run_dir)
    manifest = read_manifest(run_dir, kind)
    overrides = manifest.get("overrides")
    if overrides is None and kind == "experiment":  # a run from before overrides were recorded
        overrides = {"experiment.replicates": manifest.get("replicates")}
    if not manifest.get("config_path"):
        raise RunError(f"{run_dir}: the manifest names no config_path; cannot resume")
    loaded = load(Path(manifest["config_path"]), kind, overrides or {})
    # without --cache-dir or --no-cache, the cache the run used (the front door's rule)
    start(loaded, output_dir=run_dir, resume=True, **options)


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM is handled like Ctrl-C: the run stops, keeps what it finished, says how to go on."""
    raise KeyboardInterrupt


def main() -> None:
    """Console entry point: run the command, turning library errors into exit code 2."""
    # One BLAS thread (unless the user chose otherwise), set before NumPy loads: the matrix
    # products of a command are small (a tournament's bootstrap: 2,000 x 100 x players), and a
    # second OpenBLAS thread costs more than the product (7 ms of CPU, then busy-waiting) while
    # giving the same values.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    debug = "--debug" in sys.argv[1:]
    signal.signal(signal.SIGTERM, _terminated)
    try:
        from pdbench.cli_fast import parse, run_parsed

        parsed = parse(sys.argv[1:])
        if parsed is not None:
            run_parsed(parsed)
        else:
            from pdbench.cli_app import app

            app()
    except PdbenchError as exc:
        if debug:
            raise
        for line in exc.lines():
            err(line)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err("interrupted")
        sys.exit(130)
    except BrokenPipeError:  # output piped into a command that stopped reading (head)
        sys.stderr.close()
        sys.exit(1)
    except OSError as exc:  # a path the system refuses (too long, unreadable, ...)
        if debug:
            raise
        err(os_error_line(exc))
        sys.exit(2)


def os_error_line(exc: OSError) -> str:
    """An operating system error as one line: the path (cut to 100 characters) and why."""
    why = exc.strerror or str(exc)
    if exc.filename is None:
        return f"error: {why}"
    name = str(exc.filename)
    shown = name if len(name) <= 100 else f"{name[:97]}..."
    return f"{shown}: {why}"


def __getattr__(name: str) -> Any:
    """`pdbench.cli.app` (the typer app), imported when first asked for."""
    if name == "app":
        from pdbench.cli_app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
