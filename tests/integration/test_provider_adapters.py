"""The SDK adapters over real HTTP: `openai` and `litellm` against FakeOpenAIServer (127.0.0.1
only).

Covered here: replies that arrive with HTTP 200 but cannot be read are retryable "malformed
reply" errors with one clear line, retried like transport faults; token counts that are not
counts never reach a Completion.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import run_in_process
from tests.support.configs import experiment, policy, write_config
from tests.support.openai_server import FakeOpenAIServer, Fault

from pdbench.agents.providers.base import Completion, CompletionRequest, ProviderError
from pdbench.agents.providers.base import provider_entry as entry
from pdbench.core.config import LLMAgentConfig

MODELS = {"openai": "test-model", "litellm": "openai/test-model", "anthropic": "claude-test"}
KEY_ENV = "PDBENCH_TEST_ADAPTER_KEY"
KEY = "sk-test-adapters-0001"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
SYSTEM = "You play the iterated prisoner's dilemma."
PROMPT = "Round 3.\nOpponent's last move: D\nYour move? Answer C or D."
REQUEST = CompletionRequest(SYSTEM, PROMPT, temperature=0.7, max_tokens=9, seed=2**62 + 5)
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
