"""Driving the app in a real browser: a Streamlit server subprocess and Debian's Chromium
through Playwright. Used by test_browser.py and screenshots.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "src" / "pdbench" / "ui" / "streamlit_app.py"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited early with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"streamlit did not listen on port {port} within {timeout:.0f}s")


@contextmanager
def streamlit_server(run_dir: Path, cwd: Path, log_path: Path) -> Iterator[str]:
    """Start the app on a free port with `--run-dir`, yield its URL; always stop it."""
    port = free_port()
    command = [  # as `pdbench ui` launches it: streamlit run after the app's imports
        sys.executable,
        "-m",
        "pdbench.ui.serve",
        "streamlit",
        "run",
        str(APP),
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--browser.gatherUsageStats",
        "false",
        "--",
        "--run-dir",
        str(run_dir),
    ]
    env = {k: v for k, v in os.environ.items() if k != "PDBENCH_RUN_DIR"}
    # this checkout's src/ first, by absolute path: the server runs in another directory, where
    # a relative PYTHONPATH (src:.) would leave the installed pdbench to be imported instead
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        try:
            _wait_for_port(port, proc, timeout=30)
            yield f"http://127.0.0.1:{port}"
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=5)


@contextmanager
def chromium_page(width: int = 1440, height: int = 1000) -> Iterator[tuple[Any, list[str]]]:
    """A Playwright page in Debian's Chromium and the list its console errors are collected in."""
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
            yield page, errors
        finally:
            browser.close()


def wait_idle(page: Any, timeout_ms: int = 30_000) -> None:
    """Wait until the script has finished its run and the page has settled."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    page.wait_for_timeout(300)
    page.wait_for_selector(
        '[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout_ms
    )
    page.wait_for_timeout(400)


def open_tab(page: Any, label: str) -> None:
    """Click a tab by its label and wait for the rerun."""
    page.get_by_role("tab", name=label).click()
    wait_idle(page)


def select_option(page: Any, widget_label: str, option_text: str) -> None:
    """Pick an option of a select box (by the box's label and part of the option text).

    Right after a tab switch the app may still rerun and redraw the box, which closes a list
    opened too early: the box is opened again (up to 5 times) until the option shows."""
    box = page.get_by_role("combobox", name=widget_label, exact=True)
    option = page.get_by_role("option").filter(has_text=option_text).first
    for _ in range(5):
        wait_idle(page)
        box.click()
        try:
            option.wait_for(state="visible", timeout=3_000)
        except Exception:  # noqa: BLE001 - the list closed under a rerun: open it again
            page.keyboard.press("Escape")
            continue
        option.click()
        wait_idle(page)
        return
    raise AssertionError(f"the option {option_text!r} of {widget_label!r} never showed")


def run_from_ui(page: Any, button: str) -> None:
    """Click a tab's run button and wait until the page says the run finished."""
    page.get_by_role("button", name=button).click()
    page.get_by_text("finished:", exact=False).wait_for(timeout=30_000)
    wait_idle(page)


def component(page: Any, selector: str, timeout_s: float = 30) -> Any:
    """The frame of the browser-side component (an st.iframe) whose document has `selector`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for frame in page.frames:
            if frame is page.main_frame or frame.is_detached():
                continue
            try:
                if frame.query_selector(selector) is not None:
                    return frame
            except Exception:  # noqa: BLE001 - a frame being replaced by a rerun
                continue
        page.wait_for_timeout(200)
    raise AssertionError(f"no component with {selector}")


def component_state(frame: Any) -> dict[str, Any]:
    """A replay's or evolution's frame on stage, last frame, playing flag, label and slider
    value, read at one instant."""
    return frame.evaluate(
        """() => ({
            frame: Number(ROOT.dataset.frame), last: Number(ROOT.dataset.last),
            playing: ROOT.dataset.playing === "1",
            label: document.getElementById("pdb-label").textContent,
            slider: Number(document.getElementById("pdb-scrub").value),
        })"""
    )
