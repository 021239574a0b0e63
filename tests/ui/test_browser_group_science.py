"""A group tournament and a group evolution in a real browser (`streamlit run` and Debian's
Chromium via Playwright, issue 30), on real runs (`pdbench tournament` / `evolve` of the
example configs, offline): the Tournament tab opens on the group tournament and its leaderboard
chart shows the first player's rank and name ('1 · GRIM') and its interval text in full, inside
the chart, at 1280 and 1920 px; the Evolution tab shows the group evolution's fixation chart
with the winner's share, Wilson interval and exact probability in full. No chart text ends in
Vega's "…" or runs past its chart, and no element cut with an ellipsis hides text without a
title holding it. The expected texts are built from the Parquet files, read here. One server
and one browser for the module; screenshots are saved in the module's tmp dir. No exception
element and no console error may appear.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.support.group_science_run import make_real_group_science
from tests.ui.browser import CHROMIUM, chromium_page, open_tab, streamlit_server, wait_idle
from tests.ui.screenshots import full_page_screenshot
from tests.ui.test_browser_cut_text import CUT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]

WIDTHS, HEIGHT = (1280, 1920), 1000

# Each wanted text: whether an SVG text holds exactly it, and whether it is drawn (a size) inside
# its chart's SVG (where the browser would clip it otherwise).
SVG_TEXTS = """(wanted) => {
    const texts = [...document.querySelectorAll('svg text')];
    return wanted.map(w => {
        const t = texts.find(e => e.textContent === w);
        if (!t) return [w, 'missing'];
        const b = t.getBoundingClientRect(), c = t.ownerSVGElement.getBoundingClientRect();
        const inside = b.width > 0 && b.height > 0 && b.left >= c.left - 1
            && b.right <= c.right + 1 && b.top >= c.top - 1 && b.bottom <= c.bottom + 1;
        return [w, inside ? 'shown' : 'outside its chart'];
    });
}"""


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("group_science_shots")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(group tournament, group evolution) in one working directory's data/ folders."""
    return make_real_group_science(tmp_path_factory.mktemp("group_science_browser"))


@pytest.fixture(scope="module")
def app(runs: tuple[Path, Path], shots: Path) -> Iterator[tuple[Any, list[str]]]:
    """The app opened on the group tournament (the evolution is listed from data/evolutions)."""
    tournament, _ = runs
    cwd = tournament.parents[2]
    with streamlit_server(tournament, cwd, shots / "streamlit.log") as url:
        with chromium_page(WIDTHS[0], HEIGHT) as (page, errors):
            page.goto(url)
            wait_idle(page)
            yield page, errors


def _wanted_tournament(run: Path) -> list[str]:
    """The first player's chart label (rank and name) and its interval text, from
    leaderboard.parquet (ranks 1, 2, ... without ties in this run)."""
    board = pd.read_parquet(run / "leaderboard.parquet").sort_values("rank")
    top = board.iloc[0]
    assert int(top["rank"]) == 1 and int(board.iloc[1]["rank"]) == 2
    interval = f"{top['mean_payoff_per_round']:.3f} [{top['ci_low']:.3f}, {top['ci_high']:.3f}]"
    return [f"1 · {top['player']}", interval]


def _wanted_evolution(run: Path) -> list[str]:
    """The most frequent winner's row label and its text (share, Wilson interval, exact
    probability), from fixation.parquet."""
    fixation = pd.read_parquet(run / "fixation.parquet")
    top = fixation[fixation["strategy"] != "(no fixation)"].sort_values("fixations").iloc[-1]
    pct = [f"{100 * top[c]:.1f}%" for c in ("probability", "ci_low", "ci_high")]
    text = f"{pct[0]} [{pct[1]}, {pct[2]}] · exact {100 * top['exact_probability']:.1f}%"
    return [str(top["strategy"]), text]


def _check_texts(page: Any, wanted: list[str], shots: Path, name: str) -> None:
    """At each width: the wanted chart texts drawn in full inside their chart, nothing cut;
    a screenshot of the page."""
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        page.wait_for_timeout(800)
        found = page.evaluate(SVG_TEXTS, wanted)
        assert found == [[w, "shown"] for w in wanted], (width, found)
        for text in wanted:
            assert page.locator("svg text").filter(has_text=text).first.is_visible()
        cut, svg = page.evaluate(CUT)
        assert (cut, svg) == ([], []), width
        full_page_screenshot(page, shots / f"{name}_{width}.png", width)
    page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})


def test_group_tournament_and_evolution_views(
    app: tuple[Any, list[str]], runs: tuple[Path, Path], shots: Path
) -> None:
    """One test, so that the module starts one server and one browser."""
    page, errors = app
    tournament, evolution = runs
    assert page.get_by_role("tab", selected=True).first.inner_text().strip() == "🏆 Tournament"
    page.get_by_text("The groups played").wait_for()
    page.wait_for_function("() => location.search.includes('tournament=')", timeout=10_000)
    _check_texts(page, _wanted_tournament(tournament), shots, "group_tournament")

    open_tab(page, "🧬 Evolution")
    page.get_by_text("Payoff table by composition").wait_for()
    page.wait_for_function("() => location.search.includes('evolution=')", timeout=10_000)
    _check_texts(page, _wanted_evolution(evolution), shots, "group_evolution")

    assert page.locator('[data-testid="stException"]').count() == 0
    assert errors == [], errors
