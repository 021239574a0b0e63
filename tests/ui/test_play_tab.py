"""The 🎮 Play tab through streamlit.testing (AppTest): a person plays a game by clicking, the
game is saved as an ordinary run with the moves clicked and the opponent moves shown, the game
survives switching tabs, and an LLM opponent's prompt is shown and replayed from the cache."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest
from tests.ui.test_app import APP, PLAY, RUN, VIEW, assert_clean, show_tab

from pdbench.agents.policy import policy_names
from pdbench.ui import lesson
from pdbench.ui.tabs import play


def open_play() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    return show_tab(at, PLAY)


def html(at: AppTest) -> str:
    return "\n".join(h.proto.body for h in at.get("html"))


def heading(at: AppTest) -> str:
    match = re.search(r'class="pdb-round">([^<]*)<', html(at))
    assert match, html(at)
    return match.group(1)


def shown_moves(at: AppTest) -> tuple[str, str]:
    """The two rows of the history trail (the person's, the opponent's) as C/D strings."""
    rows = re.findall(r'<div class="pdb-row">(.*?)</div>', html(at))
    trail = [row for row in rows if "pdb-t" in row]
    assert len(trail) == 2, trail
    tips = [re.findall(r'title="Round \d+: ([CD]) \((\w+)\)"', row) for row in trail]
    for tip in tips:  # each dot's tooltip names the move in the tab's words
        assert all(word == {"C": "Cooperate", "D": "Defect"}[m] for m, word in tip), tip
    moves = ["".join(m for m, _ in tip) for tip in tips]
    return moves[0], moves[1]


def start(at: AppTest, opponent: str, rounds: int) -> AppTest:
    at.selectbox(key="pl_opponent").set_value(opponent).run()
    at.slider(key="pl_rounds").set_value(rounds).run()
    at.text_input(key="pl_name").set_value("Ana").run()
    at.button(key="pl_start").click().run()
    assert_clean(at)
    return at


def click(at: AppTest, move: str) -> AppTest:
    at.button(key=f"pl_move_{move}").click().run()
    assert_clean(at)
    return at


def memory_one_shown(page: str) -> dict[str, tuple[str, str]]:
    """The lesson card's memory-one table: state -> (the person's cell, the opponent's)."""
    cells = re.findall(
        r'<span class="st">P\(C \| (\w\w)\)</span>.*?</td><td class="n">(.*?)</td>'
        r'<td class="n">(.*?)</td>',
        page,
    )
    return {state: (mine, theirs) for state, mine, theirs in cells}


def assert_lesson(page: str, run_dir: Path) -> None:
    """The lesson card of CDDCC against Copycat (CCDDC)."""
    assert "What this game teaches" in page
    # the person defected first (round 2), Copycat hit back, both cooperated in the last round
    assert escape(lesson.LESSONS["feud_mended"]) in page
    # states before rounds 2-5, own move first: the person's CC->D, DC->D, DD->C, CD->C;
    # Copycat's CC->C, CD->D, DD->D, DC->C
    assert memory_one_shown(page) == {
        "CC": ("0 of 1 · 0%", "1 of 1 · 100%"),
        "CD": ("1 of 1 · 100%", "0 of 1 · 0%"),
        "DC": ("0 of 1 · 0%", "1 of 1 · 100%"),
        "DD": ("1 of 1 · 100%", "0 of 1 · 0%"),
    }
    # the strategy the person played like: the best named strategy of the saved run's card
    fits = pd.read_parquet(run_dir / "strategy_fit.parquet")
    mine = fits[(fits["agent"] == "a") & (fits["strategy"] != "MEMORY_ONE")]
    best = mine.sort_values("rank").iloc[0]["strategy"]
    assert re.search(rf'You played (most )?like<span class="big">[^<]*\({best}\)</span>', page)
    assert "of your 5 moves" in page


def test_the_play_tab_offers_every_policy_and_the_llm_agents() -> None:
    at = open_play()
    assert_clean(at)
    options = at.selectbox(key="pl_opponent").options
    for name in policy_names():
        assert any(f" {name} · " in o for o in options), (name, options)
    assert any("Mock LLM · tit_for_tat" in o for o in options)
    assert any("llm_default.yaml" in o for o in options)
    assert at.selectbox(key="pl_opponent").value == "policy:TFT"
    assert at.slider(key="pl_rounds").value == 10


def test_a_game_against_tft_is_saved_as_a_run_with_the_moves_clicked(tmp_path: Path) -> None:
    at = start(open_play(), "policy:TFT", 5)
    assert heading(at) == "Round 1 of 5"
    for k, move in enumerate("CDDCC", start=1):
        click(at, move)
        if k < 5:
            assert heading(at) == f"Round {k + 1} of 5"
        mine, theirs = shown_moves(at)
        assert mine == "CDDCC"[:k]
        assert theirs == "CCDDC"[:k]  # TFT copies the previous move
    assert heading(at) == "Game over"
    keys = {b.key for b in at.button}
    assert not keys & {"pl_move_C", "pl_move_D"}  # no move left to make: no move buttons
    (run_dir,) = (tmp_path / "data" / "runs").glob("ui_*")
    assert_lesson(html(at), run_dir)
    rows = [json.loads(x) for x in (run_dir / "rounds.jsonl").read_text().splitlines()]
    assert "".join(r["agent_a_action"] for r in rows) == "CDDCC"
    assert "".join(r["agent_b_action"] for r in rows) == "CCDDC"
    assert {r["agent_a_name"] for r in rows} == {"Ana"}
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    condition = manifest["config"]["experiment"]["conditions"][0]
    assert condition["name"] == "human_vs_TFT"
    assert condition["agent_a"] == {"type": "human", "name": "Ana", "moves": list("CDDCC")}
    aggregates = pd.read_parquet(run_dir / "aggregates.parquet")
    game = aggregates[aggregates["scope"] == "replicate"].iloc[0]
    # pdbench's default payoffs (3/0/5/1): CC 3+3, DC 5+0, DD 1+1, CD 0+5, CC 3+3
    assert (game["agent_a_total_payoff"], game["agent_b_total_payoff"]) == (12, 12)
    (success,) = at.success
    assert "You scored **12**" in success.value and run_dir.name in success.value
    # The live game's temporary config is gone; Open in View Results selects the new run.
    assert not Path(at.session_state[play.GAME]["config"]).exists()
    at.button(key="pl_open").click().run()
    assert_clean(at)
    assert at.session_state["main_tab"] == VIEW
    assert at.session_state["sel_run"] == str(run_dir.resolve())
    assert at.session_state["sel_condition"] == "human_vs_TFT"


def test_switching_tabs_keeps_the_game(tmp_path: Path) -> None:
    at = start(open_play(), "policy:ALLD", 4)
    click(click(at, "C"), "C")
    assert shown_moves(at) == ("CC", "DD")
    show_tab(at, RUN)
    assert_clean(at)
    show_tab(at, PLAY)
    assert_clean(at)
    assert heading(at) == "Round 3 of 4"
    assert shown_moves(at) == ("CC", "DD")
    click(at, "D")
    assert shown_moves(at) == ("CCD", "DDD")
    assert not (tmp_path / "data" / "runs").exists()  # nothing saved before the last round
    live_config = Path(at.session_state[play.GAME]["config"])
    at.button(key="pl_quit").click().run()
    assert not live_config.exists()


def test_giving_up_discards_the_game_and_keeps_the_form(tmp_path: Path) -> None:
    at = start(open_play(), "policy:GRIM", 3)
    live_config = Path(at.session_state[play.GAME]["config"])
    assert live_config.is_file()
    click(at, "D")
    at.button(key="pl_quit").click().run()
    assert_clean(at)
    assert play.GAME not in at.session_state
    assert not live_config.exists()
    assert at.selectbox(key="pl_opponent").value == "policy:GRIM"
    assert at.slider(key="pl_rounds").value == 3
    assert not (tmp_path / "data" / "runs").exists()


def test_an_llm_opponent_shows_its_prompt_and_is_replayed_from_the_cache(tmp_path: Path) -> None:
    at = start(open_play(), "persona:tit_for_tat", 3)
    codes = [c.value for c in at.code]
    assert any("Round 1 of 3" in c for c in codes), codes
    assert any("tit" in c.lower() for c in codes), codes  # the persona, in the system prompt
    for move in "DCC":
        click(at, move)
        if heading(at) != "Game over":
            assert any(
                f"Round {heading(at).split()[1]} of 3" in c for c in (x.value for x in at.code)
            )
    _, theirs = shown_moves(at)
    (run_dir,) = (tmp_path / "data" / "runs").glob("ui_*")
    rows = [json.loads(x) for x in (run_dir / "rounds.jsonl").read_text().splitlines()]
    assert "".join(r["agent_b_action"] for r in rows) == theirs
    assert "".join(r["agent_a_action"] for r in rows) == "DCC"
    calls = [json.loads(x) for x in (run_dir / "llm_calls.jsonl").read_text().splitlines()]
    assert calls and all(c["cached"] for c in calls)
    assert at.session_state[play.GAME]["same"] is True


def test_a_refresh_finds_the_game_in_progress_by_its_url(tmp_path: Path) -> None:
    at = start(open_play(), "policy:ALLD", 3)
    click(click(at, "C"), "D")
    game_id = at.query_params["game"]
    game_id = game_id[0] if isinstance(game_id, list) else game_id
    assert (tmp_path / "data" / "play" / f"{game_id}.json").is_file()

    def refresh() -> AppTest:  # a new session with the same URL
        again = AppTest.from_file(str(APP), default_timeout=60)
        again.query_params["game"] = game_id
        return show_tab(again.run(), PLAY)

    at = refresh()
    assert_clean(at)
    assert heading(at) == "Round 3 of 3"
    assert shown_moves(at) == ("CD", "DD")
    click(at, "C")
    assert heading(at) == "Game over"
    (run_dir,) = (tmp_path / "data" / "runs").glob("ui_*")
    at = refresh()  # the finished game: its lesson again, and no second saved run
    assert_clean(at)
    assert heading(at) == "Game over" and shown_moves(at) == ("CDC", "DDD")
    assert "What this game teaches" in html(at)
    # ALLD defected first; the person hit back (D in round 2), then cooperated again
    assert escape(lesson.LESSONS["retaliate_forgive"]) in html(at)
    assert list((tmp_path / "data" / "runs").glob("ui_*")) == [run_dir]
    at.button(key="pl_quit").click().run()
    assert "game" not in at.query_params
    assert not (tmp_path / "data" / "play" / f"{game_id}.json").exists()
    at = refresh()  # a URL naming a game no longer kept: the setup form, and a word why
    assert_clean(at)
    assert at.button(key="pl_start") and "no longer kept" in at.info[0].value
    assert "game" not in at.query_params


def test_a_game_id_that_is_not_one_names_no_file(tmp_path: Path) -> None:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params["game"] = "../../etc/passwd"
    at = show_tab(at.run(), PLAY)
    assert_clean(at)
    assert "no longer kept" in at.info[0].value and "game" not in at.query_params
