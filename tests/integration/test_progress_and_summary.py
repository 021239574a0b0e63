"""What a run prints for its operator: progress lines when stderr is not a terminal (checked
against llm_calls.jsonl), and the summary table (whole agent names, whole rounds, fallback
moves per agent, a warning above 5% fallbacks), with the offline mock provider."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import run_in_process, run_process
from tests.support.configs import experiment, llm, policy, write_config

from pdbench.runners.plan import fallback_warnings, summary_table

NAME_40 = "acme-large-2025-06-01-instruct[persona-x]"[:40]
PROGRESS = re.compile(
    r"progress: (\d+)/(\d+) games, ([\d,]+)/([\d,]+) rounds \((\d+)%\), ([\d,]+) calls "
    r"\(([\d,]+) cached\), ([\d,]+) tokens, cost \$(\d+\.\d{4}), elapsed \w+(, ETA \w+)?"
)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def number(text: str) -> int:
    return int(text.replace(",", ""))


def progress_lines(stderr: str) -> list[re.Match[str]]:
    lines = [line for line in stderr.splitlines() if line.strip()]
    matches = [PROGRESS.fullmatch(line) for line in lines]
    assert lines and all(matches), stderr
    return [m for m in matches if m is not None]


# --------------------------------------------------------------------------------------------
# progress on a pipe
# --------------------------------------------------------------------------------------------


def test_a_run_with_stderr_on_a_pipe_prints_progress_lines_with_its_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PDBENCH_PROGRESS_INTERVAL_S", "0.05")
    mock = {"invalid_rate": 0.2, "latency_ms": 2}
    data = experiment(
        [
            ("llm_vs_tft", llm("cooperative", mock=mock), policy("TFT")),
            ("llm_vs_llm", llm("tit_for_tat", mock=mock), llm("wsls", mock=mock)),
            ("tft_vs_alld", policy("TFT"), policy("ALLD")),
        ],
        replicates=2,
        horizon={"type": "fixed", "n_rounds": 10},
    )
    cfg = write_config(data, tmp_path / "cfg")
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["run", str(cfg), "-o", str(out), "--cache-dir", str(cache), "-c", "2"]

    first = run_process(args, tmp_path)  # stderr is a pipe
    assert first.returncode == 0, first.stderr
    matches = progress_lines(first.stderr)
    calls = read_jsonl(out / "llm_calls.jsonl")
    tokens = sum(c["input_tokens"] + c["output_tokens"] for c in calls if c["ok"])
    assert len(calls) > 40 and not any(c["cached"] for c in calls)  # 40 decisions + retries
    final = matches[-1]
    # 3 conditions x 2 replicates = 6 games of 10 rounds; every call attempt is a line of
    # llm_calls.jsonl; the mock is free.
    assert final.group(1, 2, 3, 4, 5) == ("6", "6", "60", "60", "100")
    assert (number(final[6]), number(final[7]), number(final[8])) == (len(calls), 0, tokens)
    assert final[9] == "0.0000" and final[10] is None  # the final line has no ETA
    for before, after in zip(matches, matches[1:], strict=False):  # never backwards
        for group in (1, 3, 6, 8):
            assert number(before[group]) <= number(after[group])

    again = run_process([*args, "--overwrite"], tmp_path)  # every reply from the cache
    assert again.returncode == 0, again.stderr
    final = progress_lines(again.stderr)[-1]
    cached = read_jsonl(out / "llm_calls.jsonl")
    assert all(c["cached"] for c in cached) and len(cached) == len(calls)
    assert (number(final[6]), number(final[7]), number(final[8])) == (len(calls), len(calls), 0)


def test_a_policy_run_prints_no_llm_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = experiment([("tft_vs_alld", policy("TFT"), policy("ALLD"))], replicates=3)
    cfg = write_config(data, tmp_path / "cfg")
    code, _, err = run_in_process(["run", str(cfg), "-o", str(tmp_path / "out")], capsys)
    assert code == 0, err
    (line,) = err.splitlines()
    assert re.fullmatch(r"progress: 3/3 games, 60/60 rounds \(100%\), elapsed \w+", line), line


# --------------------------------------------------------------------------------------------
# the summary table
# --------------------------------------------------------------------------------------------


def table_line(stdout: str, condition: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith(condition + " "))


def test_the_summary_shows_whole_names_and_whole_rounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(NAME_40) == 40
    quiet = {"invalid_rate": 0.0}
    data = experiment(
        [
            ("named", llm("cooperative", name=NAME_40, mock=quiet), policy("TFT")),
            ("two_personas", llm("cooperative", mock=quiet), llm("exploitative", mock=quiet)),
        ],
        replicates=2,
        horizon={"type": "fixed", "n_rounds": 50},
    )
    cfg = write_config(data, tmp_path / "cfg")
    code, out, err = run_in_process(["run", str(cfg), "-o", str(tmp_path / "out")], capsys)
    assert code == 0, err
    assert re.match(rf"named +{re.escape(NAME_40)} TFT +50 ", table_line(out, "named")), out
    # Two personas of one model: both names whole (they used to be cut to 24 characters,
    # "mock-persona-v1[cooperat" and "mock-persona-v1[exploita").
    line = table_line(out, "two_personas")
    assert re.match(
        r"two_personas +mock-persona-v1\[cooperative\] +mock-persona-v1\[exploitative\] +50 ",
        line,
    ), out
    # No fallbacks (no invalid replies): "0 (0.0%)" per LLM agent, "-" for the policy.
    assert line.endswith("0 (0.0%)  0 (0.0%)")
    assert table_line(out, "named").endswith("0 (0.0%)         -")
    assert "warning" not in out + err


def rows(*conditions: tuple[str, str, str, list[tuple[int, int, int]]]) -> list[dict[str, Any]]:
    """Aggregate rows by hand: per condition (name, agent A, agent B, per replicate (rounds,
    A's fallbacks, B's fallbacks)); agent B is a policy when its name is "TFT"."""
    out: list[dict[str, Any]] = []
    for name, a, b, games in conditions:
        per_game = []
        for rep, (n, fa, fb) in enumerate(games):
            per_game.append(
                {
                    "condition": name,
                    "scope": "replicate",
                    "replicate": rep,
                    "n_replicates": None,
                    "n_rounds": n,
                    "agent_a_name": a,
                    "agent_b_name": b,
                    "agent_a_cooperation_rate": 0.5,
                    "agent_b_cooperation_rate": 0.5,
                    "agent_a_total_payoff": 2.0 * n,
                    "agent_b_total_payoff": 2.0 * n,
                    "time_to_collapse": None,
                    "agent_a_parse_failures": fa,
                    "agent_b_parse_failures": fb,
                    "agent_a_llm_calls": float(n),
                    "agent_b_llm_calls": None if b == "TFT" else float(n),
                }
            )
        k = len(games)
        mean = {
            key: sum(g[key] for g in per_game) / k
            for key in ("n_rounds", "agent_a_parse_failures", "agent_b_parse_failures")
        }
        out += per_game
        out.append({**per_game[0], "scope": "condition", "replicate": None, "n_replicates": k})
        out[-1].update(mean)
    return out


def test_rounds_show_one_decimal_only_when_the_mean_is_fractional() -> None:
    table = summary_table(
        rows(
            ("geo_whole", "LLM", "TFT", [(12, 0, 0), (14, 0, 0)]),  # mean 13
            ("geo_half", "LLM", "TFT", [(12, 0, 0), (13, 0, 0)]),  # mean 12.5
        )
    )
    assert re.match(r"geo_whole +LLM +TFT +13 ", table_line(table, "geo_whole"))
    assert re.match(r"geo_half +LLM +TFT +12\.5 ", table_line(table, "geo_half"))


def test_names_longer_than_the_column_continue_on_the_next_line() -> None:
    long_a = "provider/some-very-long-model-name-2025-01-01[cooperative]"  # 58 characters
    table = summary_table(rows(("long", long_a, "TFT", [(10, 1, 0)])))
    lines = table.splitlines()
    first = lines.index(table_line(table, "long"))
    assert lines[first][len("condition") + 1 :].startswith(long_a[:40] + " TFT")
    # The continuation sits in agent A's column and holds the rest of the name.
    assert lines[first + 1] == " " * (len("condition") + 1) + long_a[40:]
    assert len(lines) == first + 2


def test_the_fallback_share_is_pooled_over_replicates_and_warned_about_above_5_percent() -> None:
    data = rows(
        ("at_5", "LLM-a", "LLM-b", [(60, 3, 0), (40, 2, 1)]),  # A: 5/100 = 5.0%; B: 1/100
        ("above", "LLM-a", "TFT", [(60, 3, 0), (40, 3, 0)]),  # A: 6/100 = 6.0%
        ("short", "LLM-a", "TFT", [(10, 1, 0), (30, 2, 0)]),  # A: 3/40 = 7.5%
    )
    table = summary_table(data)
    assert table_line(table, "at_5").endswith(" 5 (5.0%)  1 (1.0%)")
    assert table_line(table, "above").endswith(" 6 (6.0%)         -")
    # Pooled 3/40 = 7.5%, not the mean of the games' shares (10% and 6.7%: 8.3%).
    assert table_line(table, "short").endswith(" 3 (7.5%)         -")
    assert fallback_warnings(data) == [
        "warning: above: agent A (LLM-a) played 6 of 100 moves (6.0%) as fallbacks after "
        "invalid replies; its cooperation rate counts them",
        "warning: short: agent A (LLM-a) played 3 of 40 moves (7.5%) as fallbacks after "
        "invalid replies; its cooperation rate counts them",
    ]


def test_a_mock_run_with_invalid_replies_warns_about_fallbacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # max_retries 0: every invalid reply is played as a fallback (defect).
    sloppy = llm("cooperative", max_retries=0, mock={"invalid_rate": 0.3})
    clean = llm("tit_for_tat", max_retries=0, mock={"invalid_rate": 0.0})
    data = experiment(
        [("LLMcoop_vs_TFT", sloppy, policy("TFT")), ("clean_vs_sloppy", clean, sloppy)],
        replicates=3,
        horizon={"type": "fixed", "n_rounds": 50},
    )
    cfg = write_config(data, tmp_path / "cfg")
    run_dir = tmp_path / "out"
    code, out, err = run_in_process(["run", str(cfg), "-o", str(run_dir)], capsys)
    assert code == 0, err
    records = read_jsonl(run_dir / "rounds.jsonl")

    def count(condition: str, side: str) -> int:
        return sum(r[f"agent_{side}_parse_failure"] for r in records if r["condition"] == condition)

    coop, moves = count("LLMcoop_vs_TFT", "a"), 150  # 3 replicates x 50 rounds
    other = count("clean_vs_sloppy", "b")
    assert coop / moves > 0.05 and other / moves > 0.05  # invalid_rate 0.3: far above 5%
    assert count("clean_vs_sloppy", "a") == 0
    name = "mock-persona-v1[cooperative]"
    expected = [
        f"warning: LLMcoop_vs_TFT: agent A ({name}) played {coop} of 150 moves "
        f"({coop / moves:.1%}) as fallbacks after invalid replies; its cooperation rate counts "
        "them",
        f"warning: clean_vs_sloppy: agent B ({name}) played {other} of 150 moves "
        f"({other / moves:.1%}) as fallbacks after invalid replies; its cooperation rate "
        "counts them",
    ]
    assert [line for line in out.splitlines() if line.startswith("warning")] == expected
    assert out.rstrip().endswith(expected[-1])  # after the table
    assert re.search(rf" {coop} \({coop / moves:.1%}\) +-$", table_line(out, "LLMcoop_vs_TFT"))
    assert re.search(
        rf" 0 \(0\.0%\) +{other} \({other / moves:.1%}\)$", table_line(out, "clean_vs_sloppy")
    )


@pytest.mark.parametrize(("fallbacks", "warned"), [(5, False), (6, True)])
def test_pdbench_aggregate_warns_above_5_percent_and_not_at_it(
    fallbacks: int, warned: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run's rounds.jsonl with exactly 5 or 6 of agent A's 100 moves marked as fallbacks,
    re-aggregated by `pdbench aggregate`."""
    clean = llm("cooperative", mock={"invalid_rate": 0.0})
    data = experiment(
        [("edge", clean, policy("TFT"))], replicates=2, horizon={"type": "fixed", "n_rounds": 50}
    )
    run_dir = tmp_path / "out"
    cfg = write_config(data, tmp_path / "cfg")
    code, _, err = run_in_process(["run", str(cfg), "-o", str(run_dir)], capsys)
    assert code == 0, err
    path = run_dir / "rounds.jsonl"
    records = read_jsonl(path)
    assert len(records) == 100 and not any(r["agent_a_parse_failure"] for r in records)
    for record in records[10 : 10 + fallbacks]:
        record["agent_a_parse_failure"] = True
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    code, out, err = run_in_process(["aggregate", str(run_dir)], capsys)
    assert code == 0, err
    assert re.search(rf" {fallbacks} \({fallbacks}\.0%\) +-$", table_line(out, "edge"))
    warnings = [line for line in out.splitlines() if line.startswith("warning")]
    assert warnings == (
        [
            f"warning: edge: agent A (mock-persona-v1[cooperative]) played {fallbacks} of 100 "
            f"moves ({fallbacks}.0%) as fallbacks after invalid replies; its cooperation rate "
            "counts them"
        ]
        if warned
        else []
    )
