"""`pdbench report` in a real Chromium (Debian's, via Playwright), with every request other than
the file itself refused: the report of a small experiment (policies and mock LLM agents, 5 games
per condition) renders without console errors, makes no request, and shows what a reader needs:
the setup with the interval method, metrics with intervals, cooperation bands, the memory-one
charts, the strategy card, fallbacks and comparisons. Also the tournament and evolution reports.
Full-page screenshots are saved in the test's tmp dir (look at them when the report changes).

Unit checks of the SVG helpers: names are escaped; an interval is drawn where a hand
computation puts it; round ticks are whole rounds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.cli import run_in_process
from tests.support.configs import experiment, llm, policy, write_config
from tests.ui.browser import CHROMIUM, chromium_page

from pdbench.report.svg import Point, interval_dots, round_ticks, x_scale


def test_svg_escapes_names_and_places_intervals_by_hand() -> None:
    svg = interval_dots(
        [Point('<b>"A" & B</b>', 0.5, 0.25, 0.75)], "t <1>", "axis", legend=(("x&y", "#000"),)
    )
    assert "<b>" not in svg and "&lt;b&gt;&quot;A&quot; &amp; B&lt;/b&gt;" in svg
    assert "t &lt;1&gt;" in svg and "x&amp;y" in svg
    # label column 260 px, plot 680 - 260 - 90 = 330 px: 0.25 -> 342.5, 0.75 -> 507.5.
    assert "x1='342.5'" in svg and "x2='507.5'" in svg
    assert x_scale(0.5, 0.0, 1.0, 260, 330) == 425.0
    assert round_ticks(3) == [1, 2, 3]
    assert round_ticks(100) == [1, 20, 40, 60, 80, 100]
    assert round_ticks(100_000)[-1] == 100_000
    assert all(isinstance(t, int) for t in round_ticks(997))


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    data = experiment(
        [
            ("TFT_vs_RANDOM", policy("TFT", name="Tit <&> Tat"), policy("RANDOM")),
            ("LLMcoop_vs_GRIM", llm("cooperative", mock={"invalid_rate": 0.2}), policy("GRIM")),
        ],
        replicates=5,
        noise=0.05,
        horizon={"type": "fixed", "n_rounds": 30},
    )
    data["run"]["output_dir"] = str(tmp_path / "run")
    code, _, err = run_in_process(["run", str(write_config(data, tmp_path))], capsys)
    assert code == 0, err
    return tmp_path / "run"


pytestmark_browser = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"
)


def _open(path: Path, shot: Path) -> tuple[str, list[str], list[str]]:
    """(visible text, console errors, requests other than the file) of a report page."""
    requests: list[str] = []
    with chromium_page(1400, 900) as (page, errors):
        page.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith("file://")
                else (requests.append(route.request.url), route.abort())
            ),
        )
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        text = page.inner_text("body")
        svgs = page.locator("svg").count()
        assert svgs > 0
        page.screenshot(path=str(shot), full_page=True)
    return text, errors, requests


@pytest.mark.browser
@pytestmark_browser
def test_the_experiment_report_renders_offline_with_every_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = _run(tmp_path, capsys)
    code, out, err = run_in_process(["report", str(run_dir)], capsys)
    assert code == 0, err
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")
    assert "https://" not in html
    text, errors, requests = _open(run_dir / "report.html", tmp_path / "report.png")
    assert errors == [] and requests == []
    for heading in (
        "Setup",
        "Metrics with 95% intervals",
        "Cooperation over time",
        "Memory-one profile",
        "Behavioural dimensions (Fontana et al. 2024)",
        "Strategy card",
        "Fallback moves (LLM agents)",
        "Comparisons: agent_a_cooperation_rate",
    ):
        assert heading in text, heading
    # The setup names each kind of metric's interval method, as the manifest records it.
    assert "share: share of games (yes/no per game): Wilson score interval" in text
    assert "pooled_ratio: ratio pooled over games" in text
    assert "mean: mean of per-game values" in text
    assert "Tit <&> Tat" in text and "Tit &lt;&amp;&gt; Tat" in html  # escaped, shown as written
    assert "mixture share [95%]" in text and "rank" in text
    assert "[" in text and "%]" in text  # intervals shown as [low, high]
    assert (run_dir / "strategy_fit.parquet").is_file()
    assert (run_dir / "comparisons.parquet").is_file()


@pytest.mark.browser
@pytestmark_browser
def test_tournament_and_evolution_reports_render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = Path(__file__).resolve().parents[2]
    for kind, config, heading, extra in (
        ("tournament", "tournament.yaml", "rank (95%)", []),
        ("evolve", "evolution.yaml", "Fixation over seeds", ["--seeds", "5"]),
    ):
        out_dir = tmp_path / kind
        code, _, err = run_in_process(
            [kind, str(repo / "configs" / config), "-o", str(out_dir), *extra], capsys
        )
        assert code == 0, err
        code, _, err = run_in_process(["report", str(out_dir)], capsys)
        assert code == 0, err
        text, errors, requests = _open(out_dir / "report.html", tmp_path / f"{kind}.png")
        assert errors == [] and requests == []
        assert heading in text


def test_a_report_of_no_run_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_in_process(["report", str(tmp_path)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1


def _card_rows(adequate: bool) -> list[dict]:
    """A card of two strategies whose best named one failed (or passed) its fit test."""
    base = {"condition": "c1", "agent": "a", "agent_name": "llm", "tremble": 0.2,
            "parameters": "{}", "adequate": adequate, "share_ci_low": 0.3,
            "share_ci_high": 0.9}  # fmt: skip
    return [
        {**base, "strategy": "GRIM", "rank": 1, "share": 0.6, "gof_p_value": 0.01,
         "moves_explained": 0.71},
        {**base, "strategy": "MEMORY_ONE", "rank": 2, "share": None, "gof_p_value": 0.01,
         "moves_explained": 0.8},
    ]  # fmt: skip


def test_strategy_card_without_a_fitting_strategy_shows_words_not_shares() -> None:
    import pandas as pd

    from pdbench.report.experiment import strategy_section
    from pdbench.ui import tables

    html = strategy_section(_card_rows(False))
    assert "no strategy in the library fits; closest: GRIM, which explains 71% of moves" in html
    assert "60.0%" not in html and "30.0%" not in html  # neither the share nor its interval
    assert "conditional on the library" in html
    frame = pd.DataFrame(_card_rows(False))
    assert "closest: GRIM" in (tables.strategy_verdict(frame, "c1", "a") or "")
    assert set(tables.strategy_card(frame, "c1", "a")["mixture share (95%)"]) == {"—"}
    # The same card, adequate: shares and intervals as before, no words.
    html = strategy_section(_card_rows(True))
    assert "library fits;" not in html and "60.0% <span class='ci'>[30.0%, 90.0%]" in html
    frame = pd.DataFrame(_card_rows(True))
    assert tables.strategy_verdict(frame, "c1", "a") is None
    assert tables.strategy_card(frame, "c1", "a")["mixture share (95%)"].iloc[0].startswith("60%")
