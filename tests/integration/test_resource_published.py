"""The resource recipes (configs/studies/pgg_bench*.yaml, govsim_fishery*.yaml) and their
published numbers (issue 31): the files load and name only metrics a run measures (or declare
them published-only), a bad file is refused with one line per problem, the short recipes run
through `pdbench run` and print the published numbers beside the run's, and the numbers quoted
from the authors' README equal the ones in the files."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
import yaml

from pdbench.core.resource_published import ResourcePublished
from pdbench.errors import ConfigError
from pdbench.runners.config.loader import load_config

REPO = Path(__file__).resolve().parents[2]
STUDIES = REPO / "configs" / "studies"
AUTHORS = REPO / "tests" / "fixtures" / "authors"
PUBLISHED = {"pgg": "pgg_bench.published.yaml", "commons": "govsim_fishery.published.yaml"}
SHORT = {"pgg": "pgg_bench_short.yaml", "commons": "govsim_fishery_short.yaml"}
FULL = {"pgg": "pgg_bench.yaml", "commons": "govsim_fishery.yaml"}


def published(kind: str) -> ResourcePublished:
    return ResourcePublished.model_validate(yaml.safe_load((STUDIES / PUBLISHED[kind]).read_text()))


def copy_configs(tmp_path: Path) -> Path:
    target = tmp_path / "configs"
    shutil.copytree(REPO / "configs", target)
    return target


@pytest.fixture(scope="module")
def short_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """Each short recipe run once through `pdbench run`: (run dir, stdout)."""
    import contextlib
    import io

    from tests.support.cli import _main

    out: dict[str, tuple[Path, str]] = {}
    for kind, name in SHORT.items():
        run = tmp_path_factory.mktemp(kind) / "run"
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            code = _main(["run", str(STUDIES / name), "-o", str(run)])
        assert code == 0, buf.getvalue()
        out[kind] = (run, buf.getvalue())
    return out


@pytest.mark.parametrize("kind", ["pgg", "commons"])
def test_every_published_metric_is_an_aggregates_column_or_declared(
    kind: str, short_runs: dict[str, tuple[Path, str]]
) -> None:
    numbers = published(kind)
    run, _ = short_runs[kind]
    columns = set(pq.read_table(run / "aggregates.parquet").column_names)
    measured = [e for e in numbers.entries if e.metric not in numbers.published_only]
    assert measured, "no published number stands beside one of the run's"
    for entry in measured:
        assert {entry.metric, f"{entry.metric}_ci_low", f"{entry.metric}_ci_high"} <= columns, (
            entry.metric
        )
    for name in numbers.published_only:
        assert name not in columns, f"{name} is measured: compare it, do not declare it"
    for entry in numbers.entries:
        assert entry.source.strip() and entry.definition.strip()
    assert numbers.deviations, "the deviations from the authors' protocol are listed"


@pytest.mark.parametrize("kind", ["pgg", "commons"])
def test_the_short_recipe_prints_the_published_numbers_beside_its_own(
    kind: str, short_runs: dict[str, tuple[Path, str]]
) -> None:
    run, stdout = short_runs[kind]
    numbers = published(kind)
    lines = stdout.splitlines()
    assert f"published ({PUBLISHED[kind]}): the authors' models; " in stdout
    rows = {r["condition"]: r for r in pq.read_table(run / "aggregates.parquet").to_pylist()}
    entry = next(e for e in numbers.entries if e.metric not in numbers.published_only)
    head = f"  {entry.metric}, {entry.model} ({entry.source}): {entry.value:.4g}"
    line = next(x for x in lines if x.startswith(head + " | this run: "))
    for name, row in rows.items():
        value = row[entry.metric]
        shown = "n/a" if value is None else f"{value:.3f}"
        assert f"{name} {shown}" in line, (name, line)
    assert "deviations from the authors' protocol:" in lines
    assert f"  - {numbers.deviations[0]}" in lines
    # the short recipe plays 3 rounds, the published numbers are over 10 (12 months)
    assert numbers.rounds in (10, 12)
    assert (
        f"  note: this run plays 3 rounds, the published numbers are over {numbers.rounds}: "
        "they are not comparable, shown for reference only" in lines
    )
    manifest = orjson.loads((run / f"{kind}_manifest.json").read_bytes())
    kept = manifest["published"]
    assert kept["source_file"] == PUBLISHED[kind]
    assert kept["deviations"] == numbers.deviations
    assert len(kept["entries"]) == len(numbers.entries)
    assert {"metric", "model", "condition", "value", "source", "definition"} <= set(
        kept["entries"][0]
    )


def test_pgg_bench_retaliation_and_punishment_equal_the_readme(tmp_path: Path) -> None:
    """The README's sentences (fixture copied from lechmazur/pgg_bench @4be972b) and the file's
    entries citing them carry the same numbers."""
    text = (AUTHORS / "pgg_bench_README_excerpt.md").read_text()
    found = re.search(
        r"`Claude 3\.5 Sonnet 2024-10-22` and `GPT-4\.5 Preview` hit a (\d+)% retaliation rate, "
        r"whereas `Llama 3\.3 70B` barely retaliates at ([\d.]+)%",
        text,
    )
    assert found is not None
    flash = re.search(r"Gemini 2\.0 Flash at (\d+)%", text)
    assert flash is not None
    expected = {
        ("retaliation_rate", "Claude 3.5 Sonnet 2024-10-22"): float(found[1]) / 100,
        ("retaliation_rate", "GPT-4.5 Preview"): float(found[1]) / 100,
        ("retaliation_rate", "Llama 3.3 70B"): float(found[2]) / 100,
        ("punish_spent_fraction", "Gemini 2.0 Flash"): float(flash[1]) / 100,
    }
    assert expected[("retaliation_rate", "Llama 3.3 70B")] == pytest.approx(0.027)
    from_readme = {
        (e.metric, e.model): e.value
        for e in published("pgg").entries
        if e.source.startswith("README.md @4be972b") and (e.metric, e.model) in expected
    }
    assert from_readme == pytest.approx(expected)


def test_govsim_instances_equal_the_readme() -> None:
    text = (AUTHORS / "govsim_README_excerpt.md").read_text()
    found = re.search(r"cooperation \((\d+) out of (\d+) instances\)", text)
    assert found is not None
    entry = next(
        e for e in published("commons").entries if e.metric == "sustainable_instance_share"
    )
    assert entry.value == pytest.approx(int(found[1]) / int(found[2]), abs=5e-5)


def _write(path: Path, data: Any) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_a_bad_published_file_is_one_line_a_problem(tmp_path: Path) -> None:
    studies = copy_configs(tmp_path) / "studies"
    recipe = studies / SHORT["pgg"]
    data = yaml.safe_load((studies / PUBLISHED["pgg"]).read_text())
    data["entries"][0]["metric"] = "retaliation_rat"
    data["entries"][1]["condition"] = "nope"
    _write(studies / PUBLISHED["pgg"], data)
    with pytest.raises(ConfigError) as info:
        load_config(recipe)
    lines = info.value.lines()
    assert len(lines) == 2, lines
    file = studies / PUBLISHED["pgg"]
    assert lines[0].startswith(f"{file}: entries[0].metric: not an aggregates column")
    assert lines[0].endswith("(got 'retaliation_rat')")
    assert lines[1].startswith(f"{file}: entries[1].condition: no condition")
    assert lines[1].endswith("(valid: policies) (got 'nope')")
    assert all("\n" not in line for line in lines)

    del data["entries"][0]["value"]
    data["entries"][1]["condition"] = None
    data["entries"][0]["metric"] = "retaliation_rate"
    _write(studies / PUBLISHED["pgg"], data)
    with pytest.raises(ConfigError) as info:
        load_config(recipe)
    assert [line.split(": ", 2)[:2] for line in info.value.lines()] == [
        [str(file), "entries[0].value"]
    ]

    (studies / PUBLISHED["pgg"]).unlink()
    with pytest.raises(ConfigError) as info:
        load_config(recipe)
    (line,) = info.value.lines()
    assert line.startswith(f"{recipe}: pgg.published: "), line


@pytest.mark.slow  # a fresh process each; the short recipes run in the default set
@pytest.mark.parametrize("kind", ["pgg", "commons"])
def test_the_full_recipes_run_offline_with_their_mock_llm_seats(kind: str, tmp_path: Path) -> None:
    """The full recipes as a user runs them (one replicate): PGG-Bench's 5 seats, 20 tokens,
    r 1.6, 10 rounds, talk; GovSim's 5 agents, 12 months, 100 tons, collapse below 5, talk; the
    mock LLM seats answer, and the run prints the published numbers."""
    from tests.support.cli import run_process

    studies = copy_configs(tmp_path) / "studies"
    recipe = studies / FULL[kind]
    out = tmp_path / "out"
    done = run_process(
        ["run", str(recipe), "--replicates", "1", "-o", str(out), "--no-cache"], tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "published (" in done.stdout
    assert "not comparable" not in done.stdout  # the recipe plays the published length
    calls = (out / "llm_calls.jsonl").read_text().splitlines()
    assert calls  # the LLM seats were asked
    loaded = load_config(recipe)
    cfg = loaded.config
    assert loaded.published is not None
    assert loaded.published["source_file"] == PUBLISHED[kind]
    assert cfg.section.talk is True
    if kind == "pgg":
        assert cfg.horizon.n_rounds == 10
        assert [c.name for c in cfg.pgg.conditions] == ["llm_personas", "policies"]
        rules = cfg.rules_of(cfg.pgg.conditions[0])
        assert (rules.n_players, rules.endowment, rules.multiplier) == (5, 20, 1.6)
        assert (rules.punishment, rules.punish_effect, rules.punish_max_tokens) == (True, 3.0, 10)
    else:
        assert cfg.horizon.n_rounds == 12
        conds = cfg.commons.conditions
        assert [c.name for c in conds] == ["baseline", "universalization", "outsider"]
        assert [cfg.universalization_of(c) for c in conds] == [False, True, False]
        assert [c.outsider_arrival for c in conds] == [None, None, 3]
        rules = cfg.rules_of(conds[0])
        assert (rules.n_agents, rules.capacity, rules.collapse_below) == (5, 100, 5)
