"""llama.cpp's HTTP server (from the `xllamacpp` wheel) in a child process of pdbench.

Run by the llamacpp provider as `python -m pdbench.agents.providers.llamacpp_server ...`, never
by hand. The child loads the GGUF file, serves the OpenAI-compatible API on 127.0.0.1 on a free
port, writes one line on its stdout (`listening http://127.0.0.1:PORT`, or `error: ...`) and then
serves until its stdin closes (the parent's stop, or the parent's death: the kernel closes the
pipe), SIGTERM, or, on Linux, the death of the parent (PR_SET_PDEATHSIG), so the server never
outlives pdbench, even after `kill -9`. A parent that stops the server writes `stop` before
closing the pipe and removes the log directory itself; a pipe that closes without it means the
parent died, and the server removes its log directory on the way out (the kernel closes a dying
parent's pipes before it reparents its children, so `getppid` alone cannot tell yet).

llama.cpp's own output (on stderr, and anything it would print on stdout) goes to the log file
the parent gave as stderr, never to the user's terminal.

Importing this module does nothing (the provider registry imports every module of the package).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import threading
from typing import TextIO

PR_SET_PDEATHSIG = 1  # linux/prctl.h
EXIT_GRACE_S = 10.0  # how long the server's own shutdown may take before the process just ends
STOP_WORD = b"stop"  # what a parent that stops the server writes before closing its stdin
PARENT_GONE = threading.Event()  # set when stdin closed without the stop word


def _clean_up_after_parent(parent_pid: int, log_dir: str | None) -> None:
    """A parent that died cannot remove our log directory: do it ourselves."""
    if log_dir and (PARENT_GONE.is_set() or os.getppid() != parent_pid):
        shutil.rmtree(log_dir, ignore_errors=True)


def _die_with_parent(parent_pid: int, log_dir: str | None) -> None:
    """Ask Linux to send SIGTERM when the parent dies; exit now if it already has."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):
            pass  # stdin EOF still stops the server
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        _clean_up_after_parent(parent_pid, log_dir)
        os._exit(0)


def _on_sigterm(signum: int, frame: object) -> None:
    """While the model loads: stop at once (the removal of the log is in `main`'s finally)."""
    raise SystemExit(0)


SIGTERM_SEEN = [False]  # set by the serving handler: a plain flag, no lock and no exception


def _note_sigterm(signum: int, frame: object) -> None:
    """While serving: note the SIGTERM and let the wait loop end. Raising here instead could
    land anywhere (Python runs a handler at the next bytecode check, e.g. inside a finally
    block after the server's C++ shutdown) and cut the log's removal short."""
    SIGTERM_SEEN[0] = True


def _read_until_eof(closed: threading.Event) -> None:
    """Read stdin (the raw descriptor: no buffer lock held at exit) until it closes; without
    the stop word first, the parent died."""
    told = b""
    while chunk := os.read(0, 65536):
        told = (told + chunk)[-64:]
    if STOP_WORD not in told:
        PARENT_GONE.set()
    closed.set()


def _wait_until_told() -> None:
    """Serve until stdin closes or a SIGTERM comes; neither raises in the main thread."""
    signal.signal(signal.SIGTERM, _note_sigterm)
    closed = threading.Event()
    threading.Thread(target=_read_until_eof, args=(closed,), daemon=True).start()
    while not closed.wait(0.1) and not SIGTERM_SEEN[0]:
        pass


def _exit_now(parent_pid: int, log_dir: str | None) -> None:
    """End the process at once, removing the log directory first if the parent died."""
    _clean_up_after_parent(parent_pid, log_dir)
    os._exit(0)


def _hard_exit_later(parent_pid: int, log_dir: str | None) -> None:
    """End the process if the server's shutdown hangs (the log still goes if the parent died)."""
    timer = threading.Timer(EXIT_GRACE_S, _exit_now, args=(parent_pid, log_dir))
    timer.daemon = True
    timer.start()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m pdbench.agents.providers.llamacpp_server")
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--alias", required=True, help="the model name the server lists")
    parser.add_argument("--n-ctx", type=int, required=True, help="context tokens per slot")
    parser.add_argument("--slots", type=int, required=True, help="parallel requests (slots)")
    parser.add_argument(
        "--threads", type=int, default=None, help="CPU threads (default: llama.cpp's)"
    )
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--log-dir", default=None, help="removed at exit if the parent died")
    return parser.parse_args(argv)


def serve(args: argparse.Namespace, out: TextIO) -> int:
    """Start the server, report its address on `out`, serve until told to stop."""
    try:
        import xllamacpp
    except ImportError as exc:
        out.write(f"error: xllamacpp is not installed ({exc})\n")
        out.flush()
        return 3
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.n_parallel = args.slots
    params.n_ctx = args.n_ctx * args.slots  # llama.cpp splits the context between its slots
    if args.threads is not None:
        params.cpuparams.n_threads = args.threads
        params.cpuparams_batch.n_threads = args.threads
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # a free port, chosen by the OS
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, the log says more
        out.write(f"error: {exc}\n")
        out.flush()
        return 1
    try:
        out.write(f"listening {server.listening_address}\n")
        out.flush()
        _wait_until_told()
    finally:
        _hard_exit_later(args.parent_pid, args.log_dir)
        # an orphan removes its log before the C++ shutdown, whatever that shutdown does
        _clean_up_after_parent(args.parent_pid, args.log_dir)
        del server  # stops the HTTP server and frees the model
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Our stdout is the pipe to the parent: keep it for the one line, and send whatever the
    # C++ code prints on stdout to the log (stderr) like the rest of its output.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    signal.signal(signal.SIGTERM, _on_sigterm)
    # Ctrl-C reaches the whole foreground process group: pdbench handles it and stops us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(args.parent_pid, args.log_dir)
    try:
        return serve(args, out)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    finally:
        # The parent's death brings both EOF and SIGTERM: a SIGTERM that lands during the
        # removal would stop it half-way, so it is ignored from here on.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _clean_up_after_parent(args.parent_pid, args.log_dir)


if __name__ == "__main__":
    sys.exit(main())
