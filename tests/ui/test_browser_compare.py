"""View Results' condition comparison in a real browser: one dot-and-whisker chart per chosen
metric with every chosen condition's row labelled, the memory-one profile, and the download
buttons; a screenshot is saved; no exception element and no console error."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.ui.browser import CHROMIUM, chromium_page, streamlit_server, wait_idle
from tests.ui.screenshots import full_page_screenshot

pytestmark = [
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
        full_page_screenshot(page, tmp_path / "compare.png")
        assert page.locator('[data-testid="stException"]').count() == 0
        assert errors == []
    assert (tmp_path / "compare.png").stat().st_size > 50_000
