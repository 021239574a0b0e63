"""View Results' condition comparison in a real browser: one dot-and-whisker chart per chosen
metric with every chosen condition's row labelled, the memory-one profile, and the download
buttons; a screenshot is saved; no exception element and no console error."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.ui.browser import CHROMIUM, chromium_page, streamlit_server, wait_idle
from tests.ui.screenshots import full_page_screenshot

from pdbench.agents.policy import POLICY_REGISTRY
from pdbench.ui import style

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]

CHART = '[data-testid="stVegaLiteChart"]'
EMOJI_FONT = Path("/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf")


def coloured_pixels(png: bytes) -> int:
    """How many pixels are clearly coloured (not white, grey or black)."""
    import io

    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)
    return int(((pixels.max(axis=2) - pixels.min(axis=2)) > 60).sum())


# Draws each emoji at 40 px in the font of the app's text and in Noto Color Emoji alone, and
# counts the pixels that differ: 0 when the app's font leaves the emoji to the colour font.
EMOJI_IN_APP_FONT = """async (emoji) => {
    await document.fonts.ready;
    const text = document.querySelector('[data-testid="stMarkdownContainer"] p') || document.body;
    const font = getComputedStyle(text).fontFamily;
    const draw = (e, family) => {
        const canvas = document.createElement("canvas");
        canvas.width = 64; canvas.height = 64;
        const ctx = canvas.getContext("2d");
        ctx.font = `40px ${family}`;
        ctx.textBaseline = "alphabetic";
        ctx.fillStyle = "#000";
        ctx.fillText(e, 4, 50);
        return ctx.getImageData(0, 0, 64, 64).data;
    };
    const differing = {};
    for (const e of emoji) {
        const app = draw(e, font), colour = draw(e, '"Noto Color Emoji"');
        let n = 0;
        for (let i = 0; i < app.length; i += 4) {
            if (Math.abs(app[i] - colour[i]) + Math.abs(app[i + 1] - colour[i + 1])
                + Math.abs(app[i + 2] - colour[i + 2]) + Math.abs(app[i + 3] - colour[i + 3]) > 40) n++;
        }
        differing[e] = n;
    }
    return {font, differing};
}"""


def agent_emoji() -> list[str]:
    """The emoji of every kind of agent the app shows: each policy, an LLM agent, a person."""
    return sorted(
        {style.policy_profile(k).emoji for k in POLICY_REGISTRY}
        | {style.LLM_EMOJI, style.human_profile().emoji}
    )


def test_conditions_side_by_side_with_intervals(sample_run: Path, tmp_path: Path) -> None:
    rows = pq.read_table(sample_run / "aggregates.parquet").to_pylist()
    n_conditions = sum(1 for r in rows if r["scope"] == "condition")
    assert n_conditions >= 3
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    with (
        streamlit_server(sample_run, cwd, tmp_path / "streamlit.log") as url,
        chromium_page(1400, 900) as (page, errors),
    ):
        page.goto(url)
        wait_idle(page)
        heading = page.get_by_text("Compare conditions")
        heading.wait_for(timeout=30_000)
        heading.scroll_into_view_if_needed()
        section = page.locator('[data-testid="stVerticalBlock"]').filter(has=heading).last
        # Three metrics by default: three charts after the heading, each drawn.
        charts = page.locator(f"{CHART}:below(:text('Compare conditions'))")
        page.wait_for_function(
            f"""() => [...document.querySelectorAll('{CHART}')].filter(
                c => c.querySelector('canvas, svg.marks')).length >= 6""",
            timeout=30_000,
        )
        assert charts.count() >= 3
        for title in ("A cooperation rate", "B cooperation rate", "A total payoff"):
            assert section.get_by_text(title, exact=True).count() >= 1
        # Every chart is tall enough for one labelled row per condition.
        for i in range(3):
            box = charts.nth(i).bounding_box()
            assert box is not None and box["height"] >= 60 + n_conditions * 30, box
        assert page.get_by_role("button", name="📄 Report (HTML)").count() == 1
        assert page.get_by_role("button", name="🗜️ All files (zip)").count() == 1
        assert page.get_by_text("Memory-one profile").count() == 1
        # The emoji are drawn in colour (the headings' ⚖️ and 🧠; the text is black): a
        # monochrome glyph or an empty box would leave no coloured pixel.
        if EMOJI_FONT.exists():
            for title in ("Compare conditions", "Memory-one profile"):
                shot = page.get_by_role("heading", name=title).screenshot()
                assert coloured_pixels(shot) > 100, title
            # Every agent's emoji, drawn with the app's own font as the tables draw their cells
            # (on a canvas), comes from the colour emoji font, not from the text font (Source
            # Sans has a monochrome 🤖 of its own, which is why LLM agents show 💬).
            drawn = page.evaluate(EMOJI_IN_APP_FONT, agent_emoji())
            assert "Source Sans" in drawn["font"], drawn["font"]
            not_colour = {e: n for e, n in drawn["differing"].items() if n > 0}
            assert not not_colour, not_colour
        full_page_screenshot(page, tmp_path / "compare.png")
        assert page.locator('[data-testid="stException"]').count() == 0
        assert errors == []
    assert (tmp_path / "compare.png").stat().st_size > 50_000
