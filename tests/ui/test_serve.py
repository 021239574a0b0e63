"""`python -m pdbench.ui.serve streamlit run APP ...` (how `pdbench ui` starts the app): the app's
heavy imports are done before Streamlit's command line runs, and that command line gets the
arguments unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from tests.ui.sample import REPO

from pdbench.ui import serve

PROBE = """
import sys
from pdbench.ui import serve
before = {name for name in serve.WARM_MODULES if name in sys.modules}
serve.warm()
print(sorted(before), sorted(name for name in serve.WARM_MODULES if name in sys.modules))
"""


REPL_PROBE = """
from streamlit import delta_generator
from pdbench.ui import serve
before = delta_generator._use_warning_has_been_displayed
serve.skip_repl_check()
print(before, delta_generator._use_warning_has_been_displayed)
"""


def test_warm_imports_the_app_modules_without_cache_warnings() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    before, after = proc.stdout.strip().split("] [")
    assert "pdbench.ui.tabs" not in before and "altair" not in before
    assert all(f"'{name}'" in after for name in serve.WARM_MODULES), proc.stdout
    # the cached loaders are declared before the runtime exists: Streamlit's warning is muted
    assert "No runtime found" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("prefix", [["streamlit"], []], ids=["streamlit-prefix", "bare"])
def test_main_hands_streamlit_the_arguments(
    prefix: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def fake_cli(prog_name: str) -> None:
        seen["argv"], seen["prog"] = list(sys.argv), prog_name
        raise SystemExit(3)

    monkeypatch.delenv(serve.FILE_WATCHER_ENV, raising=False)
    monkeypatch.setattr(serve, "warm", lambda: seen.setdefault("warmed", True))
    monkeypatch.setattr("streamlit.web.cli.main", fake_cli)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    args = ["run", "app.py", "--server.port", "1", "--", "--run-dir", "x"]
    assert serve.main([*prefix, *args]) == 3
    assert seen == {"warmed": True, "argv": ["streamlit", *args], "prog": "streamlit"}
    assert os.environ[serve.FILE_WATCHER_ENV] == "none"  # a server of finished runs


def test_main_keeps_a_file_watcher_the_user_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(serve.FILE_WATCHER_ENV, "poll")
    monkeypatch.setattr(serve, "warm", lambda: None)
    monkeypatch.setattr("streamlit.web.cli.main", lambda prog_name: None)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    assert serve.main(["run", "app.py"]) == 0
    assert os.environ[serve.FILE_WATCHER_ENV] == "poll"


def test_the_repl_check_is_marked_done() -> None:
    """Streamlit's first element no longer walks the call stack (`inspect.stack`)."""
    proc = subprocess.run(
        [sys.executable, "-c", REPL_PROBE],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.stdout.split() == ["False", "True"], proc.stdout
