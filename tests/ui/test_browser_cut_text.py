"""No cut text on View Results at 1280 and 1920 px wide (Debian's Chromium): a run of two LLM
agents with long names and payoffs in the thousands. The headline's big numbers and grey chips
fit their cards, the timeline's row labels fit their gutter (and carry the full name as a
title), no element cut with an ellipsis hides text without a title holding all of it, and no
chart text (Vega draws legends and axes as SVG) ends in Vega's "…" or runs past its chart.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.ui.browser import CHROMIUM, chromium_page, component, streamlit_server, wait_idle
from tests.ui.sample import _llm, make_run
from tests.ui.screenshots import full_page_screenshot

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]

MODEL = "mock-persona-v1-instruct-extended-context-2026-preview"


def _long_llm(persona: str) -> dict[str, Any]:
    agent = _llm(persona, 0.1)
    agent["overrides"]["model"] = MODEL
    return agent


CONDITIONS = [
    {
        "name": "LLMcooperative_vs_LLMexploitative_long",
        "agent_a": _long_llm("cooperative"),
        "agent_b": _long_llm("exploitative"),
    }
]

# Elements cut by CSS (an ellipsis, or nowrap with hidden overflow) whose text is wider than the
# box and has no title holding all of it; and the SVG texts Vega cut with "…" or drawn past the
# chart's edge (where the browser clips them).
CUT = """() => {
    const cut = [...document.querySelectorAll('body *')].filter(e => {
        const s = getComputedStyle(e);
        const clips = s.textOverflow === 'ellipsis' || (s.overflowX === 'hidden' && s.whiteSpace === 'nowrap');
        const text = e.textContent.trim();
        return clips && text && e.getAttribute('data-testid') !== 'stSkipToContent'
            && e.scrollWidth > e.clientWidth + 1 && !(e.title || '').includes(text);
    }).map(e => e.textContent.trim());
    const svg = [...document.querySelectorAll('svg text')].filter(t => {
        const b = t.getBoundingClientRect(), c = t.ownerSVGElement.getBoundingClientRect();
        const turned = (t.getAttribute('transform') || '').includes('rotate');  // axis titles
        const outside = !turned && b.width > 0 && (b.left < c.left - 1 || b.right > c.right + 1);
        return t.textContent.endsWith('…') || outside;
    }).map(t => t.textContent);
    return [cut, svg];
}"""

# Per headline card: its texts, and the ones that stick out of the card or their box.
CHIPS = """() => [...document.querySelectorAll('[data-testid="stMetric"]')].map(m => {
    const card = m.getBoundingClientRect();
    const parts = [...m.querySelectorAll(
        '[data-testid="stMetricValue"] .stMarkdownEllipsis, [data-testid="stMetricDelta"] .stMarkdownEllipsis')];
    return {
        texts: parts.map(p => p.textContent),
        out: parts.filter(p => {
            const b = p.querySelector('p').getBoundingClientRect();
            return b.right > card.right + 1 || p.scrollWidth > p.clientWidth + 1;
        }).map(p => p.textContent),
    };
})"""

# The timeline's row labels: text, title, and whether all lines of the name show in the label.
LABELS = """() => [...document.querySelectorAll('.pdb-row-label')].map(l => {
    const name = l.querySelector('.pdb-row-name'), a = l.getBoundingClientRect();
    const b = name.getBoundingClientRect();
    return {
        text: l.textContent, title: l.title,
        fits: name.scrollHeight <= name.clientHeight + 1 && name.scrollWidth <= name.clientWidth + 1
            && b.top >= a.top - 1 && b.bottom <= a.bottom + 1,
    };
})"""


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, list[str], str]]:
    """The app on a 1,000-round game of two long-named mock LLMs (2 replicates)."""
    base = tmp_path_factory.mktemp("cut")
    run_dir = make_run(base, CONDITIONS, n_rounds=1_000, replicates=2, run_id="long_names")
    log = tmp_path_factory.mktemp("log") / "streamlit.log"
    with streamlit_server(run_dir, base, log) as url, chromium_page(1280, 900) as (page, errors):
        yield page, errors, url


def test_no_cut_text_on_view_results(app: tuple[Any, list[str], str], tmp_path: Path) -> None:
    page, errors, url = app
    page.goto(url)
    wait_idle(page)
    page.get_by_text("Game timeline").wait_for()
    frame = component(page, ".pdb-row-label")
    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(800)  # Streamlit and Vega lay out again
        chips = page.evaluate(CHIPS)
        assert len(chips) == 6, chips
        texts = [t for c in chips for t in c["texts"]]
        assert any("mean round" in t for t in texts), texts  # the long chip is there
        assert any("," in t and "–" in t for t in texts), texts  # a range in the thousands
        assert all(c["out"] == [] for c in chips), (width, chips)
        labels = frame.evaluate(LABELS)
        assert len(labels) == 2, labels
        for label in labels:
            assert MODEL in label["text"] and label["title"] == label["text"], label
            assert label["fits"], (width, label)
        cut, svg = page.evaluate(CUT)
        assert cut == [] and svg == [], (width, cut, svg)
        assert page.locator("svg text").count() > 10  # the charts were drawn as SVG
        full_page_screenshot(page, tmp_path / f"view_results_{width}.png", width=width)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert errors == [], errors
