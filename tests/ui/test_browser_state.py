"""State kept, in a real browser: the Run Experiment form and the saved-tournament and
saved-evolution selections survive switches to other tabs and back; no exception element and no
console error."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.ui.browser import (
    CHROMIUM,
    chromium_page,
    open_tab,
    select_option,
    streamlit_server,
    wait_idle,
)
from tests.ui.sample import make_evolution, make_tournament
from tests.ui.screenshots import full_page_screenshot

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]


def slider_value(page, name: str) -> str:  # noqa: ANN001 - a Playwright page
    return str(page.get_by_role("slider", name=name).input_value())


def shown_choice(page, label: str) -> str:  # noqa: ANN001 - a Playwright page
    """The text a visible select box shows as its current choice."""
    return str(page.get_by_role("combobox", name=label, exact=True).input_value())


def test_the_run_form_and_saved_selections_survive_tab_switches(
    sample_run: Path, tmp_path: Path
) -> None:
    cwd = tmp_path / "cwd"
    tournaments, evolutions = cwd / "data" / "tournaments", cwd / "data" / "evolutions"
    make_tournament(tournaments / "older", ["TFT", "ALLD"], run_id="older_one")
    make_tournament(tournaments / "newer", ["GRIM", "ALLC"], run_id="newer_one")
    make_evolution(evolutions / "older", run_id="older_evolution")
    make_evolution(evolutions / "newer", run_id="newer_evolution")
    with (
        streamlit_server(sample_run, cwd, tmp_path / "streamlit.log") as url,
        chromium_page(1400, 900) as (page, errors),
    ):
        page.goto(url)
        wait_idle(page)
        open_tab(page, "🧪 Run Experiment")
        rounds = page.get_by_role("slider", name="Rounds")
        rounds.focus()
        for _ in range(7):
            page.keyboard.press("ArrowRight")
        wait_idle(page)
        assert slider_value(page, "Rounds") == "57"

        # Pick the older saved tournament and evolution (each tab opens on the newest).
        open_tab(page, "🏆 Tournament")
        assert "newer_one" in shown_choice(page, "Saved tournaments")
        select_option(page, "Saved tournaments", "older_one")
        assert "older_one" in shown_choice(page, "Saved tournaments")
        open_tab(page, "🧬 Evolution")
        assert "newer_evolution" in shown_choice(page, "Saved evolutions")
        select_option(page, "Saved evolutions", "older_evolution")
        assert "older_evolution" in shown_choice(page, "Saved evolutions")

        # Round trips through other tabs: nothing jumps back.
        open_tab(page, "📊 View Results")
        open_tab(page, "🧪 Run Experiment")
        assert slider_value(page, "Rounds") == "57"  # not back to the default 50
        open_tab(page, "🏆 Tournament")
        assert "older_one" in shown_choice(page, "Saved tournaments")
        # The results below are the older tournament's too.
        assert page.get_by_text("older_one", exact=False).count() >= 1
        assert page.get_by_text("newer_one", exact=False).count() == 0
        full_page_screenshot(page, tmp_path / "tournament_kept.png")
        open_tab(page, "🧬 Evolution")
        assert "older_evolution" in shown_choice(page, "Saved evolutions")
        full_page_screenshot(page, tmp_path / "evolution_kept.png")
        assert page.locator('[data-testid="stException"]').count() == 0
        assert errors == []
