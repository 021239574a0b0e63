"""Public goods and commons runs (issue 31) in the 🫂 Groups tab through streamlit.testing
(AppTest), on real runs of rule-based seats (`pdbench run`, in this process).

Expected values are worked out from the rules, not read from the app: in a lake of 100 tons
(doubling what is left, collapse below 5 left) five SUSTAINABLE seats each ask
(100 // 2) // 5 = 10 tons, so 50 are left, the lake is full again, and each catches 10 a season,
120 in 12 seasons, and no game collapses; with a GREEDY seat asking the whole lake (100) beside
four asking 10, the 140 tons asked empty the lake in the first season (0 < 5 left): every game
collapses in season 1. In the public goods game a FULL_COOPERATOR contributes its whole
endowment (20 tokens) in round 1, a FREE_RIDER nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from tests.support.resource_run import (
    add_talk,
    commons_config,
    make_resource_run,
    pgg_config,
)
from tests.ui.test_app import assert_clean, make_app

from pdbench.ui.url_state import SEL_CONDITION

GROUPS, REPLAY = "🫂 Groups", "🎬 Replay"
SAID = [(0, "Twenty each, everyone?"), (3, "Sure.")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("resource_tab")
    commons = make_resource_run(base, "commons_ui", commons_config(base))
    pgg = make_resource_run(base, "pgg_ui", pgg_config(base))
    add_talk(pgg, "mixed", 0, {0: SAID}, {}, {(0, 3): {"parse_failures": 2, "fallback": True}})
    return commons, pgg


def _html(at: AppTest) -> str:
    return "\n".join(h.proto.body for h in at.get("html"))


def _open(run: Path, condition: str, view: str | None = None) -> AppTest:
    at = make_app(run)
    at.session_state[SEL_CONDITION] = condition
    if view:
        at.session_state["grp_view"] = view
    return at.run()


def test_commons_results_open_first_with_intervals(runs: tuple[Path, Path]) -> None:
    at = _open(runs[0], "sustainable")
    assert_clean(at)
    assert at.tabs[0].label == GROUPS
    conditions = next(t.value for t in at.dataframe if "condition" in t.value.columns)
    assert list(conditions["condition"]) == ["sustainable", "moderate", "greedy"]
    assert conditions["collapsed"].iloc[0] == "0 of 3"
    assert conditions["collapsed"].iloc[2] == "3 of 3"
    assert conditions["collapse season"].iloc[2].startswith("season 1")
    assert conditions["games that survived"].iloc[0].startswith("100.0% [")  # with its interval
    seats = next(t.value for t in at.dataframe if "seat" in t.value.columns)
    assert list(seats["seat"]) == [f"{x} · SUSTAINABLE" for x in "ABCDE"]
    assert all(v.startswith("120 tons") for v in seats["total catch"])
    assert {m.label: m.value for m in at.metric}["games that survived"] == "100.0%"
    assert any("the game as the unit" in c.value for c in at.caption)


def test_a_collapsing_commons_replay(runs: tuple[Path, Path]) -> None:
    at = _open(runs[0], "greedy", REPLAY)
    assert_clean(at)
    banner = next(m.value for m in at.markdown if "pdb-rcollapse" in m.value)
    assert 'data-season="1"' in banner and "collapsed in season 1 of 12" in banner
    html = _html(at)
    assert '<td class="pdb-r-asked">100</td>' in html  # the GREEDY seat asked the whole lake
    charts = [c.proto.SerializeToString() for c in at.get("vega_lite_chart")]
    label = b"collapse: fewer than 5 tons left after a harvest"
    assert any(label in c and b"collapsed in season 1" in c for c in charts)


def test_pgg_replay_shows_contributions_talk_and_fallbacks(runs: tuple[Path, Path]) -> None:
    at = _open(runs[1], "mixed", REPLAY)
    assert_clean(at)
    html = _html(at)
    rows = html.split('<tr class="pdb-rrow')[1:]
    assert len(rows) == 5
    assert "FULL_COOPERATOR" in rows[0] and '<td class="pdb-r-contributed">20</td>' in rows[0]
    assert "FREE_RIDER" in rows[3] and '<td class="pdb-r-contributed">0</td>' in rows[3]
    assert rows[3].startswith(" pdb-rbad") and "⚠️ 2 parse failures · ⚠️ fallback" in rows[3]
    assert all(not r.startswith(" pdb-rbad") for i, r in enumerate(rows) if i != 3)
    for _, text in SAID:
        assert f'<span class="pdb-rmsg-text">{text}</span>' in html
    next(b for b in at.button if b.key == "res_next").click().run()
    assert_clean(at)
    assert 'data-round="2"' in _html(at) and "none this round" in _html(at)
