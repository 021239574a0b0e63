"""A group game in the 🎮 Play tab through streamlit.testing (AppTest): the person takes seat A of
a group of three, plays three rounds against two group policies, sees every seat's move and the
running totals each round, and the game is saved as a groups run that the Groups tab's data
layer reads back and the Groups tab opens; a Refresh finds the game by its URL.

The game of the main test, by hand: a public goods game of N = 3 with r = 2.4, c = 1, so with k
cooperators a cooperator gets 2.4 k / 3 - 1 = 0.8 k - 1 and a defector 0.8 k. Seat B is the
group TFT (C first, then C only when both others cooperated last round), seat C the conditional
cooperator CC with its default m = ceil((3 - 1) / 2) = 1 (C first, then C when at least one other
cooperated last round). The person plays C, D, C:

  round 1: A C; B C (first round); C C (first round)            k = 3: everyone 1.4
  round 2: A D; B C (A and C cooperated); C C (2 others >= 1)     k = 2: A 1.6, B 0.6, C 0.6
  round 3: A C; B D (A defected); C C (B cooperated: 1 >= 1)      k = 2: A 0.6, B 1.6, C 0.6

Totals: A 1.4 + 1.6 + 0.6 = 3.6, B 1.4 + 0.6 + 1.6 = 3.6, C 1.4 + 0.6 + 0.6 = 2.6.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest
from tests.ui.test_app import APP, GROUPS, PLAY, assert_clean, show_tab

from pdbench.ui import group_data, play_group

MOVES = "CDC"
SEAT_MOVES = ["CDC", "CCD", "CCC"]  # seats A (the person), B (TFT), C (CC), by hand above
PAYOFFS = [[1.4, 1.6, 0.6], [1.4, 0.6, 1.6], [1.4, 0.6, 0.6]]
TOTALS = [3.6, 3.6, 2.6]


def html(at: AppTest) -> str:
    return "\n".join(h.proto.body for h in at.get("html"))


def heading(at: AppTest) -> str:
    match = re.search(r'class="pdb-round">([^<]*)<', html(at))
    assert match, html(at)
    return match.group(1)


def ring(at: AppTest) -> dict[str, str]:
    """The seats around the group as shown: seat letter -> its move in the last round."""
    return dict(re.findall(r'class="pdb-gseat \w" data-seat="(\w)" data-move="(\w)"', html(at)))


def timeline(at: AppTest) -> dict[str, str]:
    """Every seat's moves so far as shown: seat letter -> its moves."""
    rows = re.findall(r'<div class="pdb-gtl-row" data-seat="(\w)">(.*?)</div>', html(at))
    return {seat: "".join(re.findall(r'class="pdb-cell (\w)', row)).upper() for seat, row in rows}


def open_group_form() -> AppTest:
    at = show_tab(AppTest.from_file(str(APP), default_timeout=60).run(), PLAY)
    at.radio(key=play_group.MODE).set_value("group").run()
    assert_clean(at)
    return at


def start(at: AppTest, rounds: int = 3) -> AppTest:
    at.slider(key="pg_players").set_value(3).run()
    at.selectbox(key="pg_kind").set_value("public_goods").run()
    at.number_input(key="pg_r").set_value(2.4).run()
    at.selectbox(key="pg_seat_1").set_value("policy:TFT").run()
    at.selectbox(key="pg_seat_2").set_value("policy:CC").run()
    at.slider(key="pg_rounds").set_value(rounds).run()
    at.text_input(key="pg_name").set_value("Ana").run()
    at.button(key="pg_start").click().run()
    assert_clean(at)
    return at


def click(at: AppTest, move: str) -> AppTest:
    at.button(key=f"pg_move_{move}").click().run()
    assert_clean(at)
    return at


def test_the_group_form_offers_group_policies_and_mock_personas() -> None:
    at = open_group_form()
    options = at.selectbox(key="pg_seat_1").options
    for name in ("ALLC", "ALLD", "CC", "GRIM", "RANDOM", "TFT", "WSLS"):
        assert any(f" {name} · " in o for o in options), (name, options)
    assert any("Mock LLM · cooperative" in o for o in options), options
    at.slider(key="pg_players").set_value(6).run()
    assert_clean(at)
    assert [s.key for s in at.selectbox if s.key.startswith("pg_seat_")] == list(play_group.SEATS)
    # the payoff table of the game picked: public goods of 6 with r = 2, c = 1 (k others: a
    # cooperator gets 2 (k + 1) / 6 - 1, a defector 2 k / 6)
    table = at.dataframe[0].value
    assert list(table["others cooperating"]) == list(range(6))
    assert np.allclose(table["you cooperate"], [(2 * (k + 1) / 6) - 1 for k in range(6)], atol=1e-4)
    assert np.allclose(table["you defect"], [2 * k / 6 for k in range(6)], atol=1e-4)
    at.radio(key=play_group.MODE).set_value("pair").run()
    assert_clean(at)
    assert at.selectbox(key="pl_opponent").value == "policy:TFT"  # the pairwise form again


def test_three_rounds_against_two_policies_are_saved_as_a_groups_run(tmp_path: Path) -> None:
    at = start(open_group_form())
    assert heading(at) == "Round 1 of 3"
    for k, move in enumerate(MOVES, start=1):
        click(at, move)
        assert heading(at) == ("Game over" if k == 3 else f"Round {k + 1} of 3")
        assert ring(at) == {
            seat: moves[k - 1] for seat, moves in zip("ABC", SEAT_MOVES, strict=True)
        }
        assert timeline(at) == {
            seat: moves[:k] for seat, moves in zip("ABC", SEAT_MOVES, strict=True)
        }
        totals = at.dataframe[0].value
        assert list(totals["seat"]) == ["A · Ana", "B · TFT", "C · CC"]
        expected = [round(sum(p[:k]), 6) for p in PAYOFFS]
        assert [float(v) for v in totals["total"]] == pytest.approx(expected)
        assert [float(v) for v in totals["last round"]] == pytest.approx(
            [p[k - 1] for p in PAYOFFS]
        )
    assert not {b.key for b in at.button} & {"pg_move_C", "pg_move_D"}
    (success,) = at.success
    assert "You scored **3.6**" in success.value

    (run_dir,) = (tmp_path / "data" / "runs").glob("ui_*")
    manifest = json.loads((run_dir / "groups_manifest.json").read_text())
    assert manifest["kind"] == "groups" and manifest["status"] == "completed"
    (condition,) = manifest["config"]["groups"]["conditions"]
    assert condition["seats"][0] == {"type": "human", "name": "Ana", "moves": list(MOVES)}
    assert [s["policy"] for s in condition["seats"][1:]] == ["TFT", "CC"]
    assert (run_dir / "config" / "groups.yaml").is_file()
    assert manifest["config_path"] == str((run_dir / "config" / "groups.yaml").resolve())

    # The Groups tab's data layer reads it back.
    shown = group_data.load_manifest(run_dir)
    (cond,) = group_data.conditions(shown)
    assert (cond.name, cond.seats, cond.n_players) == ("human_in_public_goods_of_3",
                                                       ("Ana", "TFT", "CC"), 3)  # fmt: skip
    assert cond.game_label == "public_goods N=3 r=2.4 c=1" and cond.games == ((0, 3),)
    game = group_data.load_game(run_dir, shown, cond.name, 0)
    assert ["".join(row) for row in game.moves] == SEAT_MOVES
    assert np.allclose(game.payoffs, PAYOFFS)
    assert np.allclose(game.totals[:, -1], TOTALS)
    for table in group_data.TABLES:
        assert group_data.load_table(run_dir, table) is not None, table
    seats = group_data.load_table(run_dir, "seats.parquet")
    assert seats is not None and len(seats) >= 3
    assert at.session_state[play_group.GAME]["same"] is True

    at.button(key="pg_open").click().run()
    assert_clean(at)
    assert at.session_state["main_tab"] == GROUPS
    assert at.session_state["sel_run"] == str(run_dir.resolve())
    assert at.session_state["sel_condition"] == cond.name
    show_tab(at, GROUPS)
    assert_clean(at)
    assert at.selectbox(key="grp_run").value == str(run_dir.resolve())
    assert at.selectbox(key="grp_condition").value == cond.name


def test_a_refresh_finds_the_group_game_by_its_url(tmp_path: Path) -> None:
    at = start(open_group_form())
    click(click(at, "C"), "D")
    game_id = at.query_params[play_group.GAME_PARAM]
    game_id = game_id[0] if isinstance(game_id, list) else game_id

    def refresh() -> AppTest:  # a new session with the same URL
        again = AppTest.from_file(str(APP), default_timeout=60)
        again.query_params[play_group.GAME_PARAM] = game_id
        return show_tab(again.run(), PLAY)

    at = refresh()
    assert_clean(at)
    assert heading(at) == "Round 3 of 3"
    assert timeline(at) == {seat: moves[:2] for seat, moves in zip("ABC", SEAT_MOVES, strict=True)}
    click(at, "C")
    assert heading(at) == "Game over"
    (run_dir,) = (tmp_path / "data" / "runs").glob("ui_*")
    at = refresh()  # the finished game again, and no second saved run
    assert_clean(at)
    assert heading(at) == "Game over" and ring(at) == {"A": "C", "B": "D", "C": "C"}
    assert list((tmp_path / "data" / "runs").glob("ui_*")) == [run_dir]
    at.button(key="pg_quit").click().run()
    assert_clean(at)
    assert play_group.GAME_PARAM not in at.query_params
    assert at.button(key="pg_start")  # the group form again, as it was left
    assert at.slider(key="pg_players").value == 3


def test_a_mock_llm_co_player_shows_its_prompt_and_is_replayed_from_the_cache(
    tmp_path: Path,
) -> None:
    at = open_group_form()
    at.slider(key="pg_players").set_value(3).run()
    at.selectbox(key="pg_kind").set_value("volunteer").run()
    at.selectbox(key="pg_seat_1").set_value("persona:tit_for_tat").run()
    at.selectbox(key="pg_seat_2").set_value("policy:ALLD").run()
    at.slider(key="pg_rounds").set_value(2).run()
    at.button(key="pg_start").click().run()
    assert_clean(at)
    click(click(at, "D"), "C")
    assert heading(at) == "Game over"
    prompts = [c.value for c in at.code]
    assert any("Round 2" in p for p in prompts), prompts  # its prompt for the last round
    assert timeline(at)["C"] == "DD"  # ALLD
    (run_dir,) = (tmp_path / "data" / "runs").glob("ui_*")
    rows = [json.loads(x) for x in (run_dir / "rounds.jsonl").read_text().splitlines()]
    assert "".join(r["agent_b_action"] for r in rows) == timeline(at)["B"]
    calls = [json.loads(x) for x in (run_dir / "llm_calls.jsonl").read_text().splitlines()]
    assert len(calls) == 2 and all(c["cached"] for c in calls)
    assert at.session_state[play_group.GAME]["same"] is True
