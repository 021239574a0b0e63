"""The browser-side components in Debian's Chromium (1400x900): the timeline of a 10,000-round
game (zoomed window readable: two distinct rows, labels and ticks not overlapping, whole-round
ticks within the game), the replay at 20 ms a round reaching the last round with label and slider
in step, the jumps to the next noise flip and fallback, and the evolution animation ending on its
last generation 10 times out of 10 (and a 300-member population fitting its ring), and the
replay of an LLM game showing, under each move, the agent's reply and its invalid attempts as
rounds.jsonl holds them (a reply written with HTML shows as that text).

The components live in iframes; their state is read from data attributes (data-frame, data-last,
data-playing, data-lo, data-hi) and from element boxes. Screenshots are saved in the test's tmp
dir; no exception element and no console error (the iframes' included) may appear.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.ui.browser import (
    CHROMIUM,
    chromium_page,
    component,
    component_state,
    open_tab,
    select_option,
    streamlit_server,
    wait_idle,
)
from tests.ui.sample import _llm, _policy, make_evolution, make_run
from tests.ui.screenshots import full_page_screenshot

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]

WIDTH, HEIGHT = 1400, 900
NOISY = {"name": "Copycat_vs_Generous_noisy", "noise": 0.02}
LONG = [{**NOISY, "agent_a": _policy("TFT"), "agent_b": _policy("GTFT")}]
SHORT = [
    {**NOISY, "agent_a": _policy("TFT"), "agent_b": _policy("GTFT")},
    {
        "name": "LLM_mock_fallbacks",
        "agent_a": _llm("cooperative", 0.5),
        "agent_b": _llm("exploitative", 0.5),
    },
]
GENERATIONS = 14
LLM_VS_POLICY = [
    {"name": "LLM_vs_Copycat", "agent_a": _llm("cooperative", 0.5), "agent_b": _policy("TFT")}
]
HTML_REPLY = '<img src=x onerror="document.title=\'injected\'"> <b>C</b> & "D"'


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory with a 10,000-round, a 500-round, a 3-round run and a 40-round game of
    a mock LLM against Copycat (one reply rewritten as HTML, see `_with_html_reply`) and two
    evolutions (12 and 300 members) under data/."""
    root = tmp_path_factory.mktemp("anim")
    make_run(root, LONG, n_rounds=10_000, replicates=1, run_id="long_10k")
    make_run(root, SHORT, n_rounds=500, replicates=1, run_id="short_500")
    make_run(root, LONG, n_rounds=3, replicates=1, run_id="tiny_3")
    _with_html_reply(make_run(root, LLM_VS_POLICY, n_rounds=40, replicates=1, run_id="llm_40"))
    evolutions = root / "data" / "evolutions"
    make_evolution(evolutions / "evo_small", generations=GENERATIONS, run_id="evo_small")
    make_evolution(
        evolutions / "evo_300",
        {"TFT": 100, "ALLD": 100, "ALLC": 100},
        generations=4,
        run_id="evo_300",
    )
    return root


@pytest.fixture(scope="module")
def app(
    base: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Any, list[str], str]]:
    """The app on the 10,000-round run (cwd: `base`) and a Chromium page at 1400x900."""
    log = tmp_path_factory.mktemp("log") / "streamlit.log"
    run_dir = base / "data" / "runs" / "long_10k"
    with (
        streamlit_server(run_dir, base, log) as url,
        chromium_page(WIDTH, HEIGHT) as (page, errors),
    ):
        yield page, errors, url


def _stage(page: Any, text: str, timeout_s: float = 30) -> Any:
    """The replay or evolution component whose label contains `text` (after a rerun the old
    document may still be on screen for a moment)."""
    deadline = time.monotonic() + timeout_s
    while True:
        frame = component(page, "#pdb-label")
        try:
            if text in component_state(frame)["label"]:
                return frame
        except Exception:  # noqa: BLE001 - the frame navigated while read
            pass
        assert time.monotonic() < deadline, f"no component labelled {text!r}"
        page.wait_for_timeout(200)


def _box(frame: Any, selector: str) -> dict[str, float]:
    box = frame.locator(selector).bounding_box()
    assert box is not None, selector
    return box


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def _ticks(frame: Any, axis: int) -> list[tuple[int, dict[str, float]]]:
    """The round ticks of an axis (0: the zoomed window, 1: the whole game) and their boxes."""
    ticks = frame.locator(".pdb-axis").nth(axis).locator(".pdb-tick")
    out = []
    for i in range(ticks.count()):
        text = ticks.nth(i).inner_text()
        assert re.fullmatch(r"\d{1,3}(,\d{3})*", text), text  # whole rounds
        out.append((int(text.replace(",", "")), ticks.nth(i).bounding_box()))
    return out


def _check_readable(frame: Any, iframe: dict[str, float]) -> tuple[int, int]:
    """Two distinct labelled rows, labels and ticks not overlapping and inside the component's
    `iframe` (boxes are in page coordinates); returns the window."""
    tl = frame.locator(".pdb-tl2")
    lo, hi = int(tl.get_attribute("data-lo")), int(tl.get_attribute("data-hi"))
    row_a, row_b = _box(frame, '.pdb-row[data-agent="A"]'), _box(frame, '.pdb-row[data-agent="B"]')
    assert row_a["height"] >= 20 and row_b["height"] >= 20
    assert row_a["y"] + row_a["height"] + 8 <= row_b["y"]  # separate rows, a gap between them
    lab_a = _box(frame, '.pdb-row-label[data-agent="A"]')
    lab_b = _box(frame, '.pdb-row-label[data-agent="B"]')
    assert not _overlap(lab_a, lab_b)
    for lab, row in ((lab_a, row_a), (lab_b, row_b)):
        assert lab["x"] + lab["width"] <= row["x"]  # the label sits left of its row
        assert abs((lab["y"] + lab["height"] / 2) - (row["y"] + row["height"] / 2)) < 2
    assert frame.locator('.pdb-row-label[data-agent="A"]').inner_text().startswith("A ·")
    assert frame.locator('.pdb-row-label[data-agent="B"]').inner_text().startswith("B ·")
    n = int(tl.get_attribute("data-rounds"))
    for axis, (first, last) in ((0, (lo, hi)), (1, (1, n))):
        ticks = _ticks(frame, axis)
        assert len(ticks) >= 3
        assert all(first <= t <= last for t, _ in ticks), (ticks, first, last)
        for (_, a), (_, b) in zip(ticks, ticks[1:], strict=False):
            assert a["x"] + a["width"] + 4 <= b["x"], (a, b)  # no overlap, some air
        right = iframe["x"] + iframe["width"]
        assert all(box["x"] >= iframe["x"] and box["x"] + box["width"] <= right for _, box in ticks)
    return lo, hi


def _choose(page: Any, label: str, text: str) -> None:
    """Pick the option of select box `label` containing `text` by typing it (the options of a
    box far down the page are not always listed on click)."""
    box = page.get_by_role("combobox", name=label, exact=True)
    box.scroll_into_view_if_needed()
    box.click()
    page.keyboard.type(text)
    page.get_by_role("option").filter(has_text=text).first.wait_for()
    page.keyboard.press("Enter")
    wait_idle(page)
    assert text in box.input_value()


def _no_errors(page: Any, errors: list[str]) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0
    assert errors == [], errors


def test_timeline_of_a_10000_round_game(app: tuple[Any, list[str], str], tmp_path: Path) -> None:
    page, errors, url = app
    errors.clear()
    page.goto(url)
    wait_idle(page)
    page.get_by_text("Game timeline").wait_for()
    frame = component(page, ".pdb-tl2")
    frame.locator(".pdb-tick").first.wait_for()
    assert frame.locator(".pdb-tl2").get_attribute("data-rounds") == "10000"
    box = page.locator("iframe").first.bounding_box()
    assert _check_readable(frame, box) == (1, 100)
    page.locator("iframe").first.scroll_into_view_if_needed()
    page.locator("iframe").first.screenshot(path=str(tmp_path / "timeline_10k_window.png"))
    # Drag the brush on the whole-game strip: the window moves, still readable.
    brush = _box(frame, ".pdb-brush")
    strip = _box(frame, ".pdb-tl-overview canvas")
    x0 = brush["x"] + brush["width"] / 2
    y0 = strip["y"] + strip["height"] / 2
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x0 + 400, y0, steps=8)
    page.mouse.up()
    lo, hi = _check_readable(frame, box)
    assert lo > 3000 and hi - lo + 1 == 100, (lo, hi)
    page.locator("iframe").first.screenshot(path=str(tmp_path / "timeline_10k_moved.png"))
    frame.get_by_role("button", name="Whole game").click()
    assert _check_readable(frame, box) == (1, 10_000)
    page.locator("iframe").first.screenshot(path=str(tmp_path / "timeline_10k_whole.png"))
    # How to move is said on the page, and aggregated stretches have a colour scale.
    hint = frame.locator(".pdb-tl-hint").inner_text()
    assert "Drag on the whole-game strip" in hint and "wheel" in hint, hint
    scale = frame.locator(".pdb-share-scale")
    assert scale.is_visible() and "share of C" in scale.inner_text()
    assert "0% (all D)" in scale.inner_text() and "100% (all C)" in scale.inner_text()
    assert _box(frame, ".pdb-share-grad")["width"] >= 100
    # In the whole-game view a drag on the strip draws a new window: from 20% to 30% of it.
    strip = _box(frame, ".pdb-tl-overview canvas")
    page.mouse.move(strip["x"] + 0.2 * strip["width"], y0)
    page.mouse.down()
    page.mouse.move(strip["x"] + 0.3 * strip["width"], y0, steps=6)
    page.mouse.up()
    lo, hi = _check_readable(frame, box)
    assert abs(lo - 2_000) <= 30 and abs(hi - 3_000) <= 30, (lo, hi)
    # The wheel over the zoomed rows zooms in at the pointer: the round under it stays put.
    rows = _box(frame, ".pdb-tl-detail canvas")
    x = rows["x"] + 0.75 * rows["width"]
    under = lo + 0.75 * (hi - lo + 1)
    page.mouse.move(x, rows["y"] + rows["height"] / 2)
    page.mouse.wheel(0, -120)
    page.wait_for_timeout(150)
    lo2, hi2 = _check_readable(frame, box)
    assert hi2 - lo2 + 1 < hi - lo + 1, (lo, hi, lo2, hi2)  # narrower
    assert abs(lo2 + 0.75 * (hi2 - lo2 + 1) - under) <= 0.02 * (hi - lo + 1), (lo2, hi2, under)
    page.locator("iframe").first.screenshot(path=str(tmp_path / "timeline_10k_wheel.png"))
    full_page_screenshot(page, tmp_path / "view_results_10k.png", width=WIDTH)
    _no_errors(page, errors)


def _set_speed(frame: Any, ms: int) -> None:
    frame.eval_on_selector(
        "#pdb-speed",
        "(e, ms) => { e.value = PDB.speedPosition(ms); e.dispatchEvent(new Event('input')); }",
        ms,
    )
    assert frame.locator(".pdb-speed-text").inner_text().startswith(f"{ms} ms per")


def _play_to_the_end(frame: Any, timeout_s: float) -> tuple[dict[str, Any], float]:
    """Click Play and wait until playback stops; checks label and slider along the way."""
    start = time.monotonic()
    frame.locator("#pdb-play").click()
    seen = []
    while True:
        state = component_state(frame)
        seen.append(state)
        assert state["slider"] == state["frame"], state  # the slider is in step
        if not state["playing"]:
            break
        assert time.monotonic() - start < timeout_s, state
        frame.page.wait_for_timeout(50)
    return state, time.monotonic() - start


def test_replay_at_20_ms_reaches_the_last_round(
    app: tuple[Any, list[str], str], base: Path, tmp_path: Path
) -> None:
    page, errors, url = app
    errors.clear()
    page.goto(url)
    wait_idle(page)
    open_tab(page, "🎬 Animated Replay")
    select_option(page, "Run", "short_500")
    frame = _stage(page, "Round 1 of 500")
    state = component_state(frame)
    assert state["label"].startswith("Round 1 of 500") and state["last"] == 500
    # Jumps: the next noise flip and the next fallback are the first ones in rounds.jsonl.
    rounds = pd.read_json(base / "data" / "runs" / "short_500" / "rounds.jsonl", lines=True)
    noisy = rounds[rounds["condition"] == NOISY["name"]].sort_values("round_index")
    flipped = noisy[
        (noisy["agent_a_action"] != noisy["agent_a_intended_action"])
        | (noisy["agent_b_action"] != noisy["agent_b_intended_action"])
    ]
    first_flip = int(flipped["round_index"].iloc[0]) + 1
    frame.locator('[data-jump="next-noise-flip"]').click()
    state = component_state(frame)
    assert state["frame"] == first_flip and state["slider"] == first_flip
    assert state["label"].startswith(f"Round {first_flip} of 500")
    assert "noise flip" in frame.locator(".pdb-stage").inner_text()
    frame.locator('[data-jump="prev-noise-flip"]').click()
    assert component_state(frame)["frame"] == first_flip  # no earlier flip: stays
    page.locator("iframe").first.screenshot(path=str(tmp_path / "replay_flip.png"))
    # 20 ms a round: 500 rounds in about 10 s; it must end on round 500.
    _set_speed(frame, 20)
    frame.locator("#pdb-restart").click()
    state, elapsed = _play_to_the_end(frame, timeout_s=90)
    assert state["frame"] == 500 and state["slider"] == 500, state
    assert state["label"].startswith("Round 500 of 500"), state
    assert elapsed < 90
    page.locator("iframe").first.screenshot(path=str(tmp_path / "replay_end.png"))
    # The mock LLM game: fallbacks exist and the jump lands on one.
    select_option(page, "Condition", "LLM_mock_fallbacks")
    frame = _stage(page, "Round 1 of 500")
    assert component_state(frame)["frame"] == 1
    llm = rounds[rounds["condition"] == "LLM_mock_fallbacks"].sort_values("round_index")
    failed = llm[llm["agent_a_parse_failure"] | llm["agent_b_parse_failure"]]
    first_fail = int(failed["round_index"].iloc[0]) + 1
    frame.locator('[data-jump="next-fallback"]').click()
    assert component_state(frame)["frame"] == first_fail
    assert "fallback" in frame.locator(".pdb-stage").inner_text()
    full_page_screenshot(page, tmp_path / "replay_fallback.png", width=WIDTH)
    _no_errors(page, errors)


def test_evolution_ends_on_its_last_generation(
    app: tuple[Any, list[str], str], base: Path, tmp_path: Path
) -> None:
    page, errors, url = app
    manifest = base / "data" / "evolutions" / "evo_small" / "evolution_manifest.json"
    last = int(json.loads(manifest.read_text())["generations_run"])
    assert last >= 4
    errors.clear()
    page.goto(url)
    wait_idle(page)
    open_tab(page, "🧬 Evolution")
    _choose(page, "Saved evolutions", "evo_small")
    page.get_by_text("Generation by generation").wait_for()
    frame = _stage(page, "12 individuals")
    state = component_state(frame)
    assert state["frame"] == last and state["last"] == last
    assert state["label"].startswith(f"Generation {last} of {last}")
    assert frame.locator(".pdb-member").count() == 12
    _set_speed(frame, 20)
    for _ in range(10):
        state, _ = _play_to_the_end(frame, timeout_s=30)
        assert state["frame"] == last and state["slider"] == last, state
        assert state["label"].startswith(f"Generation {last} of {last}"), state
    frame.locator("#pdb-restart").click()
    for _ in range(3):
        frame.locator("#pdb-step").click()
    assert component_state(frame)["label"].startswith(f"Generation 3 of {last}")
    page.get_by_text("Generation by generation").scroll_into_view_if_needed()
    full_page_screenshot(page, tmp_path / "evolution.png", width=WIDTH)
    # 300 members still fit the ring (smaller dots).
    _choose(page, "Saved evolutions", "evo_300")
    frame = _stage(page, "300 individuals")
    frame.wait_for_function("() => document.querySelectorAll('.pdb-member').length === 300")
    ring = _box(frame, ".pdb-ring")
    assert ring["height"] <= 400 and ring["width"] <= 400
    inside = frame.evaluate(
        """() => {
            const r = document.querySelector('.pdb-ring').getBoundingClientRect();
            return [...document.querySelectorAll('.pdb-member')].every(m => {
                const b = m.getBoundingClientRect();
                return b.left >= r.left - 1 && b.right <= r.right + 1 &&
                    b.top >= r.top - 1 && b.bottom <= r.bottom + 1;
            });
        }"""
    )
    assert inside
    page.locator("iframe").first.screenshot(path=str(tmp_path / "evolution_300.png"))
    _no_errors(page, errors)


def test_a_3_round_game_has_ticks_1_2_3(app: tuple[Any, list[str], str], tmp_path: Path) -> None:
    page, errors, url = app
    errors.clear()
    page.goto(url)
    wait_idle(page)
    open_tab(page, "🎬 Animated Replay")
    select_option(page, "Run", "tiny_3")
    frame = _stage(page, "Round 1 of 3")
    assert component_state(frame)["last"] == 3
    box = page.locator("iframe").first.bounding_box()
    assert _check_readable(frame, box) == (1, 3)
    assert [t for t, _ in _ticks(frame, 0)] == [1, 2, 3]
    assert [t for t, _ in _ticks(frame, 1)] == [1, 2, 3]
    _set_speed(frame, 20)
    state, _ = _play_to_the_end(frame, timeout_s=30)
    assert state["frame"] == 3 and state["label"].startswith("Round 3 of 3"), state
    page.locator("iframe").first.screenshot(path=str(tmp_path / "replay_3_rounds.png"))
    _no_errors(page, errors)


def _records(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "rounds.jsonl").read_text(encoding="utf-8").splitlines()
    return sorted((json.loads(x) for x in lines), key=lambda r: r["round_index"])


def _retried(record: dict[str, Any]) -> bool:
    """A's move came from a valid reply after at least one invalid one."""
    attempts = record["raw_responses"]["agent_a"]
    return len(attempts) > 1 and not record["agent_a_parse_failure"]


def _with_html_reply(run: Path) -> None:
    """Replace the first invalid reply of A's first retried round with one written with HTML."""
    records = _records(run)
    first = next(r for r in records if _retried(r))
    first["raw_responses"]["agent_a"][0]["raw"] = HTML_REPLY
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    (run / "rounds.jsonl").write_text(text, encoding="utf-8")


def _panel(frame: Any, agent: str) -> dict[str, Any]:
    """What the reply panel of agent A or B shows: round, main line, attempt lines, fallback."""
    return frame.eval_on_selector(
        f'.pdb-reply[data-agent="{agent}"]',
        """(p) => ({
            round: Number(p.dataset.round || 0),
            main: p.querySelector('.pdb-reply-main').textContent,
            text: p.querySelector('.pdb-reply-main .pdb-reply-text')?.textContent,
            retries: [...p.querySelectorAll('.pdb-reply-retries li')].map(li => [
                li.querySelector('.pdb-reply-tag').textContent,
                li.querySelector('.pdb-reply-text').textContent,
            ]),
            elements: p.querySelectorAll('.pdb-reply-text *').length,
            fallback: p.querySelector('.pdb-reply-fallback')?.textContent || '',
        })""",
    )


def _expected(record: dict[str, Any]) -> tuple[str, list[list[str]]]:
    """The reply and the attempt lines for A's panel, from the record."""
    attempts = record["raw_responses"]["agent_a"]
    lines = [
        [f"attempt {a['attempt'] + 1} (invalid): ", a["raw"] or "(empty reply)"] for a in attempts
    ]
    if record["agent_a_parse_failure"]:
        return "no valid reply", lines
    return attempts[-1]["raw"], lines[:-1]


def _scrub(frame: Any, round_no: int) -> None:
    frame.eval_on_selector(
        "#pdb-scrub",
        "(e, r) => { e.value = r; e.dispatchEvent(new Event('input')); }",
        round_no,
    )


def test_replay_shows_the_llm_reply_and_its_retries(
    app: tuple[Any, list[str], str], base: Path, tmp_path: Path
) -> None:
    page, errors, url = app
    errors.clear()
    page.goto(url)
    wait_idle(page)
    open_tab(page, "🎬 Animated Replay")
    select_option(page, "Run", "llm_40")
    frame = _stage(page, "Round 1 of 40")
    records = _records(base / "data" / "runs" / "llm_40")
    assert _panel(frame, "B")["main"] == "policy: no reply"
    k = next(r["round_index"] for r in records if _retried(r)) + 1
    _scrub(frame, k)
    assert component_state(frame)["frame"] == k
    shown, record = _panel(frame, "A"), records[k - 1]
    reply, lines = _expected(record)
    assert record["raw_responses"]["agent_a"][0]["raw"] == HTML_REPLY
    assert shown["round"] == k and shown["text"] == reply and shown["retries"] == lines
    n = len(record["raw_responses"]["agent_a"])
    assert shown["main"].startswith(f"A's reply (attempt {n}): ")
    assert shown["elements"] == 0  # the reply written with HTML stayed text: no element,
    assert frame.evaluate("document.title") != "injected"  # no script run
    assert shown["fallback"] == ""
    page.locator("iframe").first.scroll_into_view_if_needed()
    page.locator("iframe").first.screenshot(path=str(tmp_path / "replay_llm_reply.png"))
    # Step: the panel follows the frame.
    frame.locator("#pdb-step").click()
    shown, record = _panel(frame, "A"), records[k]
    assert shown["round"] == k + 1 and (shown["text"], shown["retries"]) == _expected(record)
    # The next fallback: no valid reply, every attempt listed, the fallback marked.
    f = next(r["round_index"] for r in records[k + 1 :] if r["agent_a_parse_failure"]) + 1
    frame.locator('[data-jump="next-fallback"]').click()
    assert component_state(frame)["frame"] == f
    record = records[f - 1]
    shown = _panel(frame, "A")
    assert shown["round"] == f and (shown["text"], shown["retries"]) == _expected(record)
    n = len(record["raw_responses"]["agent_a"])
    meant = {"C": "Cooperate", "D": "Defect"}[record["agent_a_intended_action"]]
    assert shown["fallback"] == f"▲ fallback move {meant} after {n} invalid replies"
    page.locator("iframe").first.screenshot(path=str(tmp_path / "replay_llm_fallback.png"))
    # The controls and the jumps stay put while the rounds change under them: a reply with retries or a
    # fallback is taller than one without, and a Pause button that moved would miss the click.
    tops = frame.evaluate(
        """n => {
            const scrub = document.getElementById("pdb-scrub"), tops = [];
            for (let r = 1; r <= n; r++) {
                scrub.value = r;
                scrub.dispatchEvent(new Event("input"));
                tops.push(["#pdb-play", '[data-jump="next-fallback"]'].map(
                    s => document.querySelector(s).getBoundingClientRect().top));
            }
            return tops;
        }""",
        len(records),
    )
    assert len({tuple(t) for t in tops}) == 1, tops
    _no_errors(page, errors)
