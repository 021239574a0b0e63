"""A stdlib-only, OpenAI-compatible chat-completions server for offline tests.

Binds 127.0.0.1 on a free port and never contacts any other host (the bind even skips the
reverse-DNS lookup ``HTTPServer.server_bind`` would do). ``POST /v1/chat/completions`` is
handled in this order: count the request (1-based ``index``), auth (401), body (400),
model (404), scripted fault for that index, ``latency_s``, then the strategy's reply.

    with FakeOpenAIServer(api_key="sk-test", faults={2: Fault("429", retry_after=0.2)}) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0)
"""

from __future__ import annotations

import hmac
import json
import math
import re
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Literal

Strategy = Callable[[list[dict[str, Any]]], str]
FaultKind = Literal[
    "429", "500", "503", "529", "slow", "malformed", "body", "invalid_action", "disconnect"
]
FAULT_KINDS = frozenset(
    {"429", "500", "503", "529", "slow", "malformed", "body", "invalid_action", "disconnect"}
)

_LAST_MOVE = re.compile(r"Opponent's last move: (C|D)")
_CHAT_PATHS = {"/v1/chat/completions", "/chat/completions"}
_MODELS_PATHS = {"/v1/models", "/models"}
_INVALID = "invalid_request_error"
_HTTP_ERRORS: dict[str, tuple[str, str, str | None]] = {
    "429": ("Rate limit reached (scripted).", "requests", "rate_limit_exceeded"),
    "500": ("The server had an error (scripted).", "server_error", None),
    "503": ("The engine is currently overloaded (scripted).", "server_error", None),
    "529": ("Overloaded (scripted).", "server_error", None),
}
_MALFORMED_BODY = b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{'
_DISCONNECT = -1  # pseudo status: close the socket without any response

Reply = tuple[int, Any, dict[str, str]]


@dataclass(frozen=True)
class Fault:
    """A scripted failure for one chat-completion request (shared by FakeAnthropicServer).

    "429"/"500"/"503"/"529": that status with the API's error body (all but 500 add a
    ``Retry-After: <retry_after>`` header when set, e.g. "0.2"); "slow": wait ``delay_s``
    then answer normally; "malformed": 200 with a truncated JSON body; "body": 200 with
    ``body`` (JSON-encoded unless str or bytes) sent as ``content_type``; "invalid_action": 200
    with ``content`` as the reply; "disconnect": close the socket without any response.
    """

    kind: FaultKind
    retry_after: float | None = None
    delay_s: float = 0.0
    content: str = "I think I will cooperate, maybe."
    body: Any = None
    content_type: str = "application/json"

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {FAULT_KINDS}")


def message_text(message: dict[str, Any]) -> str:
    """Return the text of a chat message whose content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return content if isinstance(content, str) else ""


def tit_for_tat_from_prompt(messages: list[dict[str, Any]]) -> str:
    """Default strategy: answer the last ``Opponent's last move: C|D`` in the last user
    message, or "C" when there is no such line (or no user message)."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            found = _LAST_MOVE.findall(message_text(message))
            return found[-1] if found else "C"
    return "C"


def always(letter: str) -> Strategy:
    """Return a strategy that always replies ``letter`` (e.g. "C" or "D")."""

    def strategy(messages: list[dict[str, Any]]) -> str:
        return letter

    return strategy


def count_tokens(text: str) -> int:
    """Deterministic token count: the number of whitespace-separated words."""
    return len(text.split())


def _error(message: str, type_: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # FakeOpenAIServer.stop() closes and awaits connections itself
    owner: FakeOpenAIServer

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)  # skip getfqdn(): no DNS traffic
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        self.owner._note_error()  # quiet: no traceback on stderr


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real clients expect
    server_version = "FakeOpenAI/1.0"
    timeout = 30.0
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Print nothing (and so never leak headers)."""

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, add=False)

    def do_GET(self) -> None:
        self._read_body()
        self.send_json(*self.server.owner._handle_get(self))

    def do_POST(self) -> None:
        status, payload, headers = self.server.owner._handle_chat(self, self._read_body())
        if status == _DISCONNECT:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        else:
            self.send_json(status, payload, headers)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def send_json(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        """Send ``payload`` (JSON-encoded unless already bytes) with ``status``; a
        ``Content-Type`` in ``headers`` replaces the default ``application/json``."""
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        extra = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        content_type = next(
            (v for k, v in headers.items() if k.lower() == "content-type"), "application/json"
        )
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:  # client gone, e.g. it timed out during a "slow" fault
            self.close_connection = True


class FakeOpenAIServer:
    """OpenAI-compatible ``/v1/chat/completions`` and ``/v1/models`` on 127.0.0.1.

    Use as a context manager (or :meth:`start` / :meth:`stop`). ``requests`` records every
    chat-completion request (never the API key); ``chat_count`` counts them.
    """

    def __init__(
        self,
        strategy: Strategy | None = None,
        *,
        api_key: str | None = None,
        models: set[str] | None = None,
        faults: dict[int, Fault] | None = None,
        fault_every: tuple[int, Fault] | None = None,
        latency_s: float = 0.0,
        p_cooperate: float = 0.7,
        served_as: str | None = None,
        cut_at_max_tokens: bool = False,
    ) -> None:
        """`p_cooperate`: the probability of C the fake's log-probabilities report at a C/D
        letter (when a request asks for logprobs); `served_as`: the model name its replies
        say answered (default: the model asked); with `cut_at_max_tokens`, a reply longer than
        `max_tokens` words is cut there with finish_reason "length"."""
        self.cut_at_max_tokens = cut_at_max_tokens
        self.p_cooperate = p_cooperate
        self.served_as = served_as
        if fault_every is not None and fault_every[0] < 1:
            raise ValueError("fault_every period must be >= 1")
        self.strategy: Strategy = strategy or tit_for_tat_from_prompt
        self.models: set[str] = set(models) if models is not None else {"test-model"}
        self.faults: dict[int, Fault] = dict(faults or {})
        self.fault_every = fault_every
        self.latency_s = latency_s
        self._api_key = api_key
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._records: list[dict[str, Any]] = []
        self._chat_count = 0
        self._error_count = 0
        self._in_flight = 0
        self._peak_in_flight = 0
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeOpenAIServer:
        """Bind 127.0.0.1:0 and serve in a daemon thread; returns ``self``."""
        if self._httpd is None:
            self._stopping.clear()
            self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
            self._httpd.owner = self
            serve = self._httpd.serve_forever
            self._thread = threading.Thread(target=serve, args=(0.02,), daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop serving, close open connections, wait (bounded) for handlers. Idempotent."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()  # wakes "slow" faults and latency waits
        httpd.shutdown()
        httpd.server_close()
        with self._idle:
            for conn in list(self._connections):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self._idle.wait_for(lambda: not self._connections, timeout=timeout)
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound TCP port (the server must be running)."""
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not running")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, for ``openai.OpenAI(base_url=...)`` / ``api_base``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Snapshot of chat requests, each with index, path, model, messages, temperature,
        max_tokens, seed, had_auth, fault (kind or None) and status (None if disconnected)."""
        with self._lock:
            return [dict(r) for r in self._records]

    @property
    def chat_count(self) -> int:
        """Number of chat-completion requests received so far."""
        with self._lock:
            return self._chat_count

    @property
    def peak_in_flight(self) -> int:
        """The most chat-completion requests ever being answered at once."""
        with self._lock:
            return self._peak_in_flight

    @property
    def error_count(self) -> int:
        """Number of unexpected handler exceptions (swallowed quietly)."""
        with self._lock:
            return self._error_count

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._idle:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)
                self._idle.notify_all()

    def _note_error(self) -> None:
        with self._lock:
            self._error_count += 1

    def _fault_for(self, index: int) -> Fault | None:
        if index in self.faults:
            return self.faults[index]
        if self.fault_every is not None and index % self.fault_every[0] == 0:
            return self.fault_every[1]
        return None

    def _auth_error(self, h: _Handler) -> Reply | None:
        if self._api_key is None:
            return None
        given = h.headers.get("Authorization", "").encode()
        if hmac.compare_digest(given, f"Bearer {self._api_key}".encode()):
            return None
        return 401, _error("Incorrect API key provided.", _INVALID, "invalid_api_key"), {}

    def _handle_get(self, h: _Handler) -> Reply:
        path = h.path.split("?", 1)[0].rstrip("/")
        if (denied := self._auth_error(h)) is not None:
            return denied
        if path not in _MODELS_PATHS:
            return 404, _error(f"Unknown path {path}", _INVALID, "unknown_url"), {}
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "pdbench-test"}
                for m in sorted(self.models)]  # fmt: skip
        return 200, {"object": "list", "data": data}, {}

    # Hooks: FakeAnthropicServer overrides these to speak another API over the same plumbing.
    chat_paths: ClassVar[frozenset[str]] = frozenset(_CHAT_PATHS)

    def _unknown_path(self, path: str) -> Reply:
        return 404, _error(f"Unknown path {path}", _INVALID, "unknown_url"), {}

    def _record_fields(self, h: _Handler, body: dict[str, Any]) -> dict[str, Any]:
        """What a chat request's record holds besides index, path, fault and status."""
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        return {
            "model": body.get("model"), "messages": messages,
            "temperature": body.get("temperature"), "max_tokens": body.get("max_tokens"),
            "seed": body.get("seed"), "had_auth": bool(h.headers.get("Authorization")),
            "response_format": body.get("response_format"), "logprobs": body.get("logprobs"),
            "top_logprobs": body.get("top_logprobs"),
        }  # fmt: skip

    def _rejection(self, h: _Handler, body: dict[str, Any]) -> Reply | None:
        """401/400/404 for a request that cannot be answered, else None."""
        model = body.get("model")
        if (denied := self._auth_error(h)) is not None:
            return denied
        if not isinstance(model, str) or not body.get("messages"):
            msg = "Request body must be JSON with 'model' and a non-empty 'messages' list."
            return 400, _error(msg, _INVALID, None), {}
        if body.get("stream"):
            return 400, _error("stream=true is not supported here.", _INVALID, None), {}
        if model not in self.models:
            msg = f"The model `{model}` does not exist or you do not have access to it."
            return 404, _error(msg, _INVALID, "model_not_found"), {}
        return None

    def _strategy_input(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The chat messages the strategy reads."""
        messages = body.get("messages")
        return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []

    def _status_fault(self, kind: str) -> Any:
        """The error body of a scripted "429"/"500"/"503"/"529" fault."""
        return _error(*_HTTP_ERRORS[kind])

    def _strategy_failed(self, exc: Exception) -> Reply:
        return 500, _error(f"strategy raised {exc!r}", "server_error", None), {}

    def _answer(self, body: dict[str, Any], content: str, index: int) -> Any:
        """The 200 body for a reply ``content`` to request number ``index``."""
        messages = self._strategy_input(body)
        prompt = sum(count_tokens(message_text(m)) for m in messages)
        finish = "stop"
        limit = body.get("max_tokens")
        if self.cut_at_max_tokens and isinstance(limit, int) and count_tokens(content) > limit:
            content, finish = " ".join(content.split()[:limit]), "length"
        completion = count_tokens(content)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                 "total_tokens": prompt + completion}  # fmt: skip
        logprobs = self._logprobs(content) if body.get("logprobs") else None
        choice = {"index": 0, "message": {"role": "assistant", "content": content},
                  "logprobs": logprobs, "finish_reason": finish}  # fmt: skip
        return {"id": f"chatcmpl-fake{index:06d}", "object": "chat.completion",
                "created": int(time.time()), "model": self.served_as or body.get("model"),
                "system_fingerprint": "fp_fake", "choices": [choice],
                "usage": usage}  # fmt: skip

    def _logprobs(self, content: str) -> dict[str, Any]:
        """OpenAI-shaped log-probabilities: one token per character; at C or D the top
        alternatives are C and D with `p_cooperate`, and a rarer "A"."""
        p_c = self.p_cooperate * 0.9
        p_d = (1 - self.p_cooperate) * 0.9
        tokens = []
        for char in content:
            if char in "CD":
                top = [("C", p_c), ("D", p_d), ("A", 0.1)]
                top = [{"token": tok, "logprob": math.log(p)} for tok, p in top if p > 0]
                lp = (
                    math.log(p_c if char == "C" else p_d)
                    if (p_c if char == "C" else p_d)
                    else -99.0
                )
            else:
                top, lp = [{"token": char, "logprob": 0.0}], 0.0
            tokens.append({"token": char, "logprob": lp, "bytes": list(char.encode()),
                           "top_logprobs": top})  # fmt: skip
        return {"content": tokens}

    def _handle_chat(self, h: _Handler, raw: bytes) -> Reply:
        path = h.path.split("?", 1)[0].rstrip("/")
        if path not in self.chat_paths:
            return self._unknown_path(path)
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        body = body if isinstance(body, dict) else {}
        fields = self._record_fields(h, body)
        with self._lock:
            self._chat_count += 1
            record: dict[str, Any] = {"index": self._chat_count, "path": path, **fields,
                                      "fault": None, "status": None}  # fmt: skip
            self._records.append(record)
            self._in_flight += 1
            self._peak_in_flight = max(self._peak_in_flight, self._in_flight)
        try:
            status, payload, headers = self._chat_reply(h, body, record)
        finally:
            with self._lock:
                self._in_flight -= 1
        with self._lock:
            record["status"] = None if status == _DISCONNECT else status
        return status, payload, headers

    def _chat_reply(self, h: _Handler, body: dict[str, Any], record: dict[str, Any]) -> Reply:
        if (rejected := self._rejection(h, body)) is not None:
            return rejected
        fault = self._fault_for(record["index"])
        kind = fault.kind if fault is not None else None
        with self._lock:
            record["fault"] = kind
        if self.latency_s > 0:
            self._stopping.wait(self.latency_s)
        if fault is not None and fault.kind in _HTTP_ERRORS:
            headers = {}
            if fault.kind != "500" and fault.retry_after is not None:
                secs = float(fault.retry_after)
                headers["Retry-After"] = str(int(secs)) if secs.is_integer() else repr(secs)
            return int(fault.kind), self._status_fault(fault.kind), headers
        if kind == "disconnect":
            return _DISCONNECT, None, {}
        if kind == "malformed":
            return 200, _MALFORMED_BODY, {}
        if fault is not None and kind == "body":
            raw = fault.body
            payload = raw.encode() if isinstance(raw, str) else raw
            return 200, payload, {"Content-Type": fault.content_type}
        if fault is not None and kind == "slow":
            self._stopping.wait(fault.delay_s)
        if fault is not None and kind == "invalid_action":
            content = fault.content
        else:
            try:
                content = str(self.strategy(self._strategy_input(body)))
            except Exception as exc:  # a broken strategy is a 500, not a hung client
                self._note_error()
                return self._strategy_failed(exc)
        return 200, self._answer(body, content, record["index"]), {}
