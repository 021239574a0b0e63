"""The one config loader: any config file (experiment, tournament, evolution) in, a validated
`LoadedConfig` with its agents out.

`load_config` reads the YAML and expands refs (`resolve`), applies command-line overrides,
validates with pydantic (`validation` turns errors into lines), then checks what pydantic
cannot: policy names and the parameters each policy reads, Axelrod strategies, provider names
and extras, prompt files, personas and template placeholders, and unique player names. Every
problem becomes a `file: dotted.path: message (got value)` line of one ConfigError; nothing is
written.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

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
from pdbench.agents.policy import POLICY_REGISTRY, policy_names, unused_params
from pdbench.agents.providers.base import provider_entry, registry
from pdbench.core.config import (
    CONFIG_MODELS,
    MAX_GAMES,
    AnyAgentConfig,
    AxelrodAgentConfig,
    EvolutionConfig,
    ExperimentConfig,
    HumanAgentConfig,
    LLMAgentConfig,
    Loc,
    PolicyAgentConfig,
)
from pdbench.core.metrics import AGGREGATE_COLUMNS
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.published import BY_CONDITION, PublishedNumbers, matches
from pdbench.core.sweep import expand_sweep, target_parts
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action
from pdbench.errors import ConfigError, ConfigIssue
from pdbench.redact import redact_url, remember, url_secrets
from pdbench.runners.config.resolve import (
    MAX_NODES,
    Origin,
    Resolved,
    apply_overrides,
    dotted,
    load_resolved,
    locate,
    read_text_file,
    short_repr,
)
from pdbench.runners.config.validation import validation_issues

COMMANDS = {"experiment": "run", "tournament": "tournament", "evolution": "evolve"}
SEPARATOR = "_vs_"  # between the two players' names in a match's game label


@dataclass
class LoadedConfig:
    """A validated config of any kind: the model, its resolved snapshot, agents and warnings."""

    kind: str
    config: Any
    path: Path
    root: Path
    snapshot: dict[str, Any]
    agents: dict[Loc, AgentSpec] = field(default_factory=dict)
    prompt_files: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    overrides: dict[str, Any] = field(default_factory=dict)
    # expanded condition name -> {swept path: value} (experiment.sweep)
    sweep_coordinates: dict[str, dict[str, Any]] = field(default_factory=dict)
    # experiment.published, read and checked (JSON-ready), for the manifest and the report
    published: dict[str, Any] | None = None

    @property
    def config_sha256(self) -> str:
        """sha256 of the canonical JSON of the resolved snapshot."""
        return sha256_json(self.snapshot)

    @property
    def players(self) -> list[AgentSpec]:
        """The agents in config order (a tournament's players, an evolution's members)."""
        return list(self.agents.values())

    @property
    def names(self) -> list[str]:
        """The players' display names, in config order."""
        return [spec.name for spec in self.players]

    def matrix(self) -> PayoffMatrix:
        """The stage game's payoff matrix."""
        return self.config.game.matrix()


def sha256_json(data: Any) -> str:
    """sha256 of canonical JSON (sorted keys, no spaces)."""
    return hashlib.sha256(
        json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()


def config_kind(data: Any) -> str | None:
    """experiment, tournament or evolution: the one section the config has (None if unclear)."""
    found = [k for k in CONFIG_MODELS if isinstance(data, dict) and k in data]
    return found[0] if len(found) == 1 else None


def load_config(
    path: str | Path, kind: str | None = None, overrides: dict[str, Any] | None = None
) -> LoadedConfig:
    """Load and fully validate a config; ConfigError lists every problem.

    `kind` (experiment, tournament, evolution) is what the command expects; None accepts any.
    `overrides` are dotted paths set before validation (the command-line options).
    """
    path = Path(path)
    resolved = load_resolved(path)
    found = config_kind(resolved.data)
    display = resolved.display(path)
    if found is None:
        raise ConfigError(
            [ConfigIssue(display, "", f"needs exactly one of the sections {', '.join(COMMANDS)}")]
        )
    if kind is not None and found != kind:
        raise ConfigError(
            [
                ConfigIssue(
                    display,
                    found,
                    f"this is {_article(found)} config; run it with `pdbench {COMMANDS[found]}`",
                )
            ]
        )
    overrides = dict(overrides or {})
    apply_overrides(resolved, overrides)
    coordinates = _expand_sweep(resolved, display) if found == "experiment" else {}
    model = CONFIG_MODELS[found]
    try:
        config = model.model_validate(resolved.data)
    except ValidationError as exc:
        raise ConfigError(validation_issues(exc, resolved, model)) from None
    snapshot = config.model_dump(mode="json")
    _hide_url_credentials(config, snapshot)
    loaded = LoadedConfig(found, config, path, resolved.root, snapshot, overrides=overrides)
    loaded.sweep_coordinates = coordinates
    matrix = config.game.matrix()
    loaded.warnings.extend(f"game.payoff_matrix: {w}" for w in matrix.pd_warnings())
    issues: list[ConfigIssue] = []
    if isinstance(config, EvolutionConfig):
        for loc, message in config.evolution.size_problems():
            issues.append(resolved.issue(("evolution",) + loc, message))
    seen: dict[str, Loc] = {}
    for loc, agent in config.agent_locations():
        spec = _check_agent(agent, loc, resolved, matrix, loaded, issues)
        if spec is not None:
            loaded.agents[loc] = spec
        if found != "experiment":
            _check_unique_name(agent, loc, seen, resolved, issues)
        _relativize_prompts(snapshot, loc, resolved)
    if isinstance(config, ExperimentConfig) and config.experiment.published is not None:
        loaded.published = _read_published(config, resolved, issues)
    if issues:
        raise ConfigError(issues)
    return loaded


def _read_published(
    config: ExperimentConfig, resolved: Resolved, issues: list[ConfigIssue]
) -> dict[str, Any] | None:
    """experiment.published: read the file (under the config root), validate it, and check that
    its metrics are aggregates columns and its axes are this run's."""
    where = ("experiment", "published")
    value = config.experiment.published
    assert value is not None
    file, _ = resolved.origin_of(where)
    target = locate(file.parent, value, resolved.root)
    if isinstance(target, str):
        issues.append(resolved.issue(where, f"{target} (got {short_repr(value)})"))
        return None
    try:
        source = load_resolved(target)
        numbers = PublishedNumbers.model_validate(source.data)
    except ConfigError as exc:
        issues.extend(exc.issues)
        return None
    except ValidationError as exc:
        issues.extend(validation_issues(exc, source, PublishedNumbers))
        return None
    axes = [BY_CONDITION, *(config.experiment.sweep or {})]
    names = {c.name for c in config.experiment.conditions}
    names |= {n.split("+", 1)[0] for n in names}
    for i, comparison in enumerate(numbers.comparisons):
        at = ("comparisons", i)
        if comparison.metric not in AGGREGATE_COLUMNS:
            close = difflib.get_close_matches(comparison.metric, AGGREGATE_COLUMNS, n=3)
            hint = f" (close: {', '.join(close)})" if close else ""
            issues.append(
                source.issue(
                    (*at, "metric"),
                    f"not an aggregates column{hint} (got {comparison.metric!r})",
                )
            )
        if comparison.by not in axes:
            issues.append(
                source.issue(
                    (*at, "by"),
                    f"not an axis of this run (valid: {', '.join(axes)}) (got {comparison.by!r})",
                )
            )
        elif comparison.by == BY_CONDITION:
            for j, point in enumerate(comparison.points):
                if point not in names:
                    issues.append(source.issue((*at, "points", j), f"no condition named {point!r}"))
        sweep = config.experiment.sweep or {}
        for path, value in comparison.where.items():
            if path not in sweep:
                valid = ", ".join(sweep) or "none: this run has no sweep"
                issues.append(
                    source.issue(
                        (*at, "where", path),
                        f"not an axis of this run (valid: {valid}) (got {path!r})",
                    )
                )
            elif not any(matches(value, path, "", {path: v}) for v in sweep[path]):
                shown = ", ".join(map(str, sweep[path]))
                issues.append(
                    source.issue(
                        (*at, "where", path),
                        f"not a value of this axis (valid: {shown}) (got {value!r})",
                    )
                )
    return numbers.model_dump(mode="json")


def _expand_sweep(resolved: Any, display: str) -> dict[str, dict[str, Any]]:
    """Expand `experiment.sweep` in the resolved tree (before validation); returns each
    expanded condition's coordinates. The origins of an expanded condition point at the
    condition it came from, and every issue inside it names its sweep entry."""
    experiment = resolved.data.get("experiment")
    if not isinstance(experiment, dict) or not experiment.get("sweep"):
        return {}
    sweep = experiment["sweep"]
    conditions = experiment.get("conditions")
    if not isinstance(sweep, dict) or not isinstance(conditions, list):
        return {}  # the model's validation says what is wrong
    only = experiment.get("sweep_conditions")
    replicates = experiment.get("replicates", 1)
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 1:
        replicates = 1  # the model's validation says what is wrong
    result = expand_sweep(
        conditions,
        sweep,
        only if isinstance(only, list) else None,
        resolved.data.get("horizon"),
        max_conditions=MAX_GAMES // replicates,
        max_nodes=MAX_NODES,
    )
    if result.problems:
        raise ConfigError(
            [
                ConfigIssue(
                    display,
                    "experiment.sweep_conditions"
                    if path == "sweep_conditions"
                    else f"experiment.sweep.{path}".rstrip("."),
                    message,
                )
                for path, message in result.problems
            ]
        )
    by_name = {c.get("name"): i for i, c in enumerate(conditions) if isinstance(c, dict)}
    base = ("experiment", "conditions")
    tables = (resolved.origins, resolved.ref_sites)
    # Each table's entries under experiment.conditions, grouped by condition index (so the
    # work below is linear in the expanded conditions, not quadratic).
    old: list[dict[Any, list[tuple[Loc, Any]]]] = []
    for table in tables:
        groups: dict[Any, list[tuple[Loc, Any]]] = {}
        for key in [k for k in table if k[:2] == base and len(k) > 2]:
            groups.setdefault(key[2], []).append((key, table.pop(key)))
        old.append(groups)
    for j, cond in enumerate(result.conditions):
        name = cond.get("name") if isinstance(cond, dict) else None
        coords = result.coordinates.get(name)
        i = by_name.get(name.split("+", 1)[0] if coords else name, j)
        added: list[list[Loc]] = []
        for table, groups in zip(tables, old, strict=True):
            keys = []
            for key, origin in groups.get(i, []):
                new_key = (*base, j, *key[3:])
                table[new_key] = origin
                keys.append(new_key)
            added.append(keys)
        if coords:
            shown = ", ".join(f"{p}={v!r}" for p, v in coords.items())
            resolved.notes[(*base, j)] = f"condition {name!r} from experiment.sweep ({shown})"
            # A swept value was written in the sweep entry: paths in it (prompt files) resolve
            # from there, and errors about it point there.
            for path, k in result.value_index[name].items():
                target = (*base, j, *target_parts(path))
                for table, keys in zip(tables, added, strict=True):
                    for key in keys:
                        if key[: len(target)] == target:
                            table.pop(key, None)
                entry = ("experiment", "sweep", path, k)
                file, inner = resolved.origin_of(entry)
                resolved.origins[target] = Origin(file, inner)
    experiment["conditions"] = result.conditions
    return result.coordinates


def _hide_url_credentials(config: Any, snapshot: dict[str, Any]) -> None:
    """Remember the secrets in agents' base_url (query values) and hide them in the snapshot,
    which goes into the manifest."""
    for loc, agent in config.agent_locations():
        if isinstance(agent, LLMAgentConfig) and agent.base_url:
            for secret in url_secrets(agent.base_url):
                remember(secret)
            node: Any = snapshot
            for part in loc:
                node = node[part]
            node["base_url"] = redact_url(agent.base_url)


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _check_unique_name(
    agent: AnyAgentConfig,
    loc: Loc,
    seen: dict[str, Loc],
    resolved: Resolved,
    issues: list[ConfigIssue],
) -> None:
    """Player names are unique and do not hold the separator of round records' game labels
    (`<A>_vs_<B>`), since match seeds, records and artifact rows derive from them."""
    name = agent.display_name()
    if SEPARATOR in name:
        issues.append(
            resolved.node_issue(
                loc,
                f"a player name may not contain {SEPARATOR!r}, which separates the two players "
                f"in round records (got {name!r}); give it another `name`",
            )
        )
    if name in seen:
        issues.append(
            resolved.node_issue(
                loc,
                f"duplicate player name {name!r} (same as entry "
                f"{[p for p in seen[name] if isinstance(p, int)][-1]}); "
                "give one of them a distinct `name`",
            )
        )
    seen.setdefault(name, loc)


def _check_agent(
    agent: AnyAgentConfig,
    loc: Loc,
    resolved: Resolved,
    matrix: PayoffMatrix,
    loaded: LoadedConfig,
    issues: list[ConfigIssue],
) -> AgentSpec | None:
    """What pydantic cannot check about one agent; its AgentSpec when it is usable."""
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
    templates = _check_llm(agent, loc, resolved, matrix, loaded, issues)
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
        verbatim=agent.verbatim_prompts,
    )
    problem = _template_problem(agent, templates, matrix)
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


def _relativize_prompts(snapshot: dict[str, Any], loc: Loc, resolved: Resolved) -> None:
    """Rewrite an agent's prompt paths in the snapshot relative to the config root."""
    node: Any = snapshot
    for part in loc:
        node = node[part]
    prompts = node.get("prompts") if isinstance(node, dict) else None
    if not isinstance(prompts, dict):
        return
    for key, value in prompts.items():
        if not isinstance(value, str):
            continue
        file, _ = resolved.origin_of(loc + ("prompts", key))
        target = (file.parent / value).resolve()
        if target.is_relative_to(resolved.root):
            prompts[key] = target.relative_to(resolved.root).as_posix()
