"""The SDK adapters over real HTTP: `anthropic` against FakeAnthropicServer, `openai` and
`litellm` against FakeOpenAIServer (127.0.0.1 only).

Covered here: the anthropic adapter works with the installed SDK (a call, fault classification,
whole runs); replies that arrive with HTTP 200 but cannot be read are retryable "malformed reply"
errors with one clear line, retried like transport faults; token counts that are not counts
never reach a Completion; and the agent's per-call seed reaches the providers that take one.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.support.anthropic_server import FakeAnthropicServer
from tests.support.cli import run_in_process
from tests.support.configs import experiment, policy, write_config
from tests.support.openai_server import FakeOpenAIServer, Fault

from pdbench.agents.providers.base import Completion, CompletionRequest, ProviderError
from pdbench.agents.providers.base import provider_entry as entry
from pdbench.core.config import LLMAgentConfig
from pdbench.core.rng import Purpose, agent_seed, counter_bits

MODELS = {"openai": "test-model", "litellm": "openai/test-model", "anthropic": "claude-test"}
KEY_ENV = "PDBENCH_TEST_ADAPTER_KEY"
KEY = "sk-test-adapters-0001"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
SYSTEM = "You play the iterated prisoner's dilemma."
PROMPT = "Round 3.\nOpponent's last move: D\nYour move? Answer C or D."
REQUEST = CompletionRequest(SYSTEM, PROMPT, temperature=0.7, max_tokens=9, seed=2**62 + 5)
# The fake Messages API's "D" reply: 18 tokens in, 1 out, stopped at the end of its turn.
ANTHROPIC_D = Completion("D", 18, 1, finish_reason="end_turn", served_model="claude-test")
# What a one-line error must never show: Python internals of a failed attribute or index access.
INTERNALS = ("NoneType", "has no attribute", "not subscriptable", "index out of range", "Traceback")


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """127.0.0.1 never goes through a proxy; no real key can reach the test servers."""
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv(KEY_ENV, KEY)


def agent_cfg(provider: str, base_url: str, **extra: Any) -> LLMAgentConfig:
    return LLMAgentConfig.model_validate(
        {"type": "llm", "provider": provider, "model": MODELS[provider], "base_url": base_url,
         "timeout_s": 20, "prompts": {"system": "s", "round": "r", "personas_dir": "p"},
         **extra}
    )  # fmt: skip


def call(
    provider: str,
    base_url: str,
    request: CompletionRequest = REQUEST,
    *,
    key: str | None = KEY,
    times: int = 1,
    **extra: Any,
) -> list[Completion | ProviderError]:
    """`times` calls through one adapter; each result is the Completion or the ProviderError."""

    async def run() -> list[Completion | ProviderError]:
        client = entry(provider).factory(agent_cfg(provider, base_url, **extra), key)
        out: list[Completion | ProviderError] = []
        try:
            for _ in range(times):
                try:
                    out.append(await client.complete(request))
                except ProviderError as error:
                    out.append(error)
        finally:
            await client.aclose()
        return out

    return asyncio.run(run())


def one_line(error: Completion | ProviderError) -> str:
    """The error's message, checked to be one line without Python internals."""
    assert isinstance(error, ProviderError), error
    message = str(error)
    assert "\n" not in message and message.strip() == message
    assert not any(word in message for word in INTERNALS), message
    assert KEY not in message
    return message


def write_run(
    tmp_path: Path,
    provider: str,
    base_url: str,
    *,
    agent: dict[str, Any] | None = None,
    self_play: bool = False,
    n_rounds: int = 6,
) -> Path:
    """One game (one condition, one replicate) of an LLM agent (`provider` at `base_url`, key
    in KEY_ENV) against ALLD, or against itself."""
    overrides = {
        "provider": provider, "model": MODELS[provider], "base_url": base_url,
        "api_key_env": KEY_ENV, "persona": "tit_for_tat", "timeout_s": 20, "temperature": 0.3,
        "max_tokens": 7,
        "transport": {"max_retries": 5, "backoff_initial_s": 0.01, "backoff_max_s": 0.05},
        **(agent or {}),
    }  # fmt: skip
    llm = {"ref": "agents/llm_default.yaml", "overrides": overrides}
    data = experiment(
        [("game", llm, llm if self_play else policy("ALLD"))],
        horizon={"type": "fixed", "n_rounds": n_rounds},
        run={"run_id": "adapters", "seed": 11, "output_dir": str(tmp_path / "out")},
    )
    return write_config(data, tmp_path / "cfg", "experiment.yaml")


def pdbench_run(
    cfg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    args = ["run", str(cfg), "--concurrency", "1", "--cache-dir", str(tmp_path / "cache")]
    return run_in_process(args, capsys)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def manifest(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "out" / "run_manifest.json").read_text(encoding="utf-8"))


# --------------------------------------------------------------------------------------------
# the anthropic adapter
# --------------------------------------------------------------------------------------------


def test_anthropic_call_sends_prompts_and_max_tokens_and_reads_text_and_usage() -> None:
    with FakeAnthropicServer(api_key=KEY) as srv:
        (result,) = call("anthropic", srv.base_url)
    assert result == Completion(
        "D", input_tokens=18, output_tokens=1, finish_reason="end_turn", served_model="claude-test"
    )
    (rec,) = srv.requests
    assert rec["status"] == 200 and rec["model"] == "claude-test"
    assert rec["system"] == SYSTEM
    assert rec["messages"] == [{"role": "user", "content": PROMPT}]
    assert rec["max_tokens"] == 9
    assert rec["auth"] is not None and rec["anthropic_version"]
    # The SDK's API version has no sampling parameters and no seed: sending either is a 400.
    assert rec["fields"] == ["max_tokens", "messages", "model", "system"]


@pytest.mark.parametrize(
    ("fault", "words", "retry_after"),
    [
        (Fault("429", retry_after=0.2), ("429",), 0.2),
        (Fault("529"), ("529", "overloaded"), None),
        (Fault("500"), ("500",), None),
        (Fault("503", retry_after=1), ("503",), 1.0),
        (Fault("slow", delay_s=1.0), ("timed out",), None),
        (Fault("disconnect"), ("connection",), None),
        (Fault("malformed"), ("malformed reply", "not valid json"), None),
    ],
    ids=lambda v: v.kind if isinstance(v, Fault) else None,
)
def test_anthropic_transient_faults_are_retryable(
    fault: Fault, words: tuple[str, ...], retry_after: float | None
) -> None:
    # a short timeout only where the fault is a slow reply (on a loaded machine a 500 can take
    # longer than 0.3 s to arrive, and would read as a timeout)
    timeout_s = 0.3 if fault.kind == "slow" else 10.0
    with FakeAnthropicServer(api_key=KEY, faults={1: fault}) as srv:
        failed, recovered = call("anthropic", srv.base_url, times=2, timeout_s=timeout_s)
    message = one_line(failed)
    assert isinstance(failed, ProviderError) and failed.retryable is True, message
    assert failed.retry_after == retry_after
    for word in words:
        assert word in message.lower()
    assert recovered == ANTHROPIC_D


@pytest.mark.parametrize(
    ("server", "key", "words"),
    [
        ({"api_key": KEY}, "sk-test-wrong-key-999", ("401", "authentication")),
        ({"api_key": KEY, "models": {"claude-other"}}, KEY, ("404", "not found")),
    ],
    ids=["wrong_key", "unknown_model"],
)
def test_anthropic_fatal_errors_are_not_retryable(
    server: dict[str, Any], key: str, words: tuple[str, ...]
) -> None:
    with FakeAnthropicServer(**server) as srv:
        (failed,) = call("anthropic", srv.base_url, key=key)
    message = one_line(failed)
    assert isinstance(failed, ProviderError) and failed.retryable is False
    assert key not in message
    for word in words:
        assert word in message.lower()


def test_anthropic_keyless_local_server_gets_a_placeholder_key() -> None:
    """`api_key_env: null` (a local Messages-compatible server): the SDK refuses to send a
    request without some key, and must not go looking for one in the environment."""
    with FakeAnthropicServer() as srv:
        (result,) = call("anthropic", srv.base_url, key=None)
    assert result == ANTHROPIC_D


def _message(**fields: Any) -> dict[str, Any]:
    """A Messages API reply ("C", 3 tokens in, 1 out) with `fields` replaced (None: left out)."""
    body = {"id": "msg_x", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [{"type": "text", "text": "C"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 1}, **fields}  # fmt: skip
    return {k: v for k, v in body.items() if v is not None}


ANTHROPIC_MALFORMED = {
    "no_content": Fault("body", body=_message(content=None)),
    "content_is_a_string": Fault("body", body=_message(content="C")),
    "text_is_not_a_string": Fault("body", body=_message(content=[{"type": "text", "text": 5}])),
    "block_is_not_an_object": Fault("body", body=_message(content=["C"])),
    "html_body": Fault("body", body="<html>Bad gateway</html>", content_type="text/html"),
    "json_array": Fault("body", body=[1, 2]),
    "truncated_json": Fault("malformed"),
}


@pytest.mark.parametrize("case", sorted(ANTHROPIC_MALFORMED))
def test_anthropic_malformed_replies_are_retryable(case: str) -> None:
    with FakeAnthropicServer(faults={1: ANTHROPIC_MALFORMED[case]}) as srv:
        failed, recovered = call("anthropic", srv.base_url, times=2)
    message = one_line(failed)
    assert message.startswith("malformed reply: "), message
    assert isinstance(failed, ProviderError) and failed.retryable is True
    assert recovered == ANTHROPIC_D


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # Empty content is a reply with no text; only text blocks are the reply's text.
        (_message(content=[]), Completion("", 3, 1)),
        (
            _message(
                content=[
                    {"type": "thinking", "thinking": "hmm", "signature": "s"},
                    {"type": "text", "text": "C"},
                    {"type": "text", "text": "D"},
                ]
            ),
            Completion("CD", 3, 1),
        ),  # fmt: skip
        (_message(usage=None), Completion("C", None, None)),
        (_message(usage={"input_tokens": "twelve", "output_tokens": -1}), Completion("C")),
        (_message(usage={"input_tokens": 2.5, "output_tokens": True}), Completion("C")),
        (_message(usage={"input_tokens": 4.0, "output_tokens": 2}), Completion("C", 4, 2)),
    ],
    ids=["empty", "text_blocks_only", "no_usage", "bad_counts", "odd_counts", "float_count"],
)
def test_anthropic_reply_text_and_token_counts(body: dict[str, Any], expected: Completion) -> None:
    with FakeAnthropicServer(faults={1: Fault("body", body=body)}) as srv:
        (result,) = call("anthropic", srv.base_url)
    assert (result.finish_reason, result.served_model) == ("end_turn", "claude-test")
    assert replace(result, finish_reason=None, served_model=None) == expected
    assert isinstance(result, Completion)
    assert all(type(t) is int or t is None for t in (result.input_tokens, result.output_tokens))


def test_anthropic_run_plays_over_http_and_retries_faults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    faults = {
        2: Fault("429", retry_after=0.05),
        4: Fault("529"),
        6: Fault("body", body=_message(content=None)),
        8: Fault("malformed"),
    }
    with FakeAnthropicServer(api_key=KEY, faults=faults) as srv:
        cfg = write_run(tmp_path, "anthropic", srv.base_url)
        code, out, err = pdbench_run(cfg, tmp_path, capsys)
        requests = srv.requests
    assert code == 0, err
    rounds = read_jsonl(tmp_path / "out" / "rounds.jsonl")
    # The fake answers tit for tat from the prompt; ALLD always defects.
    assert [r["agent_a_action"] for r in rounds] == ["C", "D", "D", "D", "D", "D"]
    assert all(r["agent_a_parse_failure"] is False for r in rounds)
    calls = read_jsonl(tmp_path / "out" / "llm_calls.jsonl")
    assert len(calls) == len(requests) == 6 + len(faults)
    failed = [c for c in calls if not c["ok"]]
    assert [c["retryable"] for c in failed] == [True] * 4
    assert [c["transport_try"] for c in failed] == [0, 0, 0, 0]
    assert "429" in failed[0]["error"] and "529" in failed[1]["error"]
    assert failed[2]["error"] == "malformed reply: no content"
    assert failed[3]["error"].startswith("malformed reply: not valid JSON")
    ok = [c for c in calls if c["ok"]]
    assert all(c["input_tokens"] > 0 and c["output_tokens"] == 1 for c in ok)
    for rec, req in zip(rounds, [r for r in requests if r["fault"] is None], strict=True):
        assert req["system"] == rec["prompts"]["agent_a"]["system"]
        assert req["messages"] == [{"role": "user", "content": rec["prompts"]["agent_a"]["round"]}]
    assert {r["max_tokens"] for r in requests} == {7}
    assert all(r["temperature"] is None and r["seed"] is None for r in requests)
    usage = manifest(tmp_path)["usage"]["total"]
    assert usage["llm_calls"] == 6
    assert usage["output_tokens"] == 6


def test_anthropic_run_with_a_wrong_key_fails_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-wrong-key-999")
    with FakeAnthropicServer(api_key=KEY) as srv:
        cfg = write_run(tmp_path, "anthropic", srv.base_url)
        code, out, err = pdbench_run(cfg, tmp_path, capsys)
        n_requests = srv.chat_count
    assert code == 2, err
    (line,) = [x for x in err.splitlines() if x.strip() and not x.startswith("warning:")]
    assert any("anthropic provider sends no temperature" in x for x in err.splitlines())
    assert "authentication" in line and "anthropic" in line and "claude-test" in line
    assert "sk-test-wrong-key-999" not in err and "Traceback" not in err
    assert n_requests == 1  # fatal: never retried
    assert manifest(tmp_path)["status"] == "failed"


# --------------------------------------------------------------------------------------------
# malformed OpenAI-shaped replies (openai, litellm)
# --------------------------------------------------------------------------------------------


def _choice(message: Any) -> list[dict[str, Any]]:
    return [{"index": 0, "message": message, "finish_reason": "stop"}]


def _chat(**fields: Any) -> dict[str, Any]:
    """A chat completion ("C", 3 tokens in, 1 out) with `fields` replaced (None: left out)."""
    body = {"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "test-model",
            "choices": _choice({"role": "assistant", "content": "C"}),
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
            **fields}  # fmt: skip
    return {k: v for k, v in body.items() if v is not None}


NO_CHOICES = Fault("body", body=_chat(choices=None))
CHAT_MALFORMED = {
    "no_choices": NO_CHOICES,
    "empty_choices": Fault("body", body=_chat(choices=[])),
    "html_body": Fault("body", body="<html>Bad gateway</html>", content_type="text/html"),
    "json_array": Fault("body", body=[1, 2]),
    "no_message": Fault("body", body=_chat(choices=_choice(None))),
    "content_is_a_number": Fault("body", body=_chat(choices=_choice({"content": 5}))),
    "truncated_json": Fault("malformed"),
}
OPENAI_MESSAGES = {
    "no_choices": "malformed reply: no choices",
    "empty_choices": "malformed reply: no choices",
    "html_body": "malformed reply: not JSON (a text body)",
    "json_array": "malformed reply: not a JSON object (list)",
    "no_message": "malformed reply: the first choice has no message",
    "content_is_a_number": "malformed reply: the message content is not text (int)",
}


@pytest.mark.parametrize("case", sorted(CHAT_MALFORMED))
@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_malformed_chat_replies_are_retryable_with_one_clear_line(provider: str, case: str) -> None:
    with FakeOpenAIServer(faults={1: CHAT_MALFORMED[case]}) as srv:
        failed, recovered = call(provider, srv.base_url, times=2)
    message = one_line(failed)
    assert message.startswith("malformed reply: "), message
    assert isinstance(failed, ProviderError) and failed.retryable is True
    if provider == "openai" and case in OPENAI_MESSAGES:
        assert message == OPENAI_MESSAGES[case]
    assert isinstance(recovered, Completion) and recovered.text == "D"


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_null_content_is_an_empty_reply(provider: str) -> None:
    body = _chat(choices=_choice({"role": "assistant", "content": None}))
    with FakeOpenAIServer(faults={1: Fault("body", body=body)}) as srv:
        (result,) = call(provider, srv.base_url)
    assert isinstance(result, Completion)
    assert (result.text, result.input_tokens, result.output_tokens) == ("", 3, 1)


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": "twelve", "completion_tokens": -1},
        {"prompt_tokens": 2.5, "completion_tokens": None},
        {"prompt_tokens": [3], "completion_tokens": {"n": 1}},
    ],
    ids=["string_and_negative", "fraction_and_null", "list_and_object"],
)
@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_token_counts_that_are_not_counts_never_reach_a_completion(
    provider: str, usage: dict[str, Any]
) -> None:
    with FakeOpenAIServer(faults={1: Fault("body", body=_chat(usage=usage))}) as srv:
        (result,) = call(provider, srv.base_url)
    if isinstance(result, Completion):
        assert result.text == "C"
        assert (result.input_tokens, result.output_tokens) == (None, None)
    else:  # litellm refuses such a body itself: then it is a malformed reply
        assert provider == "litellm"
        assert one_line(result).startswith("malformed reply: ") and result.retryable is True


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_malformed_replies_are_retried_and_the_run_completes(
    tmp_path: Path, provider: str, capsys: pytest.CaptureFixture[str]
) -> None:
    faults = {
        2: NO_CHOICES,
        4: CHAT_MALFORMED["html_body"],
        6: CHAT_MALFORMED["no_message"],
        # openai takes this reply (without token counts): it answers round 5 as tit for tat.
        8: Fault(
            "body",
            body=_chat(
                choices=_choice({"role": "assistant", "content": "D"}),
                usage={"prompt_tokens": "many", "completion_tokens": 1},
            ),
        ),  # fmt: skip
    }
    with FakeOpenAIServer(api_key=KEY, faults=faults) as srv:
        cfg = write_run(tmp_path, provider, srv.base_url)
        code, out, err = pdbench_run(cfg, tmp_path, capsys)
        requests = srv.requests
    assert code == 0, err
    rounds = read_jsonl(tmp_path / "out" / "rounds.jsonl")
    assert [r["agent_a_action"] for r in rounds] == ["C", "D", "D", "D", "D", "D"]
    calls = read_jsonl(tmp_path / "out" / "llm_calls.jsonl")
    assert len(calls) == len(requests)
    failed = [c for c in calls if not c["ok"]]
    if provider == "openai":  # the reply with a bad token count is a reply without counts
        assert len(failed) == 3
        assert [c["input_tokens"] for c in calls if c["ok"]].count(None) == 1
    else:  # litellm refuses to read that reply
        assert len(failed) == 4
    for c in failed:
        assert c["retryable"] is True and c["error"].startswith("malformed reply: ")
        assert not any(word in c["error"] for word in INTERNALS)
    for c in calls:
        for count in (c.get("input_tokens"), c.get("output_tokens")):
            assert count is None or type(count) is int
    assert manifest(tmp_path)["status"] == "completed"


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_only_malformed_replies_fail_the_run_with_one_line(
    tmp_path: Path, provider: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(api_key=KEY, fault_every=(1, NO_CHOICES)) as srv:
        transport = {"max_retries": 2, "backoff_initial_s": 0.01}
        cfg = write_run(tmp_path, provider, srv.base_url, agent={"transport": transport})
        code, out, err = pdbench_run(cfg, tmp_path, capsys)
        n_requests = srv.chat_count
    assert code == 2, err
    assert n_requests == 3  # the first call, then two retries
    (line,) = [line for line in err.splitlines() if line.strip()]
    assert "gave up after 3 attempts" in line and "malformed reply: no choices" in line
    assert provider in line and MODELS[provider] in line
    assert not any(word in err for word in INTERNALS)
    calls = read_jsonl(tmp_path / "out" / "llm_calls.jsonl")
    attempts = [(c["ok"], c["retryable"], c["transport_try"]) for c in calls]
    assert attempts == [(False, True, 0), (False, True, 1), (False, True, 2)]
    assert manifest(tmp_path)["status"] == "failed"


# --------------------------------------------------------------------------------------------
# the per-call seed
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_the_request_seed_reaches_the_server(provider: str) -> None:
    unseeded = CompletionRequest(SYSTEM, PROMPT, 0.0, 5)
    with FakeOpenAIServer() as srv:
        seeded_result, unseeded_result = (
            call(provider, srv.base_url, request)[0] for request in (REQUEST, unseeded)
        )
        seeds = [r["seed"] for r in srv.requests]
    assert isinstance(seeded_result, Completion) and isinstance(unseeded_result, Completion)
    assert seeds == [2**62 + 5, None]


def test_litellm_leaves_the_seed_out_for_a_provider_without_one() -> None:
    """litellm refuses a seed for Anthropic models (UnsupportedParamsError) before any request;
    the adapter sends one only where litellm takes it."""
    with FakeAnthropicServer(api_key=KEY) as srv:
        (result,) = call("litellm", srv.base_url, model="anthropic/claude-test")
        requests = srv.requests
    assert isinstance(result, Completion), result
    assert result.text == "D"
    (rec,) = requests
    assert rec["seed"] is None and "seed" not in rec["fields"]


def _call_seed(game_seed: int, side: int, round_index: int, attempt: int) -> int:
    """The per-call seed of an LLM agent (LLMAgent.call_seed after reset(agent_seed(...)))."""
    return counter_bits(agent_seed(game_seed, side), round_index, Purpose.PROVIDER, attempt) >> 1


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_each_call_carries_its_agents_own_seed(
    tmp_path: Path, provider: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two LLM agents play each other through the server; one reply is not a move, so one
    call is a re-prompt. Every request carries the seed of its side, round and attempt."""
    n = 4
    faults = {3: Fault("invalid_action", content="maybe")}
    with FakeOpenAIServer(api_key=KEY, faults=faults) as srv:
        cfg = write_run(tmp_path, provider, srv.base_url, n_rounds=n, self_play=True)
        code, out, err = pdbench_run(cfg, tmp_path, capsys)
        requests = srv.requests
    assert code == 0, err
    rounds = read_jsonl(tmp_path / "out" / "rounds.jsonl")
    game_seed = rounds[0]["seed"]
    retried = [
        (side, r["round_index"])
        for r in rounds
        for side, key in enumerate(("agent_a", "agent_b"))
        if len(r["raw_responses"][key]) == 2
    ]
    assert len(retried) == 1
    (side, round_index) = retried[0]
    expected = sorted(
        [_call_seed(game_seed, s, r, 0) for s in (0, 1) for r in range(n)]
        + [_call_seed(game_seed, side, round_index, 1)]
    )
    assert len(set(expected)) == 2 * n + 1  # sides, rounds and attempts all differ
    assert sorted(r["seed"] for r in requests) == expected
    faulted = next(r for r in requests if r["fault"] == "invalid_action")
    assert faulted["seed"] == _call_seed(game_seed, side, round_index, 0)
