"""Running the `pdbench` command from tests: in this process through the console entry point
(fast; output captured by pytest), or as a fresh process (for signals and true start-up)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def run_in_process(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`pdbench ARGS` through `pdbench.cli.main` in this process: (exit code, stdout, stderr)."""
    code = _main(args)
    out, err = capsys.readouterr()
    return code, out, err


def run_uncaptured(args: list[str]) -> tuple[int, str]:
    """`pdbench ARGS` in this process outside any test's capture (e.g. in a module fixture):
    (exit code, stderr); stdout is dropped."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = _main(args)
    return code, err.getvalue()


def _main(args: list[str]) -> int:
    """`pdbench.cli.main` with these arguments: its exit code."""
    from pdbench import cli

    old = sys.argv
    sys.argv = ["pdbench", *args]
    try:
        cli.main()
        return 0
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = old


def cli_env() -> dict[str, str]:
    """This process's environment, with unbuffered output for a child that may be killed."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONFAULTHANDLER"] = "1"  # a hung child shows its threads on SIGABRT
    return env


def run_process(
    args: list[str], cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`pdbench ARGS` in a fresh process; text output captured."""
    return subprocess.run(
        [sys.executable, "-m", "pdbench.cli", *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_process(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    """`pdbench ARGS` started in a fresh process (to be signalled or waited for)."""
    return subprocess.Popen(
        [sys.executable, "-m", "pdbench.cli", *args],
        cwd=cwd,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
        text=True,
    )


def default_sigint() -> None:
    """For a child that a test stops with SIGINT (Ctrl-C): the default disposition, whatever
    the test runner inherited (a shell's background job ignores SIGINT, and so would the child,
    which would then never stop)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def signal_when_lines(
    proc: subprocess.Popen[str], path: Path, lines: int, sig: int, timeout: float = 60
) -> None:
    """Send `sig` to a running `pdbench` once `path` has at least `lines` lines, then wait for
    it to end; fails when the process ended before (nothing could be interrupted)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if path.is_file() and path.read_bytes().count(b"\n") >= lines:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:  # say where it hangs: faulthandler dumps every thread
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate(timeout=30)
        raise AssertionError(
            f"pdbench did not end within {timeout:g} s of signal {sig}; its stderr ends:\n"
            f"{(err or '')[-8000:]}"
        ) from None
