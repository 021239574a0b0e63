"""The 🎮 Play tab in a real browser (`streamlit run` and Debian's Chromium via Playwright): a
person plays a whole 5-round game against TFT by clicking Cooperate and Defect; a Refresh in the
middle keeps the game (the URL names it); each round's result panel looks unlike the move
buttons; the game ends on its lesson card, is saved as a run with those moves and TFT's answers,
and opens in View Results. Screenshots of the setup, the game in progress, the finished game
and the saved run are kept in the test's tmp dir; no exception element and no console error may
appear."""

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
BUTTONS = {"C": "🤝 Cooperate", "D": "🗡️ Defect"}
WORDS = {"C": "Cooperate", "D": "Defect"}


def _heading(page: Any) -> str:
    return page.locator(".pdb-round").first.inner_text().splitlines()[0].strip()


def _trail(page: Any) -> tuple[str, str]:
    """The two rows of the history trail as C/D strings (from each dot's tooltip)."""
    rows = page.locator(".pdb-trail .pdb-row")
    out = []
    for i in range(rows.count()):
        titles = rows.nth(i).locator(".pdb-t").evaluate_all("els => els.map(e => e.title)")
        moves = [re.fullmatch(r"Round \d+: ([CD]) \((\w+)\)", t) for t in titles]
        assert all(m and WORDS[m[1]] == m[2] for m in moves), titles  # the tab's words
        out.append("".join(m[1] for m in moves if m))
    assert len(out) == 2, out
    return out[0], out[1]


def _looks(page: Any) -> dict[str, dict[str, str]]:
    """What sets a move button apart from a result card: background, text colour, cursor."""
    return page.evaluate(
        """() => Object.fromEntries([
            ['button', document.querySelector('.st-key-pl_move_C button')],
            ['card', document.querySelector('.pdb-res-card')],
        ].map(([k, el]) => {
            const s = getComputedStyle(el);
            return [k, {image: s.backgroundImage, color: s.backgroundColor, text: s.color,
                        cursor: s.cursor}];
        }))"""
    )


def _result(page: Any) -> list[tuple[str, str, str]]:
    """The last round's result cards: (move, word shown, payoff)."""
    cards = page.locator(".pdb-res-card")
    return [
        (
            cards.nth(i).get_attribute("data-move") or "",
            cards.nth(i).locator(".pdb-res-word").inner_text(),
            cards.nth(i).get_attribute("data-payoff") or "",
        )
        for i in range(cards.count())
    ]


def _animations_done(page: Any) -> None:
    """Wait for the page's CSS animations to end."""
    page.evaluate("() => Promise.all(document.getAnimations().map(a => a.finished))")


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
        assert re.search(r"[?&]game=[0-9a-f]{12}\b", page.url), page.url
        for k, move in enumerate(MOVES, start=1):
            page.get_by_role("button", name=BUTTONS[move]).click()
            wait_idle(page)
            if k < len(MOVES):
                page.get_by_text(f"Round {k + 1} of {len(MOVES)}").first.wait_for()
                assert _trail(page) == (MOVES[:k], TFT_ANSWERS[:k])
            if k == 2:  # a Refresh mid-game: a new session finds the game by the URL
                page.reload()
                wait_idle(page)
                if page.get_by_role("tab", name="🎮 Play").get_attribute("aria-selected") != "true":
                    open_tab(page, "🎮 Play")
                page.get_by_text(f"Round 3 of {len(MOVES)}").first.wait_for()
                assert _trail(page) == (MOVES[:2], TFT_ANSWERS[:2])
            if k == 3:
                # CDD against CCD: round 3 both defected, 1 point each (pdbench's payoffs)
                assert _result(page) == [("D", "Defect", "1"), ("D", "Defect", "1")]
                looks = _looks(page)
                assert "gradient" in looks["button"]["image"], looks
                assert looks["card"]["image"] == "none", looks
                assert looks["card"]["color"] == "rgb(255, 255, 255)", looks
                assert looks["button"]["text"] == "rgb(255, 255, 255)", looks
                assert looks["card"]["cursor"] == "default", looks
                _animations_done(page)  # the moves have flipped in, the payoffs counted up
                full_page_screenshot(page, shots / "play_game.png")

        page.locator(".pdb-lesson").wait_for(timeout=30_000)
        wait_idle(page)
        assert _heading(page) == "Game over"
        assert _trail(page) == (MOVES, TFT_ANSWERS)
        assert page.get_by_role("button", name=BUTTONS["C"]).count() == 0
        lesson = page.locator(".pdb-lesson")
        assert lesson.is_visible()
        text = lesson.inner_text()
        # CDDCC against Copycat: the person defected first, was answered, and both cooperated
        # again in the last round
        assert "You defected first and they hit back, but cooperation came back" in text
        assert "You played" in text and "P(C | CC)" in text
        _animations_done(page)
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
