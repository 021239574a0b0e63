"""The app's loaders (pdbench.ui.data), its tables (pdbench.ui.tables), the launcher's experiment
side (pdbench.ui.launcher) and the HTML helpers (pdbench.ui.style), without a browser."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pandas as pd
import pytest
from tests.ui.sample import CONFIGS, load_config, make_evolution, make_tournament

from pdbench.agents.policy import POLICY_REGISTRY, Look, PolicyAgent
from pdbench.core.payoff import PayoffMatrix
from pdbench.storage.schema import SCHEMA_VERSION
from pdbench.ui import data, launcher, presets, saved_runs, style, tables


def _records(run_dir: Path) -> list[dict]:
    """Every record of rounds.jsonl, read with json (the independent way)."""
    text = (run_dir / "rounds.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_load_game_rounds_reads_that_game_in_round_order(sample_run: Path) -> None:
    want = [
        r
        for r in _records(sample_run)
        if (r["condition"], r["replicate"]) == ("LLMcoop_vs_LLMexploit", 1)
    ]
    game = data.load_game_rounds(sample_run, "LLMcoop_vs_LLMexploit", 1)
    assert len(game) == len(want) == 30
    assert set(game["condition"]) == {"LLMcoop_vs_LLMexploit"} and set(game["replicate"]) == {1}
    assert list(game["round_index"]) == list(range(30))
    assert "prompts" not in game.columns and "raw_responses" not in game.columns
    for column in ("agent_a_action", "agent_b_action", "agent_a_cum_payoff", "run_id"):
        assert list(game[column]) == [r[column] for r in want], column
    assert list(game["agent_a_parse_failure"]) == [r["agent_a_parse_failure"] for r in want]
    assert game["agent_a_parse_failure"].any()  # the mock LLM gave up on some rounds
    noisy = data.load_game_rounds(sample_run, "GTFT_vs_WSLS_noisy", 0)
    assert (noisy["agent_a_action"] != noisy["agent_a_intended_action"]).any()


def test_load_game_rounds_has_the_types_of_the_whole_file_reader(sample_run: Path) -> None:
    """Same columns and types as storage.record.table.read_rounds_table gives for those fields."""
    from pdbench.storage.record.table import read_rounds_table

    whole = read_rounds_table(sample_run / "rounds.jsonl", data.ROUND_COLUMNS, ()).to_pandas()
    mine = whole[(whole["condition"] == "TFT_vs_ALLD") & (whole["replicate"] == 0)]
    game = data.load_game_rounds(sample_run, "TFT_vs_ALLD", 0)
    assert list(game.columns) == list(data.ROUND_COLUMNS)
    pd.testing.assert_frame_equal(game, mine.reset_index(drop=True), check_dtype=True)


def test_a_game_that_is_not_there_is_a_clear_error(sample_run: Path, tmp_path: Path) -> None:
    with pytest.raises(data.RoundsFileError, match="no rounds of TFT_vs_ALLD replicate 7"):
        data.load_game_rounds(sample_run, "TFT_vs_ALLD", 7)
    with pytest.raises(data.RoundsFileError, match="no rounds of Nobody replicate 0"):
        data.load_game_rounds(sample_run, "Nobody", 0)
    with pytest.raises(data.RoundsFileError, match="rounds file not found"):
        data.load_game_rounds(tmp_path, "TFT_vs_ALLD", 0)


def test_games_and_game_rounds(sample_run: Path) -> None:
    manifest = data.check_run(sample_run)
    aggregates, _ = data.load_aggregates(sample_run, manifest)
    index = tables.games(aggregates, data.condition_order(manifest))
    assert index == {
        "TFT_vs_ALLD": [0, 1],
        "GTFT_vs_WSLS_noisy": [0, 1],
        "LLMcoop_vs_LLMexploit": [0, 1],
    }
    assert tables.agent_names(aggregates, "TFT_vs_ALLD") == ("TFT", "ALLD")
    game = tables.game_rounds(data.load_game_rounds(sample_run, "TFT_vs_ALLD", 1), "TFT_vs_ALLD", 1)
    assert tables.flips_and_fallbacks(game) == (0, 0)
    noisy = data.load_game_rounds(sample_run, "GTFT_vs_WSLS_noisy", 0)
    flips = (noisy["agent_a_action"] != noisy["agent_a_intended_action"]).sum() + (
        noisy["agent_b_action"] != noisy["agent_b_intended_action"]
    ).sum()
    assert tables.flips_and_fallbacks(noisy)[0] == flips > 0
    assert list(game["round"]) == list(range(1, 31))
    assert game["agent_b_cum_payoff"].iloc[-1] == 5 + 29


def test_metric_summary_takes_values_from_aggregates(sample_run: Path) -> None:
    manifest = data.check_run(sample_run)
    aggregates, source = data.load_aggregates(sample_run, manifest)
    assert source == "aggregates.parquet"
    summary = tables.metric_summary(aggregates, "LLMcoop_vs_LLMexploit", 1).set_index("metric")
    row = tables.replicate_row(aggregates, "LLMcoop_vs_LLMexploit", 1)
    mean = tables.condition_row(aggregates, "LLMcoop_vs_LLMexploit")
    # the talk metrics are left out of a condition whose agents did not talk
    assert not set(summary.index) & tables.TALK_METRICS
    for column in (c for c in tables.METRICS if c not in tables.TALK_METRICS):
        got, want = summary.loc[column, "replicate"], row[column]
        assert (pd.isna(got) and pd.isna(want)) or got == want
        got, want = summary.loc[column, "condition_mean"], mean[column]
        assert (pd.isna(got) and pd.isna(want)) or got == want
    reps = aggregates[
        (aggregates["scope"] == "replicate") & (aggregates["condition"] == "LLMcoop_vs_LLMexploit")
    ]
    assert summary.loc["agent_b_total_payoff", "max"] == reps["agent_b_total_payoff"].max()
    table = tables.conditions_table(aggregates)
    assert list(table["condition"]) == list(index_order(manifest))


def index_order(manifest: dict) -> list[str]:
    return [c["name"] for c in manifest["conditions"]]


def test_round_record_is_read_lazily_and_matches(sample_run: Path) -> None:
    record = data.load_round_record(sample_run, "LLMcoop_vs_LLMexploit", 1, 7)
    assert (record["condition"], record["replicate"], record["round_index"]) == (
        "LLMcoop_vs_LLMexploit",
        1,
        7,
    )
    assert record["prompts"]["agent_a"]["round"].startswith("Round 8 of 30")
    assert record["raw_responses"]["agent_b"][0]["attempt"] == 0
    with pytest.raises(data.RoundsFileError, match="no round 31"):
        data.load_round_record(sample_run, "LLMcoop_vs_LLMexploit", 1, 30)


def test_round_record_survives_blank_lines(run_copy: Path) -> None:
    path = run_copy / "rounds.jsonl"
    lines = path.read_bytes().splitlines()
    path.write_bytes(b"\n\n".join(lines) + b"\n")  # blank lines shift the line numbers
    assert len(data.load_game_rounds(run_copy, "LLMcoop_vs_LLMexploit", 0)) == 30
    record = data.load_round_record(run_copy, "LLMcoop_vs_LLMexploit", 0, 29)
    assert record["round_index"] == 29


def test_loaders_refresh_when_the_file_changes(run_copy: Path) -> None:
    """Write, read, rewrite, read again: the new content is shown (the caches key on each
    file's path, mtime and size)."""
    path = run_copy / "rounds.jsonl"
    before = data.load_game_rounds(run_copy, "TFT_vs_ALLD", 0)
    assert set(before["agent_a_action"][1:]) == {"D"}  # TFT copies ALLD from round 2
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for r in records:  # the same game, now with A cooperating throughout
        if (r["condition"], r["replicate"]) == ("TFT_vs_ALLD", 0):
            r["agent_a_action"] = r["agent_a_intended_action"] = "C"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    after = data.load_game_rounds(run_copy, "TFT_vs_ALLD", 0)
    assert set(after["agent_a_action"]) == {"C"}
    assert data.load_round_record(run_copy, "TFT_vs_ALLD", 0, 5)["agent_a_action"] == "C"
    # The same for aggregates.parquet: rewritten with other numbers, they are the ones shown.
    manifest = data.check_run(run_copy)
    aggregates, _ = data.load_aggregates(run_copy, manifest)
    changed = aggregates.assign(agent_a_total_payoff=aggregates["agent_a_total_payoff"] + 1000)
    changed.to_parquet(run_copy / "aggregates.parquet")
    again, _ = data.load_aggregates(run_copy, manifest)
    assert list(again["agent_a_total_payoff"]) == list(changed["agent_a_total_payoff"])


def test_trailing_partial_line_is_ignored(run_copy: Path) -> None:
    path = run_copy / "rounds.jsonl"
    path.write_bytes(path.read_bytes() + b'{"run_id": "x", "condi')
    assert len(data.load_game_rounds(run_copy, "LLMcoop_vs_LLMexploit", 1)) == 30


def test_error_types(tmp_path: Path, run_copy: Path) -> None:
    with pytest.raises(data.RunDirMissing):
        data.check_run(tmp_path / "nope")
    with pytest.raises(data.NotARun):
        data.check_run(tmp_path)
    manifest = json.loads((run_copy / "run_manifest.json").read_text())
    (run_copy / "run_manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
    with pytest.raises(data.RunInProgress) as info:
        data.check_run(run_copy)
    assert info.value.level == "warning"
    (run_copy / "rounds.jsonl").write_text("nonsense\n")
    with pytest.raises(data.RoundsFileError):
        data.load_game_rounds(run_copy, "TFT_vs_ALLD", 0)


def test_list_saved_puts_the_given_run_first(sample_run: Path, tmp_path: Path) -> None:
    runs_root = sample_run.parent
    (runs_root.parent / "stray").mkdir(exist_ok=True)
    listed = saved_runs.list_saved("experiment", [runs_root])
    assert [r.run_id for r in listed] == ["ui_sample"]
    assert listed[0].status == "completed"
    assert listed[0].label().endswith("3 conditions · 180 rounds")
    assert "completed" not in listed[0].label()  # only an unusual status is shown
    extra = saved_runs.list_saved("experiment", [runs_root], [tmp_path / "missing"])
    assert [e.status for e in extra] == ["missing", "completed"]
    assert "missing" in extra[0].label()


def test_one_listing_for_every_kind_newest_first(tmp_path: Path) -> None:
    root = tmp_path / "saved"
    make_tournament(root / "old", ["TFT", "ALLD"], run_id="old")
    make_tournament(root / "new", ["GRIM", "WSLS", "ALLC"], run_id="new", noise=0.1)
    make_evolution(root / "evo", run_id="evo")
    (root / "junk").mkdir()
    tournaments = saved_runs.list_saved("tournament", [root])
    assert [t.run_id for t in tournaments] == ["new", "old"]  # newest first
    assert tournaments[0].summary == "3 players · 6 matches · noise 0.1"
    (evolution,) = saved_runs.list_saved("evolution", [root])
    assert evolution.kind == "evolution" and "eliminate-clone" in evolution.summary
    assert data.run_kind(root / "evo") == "evolution" and data.run_kind(root / "junk") is None
    # A directory of another kind given explicitly is listed, as not readable.
    (wrong,) = saved_runs.list_saved("experiment", [], [root / "evo"])
    assert wrong.status == "not a readable run"


def _bump_version(path: Path) -> None:
    """Rewrite a JSON manifest with a schema_version newer than this pdbench reads."""
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({**manifest, "schema_version": SCHEMA_VERSION + 1}))


def test_a_newer_schema_version_is_one_line(run_copy: Path, tmp_path: Path) -> None:
    newer = f"schema_version {SCHEMA_VERSION + 1}, newer than this pdbench reads"
    _bump_version(run_copy / "run_manifest.json")
    with pytest.raises(data.NewerSchema, match=newer) as info:
        data.check_run(run_copy)
    assert "\n" not in str(info.value)
    # The run list still shows it (as not readable) instead of failing.
    assert saved_runs.saved_run(run_copy, "experiment").status == "not a readable run"
    # A rounds record from a newer pdbench (the first round of the first game).
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    lines = (run_copy / "rounds.jsonl").read_bytes().splitlines()
    record = orjson.loads(lines[0])
    assert record["schema_version"] == SCHEMA_VERSION
    record["schema_version"] = SCHEMA_VERSION + 1
    (fresh / "rounds.jsonl").write_bytes(b"\n".join([orjson.dumps(record), *lines[1:]]) + b"\n")
    with pytest.raises(data.NewerSchema, match=newer):
        data.load_game_rounds(fresh, record["condition"], record["replicate"])
    # A Parquet artifact whose metadata says it is newer.
    import pyarrow.parquet as pq

    table = pq.read_table(run_copy / "aggregates.parquet")
    meta = {**table.schema.metadata, b"pdbench.schema_version": str(SCHEMA_VERSION + 1).encode()}
    pq.write_table(table.replace_schema_metadata(meta), run_copy / "aggregates.parquet")
    with pytest.raises(data.NewerSchema, match=newer):
        data.load_aggregates(run_copy, {})


def test_a_hundred_thousand_round_game_and_its_last_prompt(tmp_path: Path) -> None:
    """100,000 records with ~1.5 kB of prompts each, no aggregates and no plan in the manifest
    (the game's lines are found by a scan): the game is read without its prompts, and the last
    round's prompt is found."""
    run_dir = tmp_path / "big"
    run_dir.mkdir()
    (run_dir / "run_manifest.json").write_text(json.dumps({"run_id": "big", "status": "completed"}))
    prompt = "x" * 1500
    base = {
        "run_id": "big",
        "condition": "LLM_vs_TFT",
        "replicate": 0,
        "agent_a_name": "mock[cooperative]",
        "agent_b_name": "TFT",
        "agent_a_payoff": 3.0,
        "agent_b_payoff": 3.0,
        "agent_a_parse_failure": False,
        "agent_b_parse_failure": False,
    }
    with open(run_dir / "rounds.jsonl", "wb") as fh:
        for i in range(100_000):
            action = "C" if i % 7 else "D"
            record = {
                **base,
                "round_index": i,
                "agent_a_action": action,
                "agent_b_action": "C",
                "agent_a_intended_action": action,
                "agent_b_intended_action": "C",
                "agent_a_cum_payoff": 3.0 * (i + 1),
                "agent_b_cum_payoff": 3.0 * (i + 1),
                "prompts": {"agent_a": {"system": prompt, "round": f"Round {i + 1}"}},
                "raw_responses": {"agent_a": [{"attempt": 0, "raw": action, "valid": True}]},
            }
            fh.write(orjson.dumps(record) + b"\n")
    rounds = data.load_game_rounds(run_dir, "LLM_vs_TFT", 0)
    record = data.load_round_record(run_dir, "LLM_vs_TFT", 0, 99_999)
    assert len(rounds) == 100_000 and "prompts" not in rounds.columns
    assert rounds["agent_a_action"].eq("D").sum() == len(range(0, 100_000, 7))
    assert record["prompts"]["agent_a"]["round"] == "Round 100000"


# ---------------------------------------------------------------------------------- launcher


def test_agent_options_cover_policies_personas_and_llm_files() -> None:
    options = launcher.agent_options(CONFIGS)
    keys = {o.key for o in options}
    assert {f"policy:{k}" for k in POLICY_REGISTRY} <= keys
    personas = {p.stem for p in (CONFIGS / "prompts" / "personas").glob("*.md")}
    assert {f"persona:{p}" for p in personas} <= keys
    assert "llm_file:agents/llm_default.yaml" in keys
    tft = next(o for o in options if o.key == "policy:TFT")
    assert tft.profile.emoji == "🪞" and tft.profile.title == "Copycat"


def test_every_agent_option_builds_a_valid_config(tmp_path: Path) -> None:
    options = launcher.agent_options(CONFIGS)
    for option in options:
        request = launcher.ExperimentRequest(
            agent_a=option,
            agent_b=options[0],
            horizon={"type": "fixed", "n_rounds": 3},
            noise=0.05,
            replicates=1,
            seed=1,
            matrix=PayoffMatrix(),
        )
        config_path = launcher.prepare_experiment(request, CONFIGS, tmp_path / "runs")
        loaded = load_config(config_path, "experiment")
        assert loaded.config.experiment.conditions[0].name == request.condition_name
        assert loaded.config.game.noise == 0.05
        assert str(loaded.config.run.output_dir) == str(config_path.parent.parent)
        launcher.discard_run(config_path)
        assert not config_path.parent.parent.exists()
    assert not any((CONFIGS / "agents").glob("experiment*.yaml"))


def test_new_run_dirs_do_not_collide(tmp_path: Path) -> None:
    first = launcher.new_run_dir(tmp_path)  # made (see test_run_dirs.py for the same second)
    second = launcher.new_run_dir(tmp_path)
    assert first.is_dir() and second.is_dir() and second != first


def test_payoff_editor_round_trip_and_errors() -> None:
    frame = launcher.payoff_frame()
    assert launcher.parse_payoff_frame(frame) == PayoffMatrix()
    frame.iat[0, 0] = "6, 6"  # R > T: not a Prisoner's Dilemma
    matrix = launcher.parse_payoff_frame(frame)
    assert matrix.reward == 6 and matrix.pd_warnings()
    frame.iat[1, 1] = "one"
    frame.iat[0, 1] = "(0; 5; 7)"
    with pytest.raises(launcher.PayoffInputError) as info:
        launcher.parse_payoff_frame(frame)
    assert len(info.value.problems) == 2


# ---------------------------------------------------------------------------------- style


def test_profiles() -> None:
    assert style.agent_profile({"type": "policy", "policy": "grim"}).short == "💀 Grudger"
    assert style.agent_profile({"type": "policy", "policy": "ALLC"}).emoji == "🕊️"
    llm = style.agent_profile({"type": "llm", "persona": "wsls", "model": "m", "provider": "mock"})
    assert llm.emoji == "💬" and "wsls" in llm.title and llm.subtitle == "mock:m"
    assert llm.title == "m · wsls"
    assert (
        style.agent_profile(None, "mock-persona-v1[exploitative]").title
        == "mock-persona-v1 · exploitative"
    )
    assert style.agent_profile(None, "SOMETHING").emoji == "❔"
    for key, cls in POLICY_REGISTRY.items():
        profile = style.policy_profile(key)
        assert profile.description == cls.description
        assert (profile.emoji, profile.title, profile.gradient) == (
            cls.look.emoji,
            cls.look.nickname,
            cls.look.card,
        )


def test_every_agent_has_a_label_that_tells_it_apart() -> None:
    # A custom name is the title; the policy and its parameters stay visible in the subtitle.
    named = style.agent_profile(
        {"type": "policy", "policy": "GTFT", "name": "kind-gtft", "params": {"generous_prob": 0.1}}
    )
    assert (named.short, named.subtitle) == (
        "😇 kind-gtft",
        "GTFT (Generous Copycat) · generous_prob 0.1",
    )
    plain = style.agent_profile(
        {"type": "policy", "policy": "RANDOM", "params": {"coop_prob": 0.3, "generous_prob": None}}
    )
    assert (plain.title, plain.subtitle) == ("Random", "RANDOM · coop_prob 0.3")
    # Two models with one persona, and a named LLM agent, are told apart.
    gpt = {"type": "llm", "persona": "cooperative", "model": "gpt-4o", "provider": "openai"}
    llama = {**gpt, "model": "llama3.1:8b"}
    assert style.agent_profile(gpt).title == "gpt-4o · cooperative"
    assert style.agent_profile(llama).title == "llama3.1:8b · cooperative"
    tft = {**gpt, "persona": "tit_for_tat", "name": "mock-tft", "model": "mock-persona-v1"}
    assert style.agent_profile(tft).title == "mock-tft"
    assert style.agent_profile(tft).subtitle == "openai:mock-persona-v1 · tit for tat"
    # In a tournament, a player whose name is its title is not named twice.
    (player,) = style.make_players([("mock-tft", {**tft, "provider": "mock"})])
    assert player.label == "💬 mock-tft"


def test_a_new_policy_needs_only_its_class(monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy registered in pdbench.agents.policy gets its look, colour and slider in the app."""

    class Hermit(PolicyAgent):
        key = "HERMIT"
        description = "Never answers the door."
        look = Look("🦀", "Hermit", "#123456", ("#fafafa", "#cccccc"))

    monkeypatch.setitem(POLICY_REGISTRY, "HERMIT", Hermit)
    profile = style.agent_profile({"type": "policy", "policy": "hermit"})
    assert (profile.short, profile.gradient) == ("🦀 Hermit", ("#fafafa", "#cccccc"))
    assert profile.description == "Never answers the door."
    (player,) = style.make_players([("HERMIT", None)])
    assert player.color == "#123456" and player.label == "🦀 Hermit · HERMIT"
    assert "HERMIT" in presets.evolution_strategies()
    options = {o.key: o for o in launcher.agent_options(CONFIGS)}
    assert options["policy:HERMIT"].label == "🦀 HERMIT · Hermit"


def test_timeline_marks_noise_flips_and_fallbacks() -> None:
    game = pd.DataFrame(
        {
            "round": [1, 2],
            "agent_a_action": ["C", "D"],
            "agent_a_intended_action": ["D", "D"],
            "agent_a_parse_failure": [False, True],
            "agent_a_payoff": [0.0, 1.0],
            "agent_b_action": ["D", "D"],
            "agent_b_intended_action": ["D", "D"],
            "agent_b_parse_failure": [False, False],
            "agent_b_payoff": [5.0, 1.0],
        }
    )
    html = style.timeline_html(game, ["A <x>", "B"])
    assert html.count('class="pdb-cell c flip"') == 1
    assert html.count('class="pdb-cell d fail"') == 1
    assert "A &lt;x&gt;" in html  # labels are escaped


def test_rates_in_percent_for_one_decimal_progress_columns() -> None:
    frame = pd.DataFrame({"rate": [0.9167, 0.0, 1.0], "n": [1, 2, 3]})
    shown = tables.in_percent(frame, ["rate", "missing"])
    assert shown["rate"].tolist() == pytest.approx([91.67, 0.0, 100.0])
    assert shown["n"].tolist() == [1, 2, 3]
    assert frame["rate"].tolist() == [0.9167, 0.0, 1.0]  # the loaded frame is not changed


def test_runs_sharing_a_run_id_are_told_apart_by_their_directory(tmp_path: Path) -> None:
    root = tmp_path / "saved"
    make_tournament(root / "first", ["TFT", "ALLD"], run_id="same")
    make_tournament(root / "second", ["TFT", "ALLD"], run_id="same")
    make_tournament(root / "other", ["TFT", "ALLD"], run_id="other")
    listed = {Path(r.path).name: r.label() for r in saved_runs.list_saved("tournament", [root])}
    assert len(set(listed.values())) == 3
    assert listed["first"].endswith(str(Path("saved", "first")))
    assert listed["second"].endswith(str(Path("saved", "second")))
    assert " in " not in listed["other"]  # a unique run_id needs no directory


def test_load_game_rounds_reads_the_columns_as_it_reads_rounds_jsonl(
    run_copy: Path, tmp_path: Path
) -> None:
    """The same game from rounds/ (rounds.jsonl gone) and from rounds.jsonl (rounds/ gone)."""
    import shutil

    columns_only = tmp_path / "columns_only"
    shutil.copytree(run_copy, columns_only)
    (columns_only / "rounds.jsonl").unlink()
    shutil.rmtree(run_copy / "rounds")
    for condition, replicate in (("LLMcoop_vs_LLMexploit", 1), ("GTFT_vs_WSLS_noisy", 0)):
        from_jsonl = data.load_game_rounds(run_copy, condition, replicate)
        from_columns = data.load_game_rounds(columns_only, condition, replicate)
        pd.testing.assert_frame_equal(from_columns, from_jsonl, check_dtype=True)
    with pytest.raises(data.RoundsFileError, match="no rounds of TFT_vs_ALLD replicate 7"):
        data.load_game_rounds(columns_only, "TFT_vs_ALLD", 7)
    (part,) = sorted((columns_only / "rounds").glob("part-*.parquet"))
    part.write_bytes(b"not parquet")
    with pytest.raises(data.RoundsFileError, match="part-000000.parquet"):
        data.load_game_rounds(columns_only, "TFT_vs_ALLD", 0)
