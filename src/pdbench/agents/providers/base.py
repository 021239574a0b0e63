"""The provider interface: one small async protocol every LLM backend implements, and the
registry adapters join with `@provider("name")`.

A provider gets a `CompletionRequest` and returns a `Completion`; errors are `ProviderError`s
that say whether trying again may help. Adapters import their SDK only when they are built
(`import_optional`), so listing and validating providers never imports an SDK; a missing SDK
names the command that installs it.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from pdbench.core.config import LLMAgentConfig
from pdbench.core.parse import TokenLogprobs


class ProviderError(RuntimeError):
    """A provider call failed; `retryable` says whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class CallTag:
    """Which round and parse attempt a call belongs to (used for cache keys and the call log)."""

    round_index: int
    attempt: int


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """One call: the prompts, decoding settings, a per-call seed and where it belongs.

    `turns` continue the conversation after the round prompt: (the model's invalid reply, the
    correction sent back) per earlier attempt. `output_format` "choice" asks the server to
    constrain the answer to C or D; `logprobs` asks for the top log-probabilities per token.
    """

    system: str
    prompt: str
    temperature: float
    max_tokens: int
    seed: int | None = None
    tag: CallTag = CallTag(-1, 0)
    turns: tuple[tuple[str, str], ...] = ()
    output_format: str = "token"
    logprobs: bool = False
    labels: tuple[str, str] = ("C", "D")  # the words shown for C and D (choice constrains to them)
    mode: str = "chat"  # the agent's prompt_mode: chat, user or completion
    purpose: str = "move"  # what the call is for: a move, or a message (games with talk)
    turn: int = 0  # a message's turn in its exchange
    max_chars: int = 280  # a message's length limit (a constrained message reply keeps to it)


TOP_LOGPROBS = 20  # alternatives asked per token (OpenAI's maximum)


@dataclass(frozen=True, slots=True)
class Completion:
    """A provider's reply with what it cost (token counts as the provider reports them) and the
    facts the server gave about it: why it stopped (`finish_reason`, "length" when cut by
    max_tokens), which model answered, its fingerprint, and per-token log-probabilities."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    finish_reason: str | None = None
    served_model: str | None = None
    system_fingerprint: str | None = None
    tokens: tuple[TokenLogprobs, ...] | None = None

    @property
    def truncated(self) -> bool:
        """Whether the reply was cut by max_tokens."""
        return self.finish_reason in ("length", "max_tokens")

    def facts(self) -> dict[str, Any]:
        """The reply's facts besides text and usage, JSON-ready (for the cache)."""
        out: dict[str, Any] = {
            "finish_reason": self.finish_reason,
            "served_model": self.served_model,
            "system_fingerprint": self.system_fingerprint,
        }
        if self.tokens is not None:
            out["tokens"] = [[t.token, t.logprob, [list(x) for x in t.top]] for t in self.tokens]
        return out

    @staticmethod
    def from_facts(
        text: str,
        input_tokens: int | None,
        output_tokens: int | None,
        cost_usd: float | None,
        facts: Mapping[str, Any],
    ) -> Completion:
        """A Completion from stored text, usage and `facts()` (unreadable facts are dropped)."""
        tokens = None
        try:
            if facts.get("tokens") is not None:
                tokens = tuple(
                    TokenLogprobs(str(tok), float(lp), tuple((str(a), float(b)) for a, b in top))
                    for tok, lp, top in facts["tokens"]
                )
        except (TypeError, ValueError):
            tokens = None

        def text_or_none(name: str) -> str | None:
            value = facts.get(name)
            return value if isinstance(value, str) else None

        return Completion(
            text,
            input_tokens,
            output_tokens,
            cost_usd,
            finish_reason=text_or_none("finish_reason"),
            served_model=text_or_none("served_model"),
            system_fingerprint=text_or_none("system_fingerprint"),
            tokens=tokens,
        )


def choice_response_format(labels: tuple[str, str] = ("C", "D")) -> dict[str, Any]:
    """The OpenAI-style `response_format` that constrains the answer to {"action": C or D}
    (JSON schema with an enum; OpenAI, vLLM, llama.cpp and litellm take it)."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "move",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {"action": {"type": "string", "enum": list(labels)}},
                "required": ["action"],
                "additionalProperties": False,
            },
        },
    }


def message_response_format(labels: tuple[str, str], max_chars: int) -> dict[str, Any]:
    """The `response_format` of a message call with a constrained answer: {"message": text,
    "intention": C, D or none} (games with a message channel; `max_chars` is applied when the
    reply is read, see `core.talk.clip_text`)."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "message",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {
                    # no maxLength: llama.cpp turns it into a grammar of max_chars optional
                    # characters that slows sampling a lot; the message is cut after the reply
                    "message": {"type": "string"},
                    "intention": {"type": "string", "enum": [*labels, "none"]},
                },
                "required": ["message", "intention"],
                "additionalProperties": False,
            },
        },
    }


def malformed(what: str) -> ProviderError:
    """A reply that came back (HTTP 200) but cannot be read: retryable, like a transport fault
    (a proxy or an overloaded server may answer properly next time)."""
    return ProviderError(f"malformed reply: {what}", retryable=True)


_NOT_OBJECTS = (str, bytes, list, tuple, int, float, bool)  # what JSON holds besides objects


def is_object(value: Any) -> bool:
    """Whether `value` is a JSON object as an SDK parsed it (a model or a mapping)."""
    return value is not None and not isinstance(value, _NOT_OBJECTS)


def field(obj: Any, name: str) -> Any:
    """`obj.name` of an SDK object, or `obj[name]` of a mapping; None when absent."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def json_object(response: Any) -> Any:
    """`response` when it is a parsed JSON object (an SDK model or a mapping), else a malformed
    reply (SDKs hand back the text of a non-JSON body, or a list for a JSON array)."""
    if isinstance(response, str | bytes):
        raise malformed("not JSON (a text body)")
    if not is_object(response):
        raise malformed(f"not a JSON object ({type(response).__name__})")
    return response


def token_count(value: Any) -> int | None:
    """A token count as reported, or None when it is not a non-negative integer (a string, a
    fraction, a negative number: never let one reach the budget or the call log)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value >= 0 else None


def _first_choice(response: Any) -> tuple[Any, Any]:
    """(the response as an object, its first choice); no list of choices is a retryable
    malformed reply."""
    response = json_object(response)
    choices = field(response, "choices")
    if not choices:
        raise malformed("no choices")
    if not isinstance(choices, list | tuple):
        raise malformed(f"choices is not a list ({type(choices).__name__})")
    return response, choices[0]


def _completion(
    response: Any,
    choice: Any,
    text: Any,
    cost_usd: float | None,
    tokens: tuple[TokenLogprobs, ...] | None = None,
) -> Completion:
    """The Completion of a checked OpenAI-shaped response: usage, finish reason, model."""
    usage = field(response, "usage")
    finish = field(choice, "finish_reason")
    model = field(response, "model")
    fingerprint = field(response, "system_fingerprint")
    return Completion(
        text=text or "",
        input_tokens=token_count(field(usage, "prompt_tokens")),
        output_tokens=token_count(field(usage, "completion_tokens")),
        cost_usd=cost_usd,
        finish_reason=finish if isinstance(finish, str) else None,
        served_model=model if isinstance(model, str) else None,
        system_fingerprint=fingerprint if isinstance(fingerprint, str) else None,
        tokens=tokens,
    )


def chat_completion(response: Any, cost_usd: float | None = None) -> Completion:
    """A Completion from an OpenAI-shaped chat response (the openai SDK's, litellm's); a reply
    without a readable first message is a retryable malformed reply. No content is no text."""
    response, choice = _first_choice(response)
    message = field(choice, "message")
    if not is_object(message):
        raise malformed("the first choice has no message")
    content = field(message, "content")
    if content is not None and not isinstance(content, str):
        raise malformed(f"the message content is not text ({type(content).__name__})")
    return _completion(
        response, choice, content, cost_usd, token_logprobs(field(choice, "logprobs"))
    )


def text_completion(response: Any, cost_usd: float | None = None) -> Completion:
    """A Completion from an OpenAI-shaped text completion (`/v1/completions`: the first choice's
    `text`); a reply without it is a retryable malformed reply."""
    response, choice = _first_choice(response)
    if not is_object(choice):
        raise malformed("the first choice is not an object")
    text = field(choice, "text")
    if text is not None and not isinstance(text, str):
        raise malformed(f"the completion text is not text ({type(text).__name__})")
    return _completion(response, choice, text, cost_usd)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def token_logprobs(logprobs: Any) -> tuple[TokenLogprobs, ...] | None:
    """Per-token log-probabilities of an OpenAI-shaped choice (`logprobs.content`), or None
    when the reply has none or they cannot be read."""
    content = field(logprobs, "content") if is_object(logprobs) else None
    if not isinstance(content, list | tuple) or not content:
        return None
    out: list[TokenLogprobs] = []
    for item in content:
        token, logprob = field(item, "token"), _number(field(item, "logprob"))
        if not isinstance(token, str) or logprob is None:
            return None
        top: list[tuple[str, float]] = []
        for alt in field(item, "top_logprobs") or ():
            alt_token, alt_lp = field(alt, "token"), _number(field(alt, "logprob"))
            if isinstance(alt_token, str) and alt_lp is not None:
                top.append((alt_token, alt_lp))
        out.append(TokenLogprobs(token, logprob, tuple(top)))
    return tuple(out)


def system_text(request: CompletionRequest) -> str:
    """The system prompt sent apart from the messages: none in prompt_mode user (the system text
    then opens the user message) or when it is empty."""
    return request.system if request.mode == "chat" else ""


def chat_messages(request: CompletionRequest, *, with_system: bool = True) -> list[dict[str, str]]:
    """The request as chat messages: the system prompt (prompt_mode chat, when not empty), the
    round prompt as the user's (prompt_mode user: system and round prompt as one user message),
    then, after invalid replies, each reply as the assistant's turn and the correction as the
    user's. `with_system` False leaves the system prompt out (an API that takes it apart)."""
    system = system_text(request)
    messages = [{"role": "system", "content": system}] if system and with_system else []
    user = request.prompt if request.mode == "chat" else request.system + request.prompt
    messages.append({"role": "user", "content": user})
    for reply, correction in request.turns:
        messages.append({"role": "assistant", "content": reply})
        messages.append({"role": "user", "content": correction})
    return messages


def completion_text(request: CompletionRequest) -> str:
    """The request as one plain text for a completion endpoint (prompt_mode completion): the
    system and round prompt as they are, then per invalid reply the reply and the correction,
    each followed by a newline."""
    text = request.system + request.prompt
    for reply, correction in request.turns:
        text += f"{reply}\n{correction}\n"
    return text


def openai_options(request: CompletionRequest) -> dict[str, Any]:
    """The OpenAI-style request fields for a constrained answer and log-probabilities."""
    options: dict[str, Any] = {}
    if request.output_format == "choice" and request.purpose == "message":
        options["response_format"] = message_response_format(request.labels, request.max_chars)
    elif request.output_format == "choice":
        options["response_format"] = choice_response_format(request.labels)
    if request.logprobs:
        options["logprobs"] = True
        options["top_logprobs"] = TOP_LOGPROBS
    return options


@runtime_checkable
class Provider(Protocol):
    """What the runtime calls on every provider (and on the broker's per-game clients)."""

    name: str
    model: str
    enforces_timeout: bool  # applies the agent's timeout_s to its own calls
    api_key: str | None  # held in memory only, to redact it from error messages

    async def complete(self, request: CompletionRequest) -> Completion:
        """The model's reply to one request; raises ProviderError on failure."""
        ...

    async def aclose(self) -> None:
        """Release connections (called once when the run ends)."""
        ...

    def cache_identity(self) -> dict[str, Any] | None:
        """Extra parts of the response cache key (None: none)."""
        ...


class ProviderBase:
    """Shared by the adapters: construction from the agent config, no-op close, no own timeout."""

    name: ClassVar[str] = ""
    # True when the adapter enforces `timeout_s` on its HTTP calls itself; the broker's outer
    # timeout then only catches a hung SDK. False: the broker's timeout is the only one.
    enforces_timeout: ClassVar[bool] = False
    # False when the API takes no temperature: the config's is then recorded but not used (the
    # loader warns).
    sends_temperature: ClassVar[bool] = True

    def __init__(self, cfg: LLMAgentConfig, api_key: str | None) -> None:
        self.model = cfg.model
        self.api_key = api_key  # kept in memory only, to redact it from error messages

    async def complete(self, request: CompletionRequest) -> Completion:
        """The model's reply (adapters implement it)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Nothing to release by default."""

    async def served_models(self) -> list[str] | None:
        """The model names the server serves, or None when it does not say (the default)."""
        return None

    def served_name(self) -> str:
        """The model name the server is asked for (a router may strip a prefix)."""
        return self.model

    def cache_identity(self) -> dict[str, Any] | None:
        """What else shapes a reply besides the request and the agent config's model name, for
        the response cache key (a local model's file and settings); None: nothing (the default)."""
        return None

    # What the adapter can ask of its API (checked when a config is loaded).
    constrains_answers: ClassVar[bool] = False  # output_format: choice
    gives_logprobs: ClassVar[bool] = False  # record_logprobs


def model_names(payload: Any) -> list[str] | None:
    """Model names of a `GET /models` reply: OpenAI's `data[].id` (with llama.cpp's
    `data[].aliases`) and Ollama's `models[].name`/`.model`; None when there are none."""
    if not isinstance(payload, dict):
        return None
    names: list[str] = []
    for item in payload.get("data") or ():
        if isinstance(item, dict):
            names += [item.get("id")] + list(item.get("aliases") or ())
    for item in payload.get("models") or ():
        if isinstance(item, dict):
            names += [item.get("name"), item.get("model")]
    kept = sorted({n for n in names if isinstance(n, str) and n})
    return kept or None


async def list_models(base_url: str, api_key: str | None, timeout_s: float) -> list[str] | None:
    """`GET {base_url}/models` over HTTP; None when the server does not answer with a list
    (no such endpoint, an error, not JSON): the check is then skipped, never failed."""
    import httpx  # installed with the openai SDK, which the adapters using this need anyway

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with httpx.AsyncClient(timeout=min(timeout_s, 30.0)) as client:
            response = await client.get(base_url.rstrip("/") + "/models", headers=headers)
        if response.status_code != 200:
            return None
        return model_names(response.json())
    except (httpx.HTTPError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class ProviderEntry:
    """A registered provider: its adapter class and the optional SDK it needs."""

    name: str
    factory: Callable[[LLMAgentConfig, str | None], Provider]
    sdk: str | None
    extra: str | None

    def missing_sdk(self) -> str | None:
        """The install hint when the adapter's SDK is not installed, else None."""
        if self.sdk is None or importlib.util.find_spec(self.sdk) is not None:
            return None
        return f"provider {self.name!r} needs its extra: run `uv sync --extra {self.extra}`"


_REGISTRY: dict[str, ProviderEntry] = {}
_DISCOVERED: list[bool] = []


def provider(
    name: str, *, sdk: str | None = None, extra: str | None = None
) -> Callable[[type], type]:
    """Class decorator: register an adapter under `name`; a duplicate name is an error."""

    def register(cls: type) -> type:
        if name in _REGISTRY:
            raise ValueError(f"duplicate provider name {name!r}")
        cls.name = name  # type: ignore[attr-defined]
        _REGISTRY[name] = ProviderEntry(name, cls, sdk, extra or sdk)
        return cls

    return register


def registry() -> dict[str, ProviderEntry]:
    """Every provider, by name: the modules of this package are imported on first use (cheap:
    adapters import their SDK only when built)."""
    if not _DISCOVERED:
        package = importlib.import_module("pdbench.agents.providers")
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{module.name}")
        _DISCOVERED.append(True)
    return _REGISTRY


def provider_entry(name: str) -> ProviderEntry:
    """The registered provider `name`; KeyError lists the valid names."""
    entries = registry()
    if name not in entries:
        raise KeyError(f"unknown provider (valid: {', '.join(sorted(entries))}) (got {name!r})")
    return entries[name]


def import_optional(module: str, extra: str) -> Any:
    """Import an optional SDK, or fail with the command that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ProviderError(
            f"the {extra} provider needs its extra: run `uv sync --extra {extra}`", retryable=False
        ) from None
