"""A commons in the 🎮 Play tab in a real browser (`streamlit run` and Debian's Chromium via
Playwright): the person fishes GovSim's lake with three SUSTAINABLE seats and a MODERATE one,
asks 20, 30 and 20 tons, and the lake goes 100 -> 76 -> 34 and collapses in season 3 of 5 (1 ton
left), as worked out by hand in tests/integration/test_live_resource.py. The board shows the
stock and the sustainable share before each season, the stock chart with its collapse line and
the collapse; the game is saved as a commons run, the lesson says when the lake collapsed, and
the run opens in the 🫂 Groups tab. Screenshots are kept in the test's tmp dir; no exception
element and no console error may appear."""

from __future__ import annotations

import json
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
from tests.ui.screenshots import full_page_screenshot
from tests.ui.test_browser_play_group import _slide

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]

ASKS = [20, 30, 20]
STOCKS = [100, 76, 34]  # by hand
SHARES = [10, 7, 3]  # (stock // 2) // 5
SEATS = {"Seat B": "SUSTAINABLE ·", "Seat C": "SUSTAINABLE ·", "Seat D": "MODERATE ·",
         "Seat E": "SUSTAINABLE ·"}  # fmt: skip


def test_a_commons_collapsing_in_chromium(sample_run: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with (
        streamlit_server(sample_run, cwd, tmp_path / "streamlit.log") as url,
        chromium_page() as (page, errors),
    ):
        page.goto(url)
        wait_idle(page)
        open_tab(page, "🎮 Play")
        page.get_by_text("🐟 A commons (fishery)").click()
        wait_idle(page)
        page.get_by_label("Your name (in the records)").fill("Ana")
        page.keyboard.press("Enter")
        wait_idle(page)
        for label, option in SEATS.items():
            select_option(page, label, option)
        _slide(page, "Seasons", "pr_commons_rounds", 5)
        full_page_screenshot(page, shots / "play_commons_setup.png")

        page.get_by_role("button", name="▶️ Start the game").click()
        wait_idle(page)
        for k, ask in enumerate(ASKS):
            page.locator(".pdb-round").get_by_text(f"Season {k + 1} of 5").wait_for()
            page.get_by_text(f"{STOCKS[k]} tons in the lake").first.wait_for()
            page.get_by_text(f"sustainable share is {SHARES[k]} tons").first.wait_for()
            box = page.get_by_label("Your catch (tons)")
            box.fill(str(ask))
            box.press("Enter")
            wait_idle(page)
            page.get_by_role("button", name="🎣 Fish").click()
            wait_idle(page)
            if k == 1:
                full_page_screenshot(page, shots / "play_commons_game.png")
        page.locator(".pdb-round").get_by_text("Game over").wait_for()
        collapse = page.locator('.pdb-rcollapse[data-season="3"]')
        collapse.wait_for()
        assert "collapsed in season 3 of 5" in collapse.inner_text()
        lesson = page.get_by_text("The lake collapsed in season 3 of 5. You caught 70 tons")
        lesson.wait_for(timeout=30_000)
        full_page_screenshot(page, shots / "play_commons_collapsed.png")

        (run_dir,) = (cwd / "data" / "runs").glob("ui_*")
        manifest = json.loads((run_dir / "commons_manifest.json").read_text())
        assert manifest["status"] == "completed"
        rows = [json.loads(x) for x in (run_dir / "rounds.jsonl").read_text().splitlines()]
        assert [r["stock"] for r in rows] == STOCKS
        assert [r["requested"][0] for r in rows] == ASKS and rows[-1]["collapsed"]

        page.get_by_role("button", name="🫂 Open in the Groups tab").click()
        wait_idle(page)
        assert page.get_by_role("tab", name="🫂 Groups").get_attribute("aria-selected") == "true"
        picked = page.get_by_role("combobox", name="Groups run", exact=True).input_value()
        assert run_dir.name in picked, picked
        full_page_screenshot(page, shots / "play_commons_saved_run.png")

        assert page.locator('[data-testid="stException"]').count() == 0
        assert errors == [], errors


def test_a_public_goods_game_with_punishment_in_chromium(sample_run: Path, tmp_path: Path) -> None:
    """The hand-worked public goods game of tests/ui/test_play_resource.py: Ana gives 5, punishes
    the free rider with 2 tokens, then gives 0; the punisher takes 6 from her in round 2."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with (
        streamlit_server(sample_run, cwd, tmp_path / "streamlit.log") as url,
        chromium_page() as (page, errors),
    ):
        page.goto(url)
        wait_idle(page)
        open_tab(page, "🎮 Play")
        page.get_by_text("💰 A public goods game").click()
        wait_idle(page)
        page.get_by_label("Your name (in the records)").fill("Ana")
        page.keyboard.press("Enter")
        wait_idle(page)
        for label, option in {"Seat B": "FREE_RIDER ·", "Seat C": "CONDITIONAL_COOPERATOR ·",
                              "Seat D": "⚖️ PUNISHER ·"}.items():  # fmt: skip
            select_option(page, label, option)
        _slide(page, "Rounds", "pr_pgg_rounds", 2)
        page.get_by_role("button", name="▶️ Start the game").click()
        wait_idle(page)
        for k, give in enumerate([5, 0]):
            page.locator(".pdb-round").get_by_text(f"Round {k + 1} of 2").wait_for()
            box = page.get_by_label("Your contribution")
            box.fill(str(give))
            box.press("Enter")
            wait_idle(page)
            page.get_by_role("button", name="💰 Contribute").click()
            wait_idle(page)
            page.locator(".pdb-round").get_by_text("punishment").wait_for()
            if k == 0:
                tokens = page.get_by_label("B · FREE_RIDER")
                tokens.fill("2")
                tokens.press("Enter")
                wait_idle(page)
                full_page_screenshot(page, shots / "play_pgg_punish.png")
            page.get_by_role("button", name="⚖️ Done").click()
            wait_idle(page)
            if k == 0:
                page.get_by_text("Your balance: 27 tokens").wait_for()
                full_page_screenshot(page, shots / "play_pgg_round2.png")
        page.locator(".pdb-round").get_by_text("Game over").wait_for()
        page.get_by_text("You contributed 11% of what you could").wait_for(timeout=30_000)
        full_page_screenshot(page, shots / "play_pgg_finished.png")
        (run_dir,) = (cwd / "data" / "runs").glob("ui_*")
        rows = [json.loads(x) for x in (run_dir / "rounds.jsonl").read_text().splitlines()]
        assert [r["balances"] for r in rows] == [[27, 22, 24, 12], [29, 30, 23, 6]]
        assert page.locator('[data-testid="stException"]').count() == 0
        assert errors == [], errors
