"""The pdbench command line. Heavy libraries (pandas, pyarrow, streamlit, litellm) are imported
only inside the commands that need them, so `pdbench --help` and `pdbench validate` start fast.

`run`, `tournament` and `evolve` take the same options with the same meaning (output dir,
overwrite, resume, seed, noise, concurrency, cache); `resume RUN_DIR` continues a stopped run of
any kind. Library errors (bad config, bad run directory, a run that had to stop) print one line
per problem and exit with code 2, without a traceback; `--debug` shows the traceback.
"""

from __future__ import annotations

import inspect
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pdbench.errors import PdbenchError, RunError
from pdbench.redact import redact

if TYPE_CHECKING:
    from pdbench.runners.loader import LoadedConfig

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
CacheDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        help="Response cache directory (default $PDBENCH_CACHE_DIR, else .pdbench_cache).",
    ),
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
        help="With --backend ray: the cluster to join (ray.init address, e.g. auto or "
        "ray://host:10001); default: start a local Ray instance.",
    ),
]

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _err(line: str) -> None:
    typer.echo(redact(line), err=True)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    """Validate, run and inspect iterated Prisoner's Dilemma experiments, tournaments and
    evolutions."""


def _load(config: Path, kind: str | None, overrides: dict[str, Any] | None = None) -> LoadedConfig:
    from pdbench.runners.loader import load_config

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
    """Print the plan (dry run) or run the loaded config of any kind and print its report."""
    from pdbench.runners.plan import describe_plan

    if dry_run:
        typer.echo(describe_plan(loaded))
        typer.echo("dry run: nothing was written")
        return
    if resume and overwrite:
        raise RunError("--resume and --overwrite exclude each other")
    from pdbench.runners.modes import report, run_loaded
    from pdbench.runners.progress import run_progress
    from pdbench.runners.session import RunOptions

    if resume and cache_dir is None and not no_cache:  # the cache the run used
        run_dir = output_dir or Path(loaded.config.run.output_dir)
        cache_dir, no_cache = _run_cache(run_dir, loaded.kind, cache_dir, no_cache)
    units = ("rounds", "generations") if loaded.kind == "evolution" else ("rounds",)
    with run_progress(units) as progress:
        options = RunOptions(output_dir, overwrite, resume, cache_dir, not no_cache, concurrency)
        options.backend, options.ray_address = str(backend), ray_address
        options.progress = progress
        options.progress_stats = progress.watch
        result = run_loaded(loaded, options)
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
    cache = {"no_cache": no_cache, "cache_dir": cache_dir}  # else _start takes the run's own
    _start(
        loaded,
        output_dir=run_dir,
        resume=True,
        concurrency=concurrency,
        backend=backend,
        ray_address=ray_address,
        **cache,
    )


def _run_cache(
    run_dir: Path, kind: str, cache_dir: Path | None, no_cache: bool
) -> tuple[Path | None, bool]:
    """(cache_dir, no_cache) for resuming a run: the options given, else the cache the run used
    as its manifest records it (absolute, or null for --no-cache), else the default."""
    from pdbench.storage.run_dir import read_manifest
    from pdbench.storage.schema import MANIFEST_FILES

    if cache_dir is not None or no_cache or not (run_dir / MANIFEST_FILES[kind]).is_file():
        return cache_dir, no_cache
    try:
        manifest = read_manifest(run_dir, kind)
    except RunError:  # no run there, or not a readable one: the session says so
        return None, False
    if "cache_dir" not in manifest:  # a run from before the cache dir was recorded
        return None, False
    started = manifest["cache_dir"]
    return (Path(started), False) if started else (None, True)


cache_app = typer.Typer(help="Inspect or clear the response cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


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


@app.command(epilog="Example: pdbench aggregate data/runs/phase1_smoke_v1")
def aggregate(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.", show_default=False)],
) -> None:
    """Recompute an experiment's aggregates.parquet from rounds.jsonl (idempotent)."""
    from pdbench.runners.plan import fallback_warnings, summary_table
    from pdbench.storage.aggregate import aggregate_run_dir

    rows = aggregate_run_dir(run_dir)
    typer.echo(f"{run_dir}: aggregates.parquet rewritten ({len(rows)} rows)")
    typer.echo(summary_table(rows))
    for line in fallback_warnings(rows):
        typer.echo(line)


@app.command(epilog="Example: pdbench profile data/runs/phase1_smoke_v1")
def profile(
    run_dir: Annotated[
        Path, typer.Argument(help="An experiment run directory.", show_default=False)
    ],
    library: Annotated[
        str,
        typer.Option(
            "--library",
            help="builtin: the built-in policies and the memory-one family; all: also the "
            "Axelrod library's deterministic strategies (slower; the axelrod extra).",
        ),
    ] = "builtin",
    top: Annotated[int, typer.Option("--top", min=1, help="Strategies shown per agent.")] = 3,
) -> None:
    """Which strategy does each agent play like? Writes strategy_fit.parquet."""
    from pdbench.runners.profile import profile_run, strategy_table

    result = profile_run(run_dir, library)
    typer.echo(f"{run_dir}: {result.path.name} written ({len(result.rows)} rows)")
    typer.echo(strategy_table(result.rows, top))


@app.command(
    epilog="Example: pdbench compare data/runs/phase1_smoke_v1 --metric overall_cooperation_rate"
)
def compare(
    run_dir: Annotated[
        Path, typer.Argument(help="An experiment run directory.", show_default=False)
    ],
    metric: Annotated[
        str, typer.Option("--metric", help="A per-game metric of aggregates.parquet.")
    ] = "agent_a_cooperation_rate",
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="The condition to compare with (default: the first)."),
    ] = None,
) -> None:
    """Each condition against a baseline: difference, bootstrap interval, permutation p-value
    (Holm-adjusted); writes comparisons.parquet."""
    from pdbench.runners.compare import compare_run, comparison_table

    rows = compare_run(run_dir, metric, baseline)
    typer.echo(comparison_table(rows))
    typer.echo(f"{run_dir}: comparisons.parquet written ({len(rows)} rows)")


@app.command(epilog="Example: pdbench report data/runs/phase1_smoke_v1")
def report(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.", show_default=False)],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write here (default RUN_DIR/report.html)."),
    ] = None,
) -> None:
    """One self-contained HTML report of a run (no network needed to view it). For an
    experiment, runs `profile` and `compare` first when their artifacts are missing."""
    from pdbench.report import COMPARISONS_FILE, build_report
    from pdbench.storage.run_dir import run_kind
    from pdbench.storage.strategy_fit import STRATEGY_FIT_FILE

    if run_kind(run_dir) == "experiment":
        if not (run_dir / STRATEGY_FIT_FILE).is_file():
            from pdbench.runners.profile import profile_run

            profile_run(run_dir)
        if not (run_dir / COMPARISONS_FILE).is_file():
            from pdbench.runners.compare import compare_run

            compare_run(run_dir)
    path = build_report(run_dir, output)
    typer.echo(f"report written: {path}")


@app.command(epilog="Example: pdbench merge data/runs/full data/runs/shard1 data/runs/shard2")
def merge(
    out_dir: Annotated[
        Path, typer.Argument(help="The merged run directory (new).", show_default=False)
    ],
    shard_dirs: Annotated[
        list[Path],
        typer.Argument(help="The shard directories (`run --shard i/K`).", show_default=False),
    ],
) -> None:
    """Join the shards of an experiment into one run directory, equal to an unsharded run."""
    from pdbench.runners.merge import merge_shards

    manifest = merge_shards(out_dir, shard_dirs)
    totals = manifest["totals"]
    typer.echo(
        f"merged {len(shard_dirs)} shards -> {out_dir}: {totals['games']} games, "
        f"{totals['rounds']} rounds; aggregates.parquet written"
    )


@app.command(epilog="Example: pdbench ui data/runs/phase1_smoke_v1 --port 8501")
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
    command += ["--server.address", address]
    if address not in LOOPBACK:
        _err(
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


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM is handled like Ctrl-C: the run stops, keeps what it finished, says how to go on."""
    raise KeyboardInterrupt


def main() -> None:
    """Console entry point: run the app, turning library errors into exit code 2."""
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
