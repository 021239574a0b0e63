"""The 🏆 Tournament and 🧬 Evolution tabs through streamlit.testing (AppTest): they render, run a
small tournament and evolution from the UI into the test's working directory, show the library's
numbers, open saved directories, and report broken ones in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from streamlit.testing.v1 import AppTest
from tests.ui.sample import load_config, make_evolution, make_tournament
from tests.ui.test_app import APP, assert_clean, component_data, show_tab

from pdbench.agents.policy import POLICY_REGISTRY
from pdbench.runners.science.evolve import simulate_evolution
from pdbench.ui import data, launcher, presets, style

REPO = Path(__file__).resolve().parents[2]

TOURNAMENT, EVOLUTION = "🏆 Tournament", "🧬 Evolution"


def open_tab(label: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    return show_tab(at, label)


def html(at: AppTest) -> str:
    return "\n".join(h.proto.body for h in at.get("html"))


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


# --------------------------------------------------------------------------------------------
# Tournament


def test_tournament_tab_renders_with_config_defaults() -> None:
    at = open_tab(TOURNAMENT)
    assert_clean(at)
    assert at.multiselect(key="tn_players").value == [
        f"policy:{k}" for k in ("ALLC", "ALLD", "TFT", "GRIM", "GTFT", "WSLS")
    ]
    assert at.slider(key="tn_rounds").value == 200  # configs/tournament.yaml
    assert at.slider(key="tn_noise").value == 0.05
    options = at.multiselect(key="tn_players").options
    assert any("Mock LLM · tit_for_tat" in o for o in options)  # personas are offered
    assert any("No tournaments yet" in i.value for i in at.info)


def test_run_tournament_from_the_ui(tmp_path: Path) -> None:
    at = open_tab(TOURNAMENT)
    at.multiselect(key="tn_players").set_value(["policy:TFT", "policy:ALLD", "policy:GRIM"]).run()
    at.slider(key="tn_rounds").set_value(20).run()
    at.slider(key="tn_reps").set_value(2).run()
    at.slider(key="tn_noise").set_value(0.0).run()
    at.button(key="tn_run").click().run()
    assert_clean(at)
    (out,) = (tmp_path / "data" / "tournaments").glob("ui_*")
    manifest = json.loads((out / "tournament_manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["kind"] == "tournament" and manifest["schema_version"] >= 1
    assert manifest["totals"] == {
        "matches": 6,
        "rounds": 120,
        "batched_matches": 6,
        "per_round_matches": 0,
        "logged_matches": 0,
    }
    assert not (out / "rounds.jsonl").exists()  # policy matches are not logged by default
    assert not (out / "config" / "agents").exists()  # policies need no refs
    assert "- TFT" in (out / "config" / "tournament.yaml").read_text()
    assert any("finished" in s.value for s in at.success)
    assert at.selectbox(key="tn_dir").value == str(out.resolve())
    # The leaderboard shown is leaderboard.parquet, with medals.
    board = pd.read_parquet(out / "leaderboard.parquet")
    shown = at.dataframe[0].value
    # TFT and GRIM both score (60 + 19) / 40 = 1.975 per round (all C with each other, 19 of 20
    # rounds exploited once by ALLD), ALLD (24 + 24) / 40 = 1.2: the tie shares gold.
    assert list(shown["rank"]) == ["🥇", "🥇", "🥉"]
    assert list(shown["name"]) == list(board["player"])
    assert list(shown["score_per_round"]) == list(board["mean_score_per_round"])
    assert list(shown["wins"]) == list(board["wins"])
    assert "🥇" in html(at) and "pdb-podium" in html(at)
    # The tie shares one podium step (one card, said to be tied); ALLD stands on bronze.
    assert html(at).count('class="pdb-podium-card') == 2 and "Tied: equal scores" in html(at)
    specs = charts(at)
    assert len(specs) == 2  # leaderboard with CIs, payoff heatmap
    assert any("errorbar" in json.dumps(s) for s in specs)
    (heatmap,) = [s for s in specs if "redyellowgreen" in json.dumps(s)]
    # ... in leaderboard order (TFT, GRIM, ALLD), not in the order of selection (TFT, ALLD, GRIM)
    order = heatmap["layer"][0]["encoding"]["x"]["sort"]
    assert [label.split(" · ")[-1] for label in order] == ["TFT", "GRIM", "ALLD"]
    assert heatmap["layer"][0]["encoding"]["y"]["sort"] == order


def test_tournament_with_a_mock_llm_persona_copies_the_agent_files(tmp_path: Path) -> None:
    at = open_tab(TOURNAMENT)
    at.multiselect(key="tn_players").set_value(["policy:TFT", "persona:tit_for_tat"]).run()
    at.radio(key="tn_horizon").set_value("Geometric").run()
    at.slider(key="tn_stop").set_value(0.25).run()
    at.slider(key="tn_reps").set_value(2).run()
    assert any("LLM players answer through their provider" in i.value for i in at.info)
    plan = "\n".join(c.value for c in at.code)
    assert "tournament: 2 players, 2 repetitions, geometric stop_prob=0.25" in plan
    assert "mock:mock-persona-v1: 2 agent-games" in plan  # one LLM player, two matches
    at.button(key="tn_run").click().run()
    assert_clean(at)
    (out,) = (tmp_path / "data" / "tournaments").glob("ui_*")
    assert (out / "config" / "agents" / "llm_default.yaml").is_file()
    assert (out / "config" / "prompts" / "personas" / "tit_for_tat.md").is_file()
    manifest = json.loads((out / "tournament_manifest.json").read_text())
    assert [p["type"] for p in manifest["players"]] == ["policy", "llm"]
    # Matches with an LLM player are logged like experiment rounds, with their provider calls.
    records = [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines()]
    assert {r["condition"] for r in records} == {"TFT_vs_mock-persona-v1[tit_for_tat]"}
    assert {r["replicate"] for r in records} == {0, 1}
    assert (out / "llm_calls.jsonl").is_file()
    assert manifest["horizon"]["type"] == "geometric" and manifest["horizon"]["stop_prob"] == 0.25
    assert "💬 mock-persona-v1 · tit for tat" in list(at.dataframe[0].value["player"])


def test_configured_llm_agents_are_offered_with_their_cost_before_running() -> None:
    at = open_tab(TOURNAMENT)
    options = at.multiselect(key="tn_players").options
    assert any("Llama-3.1-8B-Instruct" in o for o in options)  # agents/openai_compatible.yaml
    assert any("smollm2" in o for o in options)  # the real local model
    at.multiselect(key="tn_players").set_value(
        ["policy:TFT", "policy:ALLD", "llm_file:agents/openai_compatible.yaml"]
    ).run()
    at.slider(key="tn_rounds").set_value(10).run()
    at.slider(key="tn_reps").set_value(3).run()
    plan = "\n".join(c.value for c in at.code)
    # The LLM plays TFT and ALLD 3 times each, 10 rounds: 6 games, 60 calls; no price is known.
    assert "openai:meta-llama/Llama-3.1-8B-Instruct: 6 agent-games, 60 calls" in plan
    assert "cost unknown" in plan
    assert_clean(at)


def test_tournament_needs_two_players() -> None:
    at = open_tab(TOURNAMENT)
    at.multiselect(key="tn_players").set_value(["policy:TFT"]).run()
    assert at.button(key="tn_run").disabled
    assert any("at least two" in c.value for c in at.caption)


def test_open_saved_tournaments_and_switch_between_them(tmp_path: Path) -> None:
    root = tmp_path / "data" / "tournaments"
    make_tournament(root / "first", ["TFT", "ALLD"], run_id="first")
    make_tournament(root / "second", ["GRIM", "WSLS", "ALLC"], run_id="second", noise=0.1)
    outside = make_tournament(tmp_path / "elsewhere" / "third", ["TF2T", "STFT"], run_id="third")
    at = open_tab(TOURNAMENT)
    assert_clean(at)
    box = at.selectbox(key="tn_dir")
    assert {o.split(" · ")[0] for o in box.options} == {"first", "second"}
    box.select(str((root / "second").resolve())).run()
    assert_clean(at)
    assert set(at.dataframe[0].value["name"]) == {"GRIM", "WSLS", "ALLC"}
    assert any("**second**" in c.value and "noise 0.1" in c.value for c in at.caption)
    at.selectbox(key="tn_dir").select(str((root / "first").resolve())).run()
    assert set(at.dataframe[0].value["name"]) == {"TFT", "ALLD"}
    # Any directory can be opened by its path.
    at.text_input(key="tn_path").input(str(outside)).run()
    assert_clean(at)
    assert at.selectbox(key="tn_dir").value == str(outside.resolve())
    assert set(at.dataframe[0].value["name"]) == {"TF2T", "STFT"}


def test_opening_the_app_on_a_tournament_or_evolution_dir(tmp_path: Path) -> None:
    """`pdbench ui <dir>`: the directory's kind picks the first tab, which shows that run."""
    tournament = make_tournament(tmp_path / "elsewhere" / "t", ["TFT", "GRIM"], run_id="t")
    evolution = make_evolution(tmp_path / "elsewhere" / "e", run_id="e")
    for directory, first, key in (
        (tournament, TOURNAMENT, "tn_dir"),
        (evolution, EVOLUTION, "ev_dir"),
    ):
        at = AppTest.from_file(str(APP), default_timeout=60)
        at.session_state["pdbench_run_dir"] = str(directory)
        at.run()
        assert_clean(at)
        assert at.tabs[0].label == first
        assert at.selectbox(key=key).value == str(directory.resolve())
        show_tab(at, "📊 View Results")
        assert_clean(at)  # not offered as an experiment run
        assert any("No runs yet" in i.value for i in at.info)


def _break_tournament(kind: str, base: Path) -> Path:
    target = base / "broken"
    if kind == "missing":
        return base / "nope"
    if kind == "empty_dir":
        target.mkdir()
        return target
    make_tournament(target)
    if kind == "bad_manifest":
        (target / "tournament_manifest.json").write_text("{ not json")
    elif kind == "no_leaderboard":
        (target / "leaderboard.parquet").unlink()
    elif kind == "garbage_parquet":
        (target / "payoff_matrix.parquet").write_bytes(b"not parquet at all")
    elif kind == "wrong_columns":
        pd.DataFrame({"x": [1]}).to_parquet(target / "leaderboard.parquet")
    elif kind == "newer_schema":
        manifest = json.loads((target / "tournament_manifest.json").read_text())
        manifest["schema_version"] = 99
        (target / "tournament_manifest.json").write_text(json.dumps(manifest))
    elif kind == "failed":
        manifest = json.loads((target / "tournament_manifest.json").read_text())
        manifest.update(status="failed", error="ProviderFatalError: bad key\nmore detail")
        (target / "tournament_manifest.json").write_text(json.dumps(manifest))
    elif kind == "unknown_player":
        pairwise = pd.read_parquet(target / "payoff_matrix.parquet")
        pairwise.loc[0, "opponent"] = "GHOST"
        pairwise.to_parquet(target / "payoff_matrix.parquet")
    return target


TOURNAMENT_ERRORS = {
    "missing": "directory not found",
    "empty_dir": "not a pdbench tournament",
    "bad_manifest": "unreadable manifest",
    "no_leaderboard": "leaderboard.parquet: file not found",
    "garbage_parquet": "payoff_matrix.parquet: unreadable",
    "wrong_columns": "missing columns: rank, player",
    "unknown_player": "players missing from the manifest: GHOST",
    "newer_schema": "written with schema_version 99, newer than this pdbench reads",
    "failed": "tournament lib_tournament failed: ProviderFatalError: bad key",
}


@pytest.mark.parametrize("kind", list(TOURNAMENT_ERRORS))
def test_broken_tournament_dirs_show_one_line(kind: str, tmp_path: Path) -> None:
    target = _break_tournament(kind, tmp_path)
    at = open_tab(TOURNAMENT)
    at.text_input(key="tn_path").input(str(target)).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(TOURNAMENT_ERRORS[kind] in e for e in errors(at)), errors(at)
    assert all("\n" not in e and "Traceback" not in e for e in errors(at))


# --------------------------------------------------------------------------------------------
# Evolution


def test_evolution_tab_starts_from_the_example_config() -> None:
    at = open_tab(EVOLUTION)
    assert_clean(at)
    example = yaml.safe_load((REPO / "configs" / "evolution.yaml").read_text())
    expected = {m["player"]: m["count"] for m in example["evolution"]["population"]}
    counts = {k: at.slider(key=f"ev_n_{k}").value for k in ("ALLC", "ALLD", "TFT", "GRIM")}
    assert counts == {k: expected.get(k, 0) for k in counts}  # configs/evolution.yaml
    assert at.slider(key="ev_rounds").value == example["horizon"]["n_rounds"]
    assert at.radio(key="ev_process").value == "eliminate_clone"
    assert any("The lesson" in c.value and "Copycat" in c.value for c in at.caption)
    assert "25 individuals" in [c.value for c in at.caption]


def test_presets_set_the_sliders() -> None:
    at = open_tab(EVOLUTION)
    at.button(key="ev_preset_trust").click().run()
    trust = presets.TRUST_WINS
    for key in presets.evolution_strategies():
        assert at.slider(key=f"ev_n_{key}").value == trust.counts.get(key, 0)
    assert at.slider(key="ev_noise").value == 0
    assert at.slider(key="ev_rounds").value == trust.rounds
    assert at.number_input(key="ev_seed").value == trust.seed
    at.button(key="ev_preset_mistakes").click().run()
    assert at.slider(key="ev_noise").value == 5
    assert at.slider(key="ev_n_TFT").value == trust.counts["TFT"]


def test_presets_show_the_lessons_with_the_engine(tmp_path: Path) -> None:
    """The presets' default seed: no noise -> Copycat takes over; 5% noise -> forgiving types win."""
    forgiving = {"GTFT", "TF2T", "WSLS"}
    outcomes = {}
    for name, settings in (
        ("trust", presets.TRUST_WINS),
        ("mistakes", presets.MISTAKES_HAPPEN),
    ):
        path = tmp_path / f"{name}.yaml"
        path.write_text(json.dumps(launcher.build_evolution(settings, name, tmp_path / name)))
        result = simulate_evolution(load_config(path, "evolution"))
        outcomes[name] = result
    trust, mistakes = outcomes["trust"], outcomes["mistakes"]
    assert trust.fixated == "TFT"
    assert mistakes.fixated in forgiving
    assert mistakes.final_counts["TFT"] == 0 and mistakes.final_counts["ALLD"] == 0
    # With noise the cheaters first boom, then die out.
    alld = [r["count"] for r in mistakes.rows if r["strategy"] == "ALLD"]
    assert max(alld) > alld[0] and alld[-1] == 0


def test_run_evolution_from_the_ui_and_play_it(tmp_path: Path) -> None:
    at = open_tab(EVOLUTION)
    at.button(key="ev_preset_mistakes").click().run()
    at.slider(key="ev_generations").set_value(12).run()
    at.button(key="ev_run").click().run()
    assert_clean(at)
    (out,) = (tmp_path / "data" / "evolutions").glob("ui_*")
    manifest = json.loads((out / "evolution_manifest.json").read_text())
    assert manifest["noise"] == 0.05 and manifest["generations_run"] == 12
    generations = pd.read_parquet(out / "generations.parquet")
    assert any("finished" in s.value for s in at.success)
    assert at.selectbox(key="ev_dir").value == str(out.resolve())
    # Final shares: metric cards and the table come from generations.parquet.
    last = generations[generations["generation"] == 12].set_index("strategy")
    table = at.dataframe[0].value.set_index("name")
    assert table["count"].to_dict() == last["count"].astype(int).to_dict()
    assert table.loc["TFT", "start"] == presets.MISTAKES_HAPPEN.counts["TFT"]
    cards = {m.label: m.value for m in at.metric}
    assert cards["🪞 Copycat"] == f"{last.loc['TFT', 'share']:.0%}"
    spec = json.dumps(charts(at)[0])
    assert '"area"' in spec and "share of the population" in spec
    # The animation plays in the browser from every generation's counts (it opens on the last).
    (frames,) = component_data(at)
    assert len(frames["counts"]) == 13
    order = [s["label"] for s in frames["strategies"]]
    assert any(label.startswith("🪞 Copycat") for label in order), order
    by_gen = generations.pivot_table(index="generation", columns="strategy", values="count")
    players = [p.name for p in data.load_evolution(str(out)).players]
    for generation in (0, 12):
        counts = dict(zip(players, frames["counts"][generation], strict=True))
        assert {n: counts[n] for n in by_gen.columns} == by_gen.loc[generation].astype(
            int
        ).to_dict()
    assert "PDB.evolution(" in at.get("iframe")[0].proto.srcdoc
    assert_clean(at)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ev_eliminate": 15}, "replaces at most half the population"),
        ({f"ev_n_{k}": 0 for k in presets.evolution_strategies()}, "at least 2 individuals"),
    ],
)
def test_bad_evolution_settings_show_an_error(change: dict[str, int], message: str) -> None:
    at = open_tab(EVOLUTION)
    for key, value in change.items():
        at.slider(key=key).set_value(value)
    at.run()
    assert not at.exception
    assert any(message in e for e in errors(at)), errors(at)
    assert at.button(key="ev_run").disabled


def test_form_settings_survive_a_tab_switch() -> None:
    at = open_tab(EVOLUTION)
    at.slider(key="ev_n_TF2T").set_value(7).run()
    at.slider(key="ev_noise").set_value(12).run()
    show_tab(at, TOURNAMENT)
    at.multiselect(key="tn_players").set_value(["policy:WSLS", "policy:TF2T"]).run()
    at.slider(key="tn_noise").set_value(0.1).run()
    show_tab(at, EVOLUTION)
    assert_clean(at)
    assert at.slider(key="ev_n_TF2T").value == 7
    assert at.slider(key="ev_noise").value == 12
    show_tab(at, TOURNAMENT)
    assert_clean(at)
    assert at.multiselect(key="tn_players").value == ["policy:WSLS", "policy:TF2T"]
    assert at.slider(key="tn_noise").value == 0.1


def test_open_saved_evolutions(tmp_path: Path) -> None:
    make_evolution(tmp_path / "data" / "evolutions" / "one", run_id="one")
    make_evolution(tmp_path / "data" / "evolutions" / "two", {"WSLS": 3, "GRIM": 3}, run_id="two")
    at = open_tab(EVOLUTION)
    assert_clean(at)
    box = at.selectbox(key="ev_dir")
    assert {o.split(" · ")[0] for o in box.options} == {"one", "two"}
    box.select(str((tmp_path / "data" / "evolutions" / "two").resolve())).run()
    assert_clean(at)
    assert set(at.dataframe[0].value["name"]) == {"WSLS", "GRIM"}


EVOLUTION_ERRORS = {
    "empty_dir": "not a pdbench evolution",
    "bad_manifest": "unreadable manifest",
    "no_generations": "generations.parquet: file not found",
    "wrong_columns": "missing columns: generation, strategy",
}


@pytest.mark.parametrize("kind", list(EVOLUTION_ERRORS))
def test_broken_evolution_dirs_show_one_line(kind: str, tmp_path: Path) -> None:
    target = tmp_path / "broken"
    if kind == "empty_dir":
        target.mkdir()
    else:
        make_evolution(target)
    if kind == "bad_manifest":
        (target / "evolution_manifest.json").write_text("[1, 2")
    elif kind == "no_generations":
        (target / "generations.parquet").unlink()
    elif kind == "wrong_columns":
        pd.DataFrame({"x": [1]}).to_parquet(target / "generations.parquet")
    at = open_tab(EVOLUTION)
    at.text_input(key="ev_path").input(str(target)).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(EVOLUTION_ERRORS[kind] in e for e in errors(at)), errors(at)
    assert all("\n" not in e and "Traceback" not in e for e in errors(at))


# --------------------------------------------------------------------------------------------
# Back end: colors, labels, generated configs


def test_players_keep_their_strategy_color_and_get_unique_labels() -> None:
    players = style.make_players(
        [
            ("TFT", {"type": "policy", "policy": "TFT"}),
            ("GTFT", {"type": "policy", "policy": "GTFT"}),
            ("GTFT-0.1", {"type": "policy", "policy": "GTFT", "name": "GTFT-0.1"}),
            ("mock[wsls]", {"type": "llm", "persona": "wsls", "model": "mock"}),
        ]
    )
    assert players[0].color == POLICY_REGISTRY["TFT"].look.color
    assert players[1].color == POLICY_REGISTRY["GTFT"].look.color
    assert len({p.color for p in players}) == 4  # a second GTFT gets a spare color
    assert [p.label for p in players] == [
        "🪞 Copycat · TFT",
        "😇 Generous Copycat · GTFT",
        "😇 GTFT-0.1",  # a custom name is the title
        "💬 mock · wsls",  # model and persona
    ]


def test_generated_configs_load_with_the_library(tmp_path: Path) -> None:
    config_dir = launcher.find_config_dir()
    assert config_dir is not None
    options = {o.key: o for o in launcher.agent_options(config_dir)}
    request = launcher.TournamentRequest(
        [options["policy:TFT"], options["persona:wsls"]],
        {"type": "fixed", "n_rounds": 5},
        0.0,
        1,
        True,
        1,
    )
    path = launcher.prepare_tournament(request, config_dir, tmp_path / "t")
    loaded = load_config(path, "tournament")
    assert loaded.names == ["TFT", "mock-persona-v1[wsls]"]
    assert loaded.config.tournament.self_play
    settings = presets.EvolutionSettings(counts={"TFT": 3, "ALLD": 2, "ALLC": 0}, eliminate=2)
    path = launcher.prepare_evolution(settings, tmp_path / "e")
    loaded = load_config(path, "evolution")
    assert loaded.names == ["ALLD", "TFT"]  # the sliders' order; empty strategies left out
    assert loaded.config.evolution.n_eliminated == 2
    assert not (path.parent / "agents").exists()
    assert presets.EvolutionSettings(counts={"TFT": 3}, eliminate=2).problems()


@pytest.mark.parametrize("process", ["moran", "wright_fisher"])
def test_other_processes_get_no_eliminate(process: str, tmp_path: Path) -> None:
    """The library refuses `eliminate` unless the process is eliminate_clone: the form's N
    (kept in the settings for when the user switches back) is left out of the config."""
    settings = presets.EvolutionSettings(counts={"TFT": 3, "ALLD": 3}, process=process)
    assert settings.eliminate == 5 and not settings.problems()
    config = launcher.build_evolution(settings, "x", tmp_path / "x")
    assert "eliminate" not in config["evolution"]
    path = launcher.prepare_evolution(settings, tmp_path / "e")
    assert load_config(path, "evolution").config.evolution.process == process


def test_run_a_moran_evolution_from_the_ui(tmp_path: Path) -> None:
    at = open_tab(EVOLUTION)
    at.radio(key="ev_process").set_value("moran").run()
    at.slider(key="ev_generations").set_value(30).run()
    at.button(key="ev_run").click().run()
    assert_clean(at)
    (out,) = (tmp_path / "data" / "evolutions").glob("ui_*")
    manifest = json.loads((out / "evolution_manifest.json").read_text())
    assert manifest["process"] == "moran" and manifest["eliminate"] is None
    assert manifest["fitness"] == "expected"
    assert any("Moran" in c.value and "N =" not in c.value for c in at.caption)
