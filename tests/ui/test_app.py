"""The Streamlit app through streamlit.testing (AppTest): every tab renders, selections change
what is shown, an experiment runs from the UI, and broken run directories give one-line
messages instead of tracebacks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import orjson
import pytest
from streamlit.testing.v1 import AppTest
from tests.ui.sample import REPO

APP = REPO / "src" / "pdbench" / "ui" / "streamlit_app.py"
VIEW, REPLAY, RUN = "📊 View Results", "🎬 Animated Replay", "🧪 Run Experiment"
TOURNAMENT, EVOLUTION, PLAY = "🏆 Tournament", "🧬 Evolution", "🎮 Play"
AGENTS = "👥 Agents"
GROUPS = "🫂 Groups"


def make_app(run_dir: Path | None = None) -> AppTest:
    """The app, opened on `run_dir` (AppTest cannot pass argv, so through session state)."""
    at = AppTest.from_file(str(APP), default_timeout=30)
    if run_dir is not None:
        at.session_state["pdbench_run_dir"] = str(run_dir)
    return at


def show_tab(at: AppTest, label: str) -> AppTest:
    """Switch the (lazy) tabs and rerun."""
    at.session_state["main_tab"] = label
    return at.run()


def assert_clean(at: AppTest) -> None:
    """No exception and no st.error on the page."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def metric_values(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def test_every_tab_renders(sample_run: Path) -> None:
    at = make_app(sample_run).run()
    assert_clean(at)
    assert [t.label for t in at.tabs] == [
        VIEW,
        REPLAY,
        RUN,
        TOURNAMENT,
        EVOLUTION,
        AGENTS,
        PLAY,
        GROUPS,
    ]
    for label in (VIEW, REPLAY, RUN, TOURNAMENT, AGENTS, EVOLUTION):
        show_tab(at, label)
        assert_clean(at)
        if label == RUN:
            assert any(b.label == "🚀 Run" for b in at.button)
    assert any(b.label == "🧬 Run Evolution" for b in at.button)
    show_tab(at, GROUPS)  # no groups run here: it says how to make one
    assert_clean(at)
    assert any("No groups runs yet" in i.value for i in at.info)


def test_view_results_shows_game_metrics_and_conditions(sample_run: Path) -> None:
    at = make_app(sample_run).run()
    assert_clean(at)
    values = metric_values(at)
    assert values["🔢 Rounds"] == "30"
    assert values["🪞 A cooperation"] == "3.3%"  # TFT opens with C, then copies ALLD's D
    assert values["😈 B cooperation"] == "0.0%"
    assert values["📉 Collapse at"] == "round 1"  # time_to_collapse 0, shown 1-based
    assert "TFT_vs_ALLD" in captions(at)
    html = "\n".join(h.proto.body for h in at.get("html"))
    assert "pdb-cell" in html  # the C/D timeline
    tables = [t.value for t in at.dataframe]
    conditions = next(t for t in tables if "condition" in t.columns)
    assert list(conditions["condition"]) == [
        "TFT_vs_ALLD",
        "GTFT_vs_WSLS_noisy",
        "LLMcoop_vs_LLMexploit",
    ]


def test_changing_condition_and_replicate_changes_the_view(sample_run: Path) -> None:
    at = make_app(sample_run).run()
    before = metric_values(at)
    at.selectbox(key="vr_condition").select("LLMcoop_vs_LLMexploit").run()
    assert_clean(at)
    after = metric_values(at)
    assert after != before
    assert "LLMcoop_vs_LLMexploit" in captions(at)
    assert "replicate 0" in captions(at)
    at.selectbox(key="vr_replicate").select(1).run()
    assert_clean(at)
    assert "replicate 1" in captions(at)
    assert metric_values(at) != after  # the mock LLMs play differently in each replicate


def test_selection_follows_to_the_replay_tab(sample_run: Path) -> None:
    at = make_app(sample_run).run()
    at.selectbox(key="vr_condition").select("GTFT_vs_WSLS_noisy").run()
    show_tab(at, REPLAY)
    assert_clean(at)
    assert at.selectbox(key="rp_condition").value == "GTFT_vs_WSLS_noisy"


def component_data(at: AppTest) -> list[dict]:
    """The frames (`DATA`) of each browser-side component (st.iframe) on the page."""
    pages = [e.proto.srcdoc for e in at.get("iframe")]
    return [json.loads(re.search(r"var DATA = (.*?);\n", p).group(1)) for p in pages]


def test_replay_sends_every_round_to_the_browser(sample_run: Path) -> None:
    at = make_app(sample_run).run()
    show_tab(at, REPLAY)
    assert_clean(at)
    (game,) = component_data(at)  # the replay plays in the browser from these frames
    assert game["n"] == 30 and game["labels"][0].startswith("A ·")
    assert game["a"] == "C" + "D" * 29 and game["b"] == "D" * 30  # TFT vs ALLD
    assert game["fa"] == game["a"] and set(game["xa"]) == {"0"}
    assert sum(game["pa"]) == 29 and sum(game["pb"]) == 34  # 0 + 29*1 and 5 + 29*1
    assert "PDB.replay(" in at.get("iframe")[0].proto.srcdoc


def _first_failure(run_dir: Path, condition: str) -> tuple[int, int]:
    for line in (run_dir / "rounds.jsonl").read_bytes().splitlines():
        rec = orjson.loads(line)
        if rec["condition"] == condition and rec["agent_a_parse_failure"]:
            return rec["replicate"], rec["round_index"] + 1
    raise AssertionError("the sample run has no parse failure")


def test_llm_round_shows_prompts_and_every_raw_reply(sample_run: Path) -> None:
    at = make_app(sample_run).run()
    at.selectbox(key="vr_condition").select("LLMcoop_vs_LLMexploit").run()
    assert_clean(at)
    codes = [c.value for c in at.code]
    assert any("Persona: cooperative" in c for c in codes)
    assert any(c.startswith("Round 1 of 30") for c in codes)
    replicate, round_no = _first_failure(sample_run, "LLMcoop_vs_LLMexploit")
    at.selectbox(key="vr_replicate").select(replicate).run()
    at.number_input(key="vr_llm_round").set_value(round_no).run()
    assert_clean(at)
    assert any(c.startswith(f"Round {round_no} of 30") for c in (c.value for c in at.code))
    marks = "\n".join(m.value for m in at.markdown)
    assert marks.count("❌ invalid") >= 3  # every attempt of agent A was invalid
    assert any("fallback move was played" in w.value for w in at.warning)


def test_run_experiment_from_the_ui(tmp_path: Path) -> None:
    at = make_app().run()
    assert_clean(at)
    # No run dir given: Run Experiment comes first.
    assert [t.label for t in at.tabs] == [
        RUN,
        VIEW,
        REPLAY,
        TOURNAMENT,
        EVOLUTION,
        AGENTS,
        PLAY,
        GROUPS,
    ]
    at.selectbox(key="rx_agent_b").select("policy:GRIM").run()
    at.slider(key="rx_rounds").set_value(12).run()
    at.slider(key="rx_reps").set_value(2).run()
    at.slider(key="rx_noise").set_value(0.1).run()
    at.button(key="rx_run").click().run()
    assert_clean(at)
    runs = sorted((tmp_path / "data" / "runs").glob("ui_*"))
    assert len(runs) == 1
    run_dir = runs[0]
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["totals"]["rounds"] == 24
    assert (run_dir / "aggregates.parquet").is_file()
    config = (run_dir / "config" / "experiment.yaml").read_text()
    assert "ref: agents/policies.yaml" in config
    # The app switched to View Results on the new run.
    assert at.session_state["main_tab"] == VIEW
    assert at.selectbox(key="vr_run").value == str(run_dir.resolve())
    assert at.selectbox(key="vr_condition").value == "TFT_vs_GRIM"
    assert any("finished" in s.value for s in at.success)
    assert metric_values(at)["🔢 Rounds"] == "12"


def test_run_experiment_with_mock_llm_persona_and_geometric_horizon(tmp_path: Path) -> None:
    at = make_app().run()
    at.selectbox(key="rx_agent_a").select("persona:exploitative").run()
    at.radio(key="rx_horizon").set_value("Geometric").run()
    at.slider(key="rx_stop").set_value(0.2).run()
    at.slider(key="rx_reps").set_value(1).run()
    at.button(key="rx_run").click().run()
    assert_clean(at)
    (run_dir,) = (tmp_path / "data" / "runs").glob("ui_*")
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["conditions"][0]["name"] == "LLM-exploitative_vs_ALLD"
    assert manifest["conditions"][0]["horizon"]["type"] == "geometric"
    assert any("Persona: exploitative" in c.value for c in at.code)


def _write_manifest(run_dir: Path, status: str, schema_version: int = 1) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest = {"run_id": run_dir.name, "status": status, "conditions": [], "totals": {}}
    manifest["schema_version"] = schema_version
    (run_dir / "run_manifest.json").write_text(json.dumps(manifest))


def _broken(kind: str, base: Path) -> Path:
    run_dir = base / "broken"
    if kind == "missing":
        return base / "does_not_exist"
    if kind == "empty_dir":
        run_dir.mkdir()
    elif kind == "bad_manifest":
        run_dir.mkdir()
        (run_dir / "run_manifest.json").write_text("{ not json")
    elif kind == "running":
        _write_manifest(run_dir, "running")
        (run_dir / "rounds.jsonl").write_text("")
    elif kind == "garbage_rounds":
        _write_manifest(run_dir, "completed")
        (run_dir / "rounds.jsonl").write_text("this is not json\n{]\n")
    elif kind == "empty_rounds":
        _write_manifest(run_dir, "completed")
        (run_dir / "rounds.jsonl").write_text("")
    elif kind == "no_rounds":
        _write_manifest(run_dir, "completed")
    elif kind == "newer_schema":
        _write_manifest(run_dir, "completed", schema_version=99)
    elif kind == "wrong_fields":
        _write_manifest(run_dir, "completed")
        (run_dir / "rounds.jsonl").write_text('{"hello": 1}\n{"hello": 2}\n')
    return run_dir


EXPECTED = {
    "missing": ("error", "directory not found"),
    "empty_dir": ("error", "not a pdbench run"),
    "bad_manifest": ("error", "unreadable manifest"),
    "running": ("warning", "still in progress"),
    "garbage_rounds": ("error", "not valid rounds JSON Lines"),
    "empty_rounds": ("error", "no rounds recorded"),
    "no_rounds": ("error", "rounds file not found"),
    "wrong_fields": ("error", "records lack required fields"),
    "newer_schema": ("error", "written with schema_version 99, newer than this pdbench reads"),
}


@pytest.mark.parametrize("kind", list(EXPECTED))
@pytest.mark.parametrize("tab", [VIEW, REPLAY])
def test_broken_run_dirs_show_a_message_not_a_traceback(
    kind: str, tab: str, tmp_path: Path
) -> None:
    at = make_app(_broken(kind, tmp_path)).run()
    show_tab(at, tab)
    assert not at.exception, [e.value for e in at.exception]
    level, text = EXPECTED[kind]
    shown = at.error if level == "error" else at.warning
    assert any(text in e.value for e in shown), [e.value for e in shown]
    for element in list(at.error) + list(at.warning):
        assert "\n" not in element.value and "Traceback" not in element.value


def test_failed_run_without_aggregates_computes_metrics_in_memory(run_copy: Path) -> None:
    (run_copy / "aggregates.parquet").unlink()
    manifest = json.loads((run_copy / "run_manifest.json").read_text())
    manifest.update(status="failed", error="ParseFailureAbort: agent gave up")
    (run_copy / "run_manifest.json").write_text(json.dumps(manifest))
    at = make_app(run_copy).run()
    assert not at.exception
    assert any("failed" in w.value for w in at.warning)
    assert "computed in memory" in captions(at)
    assert metric_values(at)["🔢 Rounds"] == "30"
    assert not (run_copy / "aggregates.parquet").exists()  # the viewer never writes


def test_viewing_never_writes_to_the_run_dir(run_copy: Path) -> None:
    def snapshot() -> dict[str, tuple[int, int]]:
        return {
            str(p.relative_to(run_copy)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in run_copy.rglob("*")
        }

    before = snapshot()
    at = make_app(run_copy).run()
    at.selectbox(key="vr_condition").select("LLMcoop_vs_LLMexploit").run()
    show_tab(at, REPLAY)
    at.selectbox(key="rp_replicate").select_index(1).run()
    show_tab(at, VIEW)
    assert not at.exception
    assert snapshot() == before


def test_run_dir_from_environment(sample_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PDBENCH_RUN_DIR", str(sample_run))
    at = AppTest.from_file(str(APP), default_timeout=30).run()
    assert_clean(at)
    assert at.tabs[0].label == VIEW
    assert at.selectbox(key="vr_run").value == str(sample_run.resolve())


def test_view_results_shows_intervals_and_the_strategy_card(run_copy: Path) -> None:
    at = make_app(run_copy).run()
    assert_clean(at)
    assert any("pdbench profile" in i.value for i in at.info)  # no fit yet: how to make one
    tables = [t.value for t in at.dataframe]
    intervals = next(t for t in tables if "95% interval (games as the unit)" in t.columns)
    cooperation = intervals[intervals["metric"].str.contains("cooperation")].iloc[0]
    assert cooperation["95% interval (games as the unit)"] != "—"

    from pdbench.runners.science.profile import profile_run

    profile_run(run_copy)
    at = make_app(run_copy).run()
    assert_clean(at)
    cards = [t.value for t in at.dataframe if "mixture share (95%)" in t.value.columns]
    assert len(cards) == 2  # agent A and agent B
    assert list(cards[0]["rank"]) == [1, 2, 3]
    assert cards[0]["strategy"].iloc[0] == "TFT"  # the first condition's A is TFT


def test_the_run_tab_shows_the_plan_before_running() -> None:
    at = show_tab(make_app().run(), RUN)
    at.selectbox(key="rx_agent_a").set_value("persona:cooperative").run()
    at.slider(key="rx_rounds").set_value(40).run()
    at.slider(key="rx_reps").set_value(2).run()
    plan = "\n".join(c.value for c in at.code)
    # One mock LLM against ALLD: 2 games of 40 rounds, one call a round.
    assert "games: 2   rounds: 80" in plan
    assert "mock:mock-persona-v1: 2 agent-games, 80 calls" in plan
    assert_clean(at)


def test_the_run_tab_sweeps_one_parameter(tmp_path: Path) -> None:
    at = show_tab(make_app().run(), RUN)
    at.selectbox(key="rx_agent_b").set_value("policy:RANDOM").run()
    at.slider(key="rx_rounds").set_value(10).run()
    at.slider(key="rx_reps").set_value(2).run()
    at.toggle(key="rx_sweep_on").set_value(True).run()
    at.selectbox(key="rx_sweep_path").set_value("agent_b.overrides.params.coop_prob").run()
    at.text_input(key="rx_sweep_values").set_value("0.2, x").run()
    assert any("not a number: 'x'" in e.value for e in at.error)
    assert at.button(key="rx_run").disabled
    at.text_input(key="rx_sweep_values").set_value("0.2, 0.8").run()
    plan = "\n".join(c.value for c in at.code)
    assert "TFT_vs_RANDOM+coop_prob_0.2" in plan and "TFT_vs_RANDOM+coop_prob_0.8" in plan
    assert "games: 4   rounds: 40" in plan  # 2 values x 2 replicates x 10 rounds
    at.button(key="rx_run").click().run()
    assert_clean(at)
    (out,) = (tmp_path / "data" / "runs").glob("ui_*")
    rows = [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines()]
    assert {r["condition"] for r in rows} == {
        "TFT_vs_RANDOM+coop_prob_0.2",
        "TFT_vs_RANDOM+coop_prob_0.8",
    }
    # The swept opponent cooperates about as often as told (10 rounds x 2 games per value).
    for p, (low, high) in ((0.2, (0, 10)), (0.8, (10, 20))):
        coop = sum(
            r["agent_b_action"] == "C" for r in rows if r["condition"].endswith(f"coop_prob_{p}")
        )
        assert low <= coop <= high, (p, coop)
