"""Real screenshots of every tab for the README: `uv run python -m tests.ui.screenshots [OUT_DIR]`.

Makes a sample run with the library in a temporary directory, starts the app on it, drives
Debian's Chromium with Playwright and writes view_results.png, view_results_llm.png, replay.png and run_experiment.png
(default OUT_DIR: docs/screenshots). Fails if the page shows an exception or logs console errors.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.ui.browser import chromium_page, open_tab, select_option, streamlit_server, wait_idle
from tests.ui.sample import REPO, SHOWCASE_CONDITIONS, make_run

DEFAULT_OUT = REPO / "docs" / "screenshots"


def full_page_screenshot(page: Any, path: Path, width: int = 1440) -> None:
    """Screenshot the whole app: grow the viewport to the content's height first (Streamlit
    scrolls inside its own container, so Playwright's full_page alone would cut it)."""
    measure = """() => {
        const block = document.querySelector('[data-testid="stMainBlockContainer"]');
        return block ? Math.ceil(block.getBoundingClientRect().height) + 60 : 1000;
    }"""
    height = 0
    for _ in range(5):
        new_height = int(min(max(page.evaluate(measure), 800), 12000))
        if new_height == height:
            break
        height = new_height
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(700)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": width, "height": 1000})


def tour(page: Any, url: str, out_dir: Path, replay_round: int = 14) -> list[Path]:
    """Visit every tab of the app at `url` and save one screenshot per tab in `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    page.goto(url)
    wait_idle(page)
    shots = [out_dir / "view_results.png"]
    full_page_screenshot(page, shots[-1])
    open_tab(page, "🎬 Animated Replay")
    for _ in range(replay_round - 1):
        page.get_by_role("button", name="Step ▶️").click()
        wait_idle(page)
    shots.append(out_dir / "replay.png")
    full_page_screenshot(page, shots[-1])
    open_tab(page, "📊 View Results")
    select_option(page, "Condition", "LLMcoop_vs_LLMexploit")
    shots.append(out_dir / "view_results_llm.png")
    full_page_screenshot(page, shots[-1])
    open_tab(page, "🧪 Run Experiment")
    shots.append(out_dir / "run_experiment.png")
    full_page_screenshot(page, shots[-1])
    return shots


def capture(out_dir: Path = DEFAULT_OUT) -> list[Path]:
    """Make a showcase run, open it in the app, and write one screenshot per tab."""
    with tempfile.TemporaryDirectory(prefix="pdbench_shots_") as tmp:
        base = Path(tmp)
        run_dir = make_run(
            base, SHOWCASE_CONDITIONS, n_rounds=60, replicates=3, run_id="showcase_noisy_trust"
        )
        with (
            streamlit_server(run_dir, base, base / "streamlit.log") as url,
            chromium_page() as (page, errors),
        ):
            shots = tour(page, url, out_dir)
            if page.locator('[data-testid="stException"]').count():
                raise RuntimeError("the app shows an exception")
            if errors:
                raise RuntimeError(f"console errors: {errors}")
    return shots


def main() -> None:
    """Entry point."""
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    for path in capture(out):
        print(path)


if __name__ == "__main__":
    main()
