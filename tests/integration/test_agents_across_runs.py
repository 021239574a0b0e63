"""The same agent across runs (storage/agents.py, `pdbench compare --across-runs`): three small
offline runs (mock LLM and policies) made here; the per-game values are computed again from
rounds.jsonl in the test, and the difference and its interval checked against them."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from scipy import stats as scipy_stats
from tests.support.agent_runs import COOP, make_agent_run
from tests.support.cli import run_in_process
from tests.support.configs import experiment, llm, policy, write_config

from pdbench.runners.config.loader import load_config
from pdbench.runners.science.experiment import RunOptions, run_experiment
from pdbench.runners.science.profile import profile_run
from pdbench.storage.agents import across_runs, compare_appearances, run_appearances, scan_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("across")
    out = {
        "monday": profile_run(make_agent_run(base, "monday", 11, 3)).path.parent,
        "friday": make_agent_run(base, "friday", 12, 4, noisy=True),
    }
    # The same config with the cooperative persona's text edited: another prompt version.
    data = experiment(
        [("llm_vs_TFT", llm(COOP, mock={"invalid_rate": 0.3}), policy("TFT"))],
        replicates=2,
        run={"run_id": "edited", "seed": 11, "output_dir": str(base / "edited")},
    )
    config = write_config(data, base / "edited_config")
    persona = base / "edited_config" / "prompts" / "personas" / f"{COOP}.md"
    persona.write_text(persona.read_text(encoding="utf-8") + "\nBe kind.\n", encoding="utf-8")
    run_experiment(load_config(config), RunOptions())
    out["edited"] = base / "edited"
    return out


def per_game(run_dir: Path, condition: str) -> dict[str, list[float]]:
    """Agent A's cooperation rate and payoff per round in each game, from rounds.jsonl."""
    games: dict[int, list[dict[str, Any]]] = {}
    with open(run_dir / "rounds.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["condition"] == condition:
                games.setdefault(row["replicate"], []).append(row)
    out: dict[str, list[float]] = {"cooperation_rate": [], "payoff_per_round": []}
    for replicate in sorted(games):
        rounds = games[replicate]
        out["cooperation_rate"].append(
            sum(r["agent_a_action"] == "C" for r in rounds) / len(rounds)
        )
        out["payoff_per_round"].append(sum(r["agent_a_payoff"] for r in rounds) / len(rounds))
    return out


def t_interval(values: list[float], low: float, high: float) -> tuple[float, float]:
    """Student-t 95% interval of the mean, clipped to [low, high] (computed here with scipy)."""
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = scipy_stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return max(low, mean - half), min(high, mean + half)


def test_the_same_agent_in_two_runs_compared_on_the_same_design(runs: dict[str, Path]) -> None:
    appearances, problems = scan_runs([runs["monday"], runs["friday"]])
    assert problems == []
    groups = {g.identity.label.split(" ·")[0]: g for g in across_runs(appearances)}
    # Every agent plays in both runs; ALLD and GRIM too.
    assert set(groups) == {"mock-persona-v1[cooperative]", "TFT", "GRIM", "ALLD"}
    llm_group = groups["mock-persona-v1[cooperative]"]
    assert [(a.run_label, a.condition) for a in llm_group.appearances] == [
        ("monday", "llm_vs_TFT"),
        ("friday", "llm_vs_TFT"),
        ("friday", "llm_vs_TFT_noisy"),
    ]
    same, noisy = llm_group.comparisons
    # Same design: the difference of the means of the per-game values, read from the rounds.
    assert same.same_design and same.first.condition == same.other.condition == "llm_vs_TFT"
    monday, friday = per_game(runs["monday"], "llm_vs_TFT"), per_game(runs["friday"], "llm_vs_TFT")
    assert len(monday["cooperation_rate"]) == 3 and len(friday["cooperation_rate"]) == 4
    assert len(set(monday["cooperation_rate"] + friday["cooperation_rate"])) > 2  # not constant
    bounds = {"cooperation_rate": (0.0, 1.0), "payoff_per_round": (0.0, 5.0)}
    by_metric = {c.metric: c.result for c in same.contrasts}
    for metric, (low, high) in bounds.items():
        result = by_metric[metric]
        m0 = sum(monday[metric]) / len(monday[metric])
        m1 = sum(friday[metric]) / len(friday[metric])
        assert result.n_baseline == 3 and result.n_condition == 4
        assert result.difference == pytest.approx(m1 - m0)
        # The interval covers at least Newcombe's MOVER interval from each run's Student-t
        # interval (the hull `pdbench compare` gives within a run), computed here with scipy.
        l0, u0 = t_interval(monday[metric], low, high)
        l1, u1 = t_interval(friday[metric], low, high)
        d = m1 - m0
        assert result.ci_low <= d - math.hypot(m1 - l1, u0 - m0) + 1e-9
        assert result.ci_high >= d + math.hypot(u1 - m1, m0 - l0) - 1e-9
        assert result.ci_high - result.ci_low < 2 * (high - low)
    # The profile's cooperation is the run's condition mean with its interval.
    coop = next(p for p in same.first.profile if p.metric == "cooperation_rate")
    assert coop.mean == pytest.approx(sum(monday["cooperation_rate"]) / 3)
    assert coop.low <= coop.mean <= coop.high
    # Another noise: no difference, and the page and the CLI say why.
    assert not noisy.same_design and noisy.contrasts == ()
    assert noisy.differences == ("noise 0.0 vs 0.1",)
    # The pair gives the same numbers whatever else is compared, in any call.
    again = compare_appearances(same.first, same.other)
    assert [c.result for c in again.contrasts] == [c.result for c in same.contrasts]


def test_an_edited_persona_is_another_agent(runs: dict[str, Path]) -> None:
    monday = run_appearances(runs["monday"])
    edited = run_appearances(runs["edited"])
    assert monday[0].name == edited[0].name == "mock-persona-v1[cooperative]"
    assert monday[0].identity.key != edited[0].identity.key  # another prompt version
    assert monday[1].identity.key == edited[1].identity.key  # TFT is TFT
    labels = [g.identity.label for g in across_runs(monday + edited)]
    assert labels == ["TFT"]


def test_compare_across_runs_command(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    monday, friday = per_game(runs["monday"], "llm_vs_TFT"), per_game(runs["friday"], "llm_vs_TFT")
    d = sum(friday["cooperation_rate"]) / 4 - sum(monday["cooperation_rate"]) / 3
    code, out, err = run_in_process(
        ["compare", str(runs["monday"]), str(runs["friday"]), "--across-runs", "--agent", COOP],
        capsys,
    )
    assert code == 0, err
    lines = out.splitlines()
    assert any(line.startswith("agent mock-persona-v1[cooperative] · prompt ") for line in lines)
    assert "agent TFT" not in out  # --agent keeps the cooperative LLM only
    head = "friday · llm_vs_TFT · A  minus  monday · llm_vs_TFT · A (same opponent design):"
    at = next(i for i, line in enumerate(lines) if line.strip() == head)
    assert lines[at + 1].split()[:2] == ["cooperation", f"{d:+.3f}"]
    assert "friday · llm_vs_TFT_noisy · A  minus  monday · llm_vs_TFT · A: designs differ " in out
    assert "(noise 0.0 vs 0.1); no difference" in out
    assert not (runs["monday"] / "comparisons.parquet").exists()  # writes nothing


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{monday}", "--across-runs"], "needs two or more run directories"),
        (["{monday}", "{friday}"], "compare takes one run directory"),
        (["{monday}", "{monday}", "--across-runs"], "given twice"),
        (
            ["{monday}", "{friday}", "--across-runs", "--agent", "nobody"],
            "no agent matching 'nobody'",
        ),
        (["{monday}", "{friday}", "--across-runs", "--metric", "x"], "drop --metric"),
        (["{monday}", "{nowhere}", "--across-runs"], "not a pdbench experiment directory"),
        (["{monday}", "--agent", "x"], "--agent needs --across-runs"),
        (["{monday}", "{nowhere}/gone", "--across-runs"], "gone: not a directory"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    runs: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    (tmp_path / "nowhere").mkdir()
    paths = {"monday": runs["monday"], "friday": runs["friday"], "nowhere": tmp_path / "nowhere"}
    code, out, err = run_in_process(["compare", *(a.format(**paths) for a in args)], capsys)
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert "Traceback" not in err


def test_the_strategy_card_is_the_profile_commands(runs: dict[str, Path]) -> None:
    fits = pq.read_table(runs["monday"] / "strategy_fit.parquet").to_pylist()
    for appearance in run_appearances(runs["monday"]):
        rows = [
            r
            for r in fits
            if r["condition"] == appearance.condition and r["agent"] == appearance.side
        ]
        best = min(rows, key=lambda r: r["rank"])
        card = appearance.card
        assert card is not None and card.strategy == best["strategy"]
        assert card.adequate == best["adequate"]
        if best["adequate"]:  # the share and its interval, as `pdbench profile` prints them
            assert card.verdict is None
            assert (card.share, card.share_low, card.share_high) == (
                best["share"],
                best["share_ci_low"],
                best["share_ci_high"],
            )
        else:  # no share: it would be conditional on a library that does not fit
            assert card.share is None and card.verdict.startswith("no strategy in the library fits")
    # TFT against the cooperative LLM plays TFT (its card is adequate).
    tft = next(a for a in run_appearances(runs["monday"]) if a.name == "TFT")
    assert tft.card.strategy == "TFT" and tft.card.adequate
    # friday has no strategy_fit.parquet: the card says how to make one.
    friday = run_appearances(runs["friday"])[0]
    assert friday.card is None and friday.card_note.startswith(
        "no strategy card: run `pdbench profile "
    )


def _set_keys(run_dir: Path, **manifest: Any) -> None:
    """These keys set in the run's manifest."""
    path = run_dir / "run_manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **manifest}), encoding="utf-8")


def _copy(run_dir: Path, target: Path, **manifest: Any) -> Path:
    """A copy of `run_dir` (as `cp -r`), with these manifest keys set."""
    shutil.copytree(run_dir, target)
    _set_keys(target, **manifest)
    return target


def _started(run_dir: Path) -> str:
    """The start time as the message gives it: the manifest's UTC stamp to the second."""
    stamp = json.loads((run_dir / "run_manifest.json").read_text())["started_at_utc"]
    assert stamp.endswith("+00:00")
    return f"{stamp[:10]} {stamp[11:19]} UTC"


@pytest.mark.parametrize("order", [("monday", "copy"), ("copy", "monday", "friday")])
def test_a_copy_of_a_run_is_named_as_the_same_run(
    runs: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    order: tuple[str, ...],
) -> None:
    paths = {**runs, "copy": _copy(runs["monday"], tmp_path / "backup")}
    code, out, err = run_in_process(
        ["compare", *(str(paths[k]) for k in order), "--across-runs"], capsys
    )
    assert code == 2, (out, err)
    first, other = (paths[k] for k in order if k in ("monday", "copy"))
    assert err.strip().splitlines() == [
        f"{first} and {other}: both directories hold the same run (run_id monday, started "
        f"{_started(runs['monday'])}); --across-runs compares different runs"
    ]


def test_another_start_time_is_another_run(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One run_id started twice (a run made again into another directory) is two runs."""
    again = _copy(runs["monday"], tmp_path / "again", started_at_utc="2031-01-01T00:00:00+00:00")
    code, out, err = run_in_process(
        ["compare", str(runs["monday"]), str(again), "--across-runs", "--agent", "TFT"], capsys
    )
    assert code == 0, err
    assert "agent TFT" in out


def _truncate_aggregates(run_dir: Path) -> None:
    with open(run_dir / "aggregates.parquet", "r+b") as fh:
        fh.truncate(2000)


def _break_config(run_dir: Path) -> None:
    config = json.loads((run_dir / "run_manifest.json").read_text())["config"]
    config["experiment"]["conditions"][0]["agent_a"] = 5  # not an agent's config
    _set_keys(run_dir, config=config)


DAMAGE = {
    "truncated aggregates": (_truncate_aggregates, "aggregates.parquet: not a readable Parquet"),
    "no aggregates": (lambda d: (d / "aggregates.parquet").unlink(), ": no aggregates.parquet"),
    "garbled manifest": (
        lambda d: (d / "run_manifest.json").write_text("{garbled"),
        "run_manifest.json: not valid JSON",
    ),
    "no manifest": (lambda d: (d / "run_manifest.json").unlink(), "not a pdbench experiment"),
    "config of the wrong shape": (_break_config, "run_manifest.json: not a manifest pdbench"),
    "newer manifest": (
        lambda d: _set_keys(d, schema_version=99),
        "run_manifest.json: written with schema_version 99",
    ),
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_run_costs_one_line(
    runs: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: tuple[Any, str],
) -> None:
    """scan_runs (the Agents tab) leaves out the damaged run with one line naming it and keeps
    the others; `compare --across-runs` refuses with that line, exit 2."""
    damaged = _copy(runs["friday"], tmp_path / "damaged", run_id="other", seed=99)
    damage[0](damaged)
    healthy, _ = scan_runs([runs["monday"], runs["friday"]])
    appearances, problems = scan_runs([runs["monday"], damaged, runs["friday"]])
    assert [a.key for a in appearances] == [a.key for a in healthy]
    assert len(problems) == 1 and str(damaged) in problems[0] and damage[1] in problems[0]
    assert "\n" not in problems[0]
    code, out, err = run_in_process(
        ["compare", str(runs["monday"]), str(damaged), "--across-runs"], capsys
    )
    assert code == 2, (out, err)
    assert err.strip().splitlines() == problems


def test_a_copy_is_counted_once_in_a_scan(runs: dict[str, Path], tmp_path: Path) -> None:
    copy = _copy(runs["monday"], tmp_path / "backup")
    healthy, _ = scan_runs([runs["monday"], runs["friday"]])
    appearances, problems = scan_runs([runs["monday"], runs["friday"], copy])
    assert [(a.key, a.run_label) for a in appearances] == [
        (a.key, a.run_label) for a in healthy
    ]  # nor does the copy change monday's label
    assert problems == [
        f"{copy}: the same run as {runs['monday']} (run_id monday, started "
        f"{_started(runs['monday'])}); counted once"
    ]


def test_a_directory_name_too_long_is_one_line(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    long = runs["monday"].parent / ("n" * 300)  # one name past NAME_MAX (255)
    code, out, err = run_in_process(
        ["compare", str(runs["monday"]), str(long), "--across-runs"], capsys
    )
    assert code == 2, (out, err)
    assert err.strip().splitlines() == [f"{long}: cannot be read (File name too long)"]
