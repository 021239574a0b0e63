"""Real screenshots of every tab for the README: `uv run python -m tests.ui.screenshots [OUT_DIR]`.

Makes a sample run with the library in a temporary directory, starts the app on it, drives
Debian's Chromium with Playwright and writes view_results.png, compare.png (the condition
comparison and memory-one profile), view_results_llm.png, replay.png, replay_llm.png (the
mock-LLM game's replay with replies and retries),
run_experiment.png, tournament.png (a no-noise round robin run from the UI), evolution.png (the
"Trust wins" preset run from the UI), linked_view.png (the replay's URL opened afresh: the same
run, condition and round, with the link shown above the page) and agents.png (the same LLM agent
in two saved runs side by side) (default OUT_DIR: docs/screenshots). Fails if the page shows an
exception or logs console errors.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.ui.browser import (
    chromium_page,
    component,
    open_tab,
    run_from_ui,
    select_option,
    streamlit_server,
    wait_idle,
)
from tests.ui.sample import REPO, SHOWCASE_CONDITIONS, make_run

DEFAULT_OUT = REPO / "docs" / "screenshots"


def full_page_screenshot(page: Any, path: Path, width: int = 1440) -> None:
    """Screenshot the whole app: grow the viewport to the content's height first (Streamlit
    scrolls inside its own container, so Playwright's full_page alone would cut it)."""
    measure = """() => {
        const block = document.querySelector('[data-testid="stMainBlockContainer"]');
        return block ? Math.ceil(block.getBoundingClientRect().height) + 60 : 1000;
    }"""
    # Elements whose code the browser is still loading show as grey skeletons; a fresh browser
    # on a busy machine may still be loading them when the script has finished.
    page.wait_for_function(
        """() => !document.querySelector('[data-testid="stSkeleton"]')""", timeout=60_000
    )
    height = 0
    for _ in range(5):
        new_height = int(min(max(page.evaluate(measure), 800), 12000))
        if new_height == height:
            break
        height = new_height
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(700)
    page.mouse.move(2, 2)  # no hover effects (heading anchors, tooltips) in the picture
    page.wait_for_timeout(200)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": width, "height": 1000})


def tour(page: Any, url: str, out_dir: Path, replay_round: int = 14) -> list[Path]:
    """Visit every tab of the app at `url` and save one screenshot per tab in `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    page.goto(url)
    wait_idle(page)
    shots = [out_dir / "view_results.png"]
    full_page_screenshot(page, shots[-1])
    shots.append(compare_shot(page, out_dir))
    open_tab(page, "🎬 Animated Replay")
    replay = component(page, "#pdb-label")
    for _ in range(replay_round - 1):
        replay.locator("#pdb-step").click()
    page.wait_for_timeout(500)
    shots.append(out_dir / "replay.png")
    full_page_screenshot(page, shots[-1])
    shots.append(linked_shot(page, out_dir))
    open_tab(page, "📊 View Results")
    select_option(page, "Condition", "LLMcoop_vs_LLMexploit")
    shots.append(out_dir / "view_results_llm.png")
    full_page_screenshot(page, shots[-1])
    shots.append(llm_replay_shot(page, out_dir))
    open_tab(page, "🧪 Run Experiment")
    shots.append(out_dir / "run_experiment.png")
    full_page_screenshot(page, shots[-1])
    shots.append(tournament_shot(page, out_dir))
    shots.append(evolution_shot(page, out_dir))
    shots.append(agents_shot(page, out_dir))
    return shots


def linked_shot(page: Any, out_dir: Path) -> Path:
    """The view's URL (the replay at its round, which it writes when it stops) opened afresh,
    with the link written in a banner above the page, as a person would paste it."""
    page.wait_for_function("() => location.search.includes('round=')", timeout=30_000)
    link = page.url
    page.goto(link)
    wait_idle(page)
    component(page, "#pdb-label")
    page.evaluate(
        """(link) => {
            const bar = document.createElement('div');
            bar.id = 'pdb-link-banner';
            bar.textContent = '🔗 opened from the link  ' + link;
            bar.style.cssText = 'position:fixed;top:0;left:0;right:0;z-index:999999;'
              + 'background:#1f2933;color:#fff;font:13px monospace;padding:8px 14px;';
            document.body.appendChild(bar);
        }""",
        link,
    )
    path = out_dir / "linked_view.png"
    full_page_screenshot(page, path)
    page.evaluate("() => document.getElementById('pdb-link-banner').remove()")
    return path


def agents_shot(page: Any, out_dir: Path) -> Path:
    """The Agents tab: every agent in the saved runs, and the same LLM agent from two runs side
    by side with the difference and its interval."""
    open_tab(page, "👥 Agents")
    page.get_by_text("same opponent design").first.wait_for(timeout=60_000)
    path = out_dir / "agents.png"
    full_page_screenshot(page, path)
    return path


def llm_replay_shot(page: Any, out_dir: Path) -> Path:
    """The replay of the mock-LLM condition (chosen in View Results just before) at its first
    round with a retried reply: each agent's reply and its invalid attempts beside its move."""
    open_tab(page, "🎬 Animated Replay")
    replay = component(page, "#pdb-label")
    replay.locator("#pdb-restart").click()
    for _ in range(60):
        if replay.get_by_text("(invalid)", exact=False).count():
            break
        replay.locator("#pdb-step").click()
    page.wait_for_timeout(500)
    path = out_dir / "replay_llm.png"
    full_page_screenshot(page, path)
    return path


def compare_shot(page: Any, out_dir: Path) -> Path:
    """View Results' condition comparison (dot and whisker per metric) and the memory-one
    profile: the part of the full page from the memory-one heading down to the downloads."""
    import io

    from PIL import Image

    page.get_by_text("Compare conditions").wait_for()
    page.wait_for_timeout(1500)  # let Vega draw
    measure = """() => {
        const block = document.querySelector('[data-testid="stMainBlockContainer"]');
        return block ? Math.ceil(block.getBoundingClientRect().height) + 60 : 1000;
    }"""
    height = int(min(max(page.evaluate(measure), 800), 12000))
    page.set_viewport_size({"width": 1440, "height": height})
    page.wait_for_timeout(1200)
    top = page.get_by_role("heading", name="Memory-one profile").bounding_box()
    bottom = page.get_by_role("heading", name="Download").bounding_box()
    image = Image.open(io.BytesIO(page.screenshot(full_page=True)))
    path = out_dir / "compare.png"
    image.crop((0, int(top["y"]) - 20, image.width, int(bottom["y"]) - 10)).save(path)
    page.set_viewport_size({"width": 1440, "height": 1000})
    return path


def tournament_shot(page: Any, out_dir: Path) -> Path:
    """The example config's six strategies without noise, run from the Tournament tab: Copycat
    tops the table though it wins no match, Always Cheat wins every match and ends near the
    bottom."""
    open_tab(page, "🏆 Tournament")
    slider = page.get_by_role("slider", name="Noise (move flip probability)")
    assert slider.input_value() == "0.05", slider.input_value()
    slider.focus()
    page.keyboard.press("Home")
    wait_idle(page)
    assert slider.input_value() == "0", slider.input_value()
    run_from_ui(page, "🏆 Run Tournament")
    page.wait_for_timeout(1500)  # let Vega draw
    path = out_dir / "tournament.png"
    full_page_screenshot(page, path)
    return path


def evolution_shot(page: Any, out_dir: Path, generation: int = 2) -> Path:
    """The "Trust wins" preset run from the Evolution tab with 20 seeds of the process: the
    animated ring at `generation` and the fixation shares over the seeds."""
    open_tab(page, "🧬 Evolution")
    page.get_by_role("button", name="🤝 Trust wins (no noise)").click()
    wait_idle(page)
    seeds = page.get_by_role("spinbutton", name="Seeds (independent runs of the process)")
    seeds.fill("20")
    seeds.press("Enter")
    wait_idle(page)
    run_from_ui(page, "🧬 Run Evolution")
    page.get_by_text("Fixation over 20 seeds").wait_for()
    animation = component(page, ".pdb-ring")
    animation.locator("#pdb-restart").click()
    for _ in range(generation):
        animation.locator("#pdb-step").click()
    page.wait_for_timeout(1500)  # let Vega draw
    path = out_dir / "evolution.png"
    full_page_screenshot(page, path)
    return path


def capture(out_dir: Path = DEFAULT_OUT) -> list[Path]:
    """Make a showcase run, open it in the app, and write one screenshot per tab."""
    with tempfile.TemporaryDirectory(prefix="pdbench_shots_") as tmp:
        base = Path(tmp)
        # a second run "a week later" with more games: the Agents tab puts the two side by side
        make_run(base, SHOWCASE_CONDITIONS[1:], n_rounds=60, replicates=6, run_id="showcase_week2")
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
