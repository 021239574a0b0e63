"""Where a first page load's time goes, for `data_path.py --breakdown`: the moments of one fresh
page load in Chromium, from `page.goto` to the first drawn chart, and the CPU each side used.

Moments (seconds after `page.goto` was called):
  html          the page's HTML received (Navigation Timing `responseEnd`)
  scripts       the last static script received before the websocket opened (Streamlit's
                bundle is ~60 JavaScript modules)
  dom_ready     DOMContentLoaded handled: the bundle's modules are evaluated
  ws_open       the app's websocket opened (the frontend has started)
  first_msg     its first message from the server (the session has started)
  chart_msg     the first message that carries a Vega-Lite spec: the server has run the page's
                script up to its first chart
  chart         the first chart drawn (data_path.FIRST_CHART)

CPU seconds from `page.goto` to the chart: the server process (`server_cpu`, and
`server_cpu_chart_msg` up to the chart's message), every Chromium process of this browser
(`browser_cpu`), and the main thread of the page's renderer (`renderer_main_cpu`: where the
frontend's JavaScript, Vega, style and layout run). And `animations`: the CSS animations running
when the chart was found (each one makes Chromium draw and composite frame after frame).

The Navigation and Resource Timing values are relative to the page's time origin, which is taken
to be the moment `page.goto` was called (they differ by the time Playwright takes to ask
Chromium, a few milliseconds).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHART_SPEC = b"vega-lite"  # in the first chart's delta: its spec's "$schema" URL
PAGE_TIMING = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const scripts = performance.getEntriesByType('resource')
    .filter(e => e.initiatorType === 'script' || e.name.endsWith('.js'))
    .map(e => e.responseEnd);
  const running = document.getAnimations().filter(a => a.playState === 'running').length;
  return {html: nav.responseEnd, dom_ready: nav.domContentLoadedEventEnd, scripts: scripts,
          animations: running};
}"""
PHASES = ("html", "scripts", "dom_ready", "ws_open", "first_msg", "chart_msg", "chart")
CPUS = ("server_cpu_chart_msg", "server_cpu", "browser_cpu", "renderer_main_cpu")
COUNTS = ("animations",)


def _ticks(stat: str, first: int) -> float:
    """User + system seconds from a /proc stat line (fields after the command's ')')."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[first]) + int(fields[first + 1])) / os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """User + system CPU seconds a live process has used so far."""
    return _ticks(Path(f"/proc/{pid}/stat").read_text(), 11)


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def browser_cpu(ancestor: int) -> tuple[float, dict[int, float]]:
    """CPU seconds of the Chromium processes below `ancestor` (this process: Playwright's driver
    starts the browser), and those of each renderer's main thread (by renderer pid)."""
    total, renderers = 0.0, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            if b"chromium" not in command:
                continue
            up, found = pid, False
            for _ in range(8):
                up = _parent(up)
                if up == ancestor:
                    found = True
                    break
                if up <= 1:
                    break
            if not found:
                continue
            total += process_cpu(pid)
            if b"--type=renderer" in command:
                renderers[pid] = _ticks(Path(f"/proc/{pid}/task/{pid}/stat").read_text(), 11)
        except (OSError, ValueError, IndexError):
            continue  # a process that has just ended
    return total, renderers


@dataclass
class Phases:
    """One page load's moments (seconds after `page.goto`) and CPU seconds (see the module)."""

    html: float = float("nan")
    scripts: float = float("nan")
    dom_ready: float = float("nan")
    ws_open: float = float("nan")
    first_msg: float = float("nan")
    chart_msg: float = float("nan")
    chart: float = float("nan")
    server_cpu_chart_msg: float = float("nan")
    server_cpu: float = float("nan")
    browser_cpu: float = float("nan")
    renderer_main_cpu: float = float("nan")
    animations: float = float("nan")

    def line(self) -> str:
        """The figures on one line."""
        moments = " ".join(f"{name} {getattr(self, name):.2f}" for name in PHASES)
        cpus = " ".join(f"{name} {getattr(self, name):.2f}" for name in CPUS)
        return f"{moments} | CPU s: {cpus} | animations {self.animations:.0f}"


@dataclass
class PhaseRecorder:
    """Records the moments of one page load: `attach` before `start`, `start` just before
    `page.goto`, `finish` once the chart is drawn."""

    server_pid: int
    clock: Callable[[], float] = time.perf_counter
    start_time: float = 0.0
    server_cpu0: float = 0.0
    browser_cpu0: float = 0.0
    renderers0: dict[int, float] = field(default_factory=dict)
    phases: Phases = field(default_factory=Phases)

    def attach(self, page: Any) -> None:
        """Listen to the page's websockets."""
        page.on("websocket", self._on_websocket)

    def start(self) -> None:
        """Take the starting CPU counters and the time; call just before `page.goto`."""
        self.browser_cpu0, self.renderers0 = browser_cpu(os.getpid())
        self.server_cpu0 = process_cpu(self.server_pid)
        self.start_time = self.clock()

    def _since(self) -> float:
        return self.clock() - self.start_time

    def _on_websocket(self, ws: Any) -> None:
        if ws.url.endswith("/_stcore/stream") and self.phases.ws_open != self.phases.ws_open:
            self.phases.ws_open = self._since()
            ws.on("framereceived", self._on_frame)

    def _on_frame(self, payload: str | bytes) -> None:
        phases = self.phases
        if phases.first_msg != phases.first_msg:  # NaN: the first one
            phases.first_msg = self._since()
        body = payload if isinstance(payload, bytes) else payload.encode()
        if phases.chart_msg != phases.chart_msg and CHART_SPEC in body:
            phases.chart_msg = self._since()
            phases.server_cpu_chart_msg = process_cpu(self.server_pid) - self.server_cpu0

    def finish(self, page: Any, chart_seconds: float) -> Phases:
        """The CPU counters at the chart (call right after it is found) and the page's own
        timings."""
        phases = self.phases
        phases.chart = chart_seconds
        phases.server_cpu = process_cpu(self.server_pid) - self.server_cpu0
        total, renderers = browser_cpu(os.getpid())
        phases.browser_cpu = total - self.browser_cpu0
        phases.renderer_main_cpu = max(
            (cpu - self.renderers0.get(pid, 0.0) for pid, cpu in renderers.items()), default=0.0
        )
        timing = page.evaluate(PAGE_TIMING)
        phases.html = timing["html"] / 1000
        phases.dom_ready = timing["dom_ready"] / 1000
        before_ws = [t / 1000 for t in timing["scripts"] if t / 1000 <= phases.ws_open]
        phases.scripts = max(before_ws, default=float("nan"))
        phases.animations = timing.get("animations", float("nan"))
        return phases
