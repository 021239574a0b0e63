"""benchmarks/app_phases.py (`data_path.py --breakdown`) places each moment of a page load where
it happened: the first websocket message, the first one carrying a Vega-Lite spec, the scripts
received before the websocket opened; and the app's page as `pdbench ui` serves it."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


class FakeSocket:
    """A websocket that hands its frame listener to the test."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.listeners: dict[str, Any] = {}

    def on(self, event: str, listener: Any) -> None:
        self.listeners[event] = listener


class FakePage:
    """A page whose Navigation/Resource Timing values (ms) are given."""

    def __init__(self, timing: dict[str, Any]) -> None:
        self.timing = timing
        self.listeners: dict[str, Any] = {}

    def on(self, event: str, listener: Any) -> None:
        self.listeners[event] = listener

    def evaluate(self, _script: str) -> dict[str, Any]:
        return self.timing


def test_the_moments_land_where_the_page_load_put_them() -> None:
    phases = load("app_phases")
    readings = iter([100.0, 101.5, 102.0, 103.0])  # read at start, ws open, 1st msg, chart msg
    recorder = phases.PhaseRecorder(os.getpid(), clock=lambda: next(readings))
    timing = {"html": 40.0, "dom_ready": 1200.0, "scripts": [300.0, 900.0, 2500.0], "animations": 3}
    page = FakePage(timing)
    recorder.attach(page)
    recorder.start()  # t = 100.0
    page.listeners["websocket"](FakeSocket("ws://127.0.0.1:1/other"))  # not the app's: ignored
    stream = FakeSocket("ws://127.0.0.1:1/_stcore/stream")
    page.listeners["websocket"](stream)  # t = 101.5
    frame = stream.listeners["framereceived"]
    frame(b"\x08\x01new session")  # t = 102.0: the first message
    frame("a markdown delta")  # no chart in it (a text frame)
    frame(b'{"$schema": "https://vega.github.io/schema/vega-lite/v6.json"}')  # t = 103.0
    frame(b'{"$schema": "https://vega.github.io/schema/vega-lite/v6.json"}')  # a second chart
    got = recorder.finish(page, 4.25)
    assert (got.ws_open, got.first_msg, got.chart_msg, got.chart) == (1.5, 2.0, 3.0, 4.25)
    assert (got.html, got.dom_ready) == (0.04, 1.2)
    assert got.scripts == 0.9  # the script received at 2.5 s came after the websocket opened
    assert got.animations == 3
    assert got.server_cpu >= got.server_cpu_chart_msg >= 0


def test_the_warm_floor_is_served_as_pdbench_ui_serves_the_app(tmp_path: Path) -> None:
    data_path = load("data_path")
    side = data_path.Side("this", tmp_path, tmp_path / "cfg.yaml", tmp_path / "run" / "out")
    (tmp_path / "run").mkdir()
    plain = data_path.app_command(side, 8501, "floor")
    warm = data_path.app_command(side, 8501, "floor-warm")
    assert plain[1:4] == ["-m", "streamlit", "run"]
    assert warm[1:5] == ["-m", "pdbench.ui.serve", "streamlit", "run"]
    assert plain[4:] == warm[5:]  # the same page, port and settings
    assert (tmp_path / "run" / "floor_app.py").read_text() == data_path.FLOOR_APP
