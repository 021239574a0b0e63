"""Forms and selections survive a switch to another tab and back (the tabs are lazy: Streamlit
forgets the values of widgets it did not draw), and a typed directory that is not a result of
the tab's kind is refused instead of becoming an entry of the list."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from tests.ui.sample import make_tournament
from tests.ui.test_app import APP, RUN, TOURNAMENT, VIEW, assert_clean, make_app, show_tab


def app() -> AppTest:
    return AppTest.from_file(str(APP), default_timeout=60).run()


def test_the_run_form_survives_a_tab_switch() -> None:
    at = show_tab(app(), RUN)
    at.selectbox(key="rx_agent_a").set_value("policy:GRIM").run()
    at.slider(key="rx_rounds").set_value(123).run()
    at.slider(key="rx_noise").set_value(0.07).run()
    at.number_input(key="rx_seed").set_value(99).run()
    at.radio(key="rx_horizon").set_value("Geometric").run()
    at.slider(key="rx_stop").set_value(0.2).run()
    show_tab(at, TOURNAMENT)
    assert_clean(at)
    show_tab(at, RUN)
    assert_clean(at)
    assert at.selectbox(key="rx_agent_a").value == "policy:GRIM"
    assert at.radio(key="rx_horizon").value == "Geometric"
    assert at.slider(key="rx_stop").value == 0.2
    assert at.slider(key="rx_noise").value == 0.07
    assert at.number_input(key="rx_seed").value == 99
    at.radio(key="rx_horizon").set_value("Fixed").run()
    assert at.slider(key="rx_rounds").value == 123  # kept while the geometric box was shown


def test_a_saved_tournament_selection_survives_a_tab_switch(tmp_path: Path) -> None:
    root = Path("data/tournaments")  # the app's list, under the test's working directory
    older = make_tournament(root / "older", ["TFT", "ALLD"], run_id="older")
    make_tournament(root / "newer", ["GRIM", "WSLS"], run_id="newer")
    at = show_tab(app(), TOURNAMENT)
    at.selectbox(key="tn_dir").set_value(str(older.resolve())).run()
    assert_clean(at)
    show_tab(at, VIEW)
    show_tab(at, TOURNAMENT)
    assert at.selectbox(key="tn_dir").value == str(older.resolve())


def test_a_typed_directory_of_another_kind_is_refused(tmp_path: Path) -> None:
    root = Path("data/tournaments")
    make_tournament(root / "one", ["TFT", "ALLD"], run_id="older")
    not_a_run = tmp_path / "not_a_run"
    not_a_run.mkdir()
    at = show_tab(app(), TOURNAMENT)
    before = list(at.selectbox(key="tn_dir").options)
    at.text_input(key="tn_path").set_value(str(not_a_run)).run()
    assert any("not a pdbench tournament" in e.value for e in at.error)
    assert list(at.selectbox(key="tn_dir").options) == before


# The view in the URL (url_state): a link opens its view; a stale one falls back with a note.


def test_a_link_opens_its_view_and_the_view_is_written(sample_run: Path) -> None:
    at = make_app(sample_run)
    at.query_params.update(
        {"tab": "replay", "run": str(sample_run), "cond": "GTFT_vs_WSLS_noisy", "rep": "1"}
    )
    at.query_params["game"] = "g-42"  # another tab's parameter (Play's game in progress)
    at.run()
    assert_clean(at)
    assert at.selectbox(key="rp_condition").value == "GTFT_vs_WSLS_noisy"
    assert at.selectbox(key="rp_replicate").value == 1
    assert not at.info  # no note: every value was good
    at.selectbox(key="rp_replicate").set_value(0).run()
    assert at.query_params["rep"] == "0"
    assert at.query_params["tab"] == "replay"
    assert at.query_params["game"] == "g-42"
    show_tab(at, TOURNAMENT)
    assert at.query_params["tab"] == "tournament"
    assert at.query_params["cond"] == "GTFT_vs_WSLS_noisy"  # the selection stays in the URL


def test_a_stale_link_falls_back_with_one_note_each(sample_run: Path) -> None:
    at = make_app(sample_run)
    at.query_params.update({"tab": "view", "run": str(sample_run), "cond": "gone", "rep": "x"})
    at.run()
    assert not at.exception
    notes = [i.value for i in at.info if "The link's" in i.value]
    assert len(notes) == 2, notes
    assert "rep='x' is not a replicate number" in notes[0]
    assert "cond='gone' is not a condition of this run" in notes[1]
    shown = at.selectbox(key="vr_condition").value
    assert shown != "gone" and at.query_params["cond"] == shown  # the URL says what is shown
    # A run that no longer exists: one note, not one more for its condition.
    at = make_app(sample_run)
    at.query_params.update({"run": "data/runs/deleted", "cond": "TFT_vs_ALLD", "rep": "0"})
    at.run()
    assert not at.exception
    notes = [i.value for i in at.info if "The link's" in i.value]
    assert notes == [
        "The link's run='data/runs/deleted' is not among the saved runs: showing the first run "
        "listed."
    ]
    assert at.selectbox(key="vr_run").value == str(sample_run.resolve())
    at.selectbox(key="vr_replicate").set_value(1).run()  # the user moves on: the note goes
    assert not [i for i in at.info if "The link's" in i.value]


def test_a_link_to_a_saved_tournament_opens_it(tmp_path: Path) -> None:
    root = Path("data/tournaments")
    older = make_tournament(root / "older", ["TFT", "ALLD"], run_id="older")
    make_tournament(root / "newer", ["GRIM", "WSLS"], run_id="newer")
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params.update({"tab": "tournament", "tournament": "data/tournaments/older"})
    at.run()
    assert_clean(at)
    assert at.selectbox(key="tn_dir").value == str(older.resolve())
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params.update({"tab": "tournament", "tournament": "data/tournaments/nope"})
    at.run()
    assert any("tournament='data/tournaments/nope'" in i.value for i in at.info)
    assert "newer" in at.selectbox(key="tn_dir").value
    assert at.query_params["tournament"] == "data/tournaments/newer"


def test_a_session_without_a_view_in_its_url_keeps_what_is_set(sample_run: Path) -> None:
    at = make_app(sample_run)
    at.session_state["main_tab"] = RUN  # as a test, or a page opened without parameters
    at.run()
    assert_clean(at)
    assert at.query_params["tab"] == "run"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"tab": "view", "run": "\x00", "cond": "TFT_vs_ALLD"}, "run"),
        ({"tab": "replay", "run": "loop1/x"}, "run"),  # a symlink loop
        ({"tab": "tournament", "tournament": "\x00"}, "tournament"),
        ({"tab": "evolution", "evolution": "loop1"}, "evolution"),
    ],
)
def test_a_link_naming_an_unreadable_path_gets_one_note(
    sample_run: Path, params: dict[str, str], field: str
) -> None:
    Path("loop1").symlink_to("loop2")
    Path("loop2").symlink_to("loop1")
    make_tournament(Path("data/tournaments/one"), ["TFT", "ALLD"], run_id="one")
    at = make_app(sample_run)
    at.query_params.update(params)
    at.run()
    assert_clean(at)
    notes = [i.value for i in at.info if "The link's" in i.value]
    assert len(notes) == 1 and "\n" not in notes[0], notes
    assert notes[0].startswith(f"The link's {field}=")
    assert "is not a path that can be read" in notes[0]


@pytest.mark.parametrize(
    ("typed", "problem"),
    [
        ("\x00", "not a path that can be read"),
        ("n" * 300, "cannot be read (File name too long"),  # one name past NAME_MAX (255)
        ("loop1", "not a path that can be read"),
    ],
)
def test_a_typed_path_that_cannot_be_read_is_refused_in_one_line(typed: str, problem: str) -> None:
    Path("loop1").symlink_to("loop2")
    Path("loop2").symlink_to("loop1")
    make_tournament(Path("data/tournaments/one"), ["TFT", "ALLD"], run_id="one")
    at = show_tab(app(), TOURNAMENT)
    before = list(at.selectbox(key="tn_dir").options)
    at.text_input(key="tn_path").set_value(typed).run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and problem in errors[0] and "\n" not in errors[0], errors
    assert list(at.selectbox(key="tn_dir").options) == before
