"""Turning a config file into a validated experiment and its agents.

`load_experiment` reads the YAML, expands refs, validates with pydantic, then checks what pydantic
cannot: policy and persona names, provider names and extras, prompt files and their placeholders.
Every problem becomes a `file: dotted.path: message (got value)` line; nothing is written.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pdbench.agents.llm import (
    ROUND_FIELDS,
    SYSTEM_FIELDS,
    LLMAgent,
    PromptTemplates,
    placeholders,
    render_round,
    render_system,
)
from pdbench.agents.policy import PolicyAgent, make_policy, policy_names
from pdbench.agents.providers.base import ProviderError
from pdbench.agents.providers.keys import resolve_api_key
from pdbench.agents.providers.mock import MockProvider
from pdbench.core.config import ExperimentConfig, LLMAgentConfig, PolicyAgentConfig
from pdbench.core.payoff import PayoffError, PayoffMatrix
from pdbench.core.transcript import Transcript
from pdbench.errors import ConfigError, ConfigIssue, RunError
from pdbench.runners.config_errors import model_at, short_repr
from pdbench.runners.config_loader import Loc, Resolved, load_resolved

PROVIDERS: dict[str, str | None] = {
    "mock": None,
    "litellm": "litellm",
    "openai": "openai",
    "anthropic": "anthropic",
}
AGENT_KEYS = ("agent_a", "agent_b")


@dataclass
class LoadedExperiment:
    """A validated experiment: the model, its resolved snapshot, prompt texts and warnings."""

    config: ExperimentConfig
    path: Path
    root: Path
    snapshot: dict[str, Any]
    templates: dict[tuple[str, str], PromptTemplates] = field(default_factory=dict)
    prompt_files: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def config_sha256(self) -> str:
        """sha256 of the canonical JSON of the resolved snapshot."""
        return sha256_json(self.snapshot)


def sha256_json(data: Any) -> str:
    """sha256 of canonical JSON (sorted keys, no spaces)."""
    return hashlib.sha256(
        json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()


def _clean_loc(loc: tuple[Any, ...]) -> Loc:
    """Drop pydantic's discriminator tags from an error location."""
    out: list[str | int] = []
    skip = False
    for i, part in enumerate(loc):
        if skip:
            skip = False
            continue
        out.append(part)
        if part in AGENT_KEYS and i + 1 < len(loc) and loc[i + 1] in ("policy", "llm"):
            skip = True
    return tuple(out)


def _pydantic_issues(exc: ValidationError, resolved: Resolved) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    for err in exc.errors():
        loc = _clean_loc(err["loc"])
        kind = err["type"]
        message = err["msg"].removeprefix("Value error, ")
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, PayoffError):
            loc = loc + tuple(p for p in cause.path.split(".") if p)
            issues.append(resolved.issue(loc, cause.message))
            continue
        if kind == "extra_forbidden":
            model = model_at(ExperimentConfig, loc[:-1], resolved.data)
            valid = f" (valid: {', '.join(model.model_fields)})" if model else ""
            issues.append(resolved.issue(loc, f"unknown key{valid}"))
            continue
        if kind == "missing":
            issues.append(resolved.issue(loc, "required key is missing"))
            continue
        if kind == "union_tag_invalid":
            issues.append(
                resolved.issue(
                    loc + ("type",),
                    f"unknown agent type (valid: policy, llm) (got {short_repr(err['input'].get('type'))})",
                )
            )
            continue
        if kind == "union_tag_not_found":
            issues.append(resolved.issue(loc, "agent needs a type (valid: policy, llm)"))
            continue
        got = err.get("input")
        suffix = "" if "(got" in message or isinstance(got, dict) else f" (got {short_repr(got)})"
        issues.append(resolved.issue(loc, message + suffix))
    return issues


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _check_agent(
    agent: PolicyAgentConfig | LLMAgentConfig,
    loc: Loc,
    resolved: Resolved,
    loaded: LoadedExperiment,
    matrix: PayoffMatrix,
    issues: list[ConfigIssue],
    template_key: tuple[str, str],
) -> None:
    if isinstance(agent, PolicyAgentConfig):
        if agent.policy.upper() not in policy_names():
            issues.append(
                resolved.issue(
                    loc + ("policy",),
                    f"unknown policy (valid: {', '.join(policy_names())}) (got {agent.policy!r})",
                )
            )
        return
    if agent.provider not in PROVIDERS:
        issues.append(
            resolved.issue(
                loc + ("provider",),
                f"unknown provider (valid: {', '.join(PROVIDERS)}) (got {agent.provider!r})",
            )
        )
    elif (module := PROVIDERS[agent.provider]) and importlib.util.find_spec(module) is None:
        issues.append(
            resolved.issue(
                loc + ("provider",),
                f"provider {agent.provider!r} needs its extra: run `uv sync --extra {agent.provider}`",
            )
        )
    paths: dict[str, Path] = {}
    for key in ("system", "round", "personas_dir"):
        value = getattr(agent.prompts, key)
        file, _ = resolved.origin_of(loc + ("prompts", key))
        target = (file.parent / value).resolve()
        if not target.is_relative_to(resolved.root):
            issues.append(
                resolved.issue(
                    loc + ("prompts", key), f"path leaves the config root (got {value!r})"
                )
            )
        elif not (target.is_dir() if key == "personas_dir" else target.is_file()):
            issues.append(resolved.issue(loc + ("prompts", key), f"not found (got {value!r})"))
        else:
            paths[key] = target
    if len(paths) < 3:
        return
    personas = sorted(p.stem for p in paths["personas_dir"].glob("*.md"))
    persona_text = ""
    if agent.persona is not None:
        if agent.persona not in personas:
            issues.append(
                resolved.issue(
                    loc + ("persona",),
                    f"unknown persona (valid: {', '.join(personas)}) (got {agent.persona!r})",
                )
            )
            return
        persona_path = paths["personas_dir"] / f"{agent.persona}.md"
        persona_text = _read_text(persona_path)
        paths["persona"] = persona_path
    system_text, round_text = _read_text(paths["system"]), _read_text(paths["round"])
    templates = PromptTemplates(system=system_text, round=round_text, persona=persona_text)
    for key, text in (("system", system_text), ("round", round_text)):
        try:
            if key == "system":
                render_system(templates, matrix, agent.output_format)
            else:
                probe = Transcript(matrix).observation(
                    0, history_window=1, include_totals=True, horizon_type="fixed"
                )
                render_round(text, probe, agent.history_window, agent.output_format)
        except (KeyError, IndexError, ValueError) as exc:
            valid = SYSTEM_FIELDS if key == "system" else ROUND_FIELDS
            issues.append(
                resolved.issue(
                    loc + ("prompts", key),
                    f"template error {exc!s} (placeholders: {', '.join(sorted(placeholders(text)))}; "
                    f"valid: {', '.join(valid)})",
                )
            )
            return
    for key, path in paths.items():
        if key != "personas_dir":
            rel = path.relative_to(resolved.root).as_posix()
            loaded.prompt_files[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    loaded.templates[template_key] = templates


def _relativize_prompts(snapshot: dict[str, Any], resolved: Resolved) -> None:
    """Rewrite prompt paths in the snapshot relative to the config root (portable, unambiguous)."""
    for i, cond in enumerate(snapshot.get("experiment", {}).get("conditions", [])):
        for key in AGENT_KEYS:
            agent = cond.get(key)
            if isinstance(agent, dict) and isinstance(agent.get("prompts"), dict):
                for pkey, value in agent["prompts"].items():
                    file, _ = resolved.origin_of(
                        ("experiment", "conditions", i, key, "prompts", pkey)
                    )
                    target = (file.parent / value).resolve()
                    if target.is_relative_to(resolved.root):
                        agent["prompts"][pkey] = target.relative_to(resolved.root).as_posix()


def load_experiment(path: str | Path) -> LoadedExperiment:
    """Load and fully validate an experiment config; ConfigError lists every problem."""
    path = Path(path)
    resolved = load_resolved(path)
    try:
        config = ExperimentConfig.model_validate(resolved.data)
    except ValidationError as exc:
        raise ConfigError(_pydantic_issues(exc, resolved)) from None
    snapshot = config.model_dump(mode="json")
    _relativize_prompts(snapshot, resolved)
    loaded = LoadedExperiment(config, path, resolved.root, snapshot)
    matrix = config.game.matrix()
    loaded.warnings.extend(f"game.payoff_matrix: {w}" for w in matrix.pd_warnings())
    issues: list[ConfigIssue] = []
    for i, cond in enumerate(config.experiment.conditions):
        for key in AGENT_KEYS:
            loc = ("experiment", "conditions", i, key)
            _check_agent(
                getattr(cond, key), loc, resolved, loaded, matrix, issues, (cond.name, key)
            )
    if issues:
        raise ConfigError(issues)
    return loaded


def build_agent(
    loaded: LoadedExperiment, condition: str, key: str, providers: dict[str, Any] | None = None
) -> PolicyAgent | LLMAgent:
    """A fresh agent for one side of one condition."""
    cond = next(c for c in loaded.config.experiment.conditions if c.name == condition)
    agent_cfg = getattr(cond, key)
    if isinstance(agent_cfg, PolicyAgentConfig):
        return make_policy(agent_cfg.policy, agent_cfg.params, agent_cfg.display_name())
    provider = make_provider(agent_cfg, providers)
    return LLMAgent(
        agent_cfg, provider, loaded.templates[(condition, key)], loaded.config.game.matrix()
    )


def make_provider(cfg: LLMAgentConfig, cache: dict[str, Any] | None = None) -> Any:
    """The provider client for an LLM agent config (shared across agents with equal settings).

    Keys are read from the variable named by `api_key_env` (environment, then `.env`); a missing
    key is a RunError naming the variable, never showing any value.
    """
    key = json.dumps(
        [
            cfg.provider,
            cfg.model,
            cfg.base_url,
            cfg.api_key_env,
            cfg.timeout_s,
            cfg.mock.model_dump(),
        ]
    )
    if cache is not None and key in cache:
        return cache[key]
    if cfg.provider == "mock":
        client: Any = MockProvider(cfg.model, cfg.mock.invalid_rate, cfg.mock.latency_ms)
    else:
        api_key = resolve_api_key(cfg.api_key_env)
        if cfg.api_key_env and not api_key:
            raise RunError(
                f"{cfg.display_name()}: environment variable {cfg.api_key_env} is not set "
                f"(set it, or put it in .env; see .env.example)"
            )
        kwargs = {"api_key": api_key, "base_url": cfg.base_url, "timeout_s": cfg.timeout_s}
        try:
            if cfg.provider == "openai":
                from pdbench.agents.providers.openai import OpenAIProvider

                client = OpenAIProvider(cfg.model, **kwargs)
            elif cfg.provider == "litellm":
                from pdbench.agents.providers.litellm import LiteLLMProvider

                client = LiteLLMProvider(cfg.model, **kwargs)
            elif cfg.provider == "anthropic":
                from pdbench.agents.providers.anthropic import AnthropicProvider

                client = AnthropicProvider(cfg.model, **kwargs)
            else:
                raise RunError(f"unknown provider {cfg.provider!r} (valid: {', '.join(PROVIDERS)})")
        except ProviderError as exc:
            raise RunError(f"{cfg.display_name()}: {exc}") from None
        client.api_key_value = api_key  # kept in memory only, for redacting error messages
    if cache is not None:
        cache[key] = client
    return client
