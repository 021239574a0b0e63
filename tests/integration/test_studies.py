"""Study recipes (configs/studies/) and prompt variants as sweep axes, run offline with the mock:
the designs are what the papers describe, the labels reach the model and come back as moves, and
the report puts the run's numbers beside the published ones and splits the variance by axis."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
import yaml
from tests.support.cli import run_in_process

from pdbench.errors import ConfigError
from pdbench.report.format import fmt
from pdbench.runners.config.loader import load_config

REPO = Path(__file__).resolve().parents[2]


def copy_configs(tmp_path: Path) -> Path:
    """A copy of configs/ (with its root marker) to edit."""
    target = tmp_path / "configs"
    shutil.copytree(REPO / "configs", target)
    return target


def edit(path: Path, change: Any) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def condition_rows(run: Path) -> dict[str, dict[str, Any]]:
    rows = pq.read_table(run / "aggregates.parquet").to_pylist()
    return {r["condition"]: r for r in rows if r["scope"] == "condition"}


def run_and_report(config: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code, _, err = run_in_process(["run", str(config), "-o", str(out)], capsys)
    assert code == 0, err
    code, _, err = run_in_process(["report", str(out)], capsys)
    assert code == 0, err
    return (out / "report.html").read_text()


def table_row(html: str, title: str, first_cell: str) -> str:
    """The row of the comparison table under `title` whose first cell is `first_cell`."""
    section = html.split(f"<h3>{title}</h3>", 1)[1].split("<h3>", 1)[0]
    for row in re.findall(r"<tr>(.*?)</tr>", section):
        if row.startswith(f"<td>{first_cell}</td>"):
            return row
    raise AssertionError(f"no row {first_cell!r} under {title!r}")


def test_the_recipes_load_from_configs_studies() -> None:
    akata = load_config(REPO / "configs/studies/akata2023.yaml").config
    assert akata.horizon.n_rounds == 10
    assert akata.game.matrix().as_nested() == {
        "C": {"C": [8.0, 8.0], "D": [0.0, 10.0]},
        "D": {"C": [10.0, 0.0], "D": [5.0, 5.0]},
    }
    llm = akata.experiment.conditions[0].agent_a
    assert (llm.labels(), llm.temperature, llm.output_format) == (("J", "F"), 0.0, "token")
    assert (llm.max_tokens, llm.prompt_mode, llm.verbatim_prompts) == (1, "completion", True)
    assert akata.experiment.conditions[0].agent_b.policy == "DEFECT_ONCE"
    fontana = load_config(REPO / "configs/studies/fontana2024.yaml").config
    alphas = [c.agent_b.params.coop_prob for c in fontana.experiment.conditions]
    assert alphas == pytest.approx([k / 10 for k in range(11)] * 2)  # x two framings
    llm = fontana.experiment.conditions[0].agent_a
    assert (llm.temperature, llm.output_format, llm.history_window) == (0.7, "json", 10)
    assert (llm.max_retries, llm.on_parse_failure, llm.include_totals) == (0, "defect", True)
    assert (llm.max_tokens, llm.labels()) == (128, ("Cooperate", "Defect"))
    assert (fontana.experiment.replicates, fontana.horizon.n_rounds) == (100, 100)


def test_akata_runs_with_labels_and_the_report_places_the_published_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configs = copy_configs(tmp_path)
    recipe = configs / "studies" / "akata2023.yaml"
    edit(recipe, lambda d: d["experiment"].update(replicates=2))  # the design, fewer games
    out = tmp_path / "akata"
    html = run_and_report(recipe, out, capsys)
    rounds = read_jsonl(out / "rounds.jsonl")
    once = [r for r in rounds if r["condition"] == "llm_vs_defect_once"]
    for rep in range(2):
        game = sorted((r for r in once if r["replicate"] == rep), key=lambda r: r["round_index"])
        assert "".join(r["agent_b_action"] for r in game) == "D" + "C" * 9
    label = {"J": "C", "F": "D"}
    for r in rounds:
        if r["condition"] not in ("llm_vs_defect_once", "llm_vs_itself"):
            continue
        prompt = r["prompts"]["agent_a"]
        assert prompt["system"] == ""  # one completion text: their prompt has no system part
        assert "you can choose between Option J and Option F" in prompt["round"]
        assert prompt["round"].endswith("?\nA: Option")
        last = r["raw_responses"]["agent_a"][-1]
        if last["valid"]:  # the label the model answered is the move recorded
            assert label[last["raw"].strip().upper()] == r["agent_a_intended_action"]
    rows = condition_rows(out)
    assert "Published numbers" in html and "GPT-4 (published)" in html
    assert "Deviations from the authors' protocol" in html
    row = table_row(html, "Points of the LLM as player 1 per game", "llm_vs_defect_once")
    mine = rows["llm_vs_defect_once"]
    expected = fmt(
        mine["agent_a_total_payoff"],
        mine["agent_a_total_payoff_ci_low"],
        mine["agent_a_total_payoff_ci_high"],
    )
    assert f"<td><b>{expected}</b></td>" in row and row.endswith("<td>90</td>")


@pytest.mark.slow
def test_fontana_counts_fallbacks_as_defections_and_compares_by_alpha(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configs = copy_configs(tmp_path)
    recipe = configs / "studies" / "fontana2024.yaml"

    def fewer(d: dict[str, Any]) -> None:  # the design, fewer and shorter games
        d["experiment"].update(replicates=2)
        d["horizon"].update(n_rounds=40)

    edit(recipe, fewer)
    out = tmp_path / "fontana"
    html = run_and_report(recipe, out, capsys)
    rounds = read_jsonl(out / "rounds.jsonl")
    assert len(rounds) == 2 * 11 * 2 * 40  # framings x alphas x games x rounds
    failed = [r for r in rounds if r["agent_a_parse_failure"]]
    assert failed, "the mock's invalid replies (5%) should cost some moves"
    assert all(r["agent_a_intended_action"] == "D" for r in failed)
    assert all(len(r["raw_responses"]["agent_a"]) == 1 for r in rounds)  # no re-prompt
    valid = [
        r["raw_responses"]["agent_a"][0]["raw"] for r in rounds if not r["agent_a_parse_failure"]
    ]
    assert all(raw in ('{"action": "Cooperate"}', '{"action": "Defect"}') for raw in valid)
    rows = condition_rows(out)
    title = "Cooperation rate of the LLM against the random opponent, by alpha"
    row = table_row(html, title, "0.5")
    mine = rows["llm_vs_random+round_prompts-fontana2024_third_person.md+coop_prob_0.5"]
    expected = fmt(
        mine["agent_a_cooperation_rate"],
        mine["agent_a_cooperation_rate_ci_low"],
        mine["agent_a_cooperation_rate_ci_high"],
        True,
    )
    assert f"<td><b>{expected}</b></td>" in row
    assert "17.0% <span class='ci'>[12.8%, 21.3%]</span>" in row  # Llama2's published interval
    assert "Not reproduced by this recipe" in html
    assert "Deviations from the authors' protocol" in html
    assert html.count("<svg") >= 5 and "Llama2-70b-chat" in html


@pytest.mark.slow
def test_prompt_variants_sweep_and_the_variance_split(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configs = copy_configs(tmp_path)
    config = configs / "prompt_variants.yaml"
    edit(config, lambda d: d["experiment"].update(replicates=2))
    out = tmp_path / "pv"
    html = run_and_report(config, out, capsys)
    rows = condition_rows(out)
    assert len(rows) == 3 * 3 * 3 * 2
    some = rows[
        "llm_vs_tft+system_prompts-paraphrases-system_story.md+action_labels_X-Y"
        "+payoff_scale_10+horizon_disclosure_hidden"
    ]
    assert some["agent_a.overrides.prompts.system"] == "prompts/paraphrases/system_story.md"
    assert some["agent_a.overrides.action_labels"] == "X/Y"
    assert some["agent_a.overrides.payoff_scale"] == 10.0
    rounds = read_jsonl(out / "rounds.jsonl")
    game = [r for r in rounds if r["condition"] == some["condition"]]
    prompt = game[1]["prompts"]["agent_a"]
    assert "keep prices fair (X) or undercut (Y)" in prompt["system"]
    assert re.search(r"you got (0|30|50|10), they got (0|30|50|10)\.", prompt["round"])
    assert "Round 2." in prompt["round"] and "of 20" not in prompt["round"]  # hidden horizon
    variance = html.split("<h3>Variance explained</h3>", 1)[1]
    for source in ("prompts.system", "action_labels", "payoff_scale", "interactions", "noise"):
        assert source in variance


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_published_file_errors_are_one_line_each(tmp_path: Path) -> None:
    configs = copy_configs(tmp_path)
    studies = configs / "studies"
    recipe = studies / "akata2023.yaml"
    edit(recipe, lambda d: d["experiment"].update(published="bad.published.yaml"))
    head = "study: x\nsource: y\ncomparisons:\n"
    write(
        studies / "bad.published.yaml",
        head + "  - {title: t, metric: agent_a_cooperation, by: condition, points: [nope],"
        " published: {M: [0.5]}}\n"
        "  - {title: u, metric: agent_a_total_payoff, by: agent_b.overrides.params.x,"
        " points: [1], published: {M: [1]}}\n",
    )
    with pytest.raises(ConfigError) as info:
        load_config(recipe)
    lines = info.value.lines()
    assert len(lines) == 3, lines
    assert (
        "bad.published.yaml: comparisons[0].metric: not an aggregates column (close: "
        "agent_a_cooperation_rate, " in lines[0]
    )
    assert lines[0].endswith("(got 'agent_a_cooperation')")
    assert lines[1].endswith("comparisons[0].points[0]: no condition named 'nope'")
    assert lines[2].endswith(
        "comparisons[1].by: not an axis of this run (valid: condition) "
        "(got 'agent_b.overrides.params.x')"
    )
    write(
        studies / "bad.published.yaml",
        head + "  - {title: u, metric: agent_a_total_payoff, by: condition,"
        " points: [llm_vs_itself, llm_vs_defect_once], published: {M: [1]}}\n",
    )
    with pytest.raises(ConfigError) as info:
        load_config(recipe)
    assert info.value.lines()[0].endswith(
        "bad.published.yaml: comparisons[0]: published.M: needs one value per point (2; got 1)"
    )


def test_labels_a_template_never_shows_are_refused(tmp_path: Path) -> None:
    configs = copy_configs(tmp_path)
    write(configs / "prompts" / "bare.md", "Choose.\n{output_instruction}\n")
    recipe = configs / "studies" / "akata2023.yaml"

    def bare(d: dict[str, Any]) -> None:
        d["experiment"]["conditions"][0]["agent_a"]["overrides"]["prompts"] = {
            "system": "../prompts/bare.md",
            "round": "../prompts/bare.md",
        }

    edit(recipe, bare)
    with pytest.raises(ConfigError) as info:
        load_config(recipe)
    assert "action_labels J/F are never shown" in str(info.value)


def test_the_root_marker_bounds_refs(tmp_path: Path) -> None:
    configs = copy_configs(tmp_path)
    write(tmp_path / "outside.yaml", "type: policy\npolicy: TFT\n")
    recipe = configs / "studies" / "akata2023.yaml"
    edit(
        recipe,
        lambda d: d["experiment"]["conditions"][1].update(agent_b={"ref": "../../outside.yaml"}),
    )
    with pytest.raises(ConfigError, match="path leaves the config root"):
        load_config(recipe)
    (configs / ".pdbench-root").unlink()  # without the marker the root is configs/studies/
    with pytest.raises(ConfigError, match="path leaves the config root"):
        load_config(configs / "studies" / "fontana2024.yaml")  # its ../agents refs now leave it


def test_a_swept_prompt_path_resolves_from_the_sweep_entry(tmp_path: Path) -> None:
    configs = copy_configs(tmp_path)
    config = configs / "prompt_variants.yaml"
    edit(
        config,
        lambda d: d["experiment"]["sweep"].update(
            {"agent_a.overrides.prompts.system": ["prompts/pd_system.md", "prompts/missing.md"]}
        ),
    )
    with pytest.raises(ConfigError) as info:
        load_config(config)
    lines = info.value.lines()
    assert all(
        line.startswith("prompt_variants.yaml") or "prompt_variants.yaml" in line for line in lines
    )
    assert any("experiment.sweep.agent_a.overrides.prompts.system[1]" in line for line in lines), (
        lines
    )
