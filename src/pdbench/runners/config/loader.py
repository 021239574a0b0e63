"""The one config loader: any config file (experiment, tournament, evolution) in, a validated
`LoadedConfig` with its agents out; `load_mapping` does the same for a config given as a mapping
(the app's forms), with the same messages.

`load_config` reads the YAML and expands refs (`resolve`), applies command-line overrides,
validates with pydantic (`validation` turns errors into lines), then checks what pydantic
cannot (each agent: `agent_checks`; here: unique player names, the sweep, published numbers).
Every problem becomes a `file: dotted.path: message (got value)` line of one ConfigError;
nothing is written.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pdbench.agents.factory import AgentSpec
from pdbench.core.config import (
    LAZY_KINDS,
    MAX_GAMES,
    AnyAgentConfig,
    CommunicationConfig,
    EvolutionConfig,
    ExperimentConfig,
    HumanAgentConfig,
    LLMAgentConfig,
    Loc,
    config_kinds,
    config_model,
)
from pdbench.core.group_config import GroupsConfig
from pdbench.core.group_science_config import GroupEvolutionConfig, GroupTournamentConfig
from pdbench.core.metrics import AGGREGATE_COLUMNS
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.published import BY_CONDITION, PublishedNumbers, matches
from pdbench.core.sweep import expand_sweep, target_parts
from pdbench.errors import ConfigError, ConfigIssue
from pdbench.redact import redact_url, remember, url_secrets
from pdbench.runners.config.agent_checks import check_agent
from pdbench.runners.config.group_checks import channel_problems, check_seat
from pdbench.runners.config.resolve import (
    MAX_NODES,
    Origin,
    Resolved,
    apply_overrides,
    load_resolved,
    locate,
    mapping_source,
    resolve_mapping,
    short_repr,
)
from pdbench.runners.config.validation import validation_issues

COMMANDS = {
    "experiment": "run",
    "tournament": "tournament",
    "evolution": "evolve",
    "groups": "run",
    "group_tournament": "tournament",
    "group_evolution": "evolve",
    "pgg": "run",
    "commons": "run",
}
# Kinds a command expecting another kind also runs: `pdbench run` runs experiments and groups,
# `pdbench tournament` group tournaments too, `pdbench evolve` group evolutions too.
ALSO_RUNS = {
    "experiment": ("groups", "pgg", "commons"),
    "tournament": ("group_tournament",),
    "evolution": ("group_evolution",),
}
# Configs whose agents sit in groups (seats checked as group seats; a stage game of N players).
GROUP_MODELS = (GroupsConfig, GroupTournamentConfig, GroupEvolutionConfig)
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
    found = [k for k in config_kinds() if isinstance(data, dict) and k in data]
    return found[0] if len(found) == 1 else None


def load_config(
    path: str | Path, kind: str | None = None, overrides: dict[str, Any] | None = None
) -> LoadedConfig:
    """Load and fully validate a config; ConfigError lists every problem.

    `kind` (experiment, tournament, evolution) is what the command expects; None accepts any.
    `overrides` are dotted paths set before validation (the command-line options).
    """
    path = Path(path)
    return _validate(load_resolved(path), path, kind, overrides)


def load_mapping(
    data: dict[str, Any],
    name: str,
    base_dir: str | Path,
    kind: str | None = None,
    overrides: dict[str, Any] | None = None,
    human_seats: bool = False,
) -> LoadedConfig:
    """Load and fully validate a config given as a mapping (what the app's forms build), as
    `load_config` would the same mapping written as YAML into `base_dir`: refs, prompt files and
    the config root resolve from `base_dir`, and every problem is the same one-line message
    with `name` where the file's name would be. Nothing is written.

    The result is for checking and planning: its `path` names no file (a run records its config
    file to resume from, so a run is started from a written config).

    `human_seats`: a groups, pgg or commons config may seat a person (the app's Play tab builds
    a person's group or resource game this way; a config file is refused one, see
    `group_checks.check_seat` and `resource_checks.check_resource_seat`).
    """
    resolved = resolve_mapping(data, name, Path(base_dir))
    return _validate(resolved, mapping_source(Path(base_dir)), kind, overrides, human_seats)


def _validate(
    resolved: Resolved,
    path: Path,
    kind: str | None,
    overrides: dict[str, Any] | None,
    human_seats: bool = False,
) -> LoadedConfig:
    """A resolved config (from the file or mapping `path` stands for) validated: its kind, the
    overrides, the sweep, the model, then every check pydantic cannot do (`human_seats`: a
    group may seat a person)."""
    found = config_kind(resolved.data)
    display = resolved.display(path)
    if found is None:
        raise ConfigError(
            [ConfigIssue(display, "", f"needs exactly one of the sections {', '.join(COMMANDS)}")]
        )
    if kind is not None and found != kind and found not in ALSO_RUNS.get(kind, ()):
        raise ConfigError(
            [
                ConfigIssue(
                    display,
                    found,
                    f"this is {_article(found)} config; run it with `pdbench {COMMANDS[found]}`",
                )
            ]
        )
    overrides = _retarget(dict(overrides or {}), kind, found)
    apply_overrides(resolved, overrides)
    coordinates = _expand_sweep(resolved, display) if found == "experiment" else {}
    model = config_model(found)
    try:
        config = model.model_validate(resolved.data)
    except ValidationError as exc:
        raise ConfigError(validation_issues(exc, resolved, model)) from None
    snapshot = config.model_dump(mode="json")
    _drop_silent_talk(snapshot)
    _hide_url_credentials(config, snapshot)
    loaded = LoadedConfig(found, config, path, resolved.root, snapshot, overrides=overrides)
    loaded.sweep_coordinates = coordinates
    matrix = config.game.matrix()
    loaded.warnings.extend(f"game.payoff_matrix: {w}" for w in matrix.pd_warnings())
    issues: list[ConfigIssue] = []
    if isinstance(config, EvolutionConfig):
        for loc, message in config.evolution.size_problems():
            issues.append(resolved.issue(("evolution",) + loc, message))
    if isinstance(config, GroupsConfig):
        loaded.warnings.extend(config.game_warnings())
    if isinstance(config, GROUP_MODELS):
        talk = channel_problems(config) if isinstance(config, GroupsConfig) else []
        for loc, message in [*config.game_problems(), *talk]:
            issues.append(resolved.issue(loc, message))
        if "rounds_log" in config.run.model_fields_set and config.run.rounds_log != "jsonl":
            issues.append(
                resolved.issue(
                    ("run", "rounds_log"),
                    "groups keep their rounds in rounds.jsonl only (valid: jsonl) "
                    f"(got {config.run.rounds_log!r})",
                )
            )
        if config.run.shard is not None and not isinstance(config, GroupsConfig):
            issues.append(
                resolved.issue(
                    ("run", "shard"),
                    "group tournaments and group evolutions are not sharded; run them whole "
                    f"(shards: experiments and groups) (got {config.run.shard!r})",
                )
            )
    resource = found in LAZY_KINDS  # pgg, commons
    if resource:
        loaded.published = _check_resource(config, resolved, issues)
    seen: dict[str, Loc] = {}
    for loc, agent in config.agent_locations():
        if isinstance(config, GROUP_MODELS):
            spec = check_seat(agent, loc, resolved, matrix, loaded, issues, human_seats)
        elif resource:
            from pdbench.runners.config.resource_checks import check_resource_seat

            spec = check_resource_seat(agent, loc, resolved, matrix, loaded, issues, human_seats)
        else:
            spec = check_agent(agent, loc, resolved, matrix, loaded, issues)
        if spec is not None:
            loaded.agents[loc] = spec
        if found not in ("experiment", "groups", "pgg", "commons"):
            _check_unique_name(agent, loc, seen, resolved, issues)
        _relativize_prompts(snapshot, loc, resolved)
    if (
        not resource
        and config.run.rounds_log == "columns"
        and any(
            isinstance(agent, LLMAgentConfig | HumanAgentConfig)
            for _, agent in config.agent_locations()
        )
    ):
        issues.append(
            resolved.issue(
                ("run", "rounds_log"),
                "columns keeps no crash-safe log of the rounds of LLM or human agents; "
                "choose both or jsonl (got 'columns')",
            )
        )
    if not resource and config.run.rounds_log == "columns" and _talks(config):
        issues.append(
            resolved.issue(
                ("run", "rounds_log"),
                "columns keeps no log of the messages of a game with a message channel; "
                "choose both or jsonl (got 'columns')",
            )
        )
    if isinstance(config, ExperimentConfig) and config.experiment.published is not None:
        loaded.published = _read_published(config, resolved, issues)
    if issues:
        raise ConfigError(issues)
    return loaded


def _check_resource(
    config: Any, resolved: Resolved, issues: list[ConfigIssue]
) -> dict[str, Any] | None:
    """What a public goods or commons config may not set: rules that cannot be built, a
    rounds log other than rounds.jsonl, shards; returns its published numbers, read and checked
    (`read_resource_published`)."""
    for loc, message in config.game_problems():
        issues.append(resolved.issue(loc, message))
    if "rounds_log" in config.run.model_fields_set and config.run.rounds_log != "jsonl":
        issues.append(
            resolved.issue(
                ("run", "rounds_log"),
                f"{config.kind} games keep their rounds in rounds.jsonl only (valid: jsonl) "
                f"(got {config.run.rounds_log!r})",
            )
        )
    if config.run.shard is not None:
        issues.append(
            resolved.issue(
                ("run", "shard"),
                f"{config.kind} runs are not sharded; run them whole (got {config.run.shard!r})",
            )
        )
    from pdbench.runners.config.resource_published import read_resource_published  # its kinds

    return read_resource_published(config, resolved, issues)


def _retarget(overrides: dict[str, Any], kind: str | None, found: str) -> dict[str, Any]:
    """A command's options name its own kind's section (`tournament.repetitions`); for a kind
    it also runs (a group tournament), the same key of that kind's section."""
    if kind is None or found == kind or found not in ALSO_RUNS.get(kind, ()):
        return overrides
    prefix = f"{kind}."
    return {
        f"{found}.{key[len(prefix) :]}" if key.startswith(prefix) else key: value
        for key, value in overrides.items()
    }


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


def _talks(config: Any) -> bool:
    """Some condition of an experiment has a message channel."""
    if not isinstance(config, ExperimentConfig):
        return False
    return any(config.communication_of(c).enabled for c in config.experiment.conditions)


_SILENT = {
    "communication": None,
    "talk": "silent",
    "talk_text": None,
    "message": None,
    "messages": [],
}


def _drop_silent_talk(node: Any) -> None:
    """Leave the message channel's settings out of the snapshot where they are unset (no
    channel, a silent policy, no message prompt), so a config that does not talk keeps the
    snapshot and the hash it had before talk existed (and its runs still resume); likewise a
    person's empty `moves`, `amounts` or `punishments`."""
    if isinstance(node, list):
        for item in node:
            _drop_silent_talk(item)
        return
    if not isinstance(node, dict):
        return
    channel = node.get("communication")
    if isinstance(channel, dict) and channel == CommunicationConfig().model_dump(mode="json"):
        del node["communication"]
    for key, unset in _SILENT.items():
        if key in node and node[key] == unset and (key != "message" or "round" in node):
            del node[key]
    if node.get("type") == "human":  # a person's answers of the other kind of game (issue 31)
        for key in ("moves", "amounts", "punishments"):
            if node.get(key) == []:
                del node[key]
    for value in node.values():
        _drop_silent_talk(value)


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
