"""The llama.cpp child removes its log directory on every way out once its parent has died.

CI saw an orphaned server leave `/tmp/pdbench-llamacpp-*` behind: the parent's death brings EOF
and SIGTERM together, and either the shutdown's hard-exit timer or a SIGTERM landing during the
removal skipped it. These tests drive both paths without loading a model.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pdbench.agents.providers import llamacpp_server

NOT_OUR_PARENT = 1  # a parent pid that is not ours: the server's parent has died


def test_the_hard_exit_after_a_hung_shutdown_removes_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log_dir = tmp_path / "pdbench-llamacpp-x"
    log_dir.mkdir()
    (log_dir / "server.log").write_text("llama.cpp output\n")
    exits: list[int] = []
    monkeypatch.setattr(llamacpp_server, "EXIT_GRACE_S", 0.01)
    monkeypatch.setattr(llamacpp_server.os, "_exit", exits.append)
    llamacpp_server._hard_exit_later(NOT_OUR_PARENT, str(log_dir))
    deadline = time.monotonic() + 10
    while not exits and time.monotonic() < deadline:
        time.sleep(0.01)
    assert exits == [0]
    assert not log_dir.exists()


def test_the_hard_exit_keeps_the_log_while_the_parent_lives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    log_dir = tmp_path / "log"
    log_dir.mkdir()
    exits: list[int] = []
    monkeypatch.setattr(llamacpp_server, "EXIT_GRACE_S", 0.01)
    monkeypatch.setattr(llamacpp_server.os, "_exit", exits.append)
    llamacpp_server._hard_exit_later(os.getppid(), str(log_dir))
    deadline = time.monotonic() + 10
    while not exits and time.monotonic() < deadline:
        time.sleep(0.01)
    assert exits == [0]
    assert log_dir.exists()  # the living parent removes it (and reads it on a failed start)


def test_a_sigterm_during_the_removal_does_not_stop_it(tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    for i in range(50):
        (log_dir / f"f{i}").write_text("x")
    code = textwrap.dedent(
        f"""
        import os, shutil, signal, time
        from pdbench.agents.providers import llamacpp_server as s
        real_rmtree = shutil.rmtree
        def rmtree_hit_by_sigterm(path, ignore_errors=False):
            os.kill(os.getpid(), signal.SIGTERM)  # the parent's death signal, mid-removal
            time.sleep(0.05)
            real_rmtree(path, ignore_errors=ignore_errors)
        s.shutil.rmtree = rmtree_hit_by_sigterm
        s._die_with_parent = lambda parent_pid, log_dir: None
        s.serve = lambda args, out: 0
        argv = ["--model", "m.gguf", "--alias", "m", "--n-ctx", "64", "--slots", "1",
                "--parent-pid", "{NOT_OUR_PARENT}", "--log-dir", {str(log_dir)!r}]
        raise SystemExit(s.main(argv))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert not log_dir.exists()


FAKE_XLLAMACPP = """
class _Part:
    pass


class CommonParams:
    def __init__(self):
        self.model, self.cpuparams, self.cpuparams_batch = _Part(), _Part(), _Part()


class Server:
    def __init__(self, params):
        self.listening_address = "http://127.0.0.1:9"
"""


def _start_child(tmp_path: Path, log_dir: Path) -> subprocess.Popen[bytes]:
    """The server child with a stand-in xllamacpp (no model), this process as its parent."""
    import os

    fake = tmp_path / "fake"
    fake.mkdir(exist_ok=True)
    if not (fake / "xllamacpp.py").exists():
        (fake / "xllamacpp.py").write_text(FAKE_XLLAMACPP)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), *sys.path])}
    argv = ["--model", "m.gguf", "--alias", "m", "--n-ctx", "64", "--slots", "1"]
    argv += ["--parent-pid", str(os.getpid()), "--log-dir", str(log_dir)]
    child = subprocess.Popen(
        [sys.executable, "-m", "pdbench.agents.providers.llamacpp_server", *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert child.stdout is not None
    assert child.stdout.readline().startswith(b"listening http")
    return child


def test_a_pipe_closed_without_the_stop_word_means_the_parent_died(tmp_path: Path) -> None:
    """A dying parent's pipe closes before the kernel reparents the child: the child cannot
    rely on getppid (here its parent, this test, is alive: the check alone would keep the log)
    and removes its log because no stop word came."""
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    child = _start_child(tmp_path, log_dir)
    assert child.stdin is not None
    child.stdin.close()  # as the kernel does for a parent killed with SIGKILL
    assert child.wait(timeout=60) == 0
    assert not log_dir.exists()


def test_a_parent_that_stops_the_server_keeps_its_log_to_itself(tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    child = _start_child(tmp_path, log_dir)
    assert child.stdin is not None
    child.stdin.write(llamacpp_server.STOP_WORD + b"\n")
    child.stdin.close()
    assert child.wait(timeout=60) == 0
    assert log_dir.exists()  # the parent removes it (or keeps it after a failed start)


def test_a_sigterm_while_serving_ends_the_server_and_the_living_parent_keeps_the_log(
    tmp_path: Path,
) -> None:
    import signal

    log_dir = tmp_path / "log"
    log_dir.mkdir()
    child = _start_child(tmp_path, log_dir)
    child.send_signal(signal.SIGTERM)  # the parent's stop, after its stop word went unread
    assert child.wait(timeout=60) == 0
    assert log_dir.exists()  # the parent is alive: the log is its to keep or remove


SIGTERM_IN_SHUTDOWN = """
import os, signal


class Server:
    def __init__(self, params):
        self.listening_address = "http://127.0.0.1:9"

    def __del__(self):  # the parent's death signal lands during the server's own shutdown
        os.kill(os.getpid(), signal.SIGTERM)
"""


def test_the_death_signal_during_the_shutdown_does_not_keep_the_log(tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "xllamacpp.py").write_text(
        FAKE_XLLAMACPP.split("class Server")[0] + SIGTERM_IN_SHUTDOWN
    )
    child = _start_child(tmp_path, log_dir)
    assert child.stdin is not None
    child.stdin.close()  # no stop word: the parent died
    assert child.wait(timeout=60) == 0
    assert not log_dir.exists()
