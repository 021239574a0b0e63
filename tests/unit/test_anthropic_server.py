"""Tests of the offline Anthropic Messages API test server (tests/support/anthropic_server.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest
from tests.support.anthropic_server import FakeAnthropicServer
from tests.support.openai_server import Fault

KEY = "sk-ant-test-0123456789"
NEW = "2026-10-21"
OLD = "2023-06-01"
PROMPT = "Round 3.\nOpponent's last move: D\nYour move? Answer C or D."


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key=KEY) as srv:
        yield srv


def post(
    srv: FakeAnthropicServer,
    content: str = "Opponent's last move: C",
    *,
    headers: dict[str, str] | None = None,
    timeout: float = 2.0,
    **fields: Any,
) -> httpx.Response:
    """POST one message with httpx: x-api-key and the new API version unless `headers` says."""
    sent = {"x-api-key": KEY, "anthropic-version": NEW} if headers is None else headers
    body: dict[str, Any] = {
        "model": "claude-test",
        "system": "You play the iterated prisoner's dilemma.",
        "messages": [{"role": "user", "content": content}],
        "max_tokens": 5,
        **fields,
    }
    body = {k: v for k, v in body.items() if v is not None}
    with httpx.Client(trust_env=False, verify=False, timeout=timeout) as client:
        return client.post(f"{srv.base_url}/v1/messages", json=body, headers=sent)


def test_normal_reply_shape_usage_and_record(server: FakeAnthropicServer) -> None:
    assert server.base_url == f"http://127.0.0.1:{server.port}"
    resp = post(server, PROMPT)
    assert resp.status_code == 200
    data = resp.json()
    assert (data["type"], data["role"], data["model"]) == ("message", "assistant", "claude-test")
    assert data["content"] == [{"type": "text", "text": "D"}]  # tit for tat from the prompt
    # 6 words of system prompt + 12 of user prompt; 1 word of reply.
    assert data["usage"] == {"input_tokens": 18, "output_tokens": 1}
    assert data["stop_reason"] == "end_turn" and data["id"].startswith("msg_")
    (rec,) = server.requests
    assert rec["path"] == "/v1/messages" and rec["model"] == "claude-test"
    assert rec["system"] == "You play the iterated prisoner's dilemma."
    assert rec["messages"] == [{"role": "user", "content": PROMPT}]
    assert rec["max_tokens"] == 5 and rec["temperature"] is None and rec["seed"] is None
    assert rec["fields"] == ["max_tokens", "messages", "model", "system"]
    assert (rec["auth"], rec["anthropic_version"], rec["status"]) == ("x-api-key", NEW, 200)
    assert KEY not in repr(server.requests)


def test_system_as_text_blocks_reaches_the_strategy(server: FakeAnthropicServer) -> None:
    blocks = [{"type": "text", "text": "Be nice."}, {"type": "text", "text": "Really."}]
    resp = post(server, system=blocks)
    assert resp.status_code == 200
    assert server.requests[0]["system"] == "Be nice.\nReally."
    assert post(server, system=[{"type": "image"}]).status_code == 400


@pytest.mark.parametrize(
    "headers",
    [
        {"anthropic-version": NEW},
        {"x-api-key": "sk-ant-wrong", "anthropic-version": NEW},
        {"Authorization": "Bearer sk-ant-wrong", "anthropic-version": NEW},
        # x-api-key wins over Authorization, as with the API.
        {"x-api-key": "sk-ant-wrong", "Authorization": f"Bearer {KEY}", "anthropic-version": NEW},
    ],
)
def test_missing_or_wrong_key_is_401(server: FakeAnthropicServer, headers: dict[str, str]) -> None:
    resp = post(server, headers=headers)
    assert resp.status_code == 401
    assert resp.json()["error"]["type"] == "authentication_error"
    assert KEY not in resp.text and "sk-ant-wrong" not in resp.text


def test_bearer_key_is_accepted(server: FakeAnthropicServer) -> None:
    resp = post(server, headers={"Authorization": f"Bearer {KEY}", "anthropic-version": NEW})
    assert resp.status_code == 200
    assert server.requests[0]["auth"] == "bearer"


def test_version_header_is_required(server: FakeAnthropicServer) -> None:
    resp = post(server, headers={"x-api-key": KEY})
    assert resp.status_code == 400
    assert "anthropic-version" in resp.json()["error"]["message"]


@pytest.mark.parametrize("field", ["temperature", "top_p", "top_k"])
def test_sampling_fields_are_refused_by_the_new_api_version_only(
    server: FakeAnthropicServer, field: str
) -> None:
    new = post(server, **{field: 1.0})
    old = post(server, headers={"x-api-key": KEY, "anthropic-version": OLD}, **{field: 1.0})
    assert new.status_code == 400
    assert new.json()["error"] == {
        "type": "invalid_request_error",
        "message": f"{field}: Extra inputs are not permitted",
    }
    assert old.status_code == 200


def test_unknown_fields_and_bad_bodies_are_400(server: FakeAnthropicServer) -> None:
    assert post(server, seed=3).json()["error"]["message"].startswith("seed: Extra inputs")
    assert post(server, max_tokens=None).status_code == 400
    assert post(server, max_tokens=0).status_code == 400
    assert post(server, messages=[]).status_code == 400
    assert [r["status"] for r in server.requests] == [400, 400, 400, 400]
    assert server.requests[0]["seed"] == 3


def test_unknown_model_and_path_are_404(server: FakeAnthropicServer) -> None:
    resp = post(server, model="claude-nope")
    assert resp.status_code == 404
    assert resp.json()["error"] == {"type": "not_found_error", "message": "model: claude-nope"}
    with httpx.Client(trust_env=False, verify=False) as client:
        assert client.get(f"{server.base_url}/v1/models").status_code == 404
        assert client.post(f"{server.base_url}/v1/complete", json={}).status_code == 404


@pytest.mark.parametrize(
    ("kind", "error_type", "retry_after"),
    [
        ("429", "rate_limit_error", "0.2"),
        ("529", "overloaded_error", "0.2"),
        ("503", "api_error", "0.2"),
        ("500", "api_error", None),
    ],
)
def test_status_faults(kind: str, error_type: str, retry_after: str | None) -> None:
    with FakeAnthropicServer(faults={1: Fault(kind, retry_after=0.2)}) as srv:  # type: ignore[arg-type]
        first, second = post(srv), post(srv)
    assert first.status_code == int(kind)
    assert first.json()["type"] == "error"
    assert first.json()["error"]["type"] == error_type
    assert first.headers.get("Retry-After") == retry_after
    assert second.status_code == 200


def test_malformed_body_and_slow_faults() -> None:
    faults = {
        1: Fault("malformed"),
        2: Fault("body", body={"type": "message", "usage": {}}),
        3: Fault("slow", delay_s=0.3),
    }
    with FakeAnthropicServer(faults=faults) as srv:
        with pytest.raises(json.JSONDecodeError):
            json.loads(post(srv).text)
        assert post(srv).json() == {"type": "message", "usage": {}}
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            post(srv, timeout=0.1)
        assert time.monotonic() - started < 0.3
        assert post(srv).status_code == 200
    assert [r["fault"] for r in srv.requests] == ["malformed", "body", "slow", None]


def test_anthropic_sdk_against_server() -> None:
    """The installed SDK's own request is accepted; its sampling-free signature is what the
    server enforces for the SDK's API version."""
    with FakeAnthropicServer(api_key=KEY) as srv:
        client = anthropic.Anthropic(base_url=srv.base_url, api_key=KEY, max_retries=0)
        message = client.messages.create(
            model="claude-test",
            system="You play the iterated prisoner's dilemma.",
            messages=[{"role": "user", "content": PROMPT}],
            max_tokens=5,
        )
        with pytest.raises(anthropic.NotFoundError):
            client.messages.create(
                model="claude-nope", messages=[{"role": "user", "content": "x"}], max_tokens=5
            )
        client.close()
    assert [block.text for block in message.content if block.type == "text"] == ["D"]
    assert (message.usage.input_tokens, message.usage.output_tokens) == (18, 1)
    rec = srv.requests[0]
    assert rec["auth"] is not None and rec["anthropic_version"]
    assert rec["system"] == "You play the iterated prisoner's dilemma."
