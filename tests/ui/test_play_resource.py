"""The resource games in the 🎮 Play tab through streamlit.testing (AppTest): a public goods game
with punishment and a commons, played to the end, saved as a pgg / commons run, the lesson read
from its seats table, and opened in the Groups tab.

The games are the hand-worked ones of `tests/integration/test_live_resource.py`:

- public goods (PGG-Bench's rules, N = 4; B FREE_RIDER, C CONDITIONAL_COOPERATOR, D PUNISHER):
  Ana gives 5 then 0 and punishes B with 2 tokens in round 1. Contributions [5, 0, 10, 20],
  [0, 0, 9, 12]; balances after round 1 [27, 22, 24, 12], after round 2 [29, 30, 23, 6]. Ana
  could give 20 then 27, so her contribution rate is 5 / 47 = 11%; the free rider gave 0% and
  kept 30; she spent 2 on punishment and lost 6 to D's 2 tokens in round 2.
- commons (five seats; B, C, E SUSTAINABLE, D MODERATE): Ana asks 20, 30, 20; the lake goes
  100 -> 76 -> 34, and 1 ton is left after season 3: collapsed in season 3 of 5. Ana caught 70,
  above the sustainable share (10, 7, 3) every season; D caught 12 + 8 + 4 = 24, the most of
  the others (B, C, E 10 + 7 + 3 = 20).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from tests.ui.test_app import APP, GROUPS, PLAY, assert_clean, show_tab

from pdbench.ui import play_group, play_resource


def open_form(kind: str) -> AppTest:
    at = show_tab(AppTest.from_file(str(APP), default_timeout=60).run(), PLAY)
    at.radio(key=play_group.MODE).set_value(kind).run()
    assert_clean(at)
    return at


def headings(at: AppTest) -> list[str]:
    """The round headings shown (one while a game is on)."""
    body = "\n".join(h.proto.body for h in at.get("html"))
    return ["### " + h for h in re.findall(r'class="pdb-round">([^<]*)<', body)]


@pytest.mark.slow  # 2 s of AppTest; the default set is near its 4-minute budget
def test_a_public_goods_game_with_punishment_is_played_saved_and_opened(tmp_path: Path) -> None:
    at = open_form("pgg")
    at.slider(key="pr_pgg_players").set_value(4).run()
    for i, name in enumerate(["FREE_RIDER", "CONDITIONAL_COOPERATOR", "PUNISHER"], start=1):
        at.selectbox(key=f"pr_pgg_seat_{i}").set_value(f"policy:{name}").run()
    at.slider(key="pr_pgg_rounds").set_value(2).run()
    at.text_input(key="pr_pgg_name").set_value("Ana").run()
    at.button(key="pr_start").click().run()
    assert_clean(at)
    assert headings(at) == ["### Round 1 of 2"]
    assert any("Your balance: 20 tokens" in m.value for m in at.markdown)

    at.number_input(key=play_resource.AMOUNT).set_value(5).run()
    at.button(key="pr_contribute").click().run()
    assert_clean(at)
    assert headings(at) == ["### Round 1 of 2 · punishment"]
    shown = at.dataframe[0].value  # this round's contributions, before anyone punishes
    assert list(shown["contributed"]) == [5, 0, 10, 20]
    at.number_input(key=f"{play_resource.TOKENS}1").set_value(2).run()
    at.button(key="pr_punish").click().run()
    assert_clean(at)
    assert headings(at) == ["### Round 2 of 2"]
    assert any("Your balance: 27 tokens" in m.value for m in at.markdown)
    contributions = at.dataframe[0].value
    assert list(contributions["round 1"]) == [5, 0, 10, 20]

    at.number_input(key=play_resource.AMOUNT).set_value(0).run()
    at.button(key="pr_contribute").click().run()
    at.button(key="pr_punish").click().run()  # no tokens
    assert_clean(at)
    assert headings(at) == ["### Game over"]
    (success,) = at.success
    assert (
        "You contributed 11% of what you could and ended with 29 tokens; the group's lowest "
        "contributor, B · FREE_RIDER, contributed 0% and ended with 30. You spent 2 on "
        "punishment and lost 6 to it."
    ) in success.value

    (run_dir,) = (tmp_path / "data" / "runs").glob("ui_*")
    manifest = json.loads((run_dir / "pgg_manifest.json").read_text())
    assert manifest["status"] == "completed"
    (condition,) = manifest["config"]["pgg"]["conditions"]
    assert condition["seats"][0]["amounts"] == [5, 0]
    assert condition["seats"][0]["punishments"] == [[[1, 2]], []]
    assert at.session_state[play_resource.GAME]["same"] is True

    at.button(key="pr_open").click().run()
    assert_clean(at)
    assert at.session_state["main_tab"] == GROUPS
    assert at.session_state["sel_run"] == str(run_dir.resolve())
    show_tab(at, GROUPS)
    assert_clean(at)
    assert at.selectbox(key="grp_run").value == str(run_dir.resolve())


@pytest.mark.slow
def test_a_commons_collapses_and_the_lesson_says_when(tmp_path: Path) -> None:
    at = open_form("commons")
    for i, name in enumerate(["SUSTAINABLE", "SUSTAINABLE", "MODERATE", "SUSTAINABLE"], start=1):
        at.selectbox(key=f"pr_commons_seat_{i}").set_value(f"policy:{name}").run()
    at.slider(key="pr_commons_rounds").set_value(5).run()
    at.button(key="pr_start").click().run()
    assert_clean(at)
    stocks = []
    for season, ask in enumerate([20, 30, 20], start=1):
        assert headings(at) == [f"### Season {season} of 5"]
        stocks.append(next(m.value for m in at.markdown if "tons in the lake" in m.value))
        at.number_input(key=play_resource.AMOUNT).set_value(ask).run()
        at.button(key="pr_fish").click().run()
        assert_clean(at)
    assert [s.split("**")[1] for s in stocks] == [
        "🐟 100 tons in the lake.",
        "🐟 76 tons in the lake.",
        "🐟 34 tons in the lake.",
    ]
    assert "sustainable share is **7** tons" in stocks[1]
    assert headings(at) == ["### Game over"]
    assert any('data-season="3"' in m.value for m in at.markdown)
    (success,) = at.success
    assert (
        "The lake collapsed in season 3 of 5. You caught 70 tons and asked for more than the "
        "sustainable share in 100% of your seasons; D · MODERATE caught 24."
    ) in success.value
    (run_dir,) = (tmp_path / "data" / "runs").glob("ui_*")
    manifest = json.loads((run_dir / "commons_manifest.json").read_text())
    assert manifest["config"]["commons"]["conditions"][0]["seats"][0]["amounts"] == [20, 30, 20]
    assert at.session_state[play_resource.GAME]["same"] is True
    at.button(key="pr_quit").click().run()
    assert_clean(at)
    assert at.button(key="pr_start")  # the commons form again
