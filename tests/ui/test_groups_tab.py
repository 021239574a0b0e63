"""The 🫂 Groups tab through streamlit.testing (AppTest) on a hand-written groups run: it opens
first for a groups run; Results shows each condition's and seat's metrics with intervals from
the run's tables (or says how to write them); Replay steps through a game round by round."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from tests.support.group_run import (
    FIVE_MOVES,
    FIVE_NAMES,
    ConditionSpec,
    GameSpec,
    make_real_group_run,
    write_group_run,
    write_group_tables,
)
from tests.ui.test_app import assert_clean, make_app

from pdbench.ui import group_results

GROUPS, RESULTS, REPLAY = "🫂 Groups", "📊 Results", "🎬 Replay"


@pytest.fixture(scope="module")
def tabled_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = write_group_run(tmp_path_factory.mktemp("tabled"))
    write_group_tables(run)
    return run


def _html(at: AppTest) -> str:
    return "\n".join(h.proto.body for h in at.get("html"))


def _ring_moves(at: AppTest) -> tuple[int, list[tuple[str, str]]]:
    html = _html(at)
    shown = int(re.search(r'class="pdb-gring" data-round="(\d+)"', html).group(1))
    return shown, re.findall(r'data-seat="(\w)" data-move="(\w)"', html)


def test_results_of_a_groups_run_open_first(tabled_run: Path) -> None:
    at = make_app(tabled_run).run()
    assert_clean(at)
    assert at.tabs[0].label == GROUPS
    conditions = next(t.value for t in at.dataframe if "condition" in t.value.columns)
    assert list(conditions["condition"]) == ["five_talking", "ten_seats"]
    assert list(conditions["group cooperation"]) == ["60.0% [50.0%, 70.0%]", "55.0% [45.0%, 65.0%]"]
    cards = {m.label: (m.value, m.delta) for m in at.metric}
    assert cards["🤝 group cooperation"] == ("60.0%", "[50.0%, 70.0%]")
    assert cards["⚖️ Gini"] == ("0.12", "[0.02, 0.22]")
    seats = next(t.value for t in at.dataframe if "seat" in t.value.columns)
    assert list(seats["seat"]) == [f"{'ABCDE'[i]} · {name}" for i, name in enumerate(FIVE_NAMES)]
    assert seats["cooperation"].iloc[0] == "90.0% [80.0%, 100.0%]"


def test_a_run_without_tables_says_how_to_write_them(tmp_path: Path) -> None:
    run = write_group_run(tmp_path)
    at = make_app(run).run()
    assert_clean(at)
    assert any("pdbench aggregate" in i.value for i in at.info)
    at.session_state["grp_view"] = REPLAY
    at.run()  # the replay needs only the rounds
    assert_clean(at)
    assert _ring_moves(at)[0] == 1


def test_the_replay_steps_round_by_round(tabled_run: Path) -> None:
    at = make_app(tabled_run).run()
    at.session_state["grp_view"] = REPLAY
    at.run()
    assert_clean(at)
    assert _ring_moves(at) == (1, [(s, m[0]) for s, m in zip("ABCDE", FIVE_MOVES, strict=True)])
    next(b for b in at.button if b.key == "grp_next").click().run()
    next(b for b in at.button if b.key == "grp_next").click().run()
    shown, moves = _ring_moves(at)
    assert shown == 3
    assert moves == [(s, m[2]) for s, m in zip("ABCDE", FIVE_MOVES, strict=True)]
    assert "Defect with me, D." in _html(at)
    next(b for b in at.button if b.key == "grp_last").click().run()
    assert _ring_moves(at)[0] == 6
    at.slider(key="grp_round").set_value(2).run()
    assert _ring_moves(at)[0] == 2
    next(b for b in at.button if b.key == "grp_first").click().run()
    assert _ring_moves(at)[0] == 1
    assert_clean(at)


def test_the_ten_seat_game_draws_ten_cards(tabled_run: Path) -> None:
    at = make_app(tabled_run).run()
    at.selectbox(key="grp_condition").set_value("ten_seats").run()
    at.session_state["grp_view"] = REPLAY
    at.run()
    assert_clean(at)
    assert [s for s, _ in _ring_moves(at)[1]] == list("ABCDEFGHIJ")
    assert "Ten of us: if six or more put in" in _html(at)


@pytest.mark.parametrize(
    ("row", "kind", "text"),
    [
        ({"x": 0.625, "x_ci_low": 0.5, "x_ci_high": 0.75}, "rate", "62.5% [50.0%, 75.0%]"),
        ({"x": 1.234, "x_ci_low": 1.0, "x_ci_high": 1.5}, "payoff", "1.23 [1.00, 1.50]"),
        (
            {"x": 0.5, "x_ci_low": 0.5, "x_ci_high": 0.5, "exact": True},
            "rate",
            "50.0% (exact: deterministic)",
        ),
        ({"x": 3.0, "x_ci_low": 1.0, "x_ci_high": 5.0}, "round", "round 4 [round 2, round 6]"),
        ({"x": 0.3, "x_ci_low": None, "x_ci_high": None}, "ratio", "0.3"),
        ({"x": float("nan")}, "rate", "—"),
    ],
)
def test_values_with_intervals(row: dict, kind: str, text: str) -> None:
    assert group_results.with_interval(row, "x", kind) == text


def test_p_given_k_is_read_from_the_condition_rows(tabled_run: Path) -> None:
    table = pd.read_parquet(tabled_run / "group_conditional.parquet")
    frame = group_results.given_k_frame(table, "five_talking")
    assert frame["k"].tolist() == [0, 1, 2, 3, 4]
    assert frame["rounds"].tolist() == [0, 4, 12, 20, 14]
    assert frame["value"].tolist()[1:] == pytest.approx([0.25, 0.5, 0.8, 13 / 14])
    assert pd.isna(frame["value"].iloc[0])


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_real_group_run(tmp_path_factory.mktemp("real"))


def test_a_real_run_shows_its_tables_numbers(real_run: Path) -> None:
    """The tables `pdbench run` writes: the page shows their numbers for the condition."""
    at = make_app(real_run).run()
    assert_clean(at)
    aggregates = pd.read_parquet(real_run / "aggregates.parquet")
    row = aggregates[
        (aggregates["scope"] == "condition") & (aggregates["condition"] == "five_talking")
    ]
    cards = {m.label: (m.value, m.delta) for m in at.metric}
    low, high = (
        row["group_cooperation_rate_ci_low"].item(),
        row["group_cooperation_rate_ci_high"].item(),
    )
    assert cards["🤝 group cooperation"] == (
        f"{100 * row['group_cooperation_rate'].item():.1f}%",
        f"[{100 * low:.1f}%, {100 * high:.1f}%]",
    )
    seats = pd.read_parquet(real_run / "seats.parquet")
    mine = seats[(seats["scope"] == "condition") & (seats["condition"] == "five_talking")]
    shown = next(t.value for t in at.dataframe if "seat" in t.value.columns)
    assert list(shown["seat"]) == [
        f"{'ABCDE'[s]} · {n}" for s, n in zip(mine["seat"], mine["name"], strict=True)
    ]
    assert any("What each seat said and did" in m.value for m in at.markdown)
    at.session_state["grp_view"] = REPLAY
    at.selectbox(key="grp_condition").set_value("ten_talking").run()
    assert_clean(at)
    assert [s for s, _ in _ring_moves(at)[1]] == list("ABCDEFGHIJ")


def test_a_link_opens_the_replay_on_its_round(tabled_run: Path) -> None:
    at = make_app(tabled_run)
    params = {"tab": "groups", "run": str(tabled_run), "cond": "five_talking", "rep": "1"}
    at.query_params.update({**params, "round": "4"})
    at.run()
    at.session_state["grp_view"] = REPLAY
    at.run()
    assert_clean(at)
    shown, moves = _ring_moves(at)
    assert shown == 4 and moves[4] == ("E", "C")  # replicate 1: E plays DCDCDC


def test_a_long_game_gets_its_timeline_as_a_chart(tmp_path: Path) -> None:
    moves = tuple(("CD" * 130)[s : s + 250] for s in range(3))
    run = write_group_run(tmp_path, [ConditionSpec("long", ("x", "y", "z"), [GameSpec(0, moves)])])
    at = make_app(run).run()
    at.session_state["grp_view"] = REPLAY
    at.run()
    assert_clean(at)
    assert 'class="pdb-gtl"' not in _html(at) and "Round 1 of 250" in _html(at)
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    marks = [[layer["mark"]["type"] for layer in spec["layer"]] for spec in specs]
    assert marks[0] == ["rect", "rule"]  # the moves: a cell per seat and round, the shown round
    assert "line" in marks[1]  # the group's cooperation
