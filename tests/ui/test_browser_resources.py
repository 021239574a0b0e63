"""Resource runs (issue 31) in a real browser (`streamlit run` and Debian's Chromium via
Playwright): the app opens on a commons run in the 🫂 Groups tab; a condition whose lake
collapses shows the collapse threshold as a labelled line and "collapsed in season k", k read
from the record here (the first season whose stock left after the harvest is below the rules'
threshold); the replay shows the season's messages, reflections and a fallback marked; a public
goods run's replay shows each seat's contribution as the record has it. The runs are real
(`pdbench run`, rule-based seats); talk is added to one game by hand. One server and one browser
for the module; screenshots are saved in the module's tmp dir. No exception element and no
console error may appear.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.resource_run import (
    add_talk,
    commons_config,
    game_records,
    make_resource_run,
    pgg_config,
)
from tests.ui.browser import CHROMIUM, chromium_page, select_option, streamlit_server, wait_idle
from tests.ui.screenshots import full_page_screenshot

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]

WIDTH, HEIGHT = 1280, 1000
COLLAPSING = "moderate"
THRESHOLD_LABEL = "collapse: fewer than 5 tons left after a harvest"
SAID = [(0, "Let's take 10 each so the lake refills."), (3, "Agreed, 10 tons for me.")]
THOUGHT = [(2, "The others seem cautious; I should be too.")]
PGG_SAID = [(0, "Everyone put in all 20!"), (3, "Sure, I will contribute.")]


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("resource_shots")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A commons run and a public goods run in one working directory's data/runs."""
    base = tmp_path_factory.mktemp("resources_browser")
    commons = make_resource_run(base, "commons_ui", commons_config(base))
    pgg = make_resource_run(base, "pgg_ui", pgg_config(base))
    add_talk(commons, COLLAPSING, 0, {0: SAID}, {0: THOUGHT}, {(0, 4): {"fallback": True}})
    add_talk(pgg, "mixed", 0, {0: PGG_SAID})
    return commons, pgg


@pytest.fixture(scope="module")
def app(runs: tuple[Path, Path], shots: Path) -> Iterator[tuple[Any, list[str]]]:
    commons = runs[0]
    with streamlit_server(commons, commons.parents[2], shots / "streamlit.log") as url:
        with chromium_page(WIDTH, HEIGHT) as (page, errors):
            page.goto(url)
            wait_idle(page)
            yield page, errors


def _collapse_season(run: Path, condition: str, replicate: int) -> int:
    """The 1-based season the game collapsed in, from its record and the manifest's rules."""
    manifest = json.loads((run / "commons_manifest.json").read_text())
    rules = next(c["rules"] for c in manifest["conditions"] if c["name"] == condition)
    for record in game_records(run, condition, replicate):
        if record["stock"] - sum(record["caught"]) < rules["collapse_below"]:
            return record["round_index"] + 1
    raise AssertionError(f"{condition} replicate {replicate} did not collapse")


def _svg_texts(page: Any) -> list[str]:
    return page.eval_on_selector_all("svg text", "ts => ts.map(t => t.textContent)")


def test_commons_collapse_and_a_pgg_replay(
    app: tuple[Any, list[str]], runs: tuple[Path, Path], shots: Path
) -> None:
    """One test, so that the module starts one server and one browser."""
    page, errors = app
    commons, _ = runs
    assert page.get_by_role("tab", selected=True).first.inner_text().strip() == "🫂 Groups"
    season = _collapse_season(commons, COLLAPSING, 0)
    assert 1 < season < 12  # the fixture's point: a collapse inside the horizon, not at once
    select_option(page, "Condition", COLLAPSING)
    page.get_by_text("The lake collapsed in 3 of 3 games").wait_for()
    page.get_by_text("Stock over seasons").wait_for()
    page.wait_for_timeout(800)  # the charts draw after the script
    assert THRESHOLD_LABEL in _svg_texts(page) or page.get_by_text(THRESHOLD_LABEL).count()
    full_page_screenshot(page, shots / "commons_results.png", WIDTH)

    page.get_by_role("tab", name="🎬 Replay", exact=True).click()
    wait_idle(page)
    banner = page.locator(".pdb-rcollapse")
    banner.wait_for()
    assert banner.get_attribute("data-season") == str(season)
    assert f"collapsed in season {season} of 12" in banner.inner_text()
    page.wait_for_timeout(800)
    texts = _svg_texts(page)
    assert f"collapsed in season {season}" in texts, texts
    assert THRESHOLD_LABEL in texts
    shown = page.locator(".pdb-rmsg-talk .pdb-rmsg-text").all_inner_texts()
    assert shown == [text for _, text in SAID]
    assert page.locator(".pdb-rmsg-reflect .pdb-rmsg-text").all_inner_texts() == [THOUGHT[0][1]]
    bad = page.locator("tr.pdb-rbad")
    assert bad.count() == 1 and bad.get_attribute("data-seat") == "4"
    assert "⚠️ fallback" in bad.inner_text()
    full_page_screenshot(page, shots / "commons_replay.png", WIDTH)

    select_option(page, "Condition", "greedy")  # a GREEDY seat: the lake goes at once
    first = _collapse_season(commons, "greedy", 0)
    page.locator(f'.pdb-rcollapse[data-season="{first}"]').wait_for()
    page.wait_for_timeout(800)
    assert f"collapsed in season {first}" in _svg_texts(page)
    full_page_screenshot(page, shots / "commons_replay_greedy.png", WIDTH)

    select_option(page, "Groups run", "pgg_ui")
    page.locator(".pdb-rtable").wait_for()
    _pgg_contributions(page, runs[1])
    page.wait_for_timeout(800)
    full_page_screenshot(page, shots / "pgg_replay.png", WIDTH)
    page.get_by_role("tab", name="📊 Results", exact=True).click()
    wait_idle(page)
    page.get_by_text("Contribution rate over rounds").wait_for()
    page.wait_for_timeout(800)
    full_page_screenshot(page, shots / "pgg_results.png", WIDTH)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert errors == [], errors


def _pgg_contributions(page: Any, pgg: Path) -> None:
    """Round 1's and round 2's decision table hold each seat's contribution as recorded."""
    records = game_records(pgg, "mixed", 0)
    for round_no in (1, 2):
        if round_no > 1:
            page.get_by_role("button", name="▶", exact=True).click()
            wait_idle(page)
        page.locator(f'.pdb-rtable[data-round="{round_no}"]').wait_for()
        cells = page.locator(".pdb-rtable td.pdb-r-contributed").all_inner_texts()
        assert cells == [f"{c:g}" for c in records[round_no - 1]["contributions"]]
        seats = page.locator(".pdb-rtable td.pdb-rseat").all_inner_texts()
        assert seats == [f"{'ABCDE'[i]} · {n}" for i, n in enumerate(records[0]["seats"])]
    page.get_by_role("button", name="◀", exact=True).click()
    wait_idle(page)
    shown = page.locator(".pdb-rmsg-talk .pdb-rmsg-text").all_inner_texts()
    assert shown == [text for _, text in PGG_SAID]
