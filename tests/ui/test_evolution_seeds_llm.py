"""The 🧬 Evolution tab with several seeds and with LLM members (AppTest): the fixation table
shows fixation.parquet's numbers with Wilson intervals checked by hand, a mock-LLM member runs
from the tab with the plan's call count checked by hand, and the new widgets survive a tab
switch."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
import yaml
from streamlit.testing.v1 import AppTest
from tests.ui.test_app import APP, assert_clean, component_data, show_tab

from pdbench.ui import presets

EVOLUTION, TOURNAMENT = "🧬 Evolution", "🏆 Tournament"
TFT_PERSONA = "persona:tit_for_tat"  # the mock LLM with the tit_for_tat persona
LLM_NAME = "mock-persona-v1[tit_for_tat]"  # its name in the artifacts (model[persona])


def open_tab() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    return show_tab(at, EVOLUTION)


def wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    """(centre -/+ half) with centre = (p + z²/2n) / (1 + z²/n) and
    half = z sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n), z = 1.959964 (the 97.5% normal quantile)."""
    z = 1.959964
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def frame_with(at: AppTest, column: str) -> pd.DataFrame:
    (frame,) = [d.value for d in at.dataframe if column in d.value.columns]
    return frame


def test_fixation_over_five_seeds_shows_the_files_numbers(tmp_path: Path) -> None:
    at = open_tab()
    at.button(key="ev_preset_trust").click().run()
    at.number_input(key="ev_seeds").set_value(5).run()
    at.slider(key="ev_generations").set_value(12).run()  # short: some seeds stay mixed
    at.button(key="ev_run").click().run()
    assert_clean(at)
    (out,) = (tmp_path / "data" / "evolutions").glob("ui_*")
    config = yaml.safe_load((out / "config" / "evolution.yaml").read_text())
    assert config["evolution"]["seeds"] == 5
    assert any(m.value == "##### 🎯 Fixation over 5 seeds" for m in at.markdown)

    stored = pd.read_parquet(out / "fixation.parquet").set_index("strategy")
    shown = frame_with(at, "k_of_n").set_index("name")
    assert sorted(shown.index) == sorted(stored.index)  # every type and "(no fixation)"
    assert shown.loc["(no fixation)", "strategy"].startswith("— no fixation")
    assert list(shown.index)[-1] == "(no fixation)"  # the no-fixation row comes last
    for name, row in stored.iterrows():
        for column in ("fixations", "seeds", "probability", "ci_low", "ci_high"):
            assert shown.loc[name, column] == row[column], (name, column)
        k, n = int(row["fixations"]), int(row["seeds"])
        low, high = wilson_by_hand(k, n)
        assert shown.loc[name, "ci_low"] == pytest.approx(low, abs=1e-6)
        assert shown.loc[name, "ci_high"] == pytest.approx(high, abs=1e-6)
        assert shown.loc[name, "share"] == f"{k / n:.1%}"
        assert shown.loc[name, "interval"] == f"{low:.1%} – {high:.1%}"
        assert shown.loc[name, "k_of_n"] == f"{k} of {n}"
    assert stored["fixations"].sum() == 5
    # With seed 11, 12 generations: Copycat takes over in 3 seeds of 5, 2 stay mixed.
    # By hand, 3 of 5: centre (0.6 + 0.38415) / 1.76829 = 0.55655, half
    # 1.96 sqrt(0.048 + 0.038415) / 1.76829 = 0.32583, so [0.2307, 0.8824].
    assert (stored.loc["TFT", "fixations"], stored.loc["(no fixation)", "fixations"]) == (3, 2)
    assert shown.loc["TFT", "ci_low"] == pytest.approx(0.2307, abs=1e-4)
    assert shown.loc["TFT", "ci_high"] == pytest.approx(0.8824, abs=1e-4)
    assert list(shown.index)[0] == "TFT"  # the most frequent winner first

    # The dot-and-whisker chart draws the same numbers (one row per type).
    (chart,) = [
        c.proto
        for c in at.get("vega_lite_chart")
        if json.loads(c.proto.spec).get("title") == "share of seeds it took over"
    ]
    drawn = pa.ipc.open_stream(chart.datasets[0].data.data).read_pandas()
    drawn = drawn.set_index("condition")[["value", "low", "high"]]
    labels = dict(zip(shown["strategy"], shown.index, strict=True))
    assert set(drawn.index) == set(labels)
    for label, row in drawn.iterrows():
        assert tuple(row) == tuple(stored.loc[labels[label], ["probability", "ci_low", "ci_high"]])


def test_a_mock_llm_member_runs_from_the_tab_with_its_calls_planned(tmp_path: Path) -> None:
    at = open_tab()
    for key in presets.evolution_strategies():
        at.slider(key=f"ev_n_{key}").set_value({"TFT": 2, "ALLD": 2}.get(key, 0))
    at.run()
    options = at.multiselect(key="ev_llm").options
    assert any("smollm2" in o for o in options)  # the real local model is offered
    assert any("Llama-3.1-8B-Instruct" in o for o in options)  # agents/openai_compatible.yaml
    at.multiselect(key="ev_llm").set_value([TFT_PERSONA]).run()
    at.slider(key=f"ev_llm_n_{TFT_PERSONA}").set_value(2).run()
    at.slider(key="ev_rounds").set_value(4).run()
    at.slider(key="ev_eliminate").set_value(1).run()
    at.slider(key="ev_generations").set_value(3).run()
    at.slider(key="ev_reps").set_value(2).run()
    assert_clean(at)
    assert any("Extra seeds rerun the process on the same pool" in i.value for i in at.info)
    plan = "\n".join(c.value for c in at.code)
    # By hand: 3 types (ALLD, TFT, the LLM) give 6 unordered pairs with each type against
    # itself, x 2 matches per pair = 12 pool matches. The LLM sits in TFT-LLM and ALLD-LLM (one
    # side) and LLM-LLM (both sides): 1 + 1 + 2 = 4 agent-games per repetition, x 2 = 8, and
    # one call per round: 8 x 4 rounds = 32 calls.
    assert f"population: ALLD x2, TFT x2, {LLM_NAME} x2" in plan
    assert "pool: 12 matches played once" in plan
    assert "expected LLM calls: 32 (up to 96 with parse retries)" in plan
    assert "mock:mock-persona-v1: 8 agent-games, 32 calls" in plan

    at.button(key="ev_run").click().run()
    assert_clean(at)
    (out,) = (tmp_path / "data" / "evolutions").glob("ui_*")
    config = yaml.safe_load((out / "config" / "evolution.yaml").read_text())
    assert config["evolution"]["population"][-1] == {
        "player": {"ref": "agents/llm_default.yaml", "overrides": {"persona": "tit_for_tat"}},
        "count": 2,
    }
    assert (out / "config" / "prompts" / "personas" / "tit_for_tat.md").is_file()
    manifest = json.loads((out / "evolution_manifest.json").read_text())
    assert manifest["strategies"] == ["ALLD", "TFT", LLM_NAME]
    member = manifest["config"]["evolution"]["population"][-1]
    assert member["count"] == 2
    assert (member["player"]["type"], member["player"]["persona"]) == ("llm", "tit_for_tat")
    # The pool as planned: 6 matches with the LLM x 4 rounds logged, 32 first attempts.
    rounds = (out / "rounds.jsonl").read_text().splitlines()
    assert len(rounds) == 6 * 4
    calls = [json.loads(line) for line in (out / "llm_calls.jsonl").read_text().splitlines()]
    assert sum(1 for c in calls if c["attempt"] == 0) == 32
    # The LLM member is labelled by model and persona, apart from the Copycat policy.
    labels = dict(zip(*(frame_with(at, "fitness")[c] for c in ("name", "strategy")), strict=True))
    assert labels[LLM_NAME] == "💬 mock-persona-v1 · tit for tat"
    assert len(set(labels.values())) == 3
    (frames,) = component_data(at)
    assert "💬 mock-persona-v1 · tit for tat" in [s["label"] for s in frames["strategies"]]


def test_the_seeds_and_llm_members_survive_a_tab_switch() -> None:
    at = open_tab()
    at.number_input(key="ev_seeds").set_value(7).run()
    at.multiselect(key="ev_llm").set_value([TFT_PERSONA]).run()
    at.slider(key=f"ev_llm_n_{TFT_PERSONA}").set_value(3).run()
    show_tab(at, TOURNAMENT)
    assert_clean(at)
    show_tab(at, EVOLUTION)
    assert_clean(at)
    assert at.number_input(key="ev_seeds").value == 7
    assert at.multiselect(key="ev_llm").value == [TFT_PERSONA]
    assert at.slider(key=f"ev_llm_n_{TFT_PERSONA}").value == 3
    # A preset sets the whole population: the LLM member goes, the seeds stay as set.
    at.button(key="ev_preset_trust").click().run()
    assert at.multiselect(key="ev_llm").value == []
    assert at.number_input(key="ev_seeds").value == 7


def test_the_same_llm_agent_picked_twice_is_refused_before_running() -> None:
    at = open_tab()
    # agents/llm_default.yaml is the mock agent with the cooperative persona.
    at.multiselect(key="ev_llm").set_value(
        ["persona:cooperative", "llm_file:agents/llm_default.yaml"]
    ).run()
    assert not at.exception
    (message,) = [e.value for e in at.error]
    assert "are the same agent (mock-persona-v1[cooperative])" in message
    assert at.button(key="ev_run").disabled
