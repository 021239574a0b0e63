"""What pydantic cannot check about one agent of a config: policy names and the parameters each
policy reads, Axelrod strategies, a human agent's game, an LLM agent's provider and what it asks
of it, its prompt files, persona and template placeholders, and a llamacpp model file. Each
problem is a ConfigIssue located by the resolved tree (`resolve.Resolved`); `check_agent` is
called by the loader for every agent of a config.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pdbench.agents.factory import AgentSpec
from pdbench.agents.llm import (
    BLOCK_FIELDS,
    DEFAULT_HISTORY_LINE,
    HISTORY_LINE_FIELDS,
    OPTIONAL_PROMPTS,
    ROUND_FIELDS,
    SYSTEM_FIELDS,
    PromptTemplates,
    file_text,
    placeholders,
    render_round,
    render_system,
)
from pdbench.agents.llm_talk import MESSAGE_FIELDS
from pdbench.agents.policy import POLICY_REGISTRY, policy_names, unused_params
from pdbench.agents.providers.base import provider_entry, registry
from pdbench.core.config import (
    AnyAgentConfig,
    AxelrodAgentConfig,
    ExperimentConfig,
    HumanAgentConfig,
    LLMAgentConfig,
    Loc,
    PolicyAgentConfig,
)
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action
from pdbench.errors import ConfigIssue
from pdbench.runners.config.resolve import (
    Resolved,
    dotted,
    locate,
    read_text_file,
    short_repr,
)

if TYPE_CHECKING:
    from pdbench.runners.config.loader import LoadedConfig


# How an LLM agent's templates are checked: (part, one-line message) or None.
TemplateCheck = Callable[[LLMAgentConfig, PromptTemplates], "tuple[str, str] | None"]


def check_agent(
    agent: AnyAgentConfig,
    loc: Loc,
    resolved: Resolved,
    matrix: PayoffMatrix,
    loaded: LoadedConfig,
    issues: list[ConfigIssue],
    template_problem: TemplateCheck | None = None,
) -> AgentSpec | None:
    """What pydantic cannot check about one agent; its AgentSpec when it is usable.
    `template_problem(agent, templates)`: how an LLM agent's templates are checked (default:
    as the templates of a pairwise game of `matrix`)."""
    if isinstance(agent, PolicyAgentConfig):
        return _check_policy(agent, loc, resolved, issues)
    if isinstance(agent, HumanAgentConfig):
        return _check_human(agent, loc, resolved, loaded.config, issues)
    if isinstance(agent, AxelrodAgentConfig):
        from pdbench.agents.axelrod_adapter import strategy_problem

        problem = strategy_problem(agent.strategy)
        if problem is not None:
            issues.append(resolved.issue(loc + ("strategy",), problem))
            return None
        return AgentSpec(agent)
    templates = _check_llm(agent, loc, resolved, matrix, loaded, issues, template_problem)
    _check_llm_options(agent, loc, resolved, loaded, issues)
    return AgentSpec(agent, templates) if templates is not None else None


def _check_llm_options(
    agent: LLMAgentConfig,
    loc: Loc,
    resolved: Resolved,
    loaded: LoadedConfig,
    issues: list[ConfigIssue],
) -> None:
    """What the agent asks of its provider is something it can do; the re-prompt's
    placeholders; a price for a USD budget; the llamacpp model file."""
    try:
        adapter = provider_entry(agent.provider).factory
    except KeyError:
        adapter = None  # reported with the provider
    if adapter is not None and not getattr(adapter, "sends_temperature", True):
        if agent.temperature != 0.0:
            loaded.warnings.append(
                f"{dotted(loc)}: the {agent.provider} provider sends no temperature (its API "
                f"takes none), so temperature {agent.temperature:g} is recorded but not used"
            )
    if adapter is not None and agent.output_format == "choice":
        if not getattr(adapter, "constrains_answers", False):
            issues.append(
                resolved.issue(
                    loc + ("output_format",),
                    f"the {agent.provider} provider cannot constrain answers to C or D (valid "
                    "here: token, json) (got 'choice')",
                )
            )
    if adapter is not None and agent.record_logprobs:
        if not getattr(adapter, "gives_logprobs", False):
            issues.append(
                resolved.issue(
                    loc + ("record_logprobs",),
                    f"the {agent.provider} provider gives no log-probabilities (got true)",
                )
            )
    if adapter is not None and agent.prompt_mode == "completion":
        if not getattr(adapter, "completes_text", False):
            able = sorted(
                k for k, e in registry().items() if getattr(e.factory, "completes_text", False)
            )
            issues.append(
                resolved.issue(
                    loc + ("prompt_mode",),
                    f"the {agent.provider} provider has no completion endpoint (providers with "
                    f"one: {', '.join(able)}; for a chat provider use prompt_mode user, the same "
                    "text as one user message) (got 'completion')",
                )
            )
        elif agent.output_format == "choice" or agent.record_logprobs:
            issues.append(
                resolved.issue(
                    loc + ("prompt_mode",),
                    "a completion sends plain text: output_format choice and record_logprobs "
                    "need prompt_mode chat or user (got 'completion')",
                )
            )
    if agent.reprompt is not None:
        problem = _placeholder_problem(agent.reprompt, ("error", "expected"))
        if problem is not None:
            issues.append(
                resolved.issue(
                    loc + ("reprompt",), f"{problem} (valid placeholders: error, expected)"
                )
            )
    budget = getattr(loaded.config.run, "budget", None)
    if budget is not None and budget.max_cost_usd is not None:
        from pdbench.agents.providers.pricing import price_known

        if not price_known(agent):
            issues.append(
                resolved.node_issue(
                    loc,
                    f"run.budget.max_cost_usd needs this agent's price, which is unknown for "
                    f"{agent.provider} model {agent.model!r}: set pricing: {{input_per_mtok: "
                    "..., output_per_mtok: ...}, or remove max_cost_usd",
                )
            )
    if agent.model_path is not None:
        _check_model_path(agent, loc, resolved, issues)


def _check_model_path(
    agent: LLMAgentConfig, loc: Loc, resolved: Resolved, issues: list[ConfigIssue]
) -> None:
    """model_path obeys the config root like prompt files (relative to the file that sets it)
    and must start with the GGUF magic; problems never quote the file's bytes."""
    assert agent.model_path is not None
    where = loc + ("model_path",)
    file, _ = resolved.origin_of(where)
    target = locate(file.parent, agent.model_path, resolved.root)
    if isinstance(target, str):
        problem = "model file not found" if target == "not found" else target
        issues.append(resolved.issue(where, f"{problem} (got {short_repr(agent.model_path)})"))
        return
    try:
        with target.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        issues.append(
            resolved.issue(
                where,
                f"cannot read file ({exc.strerror or type(exc).__name__}) "
                f"(got {short_repr(agent.model_path)})",
            )
        )
        return
    if magic != b"GGUF":
        issues.append(
            resolved.issue(
                where,
                "not a GGUF model file (it does not start with the GGUF magic) "
                f"(got {short_repr(agent.model_path)})",
            )
        )
        return
    agent.model_path = str(target)


def _check_human(
    agent: HumanAgentConfig, loc: Loc, resolved: Resolved, config: Any, issues: list[ConfigIssue]
) -> AgentSpec | None:
    """A human agent is one recorded game: an experiment condition with one replicate and a
    fixed horizon of exactly as many rounds as it has moves."""
    if not isinstance(config, ExperimentConfig):
        issues.append(
            resolved.node_issue(
                loc,
                "a human agent is one recorded game (its moves); use it in an experiment "
                "condition, not in a tournament or an evolution",
            )
        )
        return None
    problems: list[tuple[Loc, str]] = []
    condition = config.experiment.conditions[int(loc[2])]
    horizon = condition.horizon or config.horizon
    if config.experiment.replicates != 1:
        problems.append(
            (
                loc,
                "a human agent is one recorded game, so experiment.replicates must be 1 "
                f"(got {config.experiment.replicates})",
            )
        )
    if agent.amounts or agent.punishments:
        problems.append(
            (loc, "amounts and punishments are a resource game's; a person here has moves")
        )
    if horizon.type != "fixed":
        problems.append((loc, "a human agent needs a fixed horizon (its moves are one game's)"))
    elif horizon.n_rounds != len(agent.moves):
        problems.append(
            (
                loc + ("moves",),
                f"a human agent needs one move per round: {len(agent.moves)} moves for a game "
                f"of {horizon.n_rounds} rounds",
            )
        )
    for where, message in problems:
        issues.append(resolved.node_issue(where, message))
    return None if problems else AgentSpec(agent)


def _check_policy(
    agent: PolicyAgentConfig, loc: Loc, resolved: Resolved, issues: list[ConfigIssue]
) -> AgentSpec | None:
    if agent.policy.upper() not in POLICY_REGISTRY:
        issues.append(
            resolved.issue(
                loc + ("policy",),
                f"unknown policy (valid: {', '.join(policy_names())}) (got {agent.policy!r})",
            )
        )
        return None
    unused = unused_params(agent)
    for param in unused:
        readers = [k for k, cls in sorted(POLICY_REGISTRY.items()) if param in cls.reads]
        value = getattr(agent.params, param)
        issues.append(
            resolved.issue(
                loc + ("params", param),
                f"{agent.policy.upper()} does not use it (used by: {', '.join(readers)}); "
                f"set it to null (got {value!r})",
            )
        )
    return None if unused else AgentSpec(agent)


def _check_llm(
    agent: LLMAgentConfig,
    loc: Loc,
    resolved: Resolved,
    matrix: PayoffMatrix,
    loaded: LoadedConfig,
    issues: list[ConfigIssue],
    template_problem: TemplateCheck | None = None,
) -> PromptTemplates | None:
    """Provider, prompt files, persona and templates of an LLM agent; its templates if valid."""
    try:
        hint = provider_entry(agent.provider).missing_sdk()
    except KeyError as exc:
        hint = str(exc.args[0])
    if hint is not None:
        issues.append(resolved.issue(loc + ("provider",), hint))
    paths: dict[str, Path] = {}
    optional = [k for k in OPTIONAL_PROMPTS if getattr(agent.prompts, k) is not None]
    for key in ("system", "round", "personas_dir", *optional):
        value = getattr(agent.prompts, key)
        file, _ = resolved.origin_of(loc + ("prompts", key))
        want = "dir" if key == "personas_dir" else "file"
        target = locate(file.parent, value, resolved.root, want)
        if isinstance(target, str):
            issues.append(
                resolved.issue(loc + ("prompts", key), f"{target} (got {short_repr(value)})")
            )
        else:
            paths[key] = target
    if len(paths) < 3 + len(optional):
        return None
    beside: dict[str, str] = {}  # parts found beside the round template -> file name
    for key in OPTIONAL_PROMPTS:  # parts not named: `<round file stem>.<part>.md` beside it
        sibling = paths["round"].with_name(f"{paths['round'].stem}.{key}.md")
        if key not in paths and sibling.is_file():
            paths[key] = sibling
            beside[key] = sibling.name
    if agent.persona is not None:
        personas = sorted(p.stem for p in paths["personas_dir"].glob("*.md"))
        if agent.persona not in personas:
            issues.append(
                resolved.issue(
                    loc + ("persona",),
                    f"unknown persona (valid: {', '.join(personas)}) (got {agent.persona!r})",
                )
            )
            return None
        persona_path = locate(paths["personas_dir"], f"{agent.persona}.md", resolved.root)
        if isinstance(persona_path, str):  # e.g. a link pointing out of the root
            issues.append(
                resolved.issue(
                    loc + ("persona",),
                    f"the persona file: {persona_path} (got {agent.persona!r})",
                )
            )
            return None
        paths["persona"] = persona_path
    texts: dict[str, str] = {"persona": ""}
    for key, path in paths.items():
        if key == "personas_dir":
            continue
        read = read_text_file(path)
        where = loc + (
            ("persona",) if key == "persona" else ("prompts", "round" if key in beside else key)
        )
        if isinstance(read, str):
            issues.append(resolved.issue(where, f"{read} (got {path.name!r})"))
            return None
        texts[key] = read[0]
        rel = path.relative_to(resolved.root).as_posix()
        loaded.prompt_files[rel] = hashlib.sha256(read[1]).hexdigest()
    if agent.verbatim_prompts:
        texts = {key: file_text(text) for key, text in texts.items()}
    templates = PromptTemplates(
        system=texts["system"],
        round=texts["round"],
        persona=texts["persona"],
        history_line=texts.get("history_line", DEFAULT_HISTORY_LINE),
        history=texts.get("history"),
        first_round=texts.get("first_round"),
        message=texts.get("message"),
        verbatim=agent.verbatim_prompts,
    )
    problem = (
        _template_problem(agent, templates, matrix)
        if template_problem is None
        else template_problem(agent, templates)
    )
    if problem is not None:
        key, message = problem
        if key in beside:  # not in the config: name the file beside the round template
            key, message = "round", f"its {key} part {beside[key]}: {message}"
        issues.append(resolved.issue(loc + ("prompts", key), message))
        return None
    return None if hint is not None else templates


def _template_problem(
    agent: LLMAgentConfig, templates: PromptTemplates, matrix: PayoffMatrix
) -> tuple[str, str] | None:
    """(system or round, message) when a template is not plain `{name}` placeholders of the
    valid names, or does not render; else None."""
    parts = (
        ("system", templates.system, SYSTEM_FIELDS),
        ("round", templates.round, ROUND_FIELDS),
        ("history_line", templates.history_line, HISTORY_LINE_FIELDS),
        ("history", templates.history or "", BLOCK_FIELDS),
        ("first_round", templates.first_round or "", BLOCK_FIELDS),
        ("message", templates.message or "", (*ROUND_FIELDS, *MESSAGE_FIELDS)),
    )
    for key, text, valid in parts:
        problem = _placeholder_problem(text, valid)
        if problem is not None:
            return key, f"template error: {problem} (valid placeholders: {', '.join(valid)})"
    for key, text in (("system", templates.system), ("round", templates.round)):
        valid = SYSTEM_FIELDS if key == "system" else ROUND_FIELDS
        try:
            if key == "system":
                render_system(templates, matrix, agent.output_format)
            else:
                probe = Transcript(matrix)
                for _ in range(2):  # the first round, then one with a round shown
                    render_round(
                        text,
                        probe.observation(
                            0, history_window=1, include_totals=True, horizon_type="fixed"
                        ),
                        agent.history_window,
                        agent.output_format,
                        templates=templates,
                    )
                    probe.record(Action.C, Action.D)
        except (LookupError, ValueError, TypeError, AttributeError) as exc:
            return key, (
                f"template error {exc!s} (placeholders: {', '.join(sorted(placeholders(text)))}; "
                f"valid: {', '.join(valid)})"
            )
    if agent.action_labels is not None:
        shown = placeholders(templates.system) | placeholders(templates.round)
        if not {"C", "D"} <= shown and not {"payoff_table"} <= shown:
            return "system", (
                f"action_labels {agent.labels()[0]}/{agent.labels()[1]} are never shown: the "
                "system or round template must use {C} and {D} (or {payoff_table}) so the model "
                "is told the moves it answers with"
            )
    return None


def _placeholder_problem(text: str, valid: tuple[str, ...]) -> str | None:
    """Why a template's placeholders are not all plain `{name}` with a valid name (a format
    spec, conversion, attribute or index could render huge or fail at run time)."""
    try:
        fields = [(name, conv, spec) for _, name, spec, conv in string.Formatter().parse(text)]
    except ValueError as exc:
        return f"{exc} (write {{{{ and }}}} for literal braces)"
    for name, conv, spec in fields:
        if name is None:
            continue
        if conv or spec:
            shown = name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "")
            return f"placeholders take no conversion or format spec (got {{{shown[:40]}}})"
        if name not in valid:
            return f"unknown placeholder {{{name[:40]}}}"
    return None
