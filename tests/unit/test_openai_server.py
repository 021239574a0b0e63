"""Tests of the offline OpenAI-compatible test server (tests/support/openai_server.py)."""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

try:
    from tests.support.openai_server import FakeOpenAIServer, Fault, always
except ModuleNotFoundError:  # repo root not on sys.path (pytest has no `pythonpath` setting)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.support.openai_server import FakeOpenAIServer, Fault, always

KEY = "sk-test-0123456789abcdef"
PROMPT = "Round 3.\nOpponent's last move: D\nYour move? Answer C or D."


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make sure no HTTP client routes 127.0.0.1 traffic through a proxy."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def chat(
    srv: FakeOpenAIServer,
    content: str = "Opponent's last move: C",
    *,
    model: str = "test-model",
    key: str | None = None,
    timeout: float = 2.0,
) -> httpx.Response:
    """POST one chat completion with httpx (no env proxies, no retries; plain HTTP, so
    ``verify=False`` only skips loading a CA bundle)."""
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    body: dict[str, Any] = {
        "model": model,
        "messages": [
            {"role": "system", "content": "You play the iterated prisoner's dilemma."},
            {"role": "user", "content": content},
        ],
        "temperature": 0.0,
        "max_tokens": 5,
    }
    with httpx.Client(trust_env=False, verify=False, timeout=timeout) as client:
        return client.post(f"{srv.base_url}/chat/completions", json=body, headers=headers)


def test_normal_reply_shape_and_usage(server: FakeOpenAIServer) -> None:
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
    resp = chat(server, "Opponent's last move: C")
    assert resp.status_code == 200
    data = resp.json()
    assert data["object"] == "chat.completion"
    assert data["model"] == "test-model"
    assert isinstance(data["id"], str) and isinstance(data["created"], int)
    (choice,) = data["choices"]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert choice["message"] == {"role": "assistant", "content": "C"}
    # 6 words of system prompt + 4 of user prompt; 1 word of reply.
    assert data["usage"] == {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
    (rec,) = server.requests
    assert rec["index"] == 1 and rec["path"] == "/v1/chat/completions"
    assert rec["model"] == "test-model" and rec["messages"][1]["role"] == "user"
    assert rec["temperature"] == 0.0 and rec["max_tokens"] == 5
    assert rec["had_auth"] is False and rec["fault"] is None and rec["status"] == 200
    assert server.chat_count == 1 and server.error_count == 0


def test_default_strategy_is_tit_for_tat_from_prompt(server: FakeOpenAIServer) -> None:
    assert chat(server, PROMPT).json()["choices"][0]["message"]["content"] == "D"
    assert (
        chat(server, "First round, no history.").json()["choices"][0]["message"]["content"] == "C"
    )


def test_custom_strategy_and_unprefixed_path() -> None:
    with (
        FakeOpenAIServer(always("D")) as srv,
        httpx.Client(trust_env=False, verify=False) as client,
    ):
        url = srv.base_url.removesuffix("/v1") + "/chat/completions"
        body = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}]}
        resp = client.post(url, json=body)
    assert resp.json()["choices"][0]["message"]["content"] == "D"
    assert srv.requests[0]["path"] == "/chat/completions"


def test_models_endpoint_lists_known_models() -> None:
    with FakeOpenAIServer(models={"b-model", "a-model"}) as srv:
        data = httpx.get(f"{srv.base_url}/models", trust_env=False, verify=False).json()
    assert data["object"] == "list"
    assert [m["id"] for m in data["data"]] == ["a-model", "b-model"]


def test_wrong_or_missing_key_is_401_without_echoing_key() -> None:
    wrong = "sk-wrong-key-should-not-appear"
    with FakeOpenAIServer(api_key=KEY) as srv:
        bad = chat(srv, key=wrong)
        missing = chat(srv)
        good = chat(srv, key=KEY)
        models = httpx.get(f"{srv.base_url}/models", trust_env=False, verify=False)
    assert bad.status_code == 401 and missing.status_code == 401 and models.status_code == 401
    err = bad.json()["error"]
    assert err["type"] == "invalid_request_error" and err["code"] == "invalid_api_key"
    for resp in (bad, missing, models):
        assert wrong not in resp.text and KEY not in resp.text
    assert good.status_code == 200
    assert [(r["had_auth"], r["status"]) for r in srv.requests] == [
        (True, 401),
        (False, 401),
        (True, 200),
    ]
    assert KEY not in repr(srv.requests)


def test_unknown_model_is_404(server: FakeOpenAIServer) -> None:
    resp = chat(server, model="gpt-nope")
    assert resp.status_code == 404
    assert resp.json()["error"]["code"] == "model_not_found"


@pytest.mark.parametrize("kind", ["429", "503"])
def test_retryable_status_faults_carry_retry_after(kind: str) -> None:
    with FakeOpenAIServer(faults={1: Fault(kind, retry_after=0.2)}) as srv:  # type: ignore[arg-type]
        first, second = chat(srv), chat(srv)
    assert first.status_code == int(kind)
    assert first.headers["Retry-After"] == "0.2"
    assert "error" in first.json()
    assert second.status_code == 200
    assert [r["fault"] for r in srv.requests] == [kind, None]


def test_integral_retry_after_is_sent_as_integer_seconds() -> None:
    with FakeOpenAIServer(faults={1: Fault("503", retry_after=2.0)}) as srv:
        assert chat(srv).headers["Retry-After"] == "2"


def test_500_fault() -> None:
    with FakeOpenAIServer(faults={1: Fault("500", retry_after=1)}) as srv:
        resp = chat(srv)
    assert resp.status_code == 500 and "Retry-After" not in resp.headers
    assert resp.json()["error"]["type"] == "server_error"


def test_malformed_fault_is_200_but_not_json() -> None:
    with FakeOpenAIServer(faults={1: Fault("malformed")}) as srv:
        resp = chat(srv)
    assert resp.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(resp.text)


def test_body_fault_sends_the_given_body_and_content_type() -> None:
    faults = {
        1: Fault("body", body={"id": "x", "choices": []}),
        2: Fault("body", body="<html>Bad gateway</html>", content_type="text/html"),
        3: Fault("body", body=b"[1, 2]"),
    }
    with FakeOpenAIServer(faults=faults) as srv:
        replies = [chat(srv) for _ in range(4)]
    assert [r.status_code for r in replies] == [200] * 4
    assert replies[0].json() == {"id": "x", "choices": []}
    assert replies[0].headers["Content-Type"] == "application/json"
    assert replies[1].text == "<html>Bad gateway</html>"
    assert replies[1].headers["Content-Type"] == "text/html"
    assert replies[2].json() == [1, 2]
    assert replies[3].json()["choices"][0]["message"]["content"] == "C"
    assert [r["fault"] for r in srv.requests] == ["body", "body", "body", None]


def test_529_fault_and_seed_is_recorded() -> None:
    with FakeOpenAIServer(faults={1: Fault("529", retry_after=1)}) as srv:
        body = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}], "seed": 7}
        with httpx.Client(trust_env=False, verify=False) as client:
            first = client.post(f"{srv.base_url}/chat/completions", json=body)
            second = client.post(f"{srv.base_url}/chat/completions", json={**body, "seed": 8})
        unseeded = chat(srv).status_code
    assert (first.status_code, first.headers["Retry-After"]) == (529, "1")
    assert second.status_code == 200 and unseeded == 200
    assert [r["seed"] for r in srv.requests] == [7, 8, None]


def test_invalid_action_fault_replaces_content() -> None:
    faults = {1: Fault("invalid_action"), 2: Fault("invalid_action", content="Z")}
    with FakeOpenAIServer(faults=faults) as srv:
        contents = [chat(srv).json()["choices"][0]["message"]["content"] for _ in range(3)]
    assert contents == ["I think I will cooperate, maybe.", "Z", "C"]


def test_slow_fault_exceeds_short_client_timeout_then_recovers() -> None:
    with FakeOpenAIServer(faults={1: Fault("slow", delay_s=0.3)}) as srv:
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            chat(srv, timeout=0.1)
        assert time.monotonic() - started < 0.3
        assert chat(srv).status_code == 200
    assert [r["fault"] for r in srv.requests] == ["slow", None]


def test_slow_fault_answers_normally_when_client_waits() -> None:
    with FakeOpenAIServer(faults={1: Fault("slow", delay_s=0.15)}) as srv:
        started = time.monotonic()
        resp = chat(srv, PROMPT)
    assert time.monotonic() - started >= 0.15
    assert resp.json()["choices"][0]["message"]["content"] == "D"


def test_disconnect_fault_raises_transport_error() -> None:
    with FakeOpenAIServer(faults={1: Fault("disconnect")}) as srv:
        with pytest.raises(httpx.TransportError):
            chat(srv)
        assert chat(srv).status_code == 200
    assert [(r["fault"], r["status"]) for r in srv.requests] == [("disconnect", None), (None, 200)]


def test_fault_every_and_latency() -> None:
    with FakeOpenAIServer(fault_every=(2, Fault("500")), latency_s=0.02) as srv:
        started = time.monotonic()
        codes = [chat(srv).status_code for _ in range(4)]
    assert codes == [200, 500, 200, 500]
    assert time.monotonic() - started >= 4 * 0.02


def test_concurrent_requests_get_unique_indexes(server: FakeOpenAIServer) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = list(pool.map(lambda _: chat(server).status_code, range(16)))
    assert codes == [200] * 16
    assert server.chat_count == 16
    assert sorted(r["index"] for r in server.requests) == list(range(1, 17))


def test_stop_is_prompt_idempotent_and_frees_port() -> None:
    srv = FakeOpenAIServer(faults={1: Fault("slow", delay_s=5.0)}).start()
    port = srv.port
    with pytest.raises(httpx.ReadTimeout):
        chat(srv, timeout=0.05)  # leaves a handler waiting in the slow fault
    started = time.monotonic()
    srv.stop()
    srv.stop()
    assert time.monotonic() - started < 0.5
    with pytest.raises(RuntimeError):
        _ = srv.base_url
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()


def test_openai_sdk_client_against_server() -> None:
    with FakeOpenAIServer(api_key=KEY) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key=KEY, max_retries=0, timeout=2.0)
        completion = client.chat.completions.create(
            model="test-model",
            messages=[{"role": "user", "content": PROMPT}],
            temperature=0.0,
            max_tokens=5,
        )
        client.close()
    assert completion.choices[0].message.content == "D"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == 12
    assert completion.usage.completion_tokens == 1
    assert completion.usage.total_tokens == 13
    assert srv.requests[0]["had_auth"] is True


def test_openai_sdk_maps_faults_to_its_errors() -> None:
    faults = {1: Fault("429", retry_after=0.05), 3: Fault("429", retry_after=0.05)}
    with FakeOpenAIServer(api_key=KEY, faults=faults) as srv:
        strict, retrying = (
            openai.OpenAI(
                base_url=srv.base_url,
                api_key=KEY,
                max_retries=retries,
                timeout=2.0,
                http_client=httpx.Client(trust_env=False, verify=False),
            )
            for retries in (0, 1)
        )
        messages: list[Any] = [{"role": "user", "content": "hi"}]
        with pytest.raises(openai.RateLimitError):
            strict.chat.completions.create(model="test-model", messages=messages)
        with pytest.raises(openai.NotFoundError):
            strict.chat.completions.create(model="other", messages=messages)
        ok = retrying.chat.completions.create(model="test-model", messages=messages)  # 3 -> 4
        strict.close()
        retrying.close()
    assert ok.choices[0].message.content == "C"
    assert [r["status"] for r in srv.requests] == [429, 404, 429, 200]
