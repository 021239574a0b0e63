"""A groups run in a real browser (`streamlit run` and Debian's Chromium via Playwright, issue
30): the app opens on a five-seat groups run, the replay steps to round 3 and shows the five
seats with their names in full and distinct, each seat's move as the record has it (letter and
word), and the messages of that round; the seat cards of a ten-seat group do not overlap and
keep their names whole at 1280 and 1920 px; the results page draws. The run is a real one
(`pdbench run` of mock LLM seats, offline, `tests.support.group_run.make_real_group_run`). One server and one browser for the module; screenshots
are saved in the module's tmp dir. No exception element and no console error may appear.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.group_run import make_real_group_run
from tests.ui.browser import CHROMIUM, chromium_page, select_option, streamlit_server, wait_idle
from tests.ui.screenshots import full_page_screenshot

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]

WIDTH, HEIGHT = 1280, 1000
CONDITION, SEATS, ROUND = "five_talking", 5, 3


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("group_shots")


@pytest.fixture(scope="module")
def group_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory's groups run (`pdbench run`, offline): five mock LLM seats that
    talk before each move, and ten."""
    return make_real_group_run(tmp_path_factory.mktemp("groups_browser"))


@pytest.fixture(scope="module")
def app(group_run: Path, shots: Path) -> Iterator[tuple[Any, list[str]]]:
    """The app on the groups run, open in one browser page for the module."""
    cwd = group_run.parents[2]
    with streamlit_server(group_run, cwd, shots / "streamlit.log") as url:
        with chromium_page(WIDTH, HEIGHT) as (page, errors):
            page.goto(url)
            wait_idle(page)
            yield page, errors


def _record_round(run: Path, condition: str, replicate: int, round_no: int) -> dict[str, Any]:
    """The rounds.jsonl record of a round (numbered from 1), read directly."""
    for line in (run / "rounds.jsonl").read_text().splitlines():
        record = json.loads(line)
        if (record["condition"], record["replicate"], record["round_index"]) == (
            condition,
            replicate,
            round_no - 1,
        ):
            return record
    raise AssertionError(f"no round {round_no} of {condition}")


def _seats(page: Any) -> list[dict[str, Any]]:
    """Each seat card's letter, name, move (data, token and word) and payoff line as shown."""
    return page.eval_on_selector_all(
        ".pdb-gseat",
        """(cards) => cards.map(c => ({
            seat: c.dataset.seat, move: c.dataset.move,
            name: c.querySelector('.pdb-gseat-name').innerText,
            token: c.querySelector('.pdb-gtoken').innerText,
            word: c.querySelector('.pdb-gmove-word').innerText,
            pay: c.querySelector('.pdb-gseat-pay').innerText,
        }))""",
    )


LAYOUT = """() => {
    const bad = [], box = e => e.getBoundingClientRect();
    const ring = box(document.querySelector('.pdb-gring'));
    const cards = [...document.querySelectorAll('.pdb-gseat')];
    cards.forEach((c, i) => {
        const a = box(c), name = c.querySelector('.pdb-gseat-name');
        if (a.left < ring.left - 0.5 || a.right > ring.right + 0.5 || a.top < ring.top - 0.5
            || a.bottom > ring.bottom + 0.5) bad.push('card ' + c.dataset.seat + ' outside the ring');
        if (name.scrollWidth > name.clientWidth + 1) bad.push('name cut: ' + name.innerText);
        for (const part of c.children)
            if (box(part).right > a.right + 0.5) bad.push('spills out of ' + c.dataset.seat);
        cards.slice(i + 1).forEach(d => {
            const b = box(d);
            if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
                bad.push('cards ' + c.dataset.seat + ' and ' + d.dataset.seat + ' overlap');
        });
    });
    const mid = box(document.querySelector('.pdb-gring-mid'));
    cards.forEach(c => { const a = box(c);
        if (a.left < mid.right && mid.left < a.right && a.top < mid.bottom && mid.top < a.bottom)
            bad.push('card ' + c.dataset.seat + ' covers the middle'); });
    return bad;
}"""


def _open_replay(page: Any) -> None:
    page.get_by_role("tab", name="🎬 Replay", exact=True).click()
    wait_idle(page)
    page.locator(".pdb-gring").wait_for()


def _go_to_round(page: Any, round_no: int) -> None:
    page.get_by_role("button", name="⏮").click()
    wait_idle(page)
    for _ in range(round_no - 1):
        page.get_by_role("button", name="▶", exact=True).click()
        wait_idle(page)
    page.locator(f'.pdb-gring[data-round="{round_no}"]').wait_for()


def _no_errors(page: Any, errors: list[str]) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0
    assert errors == [], errors


def test_a_five_player_replay_and_the_group_pages(
    app: tuple[Any, list[str]], group_run: Path, shots: Path
) -> None:
    """One test, so that the module starts one server and one browser (xdist would give each
    test of a module its own worker)."""
    page, errors = app
    assert page.get_by_role("tab", selected=True).first.inner_text().strip() == "🫂 Groups"
    _five_seats_at_round_three(page, group_run, shots)
    _ten_seats_fit(page, shots)
    _results(page, shots)
    _no_errors(page, errors)


def _five_seats_at_round_three(page: Any, group_run: Path, shots: Path) -> None:
    _open_replay(page)
    _go_to_round(page, ROUND)
    record = _record_round(group_run, CONDITION, 0, ROUND)
    seats = _seats(page)
    names = [s["name"] for s in seats]
    letters = "abcde"
    assert names == [record[f"agent_{x}_name"] for x in letters]
    assert len(set(names)) == SEATS
    for seat, x in zip(seats, letters, strict=True):
        played = record[f"agent_{x}_action"]
        assert (seat["move"], seat["token"]) == (played, played), seat
        assert seat["word"] == {"C": "cooperated", "D": "defected"}[played]
        assert page.locator(f'.pdb-gseat[data-seat="{seat["seat"]}"]').is_visible()
    assert page.get_by_text("Round 3 of 6").is_visible()
    said = [e["text"] for e in record["exchange"]]
    shown = page.locator(".pdb-gmsg-text").all_inner_texts()
    assert shown == [f"“{text}”" for text in said] and len(said) == SEATS
    assert page.get_by_text(said[0]).first.is_visible()
    assert page.evaluate(LAYOUT) == []
    page.wait_for_function("() => location.search.includes('round=3')", timeout=10_000)
    page.locator(".pdb-gring").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "group_replay_round3_view.png"))
    full_page_screenshot(page, shots / "group_replay_round3.png", WIDTH)


def _ten_seats_fit(page: Any, shots: Path) -> None:
    select_option(page, "Condition", "ten_talking")
    page.locator('.pdb-gseat[data-seat="J"]').wait_for()
    assert len(_seats(page)) == 10
    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": HEIGHT})
        page.wait_for_timeout(300)
        assert page.evaluate(LAYOUT) == [], width
        full_page_screenshot(page, shots / f"group_replay_ten_{width}.png", width)
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})


def _results(page: Any, shots: Path) -> None:
    page.get_by_role("tab", name="📊 Results", exact=True).click()
    wait_idle(page)
    select_option(page, "Condition", CONDITION)
    page.get_by_text("Each seat, with 95% intervals").wait_for()
    full_page_screenshot(page, shots / "group_results.png", WIDTH)
