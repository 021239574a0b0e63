"""Talk in a real browser (`streamlit run` and Debian's Chromium via Playwright, issue 22):

- the replay of a talk run puts each agent's messages under the move that followed them, with
  the stated intention ("promised C", "announced D"), marks the liar's broken promises (under
  the move, with jumps, on the timeline's purple lane, read as pixels of its canvas, and in its
  legend) and none for the honest TFT; nothing is cut (boxes inside their cards, tags on one
  line, the page inside its iframe);
- a person plays a 3-round game against an honest TFT typing a message before each move: TFT's
  message of the simultaneous exchange shows only once theirs is sent, the game is saved as a
  run whose rounds.jsonl has the typed texts, and the replay of the saved game shows them.

Screenshots are saved in the test's tmp dir; no exception element and no console error may
appear.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
from tests.ui.sample import TALK_CONDITIONS, make_run
from tests.ui.screenshots import full_page_screenshot
from tests.ui.test_browser_play import _set_rounds

from pdbench.storage.record.fields import MESSAGES
from pdbench.ui.style import BROKEN_COLOR

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]

WIDTH, HEIGHT = 1400, 900
N_ROUNDS = 12
BROKEN_RGB = [int(BROKEN_COLOR[i : i + 2], 16) for i in (1, 3, 5)]


@pytest.fixture(scope="module")
def talk_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory with a 12-round talk run under data/runs/talk_12."""
    root = tmp_path_factory.mktemp("talk_browser")
    make_run(root, TALK_CONDITIONS, n_rounds=N_ROUNDS, replicates=1, run_id="talk_12")
    return root


@pytest.fixture
def browser() -> Iterator[tuple[Any, list[str]]]:
    with chromium_page(WIDTH, HEIGHT) as (page, errors):
        yield page, errors


def _say(frame: Any, agent: str) -> dict[str, Any]:
    """What the messages panel of agent A or B shows."""
    return frame.eval_on_selector(
        f'.pdb-say[data-agent="{agent}"]',
        """(p) => ({
            round: Number(p.dataset.round),
            head: p.querySelector('.pdb-say-head').textContent,
            texts: [...p.querySelectorAll('.pdb-say-text')].map(e => e.textContent),
            tags: [...p.querySelectorAll('.pdb-say-tag')].map(e => e.textContent),
            broken: p.dataset.broken === "1",
            note: p.querySelector('.pdb-say-broken').textContent,
            elements: p.querySelectorAll('.pdb-say-text *').length,
        })""",
    )


def _stage(page: Any, text: str) -> Any:
    frame = component(page, "#pdb-label")
    for _ in range(150):
        try:
            if text in component_state(frame)["label"]:
                return frame
        except Exception:  # noqa: BLE001 - the frame navigated while read
            frame = component(page, "#pdb-label")
        page.wait_for_timeout(200)
    raise AssertionError(f"no replay labelled {text!r}")


def _lane_pixels(frame: Any) -> dict[str, list[int]]:
    """The timeline canvas's pixel (RGBA) in each row's broken-promise lane, middle of round 1
    (the lane is the 5 px above the flip lane: rows start 13 px and 71 px down)."""
    return frame.evaluate(
        """() => {
            const c = document.querySelector('.pdb-tl-detail canvas');
            const ctx = c.getContext('2d'), dpr = window.devicePixelRatio || 1;
            const w = parseFloat(c.style.width), cell = w / Number(
                document.querySelector('.pdb-tl2').dataset.hi);
            const px = y => [...ctx.getImageData(
                Math.round(cell / 2 * dpr), Math.round(y * dpr), 1, 1).data];
            return {A: px(3), B: px(61)};
        }"""
    )


def _uncut(frame: Any) -> list[str]:
    """Problems: a message panel outside its card, a tag wrapped or clipped, a row label or
    legend clipped, the page taller than its iframe."""
    return frame.evaluate(
        """() => {
            const bad = [], box = e => e.getBoundingClientRect();
            for (const say of document.querySelectorAll('.pdb-say')) {
                const s = box(say), card = box(say.closest('.pdb-move'));
                if (s.left < card.left || s.right > card.right || s.bottom > card.bottom + 0.5)
                    bad.push('panel ' + say.dataset.agent + ' outside its card');
                if (say.scrollHeight > say.clientHeight + 1)
                    bad.push('panel ' + say.dataset.agent + ' scrolls');
                for (const tag of say.querySelectorAll('.pdb-say-tag')) {
                    const t = box(tag);
                    if (t.height > 22 || tag.scrollWidth > tag.clientWidth + 1 || t.right > s.right)
                        bad.push('tag cut: ' + tag.textContent);
                }
            }
            for (const lab of document.querySelectorAll('.pdb-row-label'))
                if (lab.scrollHeight > lab.clientHeight + 1) bad.push('label cut: ' + lab.textContent);
            const legend = document.querySelector('.pdb-tl-legend');
            if (legend.scrollWidth > legend.clientWidth + 1) bad.push('legend cut');
            if (document.documentElement.scrollHeight > window.innerHeight + 1)
                bad.push('page ' + document.documentElement.scrollHeight + ' px in an iframe of '
                    + window.innerHeight);
            return bad;
        }"""
    )


def _no_errors(page: Any, errors: list[str]) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0
    assert errors == [], errors


def test_replay_puts_messages_beside_moves_and_marks_broken_promises(
    talk_base: Path, browser: tuple[Any, list[str]], tmp_path: Path
) -> None:
    page, errors = browser
    run_dir = talk_base / "data" / "runs" / "talk_12"
    with streamlit_server(run_dir, talk_base, tmp_path / "streamlit.log") as url:
        page.goto(url)
        wait_idle(page)
        open_tab(page, "🎬 Animated Replay")
        select_option(page, "Condition", "liar_vs_TFT")
        frame = _stage(page, f"Round 1 of {N_ROUNDS}")
        # Round 1: the liar promises C and defects; TFT announces C and cooperates.
        liar, tft = _say(frame, "A"), _say(frame, "B")
        assert liar["head"] == "💬 A said before this move:"
        assert (liar["texts"], liar["tags"]) == (["“I will cooperate.”"], ["promised C"])
        assert liar["broken"] and liar["note"] == "✗ broken promise: promised C, chose D"
        assert (tft["texts"], tft["tags"], tft["broken"]) == (
            ["“I will cooperate.”"],
            ["promised C"],
            False,
        )
        assert liar["elements"] == tft["elements"] == 0  # set as text
        # The jumps: every round of the liar is a broken promise.
        jumps = frame.locator(".pdb-jump-name").all_inner_texts()
        assert f"broken promise ({N_ROUNDS})" in jumps, jumps
        frame.locator('[data-jump="next-broken-promise"]').click()
        assert component_state(frame)["frame"] == 2
        tft = _say(frame, "B")
        assert (tft["round"], tft["texts"], tft["tags"]) == (
            2,
            ["“I will defect.”"],
            ["announced D"],
        )
        assert not tft["broken"]  # TFT announced D and defected
        # The timeline: the liar's lane is purple, the honest TFT's is empty; a legend entry.
        lanes = _lane_pixels(frame)
        assert lanes["A"][:3] == BROKEN_RGB and lanes["A"][3] == 255, lanes
        assert lanes["B"][3] == 0, lanes
        legend = frame.locator(".pdb-tl-legend").inner_text()
        assert "broken promise: promised C, chose D" in legend
        assert _uncut(frame) == []
        page.locator("iframe").first.scroll_into_view_if_needed()
        page.locator("iframe").first.screenshot(path=str(tmp_path / "replay_talk_liar.png"))
        full_page_screenshot(page, tmp_path / "replay_talk_page.png")

        # An LLM game: the messages sit above the replies, and everything still fits.
        select_option(page, "Condition", "LLMcoop_vs_LLMexploit_talk")
        frame = _stage(page, f"Round 1 of {N_ROUNDS}")
        frame.locator('[data-jump="next-broken-promise"]').click()
        r = component_state(frame)["frame"]
        exploit = _say(frame, "B")
        assert exploit["broken"] and exploit["tags"] == ["promised C"], exploit
        assert frame.locator('.pdb-reply[data-agent="B"]').count() == 1
        order = frame.evaluate(
            """() => [...document.querySelector('.pdb-move[data-agent="B"]').children]
                .map(e => e.classList[0])"""
        )
        assert order.index("pdb-say") < order.index("pdb-reply"), order
        assert _uncut(frame) == [], r
        page.locator("iframe").first.scroll_into_view_if_needed()
        page.locator("iframe").first.screenshot(path=str(tmp_path / "replay_talk_llm.png"))
        _no_errors(page, errors)


TYPED = ["Hi! I will cooperate.", "I'll cheat this once, sorry.", "Friends again? Let's cooperate."]
MOVES = "CDC"
TFT = "CCD"  # tit for tat copies the person's previous move


def _pending(page: Any) -> list[tuple[str, str]]:
    """The chat bubbles of the exchange before the next move: (who, text)."""
    bubbles = page.locator(".pdb-chat.pending .pdb-chat-msg")
    out = []
    for i in range(bubbles.count()):
        who = bubbles.nth(i).locator(".pdb-chat-who").inner_text()
        out.append((who, bubbles.nth(i).inner_text().removeprefix(who).strip()))
    return out


def _bubbles_fit(page: Any) -> list[str]:
    return page.evaluate(
        """() => [...document.querySelectorAll('.pdb-chat-msg')]
            .filter(b => b.scrollWidth > b.clientWidth + 1 || b.scrollHeight > b.clientHeight + 1
                || b.getBoundingClientRect().right > b.closest('.pdb-chat').getBoundingClientRect().right + 0.5)
            .map(b => b.textContent)"""
    )


def test_a_human_game_with_typed_messages_is_saved_as_a_run(
    sample_run: Path, browser: tuple[Any, list[str]], tmp_path: Path
) -> None:
    page, errors = browser
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    with streamlit_server(sample_run, cwd, tmp_path / "streamlit.log") as url:
        page.goto(url)
        wait_idle(page)
        open_tab(page, "🎮 Play")
        page.get_by_text("Copycat", exact=False).first.wait_for()  # TFT, the default
        page.get_by_label("Your name (in the records)").fill("Ana")
        page.keyboard.press("Enter")
        wait_idle(page)
        _set_rounds(page, len(MOVES))
        page.get_by_text("💬 Talk before each move").click()
        wait_idle(page)
        page.get_by_text("Who writes first").wait_for()
        full_page_screenshot(page, tmp_path / "play_talk_setup.png")
        page.get_by_role("button", name="▶️ Start the game").click()
        wait_idle(page)
        for k, move in enumerate(MOVES):
            page.get_by_text(f"Messages before round {k + 1}").wait_for()
            # Simultaneous: nothing of this exchange shows before the person has written.
            assert _pending(page) == []
            assert page.get_by_role("button", name="🤝 Cooperate").is_disabled()
            page.get_by_label("Your message").fill(TYPED[k])
            page.get_by_role("button", name="📨 Send").click()
            wait_idle(page)
            word = "cooperate" if TFT[k] == "C" else "defect"
            assert _pending(page) == [("You", TYPED[k]), ("🪞 Copycat", f"I will {word}.")]
            assert _bubbles_fit(page) == []
            if k == 1:
                full_page_screenshot(page, tmp_path / "play_talk_game.png")
            button = {"C": "🤝 Cooperate", "D": "🗡️ Defect"}[move]
            page.get_by_role("button", name=button).click()
            wait_idle(page)
        page.get_by_text("Saved as run", exact=False).wait_for(timeout=30_000)
        wait_idle(page)
        full_page_screenshot(page, tmp_path / "play_talk_finished.png")

        (run_dir,) = (cwd / "data" / "runs").glob("ui_*")
        rows = [json.loads(x) for x in (run_dir / "rounds.jsonl").read_text().splitlines()]
        assert "".join(r["agent_a_action"] for r in rows) == MOVES
        assert "".join(r["agent_b_action"] for r in rows) == TFT
        mine = [[e["text"] for e in r[MESSAGES] if e["from"] == "agent_a"] for r in rows]
        assert mine == [[t] for t in TYPED]
        intents = [[e["intent"] for e in r[MESSAGES] if e["from"] == "agent_a"] for r in rows]
        assert intents == [["C"], ["D"], ["C"]]  # read from the words (core/talk.py phrases)

        # The replay of the saved game shows the typed messages beside the person's moves.
        page.get_by_role("button", name="📊 Open in View Results").click()
        wait_idle(page)
        open_tab(page, "🎬 Animated Replay")
        frame = _stage(page, f"Round 1 of {len(MOVES)}")
        for k in range(len(MOVES)):
            assert _say(frame, "A")["texts"] == [f"“{TYPED[k]}”"]
            frame.locator("#pdb-step").click()
        assert _uncut(frame) == []
        page.locator("iframe").first.scroll_into_view_if_needed()
        page.locator("iframe").first.screenshot(path=str(tmp_path / "play_talk_replay.png"))
        _no_errors(page, errors)
