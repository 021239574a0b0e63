"""The 🎮 Play tab with "Talk before each move" (AppTest): the toggle is offered against a policy
and a mock LLM persona, the person writes before each move (the move buttons wait), the
opponent's message of a simultaneous exchange shows only once theirs is sent, and the saved run
records the typed messages (the human agent's `messages`) and the opponent's."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest
from tests.ui.test_app import assert_clean
from tests.ui.test_play_tab import heading, html, open_play, shown_moves

from pdbench.storage.record.fields import MESSAGES
from pdbench.ui.tabs import play

PENDING = 'class="pdb-chat pending"'  # the messages before the next move
TYPED = ["I will cooperate <b>honestly</b>.", "", "I'll defect, sorry."]


def start_talking(at: AppTest, opponent: str, rounds: int, **choices: str) -> AppTest:
    at.selectbox(key="pl_opponent").set_value(opponent).run()
    at.slider(key="pl_rounds").set_value(rounds).run()
    at.text_input(key="pl_name").set_value("Ana").run()
    at.toggle(key="pl_talk").set_value(True).run()
    for key, value in choices.items():
        at.selectbox(key=key).set_value(value).run()
    at.button(key="pl_start").click().run()
    assert_clean(at)
    return at


def send(at: AppTest, text: str) -> AppTest:
    at.text_input(key="pl_message").set_value(text)
    at.button(key="pl_send").click().run()
    assert_clean(at)
    return at


def saved_rows(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    (run_dir,) = (tmp_path / "data" / "runs").glob("ui_*")
    rows = [json.loads(x) for x in (run_dir / "rounds.jsonl").read_text().splitlines()]
    return run_dir, rows


def test_the_toggle_is_offered_against_policies_and_mock_personas_only() -> None:
    at = open_play()
    assert at.toggle(key="pl_talk") is not None  # TFT, the default opponent
    at.selectbox(key="pl_opponent").set_value("persona:cooperative").run()
    assert [t for t in at.toggle if t.key == "pl_talk"]
    at.selectbox(key="pl_opponent").set_value("llm_file:agents/llm_default.yaml").run()
    assert not [t for t in at.toggle if t.key == "pl_talk"]


def test_a_talking_game_against_honest_tft_saves_the_typed_messages(tmp_path: Path) -> None:
    at = start_talking(at=open_play(), opponent="policy:TFT", rounds=3, pl_rule="honest")
    tft = "CCD"  # by hand: TFT copies the person's previous move (C D C)
    for k, move in enumerate("CDC"):
        assert heading(at) == f"Round {k + 1} of 3"
        # Simultaneous: nothing to read yet, and the move buttons wait for the message.
        assert at.button(key="pl_move_C").disabled
        assert PENDING not in html(at)
        send(at, TYPED[k])
        page = html(at)
        word = "cooperate" if tft[k] == "C" else "defect"
        assert f"I will {word}." in page  # TFT's honest message, now shown
        if TYPED[k]:  # shown as typed: escaped, never as HTML
            assert escape(TYPED[k]) in page and "<b>honestly" not in page
        assert not at.button(key="pl_move_C").disabled
        at.button(key=f"pl_move_{move}").click().run()
        assert_clean(at)
    assert heading(at) == "Game over"
    assert shown_moves(at) == ("CDC", tft)
    run_dir, rows = saved_rows(tmp_path)
    said = [[(e["from"], e["text"]) for e in r[MESSAGES]] for r in rows]
    assert said == [
        [("agent_a", TYPED[0]), ("agent_b", "I will cooperate.")],
        [("agent_b", "I will cooperate.")],  # an empty message is silence
        [("agent_a", TYPED[2]), ("agent_b", "I will defect.")],
    ]
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    (condition,) = manifest["config"]["experiment"]["conditions"]
    assert condition["name"] == "human_vs_TFT_talk"
    assert condition["agent_a"]["messages"] == TYPED
    assert at.session_state[play.GAME]["same"] is True


@pytest.mark.parametrize("order", ["a_first", "alternate"])
def test_a_mock_llm_answers_the_person_and_is_replayed_from_the_cache(
    tmp_path: Path, order: str
) -> None:
    at = start_talking(open_play(), "persona:exploitative", 2, pl_order=order)
    send(at, "Let's both cooperate.")
    assert escape("Let's both cooperate.") in html(at)
    at.button(key="pl_move_C").click().run()
    if order == "alternate":  # round 2: the opponent opens, before the person writes
        assert PENDING in html(at) and at.button(key="pl_move_C").disabled
    send(at, "")
    at.button(key="pl_move_D").click().run()
    assert_clean(at)
    assert heading(at) == "Game over"
    run_dir, rows = saved_rows(tmp_path)
    assert [e["text"] for e in rows[0][MESSAGES] if e["from"] == "agent_a"] == [
        "Let's both cooperate."
    ]
    assert all(any(e["from"] == "agent_b" for e in r[MESSAGES]) for r in rows)
    calls = [json.loads(x) for x in (run_dir / "llm_calls.jsonl").read_text().splitlines()]
    assert calls and all(c["cached"] for c in calls)
    assert at.session_state[play.GAME]["same"] is True
