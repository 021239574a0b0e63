"""Forms and selections survive a switch to another tab and back (the tabs are lazy: Streamlit
forgets the values of widgets it did not draw), and a typed directory that is not a result of
the tab's kind is refused instead of becoming an entry of the list."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest
from tests.ui.sample import make_tournament
from tests.ui.test_app import APP, RUN, TOURNAMENT, VIEW, assert_clean, show_tab


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
