"""Real-model honesty (issue 10) over real HTTP against FakeOpenAIServer and with the mock:
constrained answers, decision probabilities, the re-prompt as a conversation, every attempt's
facts (finish reason, truncation, served model, fingerprint), the model identity check, unknown
costs as unknown, fallbacks counted apart, and the first round's prompt.

Expected numbers are hand calculations: the fake server reports P(C) = 0.7 * 0.9 and
P(D) = 0.3 * 0.9 at a C/D letter (and 0.1 for "A"), so P(C) over C and D is 0.7 exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from tests.integration.test_provider_adapters import (
    KEY_ENV,
    MODELS,
    _offline_env,  # noqa: F401 - autouse fixture: no proxies, no real keys
    manifest,
    pdbench_run,
    read_jsonl,
    write_run,
)
from tests.support.configs import experiment, llm, policy, write_config
from tests.support.openai_server import FakeOpenAIServer

OUT = "out"


def rounds(tmp_path: Path) -> list[dict[str, Any]]:
    return read_jsonl(tmp_path / OUT / "rounds.jsonl")


def calls(tmp_path: Path) -> list[dict[str, Any]]:
    return read_jsonl(tmp_path / OUT / "llm_calls.jsonl")


def condition_row(tmp_path: Path) -> dict[str, Any]:
    rows = pq.read_table(tmp_path / OUT / "aggregates.parquet").to_pylist()
    (row,) = [r for r in rows if r["scope"] == "condition"]
    return row


def always(reply: str) -> Any:
    return lambda messages: reply


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_choice_and_logprobs_are_asked_for_and_give_p_cooperate(
    provider: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(always('{"action": "C"}'), models={"test-model"}) as srv:
        agent = {"output_format": "choice", "record_logprobs": True, "max_tokens": 20}
        cfg = write_run(tmp_path, provider, srv.base_url, agent=agent, n_rounds=3)
        code, _, err = pdbench_run(cfg, tmp_path, capsys)
        requests = srv.requests
    assert code == 0, err
    schema = requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["action"]["enum"] == ["C", "D"]
    assert schema["required"] == ["action"]
    assert all(r["logprobs"] is True and r["top_logprobs"] == 20 for r in requests)
    got = [r["agent_a_p_cooperate"] for r in rounds(tmp_path)]
    assert got == pytest.approx([0.7, 0.7, 0.7])
    assert all(r["agent_b_p_cooperate"] is None for r in rounds(tmp_path))  # ALLD: a policy
    row = condition_row(tmp_path)
    assert row["agent_a_mean_p_cooperate"] == pytest.approx(0.7)
    assert row["agent_b_mean_p_cooperate"] is None


def test_reprompt_is_a_new_turn_after_the_invalid_reply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def first_invalid(messages: list[dict[str, Any]]) -> str:
        return "D" if messages[-1]["role"] == "user" and len(messages) > 2 else "maybe"

    with FakeOpenAIServer(first_invalid) as srv:
        cfg = write_run(tmp_path, "openai", srv.base_url, n_rounds=2)
        code, _, err = pdbench_run(cfg, tmp_path, capsys)
        requests = srv.requests
    assert code == 0, err
    first, second = requests[0]["messages"], requests[1]["messages"]
    assert [m["role"] for m in first] == ["system", "user"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[:2] == first  # the round prompt is left as it was
    assert second[2]["content"] == "maybe"
    assert "invalid" in second[3]["content"] and "C or D" in second[3]["content"]
    assert [r["agent_a_action"] for r in rounds(tmp_path)] == ["D", "D"]
    assert not any(r["agent_a_parse_failure"] for r in rounds(tmp_path))


def test_every_attempt_records_finish_reason_truncation_and_served_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Three words against max_tokens 2: cut, so finish_reason "length"; the letter is lost.
    long = "thinking about it... C"
    fake = FakeOpenAIServer(always(long), served_as="test-model-2026-01", cut_at_max_tokens=True)
    with fake as srv:
        agent = {"max_tokens": 2, "max_retries": 1}
        cfg = write_run(tmp_path, "openai", srv.base_url, agent=agent, n_rounds=1)
        code, _, err = pdbench_run(cfg, tmp_path, capsys)
    assert code == 0, err
    log = [c for c in calls(tmp_path) if c["ok"]]
    assert len(log) == 2  # the first try and one re-prompt
    for record in log:
        assert record["finish_reason"] == "length" and record["truncated"] is True
        assert record["served_model"] == "test-model-2026-01"
        assert record["system_fingerprint"] == "fp_fake"
    (rec,) = rounds(tmp_path)
    attempts = rec["raw_responses"]["agent_a"]
    assert [a["truncated"] for a in attempts] == [True, True]
    assert "max_tokens=2" in attempts[0]["error"]
    assert rec["agent_a_parse_failure"] is True
    models = manifest(tmp_path)["models"]["openai:test-model"]
    assert models == {"listed": ["test-model"], "answered": ["test-model-2026-01"]}


def test_a_model_the_server_does_not_serve_stops_before_the_first_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(models={"llama-3.1-8b", "qwen2.5-7b"}) as srv:
        cfg = write_run(tmp_path, "openai", srv.base_url)
        code, _, err = pdbench_run(cfg, tmp_path, capsys)
        chats = srv.chat_count
    assert code == 2
    (line,) = [x for x in err.splitlines() if x.strip() and not x.startswith("warning:")]
    assert "model 'test-model' is not served (served: llama-3.1-8b, qwen2.5-7b)" in line
    assert "check_model: false" in line
    assert chats == 0
    assert manifest(tmp_path)["status"] == "failed"


def test_check_model_false_skips_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(models={"other"}) as srv:
        agent = {"check_model": False}
        cfg = write_run(tmp_path, "openai", srv.base_url, agent=agent)
        code, _, err = pdbench_run(cfg, tmp_path, capsys)
        chats = srv.chat_count
    assert code == 2 and chats == 1  # it asked; the server's own 404 then stopped the run
    assert "not served" not in err


def test_unknown_cost_is_null_everywhere_and_pricing_prices_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer() as srv:
        cfg = write_run(tmp_path / "a", "openai", srv.base_url, n_rounds=2)
        assert pdbench_run(cfg, tmp_path / "a", capsys)[0] == 0
        priced = {"pricing": {"input_per_mtok": 2.0, "output_per_mtok": 8.0}}
        cfg = write_run(tmp_path / "b", "openai", srv.base_url, agent=priced, n_rounds=2)
        assert pdbench_run(cfg, tmp_path / "b", capsys)[0] == 0
    unknown = [c for c in calls(tmp_path / "a") if c["ok"]]
    assert unknown and all(c["cost_usd"] is None for c in unknown)
    assert condition_row(tmp_path / "a")["agent_a_cost_usd"] is None
    usage = manifest(tmp_path / "a")["usage"]
    assert usage["total"]["cost_usd"] is None and usage["spent_all_sessions"]["cost_usd"] is None
    known = [c for c in calls(tmp_path / "b") if c["ok"]]
    for c in known:  # hand calculation: tokens times the price per token
        expected = c["input_tokens"] * 2.0 / 1e6 + c["output_tokens"] * 8.0 / 1e6
        assert c["cost_usd"] == pytest.approx(expected)
    total = sum(c["cost_usd"] for c in known)
    assert manifest(tmp_path / "b")["usage"]["total"]["cost_usd"] == pytest.approx(total)


def test_a_usd_budget_needs_a_known_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_run(tmp_path, "openai", "http://127.0.0.1:9/v1")
    data = json.loads(json.dumps(__import__("yaml").safe_load(cfg.read_text())))
    data["run"]["budget"] = {"max_calls": None, "max_tokens": None, "max_cost_usd": 1.0}
    cfg.write_text(__import__("yaml").safe_dump(data))
    code, _, err = pdbench_run(cfg, tmp_path, capsys)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert "experiment.yaml: experiment.conditions[0].agent_a: " in line
    assert "max_cost_usd needs this agent's price" in line
    assert not (tmp_path / OUT).exists()


def _mock_run(tmp_path: Path, agent: dict[str, Any], n_rounds: int = 40) -> Path:
    data = experiment(
        [("game", llm(**agent), policy("ALLC"))],
        horizon={"type": "fixed", "n_rounds": n_rounds},
        run={"run_id": "mock", "seed": 5, "output_dir": str(tmp_path / OUT)},
        replicates=2,
    )
    return write_config(data, tmp_path / "cfg", "experiment.yaml")


def test_fallbacks_are_counted_apart_from_decided_moves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = {"persona": "cooperative", "max_retries": 0, "mock": {"invalid_rate": 0.3}}
    cfg = _mock_run(tmp_path, agent)
    code, _, err = pdbench_run(cfg, tmp_path, capsys)
    assert code == 0, err
    recs = rounds(tmp_path)
    # A second computation, straight from the records, per game then averaged over games.
    rates, decided_rates = [], []
    for rep in (0, 1):
        game = [r for r in recs if r["replicate"] == rep]
        fallback = [r["agent_a_parse_failure"] for r in game]
        decided = [r["agent_a_action"] == "C" for r, f in zip(game, fallback, strict=True) if not f]
        rates.append(sum(fallback) / len(game))
        decided_rates.append(sum(decided) / len(decided))
    assert 0 < min(rates)  # some fallbacks happened (invalid_rate 0.3, no retries)
    row = condition_row(tmp_path)
    assert row["agent_a_fallback_rate"] == pytest.approx(sum(rates) / 2)
    assert row["agent_a_decided_cooperation_rate"] == pytest.approx(sum(decided_rates) / 2)
    assert row["agent_b_fallback_rate"] == 0.0
    assert row["agent_b_decided_cooperation_rate"] == 1.0  # ALLC


def test_mock_logprobs_give_the_personas_probability(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Against ALLC the cooperative mock cooperates with probability 0.9 in every round.
    agent = {"persona": "cooperative", "record_logprobs": True, "output_format": "choice"}
    cfg = _mock_run(tmp_path, agent, n_rounds=5)
    code, _, err = pdbench_run(cfg, tmp_path, capsys)
    assert code == 0, err
    assert [r["agent_a_p_cooperate"] for r in rounds(tmp_path)] == pytest.approx([0.9] * 10)
    assert condition_row(tmp_path)["agent_a_mean_p_cooperate"] == pytest.approx(0.9)


def test_the_first_round_prompt_reads_naturally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _mock_run(tmp_path, {"persona": "cooperative"}, n_rounds=3)
    assert pdbench_run(cfg, tmp_path, capsys)[0] == 0
    prompts = [r["prompts"]["agent_a"]["round"] for r in rounds(tmp_path)[:3]]
    assert "No rounds played yet." in prompts[0] and "Last 0 rounds" not in prompts[0]
    assert "Rounds so far (oldest first):\nRound 1: you played" in prompts[1]


@pytest.mark.parametrize(
    ("agent", "where", "words"),
    [
        ({"provider": "anthropic", "output_format": "choice"}, "output_format", "cannot constrain"),
        ({"provider": "anthropic", "record_logprobs": True}, "record_logprobs", "no log-prob"),
        ({"reprompt": "Try again {reason}"}, "reprompt", "unknown placeholder {reason}"),
        ({"answer_pattern": "(C|D"}, "answer_pattern", "not a valid regular expression"),
    ],
)
def test_what_a_provider_cannot_do_is_a_config_error(
    agent: dict[str, Any],
    where: str,
    words: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    provider = agent.pop("provider", "openai")
    cfg = write_run(tmp_path, provider, "http://127.0.0.1:9/v1", agent=agent)
    code, _, err = pdbench_run(cfg, tmp_path, capsys)
    assert code == 2
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("warning:")]
    assert len(lines) == 1 and where in lines[0] and words in lines[0], err
    assert MODELS[provider] and KEY_ENV  # the run used the adapter test's setup


def test_llamacpp_settings_belong_to_the_llamacpp_provider() -> None:
    from pydantic import ValidationError

    from pdbench.core.config import LLMAgentConfig

    base = {
        "type": "llm",
        "model": "m",
        "prompts": {"system": "s", "round": "r", "personas_dir": "p"},
    }
    with pytest.raises(ValidationError, match="n_ctx is a setting of the llamacpp provider"):
        LLMAgentConfig.model_validate({**base, "provider": "openai", "n_ctx": 4096})
    assert (
        LLMAgentConfig.model_validate({**base, "provider": "llamacpp", "n_ctx": 4096}).n_ctx == 4096
    )
