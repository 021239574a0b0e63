"""Loading tournament and evolution configs: refs, validation, one-line errors, agents.

Like `load_experiment`: `load_resolved` expands refs, pydantic validates, then what pydantic cannot
check is checked (policy names, Axelrod strategies and the extra, LLM prompts and personas through
the experiment loader's own agent check, unique player names). Every problem becomes a
`file: dotted.path: message` line of one ConfigError; nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from pdbench.core.config import LLMAgentConfig, PolicyAgentConfig
from pdbench.core.payoff import PayoffError
from pdbench.core.tournament_config import (
    PLAYER_TYPES,
    AxelrodAgentConfig,
    EvolutionConfig,
    TournamentConfig,
)
from pdbench.errors import ConfigError, ConfigIssue
from pdbench.runners.config_errors import model_at, short_repr
from pdbench.runners.config_loader import Loc, Resolved, load_resolved
from pdbench.runners.registry import _check_agent, sha256_json

Player = PolicyAgentConfig | LLMAgentConfig | AxelrodAgentConfig


@dataclass
class LoadedGames:
    """A validated tournament or evolution config with its players, prompts and warnings."""

    config: Any
    path: Path
    root: Path
    snapshot: dict[str, Any]
    players: list[Player] = field(default_factory=list)
    templates: dict[tuple[str, str], Any] = field(default_factory=dict)
    prompt_files: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def config_sha256(self) -> str:
        """sha256 of the canonical JSON of the resolved snapshot."""
        return sha256_json(self.snapshot)

    @property
    def names(self) -> list[str]:
        """Player display names, in config order."""
        return [p.display_name() for p in self.players]

    def template_key(self, index: int) -> tuple[str, str]:
        """Key of an LLM player's prompt templates in `templates`."""
        return ("player", str(index))


def _clean_loc(loc: tuple[Any, ...]) -> Loc:
    """Drop pydantic's discriminator tags (policy/llm/axelrod right after a player's location)."""
    out: list[str | int] = []
    for i, part in enumerate(loc):
        if part in PLAYER_TYPES and i > 0:
            prev = loc[i - 1]
            if prev == "player" or (isinstance(prev, int) and i > 1 and loc[i - 2] == "players"):
                continue
        out.append(part)
    return tuple(out)


def validation_issues(
    exc: ValidationError, resolved: Resolved, root: type[BaseModel]
) -> list[ConfigIssue]:
    """One ConfigIssue per pydantic error, located in the file the value came from."""
    issues: list[ConfigIssue] = []
    for err in exc.errors():
        loc = _clean_loc(err["loc"])
        kind = err["type"]
        message = err["msg"].removeprefix("Value error, ")
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, PayoffError):
            loc = loc + tuple(p for p in cause.path.split(".") if p)
            issues.append(resolved.issue(loc, cause.message))
        elif kind == "extra_forbidden":
            model = model_at(root, loc[:-1], resolved.data)
            valid = f" (valid: {', '.join(model.model_fields)})" if model else ""
            issues.append(resolved.issue(loc, f"unknown key{valid}"))
        elif kind == "missing":
            issues.append(resolved.issue(loc, "required key is missing"))
        elif kind == "union_tag_invalid":
            got = err["input"].get("type") if isinstance(err["input"], dict) else err["input"]
            issues.append(
                resolved.issue(
                    loc + ("type",),
                    f"unknown agent type (valid: {', '.join(PLAYER_TYPES)}) (got {short_repr(got)})",
                )
            )
        elif kind in ("union_tag_not_found", "model_attributes_type"):
            issues.append(
                resolved.issue(
                    loc,
                    "a player is a policy name, `axelrod:Strategy`, or an agent mapping with a "
                    f"type ({', '.join(PLAYER_TYPES)}) (got {short_repr(err.get('input'))})",
                )
            )
        else:
            got = err.get("input")
            suffix = (
                "" if "(got" in message or isinstance(got, dict) else f" (got {short_repr(got)})"
            )
            issues.append(resolved.issue(loc, message + suffix))
    return issues


def _check_player(
    player: Player, loc: Loc, index: int, resolved: Resolved, loaded: LoadedGames
) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    if isinstance(player, AxelrodAgentConfig):
        from pdbench.agents.axelrod_adapter import strategy_problem

        problem = strategy_problem(player.strategy)
        if problem is not None:
            issues.append(resolved.issue(loc + ("strategy",), problem))
        return issues
    matrix = loaded.config.game.matrix()
    _check_agent(player, loc, resolved, loaded, matrix, issues, loaded.template_key(index))
    return issues


def _relativize_prompts(snapshot_player: Any, loc: Loc, resolved: Resolved) -> None:
    prompts = snapshot_player.get("prompts") if isinstance(snapshot_player, dict) else None
    if not isinstance(prompts, dict):
        return
    for key, value in prompts.items():
        file, _ = resolved.origin_of(loc + ("prompts", key))
        target = (file.parent / value).resolve()
        if target.is_relative_to(resolved.root):
            prompts[key] = target.relative_to(resolved.root).as_posix()


def _snapshot_at(snapshot: dict[str, Any], loc: Loc) -> Any:
    node: Any = snapshot
    for part in loc:
        node = node[part]
    return node


def _load(path: str | Path, model: type[BaseModel]) -> tuple[LoadedGames, Resolved]:
    path = Path(path)
    resolved = load_resolved(path)
    try:
        config = model.model_validate(resolved.data)
    except ValidationError as exc:
        raise ConfigError(validation_issues(exc, resolved, model)) from None
    snapshot = config.model_dump(mode="json")
    loaded = LoadedGames(config, path, resolved.root, snapshot)
    loaded.warnings.extend(f"game.payoff_matrix: {w}" for w in config.game.matrix().pd_warnings())
    return loaded, resolved


def _finish(
    loaded: LoadedGames, resolved: Resolved, locs: list[Loc], extra: list[ConfigIssue]
) -> LoadedGames:
    issues = list(extra)
    seen: dict[str, int] = {}
    for index, (player, loc) in enumerate(zip(loaded.players, locs, strict=True)):
        issues.extend(_check_player(player, loc, index, resolved, loaded))
        name = player.display_name()
        if name in seen:
            issues.append(
                resolved.issue(
                    loc,
                    f"duplicate player name {name!r} (same as entry {seen[name]}); "
                    "give one of them a distinct `name`",
                )
            )
        seen.setdefault(name, index)
        _relativize_prompts(_snapshot_at(loaded.snapshot, loc), loc, resolved)
    if issues:
        raise ConfigError(issues)
    return loaded


def load_tournament(path: str | Path) -> LoadedGames:
    """Load and fully validate a tournament config; ConfigError lists every problem."""
    loaded, resolved = _load(path, TournamentConfig)
    loaded.players = list(loaded.config.tournament.players)
    locs: list[Loc] = [("tournament", "players", i) for i in range(len(loaded.players))]
    return _finish(loaded, resolved, locs, [])


def load_evolution(path: str | Path) -> LoadedGames:
    """Load and fully validate an evolution config; ConfigError lists every problem."""
    loaded, resolved = _load(path, EvolutionConfig)
    section = loaded.config.evolution
    loaded.players = [member.player for member in section.population]
    locs: list[Loc] = [("evolution", "population", i, "player") for i in range(len(loaded.players))]
    extra = [resolved.issue(("evolution",) + loc, msg) for loc, msg in section.size_problems()]
    return _finish(loaded, resolved, locs, extra)
