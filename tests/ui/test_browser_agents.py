"""The Agents tab in a real browser: two appearances of the same LLM agent from two saved runs
side by side, and the difference of cooperation with its interval equal to what `pdbench
compare --across-runs` prints; one page load, a screenshot saved (agents.png)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.ui.browser import CHROMIUM, chromium_page, open_tab, streamlit_server, wait_idle
from tests.ui.screenshots import full_page_screenshot
from tests.ui.test_agents_tab import AGENTS, cli_cooperation, two_runs  # noqa: F401 (fixture)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]
TABLE = '[data-testid="stTable"]'


def test_two_agents_from_two_runs_with_the_clis_difference(
    two_runs: Path,  # noqa: F811 (the fixture)
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    expected = cli_cooperation(two_runs, capsys)
    # Opened on an empty directory: the first tab (View Results) only says it holds no run,
    # which is quicker than drawing a game first; the Agents tab lists data/runs.
    (tmp_path / "empty").mkdir()
    with (
        streamlit_server(tmp_path / "empty", two_runs, tmp_path / "st.log") as url,
        chromium_page(1400, 900) as (page, errors),
    ):
        page.goto(url)
        wait_idle(page)
        open_tab(page, AGENTS)
        page.locator(TABLE).nth(1).wait_for(timeout=30_000)
        side_by_side, differences = page.locator(TABLE).nth(0), page.locator(TABLE).nth(1)
        heads = side_by_side.locator("thead th").all_inner_texts()
        assert any("monday · llm_vs_TFT · A" in h for h in heads), heads
        assert any("friday · llm_vs_TFT · A" in h for h in heads), heads
        row = differences.locator("tbody tr").filter(has_text="cooperation").first
        cells = row.locator("td").all_inner_texts()
        assert expected in [c.strip() for c in cells], (cells, expected)
        assert page.get_by_text("same opponent design").count() == 1
        full_page_screenshot(page, tmp_path / "agents.png")
        assert page.locator('[data-testid="stException"]').count() == 0
        assert errors == []
    assert (tmp_path / "agents.png").stat().st_size > 30_000
