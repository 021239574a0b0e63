"""The browser-side components' Python half: the frames they are sent (`ui.animation`), the
round axis of the game charts (whole rounds from 1 to n) and the compact population strip."""

from __future__ import annotations

import json
import re

import pandas as pd

from pdbench.storage.record.fields import side_field
from pdbench.ui import animation, charts, style
from pdbench.ui.style import Player, policy_profile


def _game(n: int = 3) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "round": list(range(1, n + 1)),
            "agent_a_action": ["C", "D", "C"][:n],
            "agent_a_intended_action": ["C", "C", "C"][:n],
            "agent_a_parse_failure": [False, False, True][:n],
            "agent_a_payoff": [3.0, 5.0, 0.5][:n],
            "agent_a_cum_payoff": [3.0, 8.0, 8.5][:n],
            "agent_b_action": ["C", "C", "D"][:n],
            "agent_b_intended_action": ["C", "C", "D"][:n],
            "agent_b_parse_failure": [False, False, False][:n],
            "agent_b_payoff": [3.0, 0.0, 5.0][:n],
            "agent_b_cum_payoff": [3.0, 3.0, 8.0][:n],
        }
    )


def _data(page: str) -> dict:
    match = re.search(r"var DATA = (.*?);\n", page)
    assert match
    return json.loads(match.group(1))


def test_game_frames() -> None:
    data = animation.game_data(_game(), ["A · x", "B · y"])
    assert data["n"] == 3 and data["labels"] == ["A · x", "B · y"]
    assert (data["a"], data["fa"], data["xa"]) == ("CDC", "CCC", "001")  # a flip, a fallback
    assert (data["b"], data["fb"], data["xb"]) == ("CCD", "CCD", "000")
    assert data["pa"] == [3, 5, 0.5] and data["pb"] == [3, 0, 5]


def test_pages_embed_the_frames_safely() -> None:
    page = animation.replay_page(_game(), ["A </script><b>", "B"], 20)
    assert "</script><b>" not in page  # a label cannot end the script
    assert _data(page)["labels"][0] == "A </script><b>"
    assert "PDB.replay(ROOT, DATA, COLORS, 20, {});" in page
    place = {"round": 3, "game": {"cond": "x</script><b>"}}  # the replay's place (url_state)
    page = animation.replay_page(_game(), ["A", "B"], 20, None, place)
    assert "x</script><b>" not in page
    assert 'PDB.replay(ROOT, DATA, COLORS, 20, {"round":3,"game":{"cond":"x\\u003c/script>' in page
    assert "PDB.timeline(ROOT" in animation.timeline_page(_game(), ["A", "B"])
    for asset in ("anim.css", "timeline.js", "player.js"):
        assert (animation.ASSETS / asset).is_file()


def test_evolution_frames_fill_missing_strategies_with_zero() -> None:
    players = [
        Player(
            name=k,
            config=None,
            label=f"{policy_profile(k).short} · {k}",
            color=c,
            profile=policy_profile(k),
        )
        for k, c in (("TFT", "#111111"), ("ALLD", "#222222"))
    ]
    generations = pd.DataFrame(
        {
            "generation": [0, 0, 1, 2],
            "strategy": ["TFT", "ALLD", "TFT", "TFT"],
            "count": [2, 2, 4, 4],
        }
    )
    page = animation.evolution_page(generations, players, 20)
    data = _data(page)
    assert data["counts"] == [[2, 2], [4, 0], [4, 0]]
    assert [s["color"] for s in data["strategies"]] == ["#111111", "#222222"]
    assert "PDB.evolution(ROOT, DATA, 20);" in page


def test_game_charts_use_whole_rounds_from_one_to_n() -> None:
    game = _game()
    for chart in (
        charts.cooperation_chart(game, ["A", "B"], 1, [1.0, 0.5, 0.0], []),
        charts.payoff_chart(game, ["A", "B"]),
    ):
        x = chart.to_dict()["encoding"]["x"]
        assert x["scale"]["domain"] == [1, 3] and x["scale"]["nice"] is False
        assert x["axis"]["format"] == ",d" and x["axis"]["tickMinStep"] == 1


def test_a_large_population_strip_stays_compact() -> None:
    profile = policy_profile("TFT")
    big = style.population_strip_html([(profile, 300)])
    assert big.count('class="pdb-ind small"') == 300
    assert big.count("pdb-strip-row") == 6  # 50 a row
    small = style.population_strip_html([(profile, 20)])
    assert small.count('class="pdb-ind"') == 20


def test_equal_cumulative_payoffs_stay_visible_as_two_lines() -> None:
    """A is drawn wide and solid, B narrow and dashed, so two equal totals do not hide one."""
    spec = charts.payoff_chart(_game(), ["A · Copycat", "B · Copycat"]).to_dict()
    enc = spec["encoding"]
    assert enc["strokeDash"]["scale"]["domain"] == ["A · Copycat", "B · Copycat"]
    solid, dashed = enc["strokeDash"]["scale"]["range"]
    assert solid == [1, 0] and dashed[1] > 0
    wide, narrow = enc["strokeWidth"]["scale"]["range"]
    assert wide > narrow * 1.5


def test_game_data_numbers_and_flags_match_the_value_by_value_rules() -> None:
    """The whole-column conversions give what `_number` and a per-round flag give one by one."""
    payoffs = [3.0, 0.0, 5.0, 1.0, 2.5, -1.0, 1 / 3, 1e-7, 4.0000001]
    fails = [False, None, True, False, True, None, False, False, True]
    table = pd.DataFrame(
        {
            side_field(side, column): values
            for side in ("a", "b")
            for column, values in (
                ("action", list("CDCDCDCDC")),
                ("intended_action", list("CCCDDDCCD")),
                ("parse_failure", pd.array(fails, dtype="boolean")),
                ("payoff", payoffs),
            )
        }
    )
    data = animation.game_data(table, ["A", "B"])
    assert data["a"] == "CDCDCDCDC" and data["fb"] == "CCCDDDCCD"
    assert data["xa"] == "001010001"  # None counts as no fallback
    assert data["pa"] == [3, 0, 5, 1, 2.5, -1, 0.333333, 0.0, 4.0]
    assert [type(v) for v in data["pa"][:4]] == [int] * 4
    assert data["pb"] == [animation._number(p) for p in payoffs]
    whole = animation.game_data(table.assign(**{side_field("a", "payoff"): [1.0] * 9}), ["A", "B"])
    assert whole["pa"] == [1] * 9 and all(type(v) is int for v in whole["pa"])
