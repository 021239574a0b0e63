"""The 🎮 Play tab in a real browser (`streamlit run` and Debian's Chromium via Playwright): a
person plays a whole 5-round game against TFT by clicking Cooperate and Cheat, the game is
saved as a run with those moves and TFT's answers, and it opens in View Results. Screenshots of
the setup, the game in progress, the finished game and the saved run are kept in the test's tmp
dir; no exception element and no console error may appear."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.ui.browser import CHROMIUM, chromium_page, open_tab, streamlit_server, wait_idle
from tests.ui.screenshots import full_page_screenshot

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]

MOVES = "CDDCC"
TFT_ANSWERS = "CCDDC"  # tit for tat copies the person's previous move
BUTTONS = {"C": "🤝 Cooperate", "D": "🗡️ Cheat"}


def _heading(page: Any) -> str:
    return page.locator(".pdb-round").first.inner_text().splitlines()[0].strip()


def _trail(page: Any) -> tuple[str, str]:
    """The two rows of the history trail as C/D strings (from each dot's tooltip)."""
    rows = page.locator(".pdb-trail .pdb-row")
    out = []
    for i in range(rows.count()):
        titles = rows.nth(i).locator(".pdb-t").evaluate_all("els => els.map(e => e.title)")
        out.append("".join(re.sub(r"^Round \d+: ", "", t) for t in titles))
    assert len(out) == 2, out
    return out[0], out[1]


def _set_rounds(page: Any, rounds: int) -> None:
    """Move the Rounds slider (default 10) with the keyboard."""
    shown = page.locator('.st-key-pl_rounds [data-testid="stSliderThumbValue"]')
    current = int(shown.inner_text())
    thumb = page.get_by_role("slider", name="Rounds")
    thumb.focus()
    key = "ArrowLeft" if rounds < current else "ArrowRight"
    for _ in range(abs(current - rounds)):
        thumb.press(key)
    wait_idle(page)
    assert int(shown.inner_text()) == rounds


def test_a_full_human_game_in_chromium(sample_run: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    shots = tmp_path / "screenshots"
    shots.mkdir()
    log = tmp_path / "streamlit.log"
    with streamlit_server(sample_run, cwd, log) as url, chromium_page() as (page, errors):
        page.goto(url)
        wait_idle(page)
        open_tab(page, "🎮 Play")
        page.get_by_text("Copycat", exact=False).first.wait_for()  # TFT is the default opponent
        page.get_by_label("Your name (in the records)").fill("Ana")
        page.keyboard.press("Enter")
        wait_idle(page)
        _set_rounds(page, len(MOVES))
        full_page_screenshot(page, shots / "play_setup.png")

        page.get_by_role("button", name="▶️ Start the game").click()
        wait_idle(page)
        assert _heading(page) == f"Round 1 of {len(MOVES)}"
        for k, move in enumerate(MOVES, start=1):
            page.get_by_role("button", name=BUTTONS[move]).click()
            wait_idle(page)
            if k < len(MOVES):
                page.get_by_text(f"Round {k + 1} of {len(MOVES)}").first.wait_for()
                assert _trail(page) == (MOVES[:k], TFT_ANSWERS[:k])
            if k == 3:
                full_page_screenshot(page, shots / "play_game.png")

        page.get_by_text("Saved as run", exact=False).wait_for(timeout=30_000)
        wait_idle(page)
        assert _heading(page) == "Game over"
        assert _trail(page) == (MOVES, TFT_ANSWERS)
        assert page.get_by_role("button", name=BUTTONS["C"]).is_disabled()
        full_page_screenshot(page, shots / "play_finished.png")

        (run_dir,) = (cwd / "data" / "runs").glob("ui_*")
        rows = [json.loads(x) for x in (run_dir / "rounds.jsonl").read_text().splitlines()]
        assert [r["round_index"] for r in rows] == list(range(len(MOVES)))
        assert "".join(r["agent_a_action"] for r in rows) == MOVES
        assert "".join(r["agent_b_action"] for r in rows) == TFT_ANSWERS
        assert {(r["agent_a_name"], r["agent_b_name"]) for r in rows} == {("Ana", "TFT")}
        manifest = json.loads((run_dir / "run_manifest.json").read_text())
        assert manifest["status"] == "completed"
        assert (run_dir / "aggregates.parquet").is_file()

        page.get_by_role("button", name="📊 Open in View Results").click()
        wait_idle(page)
        assert (
            page.get_by_role("tab", name="📊 View Results").get_attribute("aria-selected") == "true"
        )
        page.get_by_text("Headline metrics").wait_for()
        page.get_by_text("human_vs_TFT", exact=False).first.wait_for()
        page.wait_for_function(
            "n => document.querySelectorAll('.pdb-tl .pdb-cell').length >= n",
            arg=2 * len(MOVES),
            timeout=30_000,
        )
        full_page_screenshot(page, shots / "play_saved_run.png")

        assert page.locator('[data-testid="stException"]').count() == 0
        assert errors == [], errors
    assert sorted(p.name for p in shots.iterdir()) == [
        "play_finished.png",
        "play_game.png",
        "play_saved_run.png",
        "play_setup.png",
    ]
