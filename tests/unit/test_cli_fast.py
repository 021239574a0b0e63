"""The command lines `pdbench.cli_fast` reads without typer: each one it takes must reach the
command with exactly the arguments typer would give it, and every other one must be left to
typer (help, errors, unusual spellings). Typer itself is the independent reference here: each
accepted command line is also parsed by the typer app, whose commands are replaced by recorders.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pdbench import cli_app, cli_dirs
from pdbench.cli import Backend
from pdbench.cli_fast import parse

REPO = Path(__file__).resolve().parents[2]

ACCEPTED = [
    ["run", "c.yaml"],
    ["validate", "configs/experiment.yaml"],
    [
        "--debug",
        "run",
        "c.yaml",
        "--seed",
        "7",
        "--noise",
        "0.05",
        "-o",
        "out dir",
        "--overwrite",
        "-c",
        "4",
        "--no-cache",
        "--cache-dir",
        "cache",
        "--backend",
        "ray",
        "--ray-address",
        "auto",
        "-r",
        "3",
        "--shard",
        "1/2",
    ],
    ["run", "--replicates=2", "--output-dir=o", "c.yaml", "--noise", "0.5", "--seed", "0"],
    ["tournament", "--repetitions=5", "t.yaml", "--log-rounds", "--dry-run", "--noise", ".25"],
    ["tournament", "t.yaml", "-r", "1", "--concurrency", "1", "--resume"],
    ["evolve", "e.yaml", "-g", "0", "--seeds", "2", "--noise", "0"],
    ["resume", "runs/r1", "-c", "2", "--backend", "local", "--no-cache"],
    ["resume", "runs/r1", "--cache-dir=c", "--ray-address", "10.0.0.1:6379"],
    ["aggregate", "runs/r1"],
    ["--debug", "profile", "runs/r1", "--library", "all", "--top", "5"],
    ["profile", "--top=1", "runs/r1"],
    ["report", "runs/r1", "-o", "out.html"],
    ["report", "runs/r1"],
]

LEFT_TO_TYPER = [
    [],
    ["--help"],
    ["run", "--help"],
    ["--debug"],
    ["run"],  # missing CONFIG
    ["run", "a.yaml", "b.yaml"],  # an extra argument
    ["run", ""],
    ["run", "a.yaml", "--seed", "-1"],  # below min
    ["run", "a.yaml", "-r", "0"],
    ["evolve", "a.yaml", "--seeds", "0"],
    ["run", "a.yaml", "--noise", "0.6"],  # above max
    ["run", "a.yaml", "--noise", "1e-2"],  # a spelling typer reads, left to it
    ["run", "a.yaml", "--seed", "+3"],
    ["run", "a.yaml", "--seed", "1", "--seed", "2"],  # repeated
    ["run", "a.yaml", "--overwrite=true"],  # a value on a flag
    ["run", "a.yaml", "-c4"],  # a value joined to a short option
    ["run", "a.yaml", "-c=4"],
    ["run", "a.yaml", "--bogus"],
    ["run", "a.yaml", "--backend", "Ray"],
    ["run", "a.yaml", "--debug"],  # --debug belongs before the command
    ["run", "a.yaml", "-o"],  # no value
    ["run", "a.yaml", "--"],
    ["run", "-", "--overwrite"],
    ["tournament", "a.yaml", "--shard", "1/2"],  # another command's option
    ["run", "a.yaml", "--log-rounds"],
    ["resume", "d", "--seed", "1"],
    ["validate", "a.yaml", "--overwrite"],
    ["aggregate", "runs/r1", "runs/r2"],
    ["aggregate"],
    ["profile", "runs/r1", "--top", "0"],  # below min
    ["profile", "runs/r1", "--library"],
    ["report", "runs/r1", "--output"],
    ["report", "runs/r1", "--overwrite"],
    ["compare", "runs/r1"],
    ["cache", "stats"],
    ["ui", "runs/r1"],
]


def typer_call(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[str, tuple, dict]:
    """(function name, positional args, options) the typer app calls for `pdbench ARGS`."""
    calls: list[tuple[str, tuple, dict]] = []
    for module, names in (
        (cli_app, ("run_config", "resume_dir", "validate_config")),
        (cli_dirs, ("aggregate_dir", "profile_dir", "report_dir")),
    ):
        for name in names:
            monkeypatch.setattr(
                module, name, lambda *a, _n=name, **k: calls.append((_n, a, k)), raising=True
            )
    result = CliRunner().invoke(cli_app.app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(calls) == 1
    return calls[0]


@pytest.mark.parametrize("args", ACCEPTED, ids=lambda a: " ".join(a)[:40])
def test_an_accepted_command_line_reaches_the_command_as_typer_would(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed = parse(args)
    assert parsed is not None
    name, typer_args, typer_options = typer_call(args, monkeypatch)
    assert parsed.run.__name__ == name
    assert parsed.args == typer_args
    assert parsed.options == typer_options
    for key, value in parsed.options.items():  # the same types, not only equal values
        assert type(value) is type(typer_options[key]), key


def test_the_values_are_read_as_written() -> None:
    """By hand, for the long command line above: what each option means."""
    parsed = parse(ACCEPTED[2])
    assert parsed is not None
    assert parsed.args == ("experiment", Path("c.yaml"))
    assert parsed.options == {
        "replicates": 3,
        "shard": "1/2",
        "seed": 7,
        "noise": 0.05,
        "dry_run": False,
        "output_dir": Path("out dir"),
        "overwrite": True,
        "resume": False,
        "concurrency": 4,
        "no_cache": True,
        "cache_dir": Path("cache"),
        "backend": Backend.ray,
        "ray_address": "auto",
    }


@pytest.mark.parametrize("args", LEFT_TO_TYPER, ids=lambda a: " ".join(a)[:40] or "nothing")
def test_any_other_command_line_is_left_to_typer(args: list[str]) -> None:
    assert parse(args) is None


PROBE = """
import json, sys
sys.argv = ["pdbench", *json.loads(sys.argv[1])]
import pdbench.cli
code = None
try:
    pdbench.cli.main()
except SystemExit as exc:
    code = exc.code
print("PROBE " + json.dumps({"code": code, "typer": "typer" in sys.modules}))
"""


def probe(args: list[str]) -> dict[str, Any]:
    """Exit code of `pdbench ARGS` in a fresh interpreter, and whether it imported typer."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = next(x for x in proc.stdout.splitlines() if x.startswith("PROBE "))
    return json.loads(line.removeprefix("PROBE "))


def test_validate_starts_without_typer_and_help_with_it() -> None:
    assert probe(["validate", "configs/experiment.yaml"]) == {"code": 0, "typer": False}
    assert probe(["--help"]) == {"code": 0, "typer": True}
    # a run directory's command: the error of a missing directory, without typer
    assert probe(["aggregate", "no/such/run"]) == {"code": 2, "typer": False}
    # a bad option: typer's usage error (exit code 2), so typer was imported
    assert probe(["validate", "configs/experiment.yaml", "--bogus"]) == {"code": 2, "typer": True}
