"""configs/talk.yaml end to end: the talk metrics in aggregates.parquet against values worked out
by hand and against a second computation from rounds.jsonl (plain JSON, here), the same
aggregates from `pdbench aggregate`, a cached re-run that sends no request, and the report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from tests.support.configs import execute

from pdbench.storage.aggregate import aggregate_run_dir

REPO = Path(__file__).resolve().parents[2]
LIAR = "liar_vs_TFT"
HONEST = "honest_TFT_vs_honest_WSLS"
PERSONAS = "LLMcoop_vs_LLMexploit+mode_every_round"
SILENT = "LLMcoop_vs_LLMexploit+mode_none"
N_ROUNDS, REPLICATES = 20, 10


@pytest.fixture(scope="module")
def talk_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """configs/talk.yaml run once (fresh cache); returns (run dir, cache dir)."""
    root = tmp_path_factory.mktemp("talk")
    shutil.copytree(REPO / "configs", root / "configs")
    cache = root / "cache"
    summary = execute(root / "configs" / "talk.yaml", output_dir=root / "run", cache_dir=cache)
    assert summary.manifest["status"] == "completed"
    return root / "run", cache


def _conditions(run_dir: Path) -> dict[str, dict[str, Any]]:
    rows = pq.read_table(run_dir / "aggregates.parquet").to_pylist()
    return {r["condition"]: r for r in rows if r["scope"] == "condition"}


def _records(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "rounds.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_the_liar_s_talk_metrics_equal_the_hand_calculation(talk_run: tuple[Path, Path]) -> None:
    """No noise: ALLD promises C in every one of its 20 rounds and plays D; TFT announces C
    before round 1 and D after, and keeps to it. Over 10 games: the liar's 200 promises are all
    broken; TFT promises 10 times (once a game) out of 200 messages, and plays C after 10 of
    the liar's 200 promises (round 1 of each game)."""
    row = _conditions(talk_run[0])[LIAR]
    assert row["agent_a_messages"] == 200 and row["agent_a_said_promises"] == 200
    # the policies declare what they say: both readings agree
    for reading in ("said", "declared"):
        assert row[f"agent_a_{reading}_promise_rate"] == 1.0
        assert row[f"agent_a_{reading}_promise_kept_rate"] == 0.0
        assert row[f"agent_a_{reading}_deception_rate"] == 1.0
        assert row[f"agent_a_{reading}_agreement_rate"] == 0.0
        assert row[f"agent_b_{reading}_promise_rate"] == pytest.approx(10 / 200)
        assert row[f"agent_b_{reading}_promise_kept_rate"] == 1.0
    assert row["agent_a_unread_rate"] == 0.0
    assert row["agent_b_said_trust_rate"] == pytest.approx(10 / 200)
    assert row["agent_a_said_trust_rate"] == 0.0  # after TFT's 10 promises the liar defects
    for metric in (
        "agent_a_said_deception_rate",
        "agent_b_said_trust_rate",
        "agent_a_said_promise_rate",
        "agent_a_declared_promise_rate",
    ):
        low, high = row[f"{metric}_ci_low"], row[f"{metric}_ci_high"]
        assert 0.0 <= low <= row[metric] <= high <= 1.0
        assert high - low > 0.0  # 10 games never give a zero-width interval


def test_the_mock_personas_talk_as_their_rules_say(talk_run: tuple[Path, Path]) -> None:
    """The cooperative persona promises C and keeps it; the exploitative one promises C and
    keeps it exactly as often as it chooses C (counted here from rounds.jsonl)."""
    run_dir = talk_run[0]
    row = _conditions(run_dir)[PERSONAS]
    assert row["agent_a_said_promise_rate"] == 1.0
    assert row["agent_a_said_promise_kept_rate"] == 1.0
    assert row["agent_a_said_deception_rate"] == 0.0 and row["agent_a_cooperation_rate"] == 1.0
    records = [r for r in _records(run_dir) if r["condition"] == PERSONAS]
    chose_c = sum(r["agent_b_intended_action"] == "C" for r in records)
    assert row["agent_b_said_promise_rate"] == 1.0
    assert row["agent_b_said_promise_kept_rate"] == pytest.approx(chose_c / len(records))
    assert 0.0 < row["agent_b_said_deception_rate"] < 1.0
    # talk changes the game: without it the cooperative persona sometimes defects
    silent = _conditions(run_dir)[SILENT]
    assert silent["agent_a_cooperation_rate"] < 1.0
    assert silent["agent_a_said_promise_rate"] is None and silent["agent_a_messages"] == 0


# What the texts of configs/talk.yaml say, read by hand (the policies' and the mock's).
SAYS_BY_HAND = {
    "I will cooperate.": "C",
    "I will defect.": "D",
    "I will cooperate. Let's both keep cooperating.": "C",
    "I will cooperate, you can trust me.": "C",
}


def _pooled_by_hand(records: list[dict[str, Any]], side: str) -> dict[str, float | None]:
    """Said and declared promise, kept and trust rates of one seat, pooled over a condition's
    rounds, computed from the JSON records with plain loops (a second implementation): said
    from the texts read by hand (SAYS_BY_HAND), declared from the declared intentions."""
    other = "agent_b" if side == "agent_a" else "agent_a"
    n = {k: 0 for k in ("msgs", "said", "decl", "sp", "sk", "dp", "dk", "recv", "trust")}
    for rec in records:
        mine = [m for m in rec.get("exchange", []) if m["from"] == side and m["text"]]
        theirs = [m for m in rec.get("exchange", []) if m["from"] == other and m["text"]]
        chose_c = rec[f"{side}_intended_action"] == "C"
        n["msgs"] += len(mine)
        n["said"] += sum(SAYS_BY_HAND[m["text"]] == "C" for m in mine)
        declared = [m["intent"] for m in mine if m["source"] == "declared"]
        n["decl"] += sum(x == "C" for x in declared)
        if mine and SAYS_BY_HAND[mine[-1]["text"]] == "C":
            n["sp"] += 1
            n["sk"] += chose_c
        if declared and declared[-1] == "C":
            n["dp"] += 1
            n["dk"] += chose_c
        if theirs and SAYS_BY_HAND[theirs[-1]["text"]] == "C":
            n["recv"] += 1
            n["trust"] += chose_c

    def ratio(a: str, b: str) -> float | None:
        return n[a] / n[b] if n[b] else None

    return {
        "said_promise_rate": ratio("said", "msgs"),
        "said_promise_kept_rate": ratio("sk", "sp"),
        "said_trust_rate": ratio("trust", "recv"),
        "declared_promise_rate": ratio("decl", "msgs"),
        "declared_promise_kept_rate": ratio("dk", "dp"),
    }


def test_talk_metrics_match_a_second_computation_from_rounds_jsonl(
    talk_run: tuple[Path, Path],
) -> None:
    run_dir = talk_run[0]
    records = _records(run_dir)
    for condition, row in _conditions(run_dir).items():
        mine = [r for r in records if r["condition"] == condition]
        assert len(mine) == N_ROUNDS * REPLICATES
        for side in ("agent_a", "agent_b"):
            for metric, value in _pooled_by_hand(mine, side).items():
                assert row[f"{side}_{metric}"] == pytest.approx(value), (condition, side, metric)


def test_pdbench_aggregate_gives_the_run_s_aggregates(talk_run: tuple[Path, Path]) -> None:
    run_dir = talk_run[0]
    before = pq.read_table(run_dir / "aggregates.parquet")
    aggregate_run_dir(run_dir)
    assert pq.read_table(run_dir / "aggregates.parquet").equals(before)


def test_a_cached_rerun_sends_no_request(talk_run: tuple[Path, Path], tmp_path: Path) -> None:
    run_dir, cache = talk_run
    cfg = run_dir.parent / "configs" / "talk.yaml"
    again = execute(cfg, output_dir=tmp_path / "again", cache_dir=cache)
    assert again.manifest["status"] == "completed"
    calls = [
        json.loads(x) for x in (tmp_path / "again" / "llm_calls.jsonl").read_text().splitlines()
    ]
    assert calls and all(c["cached"] for c in calls)
    purposes = {c["purpose"] for c in calls}
    assert purposes == {"move", "message"}
    strip = ("timestamp_utc",)
    first = [{k: v for k, v in r.items() if k not in strip} for r in _records(run_dir)]
    second = [{k: v for k, v in r.items() if k not in strip} for r in _records(tmp_path / "again")]
    assert first == second


def test_the_app_s_metric_table_shows_the_talk_metrics_of_a_talking_condition(
    talk_run: tuple[Path, Path],
) -> None:
    import pandas as pd

    from pdbench.ui import tables

    aggregates = pd.read_parquet(talk_run[0] / "aggregates.parquet")
    talking = tables.metric_summary(aggregates, LIAR, 0).set_index("metric")
    assert talking.loc["agent_a_said_deception_rate", "condition_mean"] == 1.0
    label = talking.loc["agent_a_said_deception_rate", "label"]
    assert label == "A deception: said C, chose D (next move) · said (as the partner read it)"
    assert "declared (private intention)" in talking.loc["agent_a_declared_deception_rate", "label"]
    assert "rules reader" in (tables.talk_note(aggregates, LIAR) or "")
    assert tables.talk_note(aggregates, SILENT) is None
    silent = tables.metric_summary(aggregates, SILENT, 0).set_index("metric")
    assert not set(silent.index) & tables.TALK_METRICS


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda d: d["communication"].update(mode="sometimes"),
            "talk.yaml: communication.mode: Input should be 'none', 'pregame' or 'every_round' "
            "(got 'sometimes')",
        ),
        (
            lambda d: d["experiment"]["conditions"][0]["agent_a"]["overrides"].update(talk="lie"),
            "talk.yaml: experiment.conditions[0].agent_a.overrides.talk: unknown message rule "
            "(got 'lie'; valid: silent, honest, always_promise, fixed)",
        ),
        (
            lambda d: d["experiment"]["conditions"][1]["agent_a"]["overrides"].update(talk="fixed"),
            "agents/policies.yaml: talk_text: the message of talk: fixed, and only of it: set it "
            "beside `talk` (got None)",
        ),
        (
            lambda d: d["run"].update(rounds_log="columns"),
            "talk.yaml: run.rounds_log: columns keeps no log of the messages of a game with a "
            "message channel",
        ),
    ],
)
def test_talk_config_errors_are_one_line_each(tmp_path: Path, edit: Any, expected: str) -> None:
    import yaml

    from pdbench.errors import ConfigError
    from pdbench.runners.config.loader import load_config

    shutil.copytree(REPO / "configs", tmp_path / "configs")
    path = tmp_path / "configs" / "talk.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, "experiment")
    lines = info.value.lines()
    assert any(line.startswith(str(path.parent / expected.split(": ")[0]) + ": ") for line in lines)
    assert any(expected.split(": ", 1)[1] in line for line in lines), lines
    assert all("\n" not in line for line in lines)


def test_said_and_declared_differ_when_the_message_and_the_intention_disagree(
    tmp_path: Path,
) -> None:
    """configs/talk_disagree.yaml, 2 games of 10 rounds per condition. The mock's liar writes
    "I will cooperate." (said C), declares D and plays D in every round. Against an honest
    TFT (C in round 1, then D, announced):
    - liar, said: 20 of 20 messages promise C: rate 1; 20 promises, none kept: deception 1;
      agreement 0/20.
    - liar, declared: 0 of 20 messages declare C: rate 0; no declared promise (kept rate
      None); declared agreement 20/20 = 1.
    - TFT's trust rests on what it read: 20 said promises received, C after 2 (round 1 of each
      game): 2/20; the liar's trust: after TFT's 2 said promises it defected: 0/2."""
    shutil.copytree(REPO / "configs", tmp_path / "configs")
    cfg = tmp_path / "configs" / "talk_disagree.yaml"
    cfg.write_text(cfg.read_text().replace("replicates: 5", "replicates: 2"))
    summary = execute(cfg, output_dir=tmp_path / "run", cache_dir=tmp_path / "cache")
    assert summary.manifest["status"] == "completed"
    row = _conditions(tmp_path / "run")["LLMliar_vs_TFT"]
    assert row["agent_a_messages"] == 20
    assert row["agent_a_said_promise_rate"] == 1.0 and row["agent_a_said_promises"] == 20
    assert row["agent_a_said_deception_rate"] == 1.0
    assert row["agent_a_said_agreement_rate"] == 0.0
    assert row["agent_a_declared_promise_rate"] == 0.0 and row["agent_a_declared_promises"] == 0
    assert row["agent_a_declared_promise_kept_rate"] is None
    assert row["agent_a_declared_agreement_rate"] == 1.0
    assert row["agent_b_said_promises_received"] == 20
    assert row["agent_b_said_trust_rate"] == pytest.approx(2 / 20)
    assert row["agent_a_said_promises_received"] == 2 and row["agent_a_said_trust_rate"] == 0.0


def test_the_report_shows_said_and_declared_apart_and_names_the_reader(
    talk_run: tuple[Path, Path],
) -> None:
    from pdbench.report.talk import talk_section

    rows = [r for r in pq.read_table(talk_run[0] / "aggregates.parquet").to_pylist()]
    html = talk_section([r for r in rows if r["scope"] == "condition"])
    assert "<h3>Said (as the partner read it)</h3>" in html
    assert "<h3>Declared (private intention)</h3>" in html
    assert "messages read by the rules reader" in html
    assert "said promises kept, standing" in html
    # aggregates written before issue 29 (old names): a one-line note, not a wrong table
    old = [
        {k.replace("said_promise_rate", "promise_rate"): v for k, v in r.items()}
        for r in rows
        if r["scope"] == "condition"
    ]
    html = talk_section(old)
    assert "pdbench aggregate" in html and "<table" not in html
