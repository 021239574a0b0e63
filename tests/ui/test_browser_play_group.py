"""A group game in the 🎮 Play tab in a real browser (`streamlit run` and Debian's Chromium via
Playwright): the person takes seat A of a public goods group of three (r = 2.4) with the group
TFT in seat B and the conditional cooperator CC in seat C, plays three rounds by clicking, and
each round the seats around the group show every seat's name and move as worked out by hand
(see tests/ui/test_play_group.py); the game is saved as a groups run and opens in the 🫂 Groups
tab. Screenshots of the setup, the game in progress, the finished game and the Groups tab are
kept in the test's tmp dir; no exception element and no console error may appear."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]

MOVES = "CDC"
SEAT_MOVES = {"A": "CDC", "B": "CCD", "C": "CCC"}  # the person, TFT, CC: by hand
NAMES = {"A": "Ana", "B": "TFT", "C": "CC"}
BUTTONS = {"C": "🤝 Cooperate", "D": "🗡️ Defect"}


def _heading(page: Any) -> str:
    return page.locator(".pdb-round").first.inner_text().splitlines()[0].strip()


def _seats(page: Any) -> dict[str, tuple[str, str]]:
    """The seats around the group: letter -> (name shown, move shown)."""
    cards = page.locator(".pdb-gseat")
    out = {}
    for i in range(cards.count()):
        card = cards.nth(i)
        name = card.locator(".pdb-gseat-name").inner_text().strip()
        out[card.get_attribute("data-seat") or ""] = (name, card.get_attribute("data-move") or "")
    return out


def _timeline(page: Any) -> dict[str, str]:
    """Every seat's moves so far, from the timeline's cells."""
    rows = page.locator(".pdb-gtl-row[data-seat]")
    return {
        rows.nth(i).get_attribute("data-seat") or "": "".join(
            rows.nth(i).locator(".pdb-cell").all_inner_texts()
        )
        for i in range(rows.count())
    }


def _slide(page: Any, label: str, key: str, value: int) -> None:
    """Move a slider to `value` with the keyboard."""
    shown = page.locator(f'.st-key-{key} [data-testid="stSliderThumbValue"]')
    current = int(shown.inner_text())
    thumb = page.get_by_role("slider", name=label)
    thumb.focus()
    for _ in range(abs(current - value)):
        thumb.press("ArrowLeft" if value < current else "ArrowRight")
    wait_idle(page)
    assert int(shown.inner_text()) == value


def test_a_group_game_in_chromium(sample_run: Path, tmp_path: Path) -> None:
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
        page.get_by_text("🫂 A group (3 to 6 players)").click()
        wait_idle(page)
        page.get_by_label("Your name (in the records)").fill("Ana")
        page.keyboard.press("Enter")
        wait_idle(page)
        _slide(page, "Players (you included)", "pg_players", 3)
        page.get_by_label("Multiplier r").fill("2.4")
        page.keyboard.press("Enter")
        wait_idle(page)
        select_option(page, "Seat B", "TFT ·")
        select_option(page, "Seat C", "CC ·")
        _slide(page, "Rounds", "pg_rounds", len(MOVES))
        page.get_by_text("public_goods N=3 r=2.4 c=1").first.wait_for()
        full_page_screenshot(page, shots / "play_group_setup.png")

        page.get_by_role("button", name="▶️ Start the game").click()
        wait_idle(page)
        assert _heading(page) == "Round 1 of 3"
        for k, move in enumerate(MOVES, start=1):
            page.get_by_role("button", name=BUTTONS[move]).click()
            wait_idle(page)
            page.get_by_text("Game over" if k == 3 else f"Round {k + 1} of 3").first.wait_for()
            assert _seats(page) == {s: (NAMES[s], SEAT_MOVES[s][k - 1]) for s in "ABC"}
            assert _timeline(page) == {s: SEAT_MOVES[s][:k] for s in "ABC"}
            if k == 2:
                full_page_screenshot(page, shots / "play_group_game.png")
        page.get_by_text("You scored").wait_for(timeout=30_000)
        assert page.get_by_role("button", name=BUTTONS["C"]).count() == 0
        full_page_screenshot(page, shots / "play_group_finished.png")

        (run_dir,) = (cwd / "data" / "runs").glob("ui_*")
        rows = [json.loads(x) for x in (run_dir / "rounds.jsonl").read_text().splitlines()]
        for seat, letter in enumerate("abc"):
            assert "".join(r[f"agent_{letter}_action"] for r in rows) == SEAT_MOVES["ABC"[seat]]
        manifest = json.loads((run_dir / "groups_manifest.json").read_text())
        assert manifest["status"] == "completed"

        page.get_by_role("button", name="🫂 Open in the Groups tab").click()
        wait_idle(page)
        assert page.get_by_role("tab", name="🫂 Groups").get_attribute("aria-selected") == "true"
        page.get_by_text("3 seats · public_goods N=3 r=2.4 c=1").first.wait_for()
        picked = {
            label: page.get_by_role("combobox", name=label, exact=True).input_value()
            for label in ("Groups run", "Condition")
        }
        assert run_dir.name in picked["Groups run"], picked
        assert "human_in_public_goods_of_3" in picked["Condition"], picked
        page.get_by_role("tab", name="🎬 Replay").click()
        wait_idle(page)
        page.locator(".pdb-gseat").first.wait_for()
        assert _seats(page) == {s: (NAMES[s], SEAT_MOVES[s][0]) for s in "ABC"}  # round 1
        assert _timeline(page) == SEAT_MOVES
        full_page_screenshot(page, shots / "play_group_saved_run.png")

        assert page.locator('[data-testid="stException"]').count() == 0
        assert errors == [], errors
    assert sorted(p.name for p in shots.iterdir()) == [
        "play_group_finished.png",
        "play_group_game.png",
        "play_group_saved_run.png",
        "play_group_setup.png",
    ]
