"""Parameter sweeps: `experiment.sweep` maps dotted paths inside a condition to lists of values,
and every condition (or those named in `experiment.sweep_conditions`) expands into the product
of the values (pure: works on the config's data after refs are resolved).

Paths are written as a user sees the condition in the config file:
- `agent_a.overrides.temperature`, `agent_b.overrides.params.coop_prob`, `agent_a.persona`: an
  agent's setting (`overrides` may be written or left out: refs are already merged);
- `horizon.stop_prob`, `horizon.n_rounds`: the condition's horizon (the run's horizon is copied
  into the condition first when it has none);
- `game.noise` or `noise`: the condition's execution noise.

Each expanded condition is named `<base>+<key>_<value>+...` (key: the path's last part, or the
whole path with `.` as `_` when two swept paths end alike), so seeds, which derive from condition
names, do not change when a sweep is extended: finished games keep their results.
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Any

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(slots=True)
class SweepResult:
    """Expanded conditions, each expanded condition's coordinates, and problems found."""

    conditions: list[dict[str, Any]]
    coordinates: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (sweep entry, message)
    # Expanded condition name -> swept path -> index of its value in the sweep's list.
    value_index: dict[str, dict[str, int]] = field(default_factory=dict)


def _keys(paths: list[str]) -> dict[str, str]:
    last = [p.split(".")[-1] for p in paths]
    return {
        p: (p.replace(".", "_") if last.count(p.split(".")[-1]) > 1 else p.split(".")[-1])
        for p in paths
    }


def value_text(value: Any) -> str:
    """A value as it appears in a condition name (characters a name may hold)."""
    if isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, float):
        text = f"{value:g}"
    else:
        text = str(value)
    return _UNSAFE.sub("-", text).strip("-") or "x"


def target_parts(path: str) -> list[str]:
    """Where a sweep path lands inside a condition (`agent_a.overrides.x` -> agent_a, x;
    `game.noise` -> noise; `game.payoff_scale` -> payoff_scale)."""
    parts = path.split(".")
    if parts[0] in ("agent_a", "agent_b"):
        return [parts[0]] + [p for p in parts[1:2] if p != "overrides"] + parts[2:]
    if parts[0] == "game" and len(parts) == 2:
        return parts[1:]
    return parts


SWEEP_ROOTS = ("agent_a", "agent_b", "horizon", "game", "noise", "communication")


def _target(condition: dict[str, Any], path: str, horizon: Any) -> tuple[dict[str, Any], str]:
    """The mapping and key a sweep path sets inside a condition (created when missing)."""
    parts = target_parts(path)
    if parts[0] == "horizon" and not isinstance(condition.get("horizon"), dict):
        condition["horizon"] = copy.deepcopy(horizon) if isinstance(horizon, dict) else {}
    node = condition
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    return node, parts[-1]


def _target_key(path: str) -> tuple[str, ...]:
    """The setting a sweep path reaches (`noise` and `game.noise` reach the same one)."""
    parts = target_parts(path)
    return tuple(parts[1:] if parts[0] == "game" else parts)


def _overlaps(paths: list[str]) -> list[tuple[str, str]]:
    """Sweep entries that reach one setting, or one inside another's (each later entry
    against the first one it collides with)."""
    out: list[tuple[str, str]] = []
    keys = [_target_key(p) for p in paths]
    for j, later in enumerate(keys):
        for i in range(j):
            earlier = keys[i]
            n = min(len(earlier), len(later))
            if earlier[:n] == later[:n]:
                out.append(
                    (
                        paths[j],
                        f"reaches the same setting as the sweep entry {paths[i]!r}; sweep each "
                        "setting once",
                    )
                )
                break
    return out


def expanded_count(
    conditions: list[Any], sweep: dict[str, list[Any]], only: list[str] | None = None
) -> int:
    """How many conditions `expand_sweep` would return, counted without expanding anything
    (an integer product: exact and immediate for a sweep of any shape)."""
    combos = math.prod(len(v) if isinstance(v, list) else 1 for v in sweep.values())
    swept = sum(
        1 for c in conditions if isinstance(c, dict) and (not only or c.get("name") in only)
    )
    return len(conditions) - swept + swept * combos


def _nodes(value: Any) -> int:
    """Values in a tree (each mapping, list and scalar counts one)."""
    count, stack = 0, [value]
    while stack:
        node = stack.pop()
        count += 1
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count


def expanded_nodes(
    conditions: list[Any], sweep: dict[str, list[Any]], only: list[str] | None = None
) -> int:
    """Values in the conditions `expand_sweep` would return, counted without expanding."""
    combos = math.prod(len(v) if isinstance(v, list) else 1 for v in sweep.values())
    total = 0
    for c in conditions:
        swept = isinstance(c, dict) and (not only or c.get("name") in only)
        total += _nodes(c) * (combos if swept else 1)
    return total


def expand_sweep(
    conditions: list[dict[str, Any]],
    sweep: dict[str, list[Any]],
    only: list[str] | None = None,
    horizon: Any = None,
    max_conditions: int | None = None,
    max_nodes: int | None = None,
) -> SweepResult:
    """The conditions with each swept one replaced by one condition per combination of values
    (in the order of `sweep`, the first path varying slowest).

    Two entries that reach one setting (`noise` and `game.noise`, `agent_a.x` and
    `agent_a.overrides.x`, a mapping and a key inside it) are a problem, and so is a sweep that
    would make more than `max_conditions` conditions or `max_nodes` values: all are found
    before anything is
    expanded, so the bound holds in memory and time whatever the sweep's shape.
    """
    problems: list[tuple[str, str]] = []
    paths = list(sweep)
    for path, values in sweep.items():
        if not isinstance(values, list) or not values:
            problems.append((path, f"must be a non-empty list of values (got {values!r})"))
        elif path.split(".")[0] not in SWEEP_ROOTS:
            problems.append(
                (
                    path,
                    "must start with agent_a, agent_b, horizon, game.noise, noise or communication",
                )
            )
    names = [c.get("name") for c in conditions if isinstance(c, dict)]
    for name in only or []:
        if name not in names:
            problems.append(
                (
                    "sweep_conditions",
                    f"no condition named {name!r} (valid: {', '.join(map(str, names))})",
                )
            )
    if not problems:
        problems.extend(_overlaps(paths))
    if not problems and max_conditions is not None:
        count = expanded_count(conditions, sweep, only)
        if count > max_conditions:
            problems.append(
                (
                    "",
                    f"expands to {count:,} conditions; at most {max_conditions:,} fit the "
                    "bound on games a run plays (conditions x replicates)",
                )
            )
    if not problems and max_nodes is not None:
        nodes = expanded_nodes(conditions, sweep, only)
        if nodes > max_nodes:
            count = expanded_count(conditions, sweep, only)
            problems.append(
                (
                    "",
                    f"too many values once expanded ({count:,} conditions holding {nodes:,} "
                    f"values; a config holds at most {max_nodes:,})",
                )
            )
    if problems:
        return SweepResult(list(conditions), {}, problems)
    keys = _keys(paths)
    out: list[dict[str, Any]] = []
    coordinates: dict[str, dict[str, Any]] = {}
    value_index: dict[str, dict[str, int]] = {}
    for condition in conditions:
        if not isinstance(condition, dict) or (only and condition.get("name") not in only):
            out.append(condition)
            continue
        for indices in itertools.product(*(range(len(sweep[p])) for p in paths)):
            combo = [sweep[p][k] for p, k in zip(paths, indices, strict=True)]
            expanded = copy.deepcopy(condition)
            suffix = "+".join(
                f"{keys[p]}_{value_text(v)}" for p, v in zip(paths, combo, strict=True)
            )
            expanded["name"] = f"{condition.get('name')}+{suffix}"
            for path, value in zip(paths, combo, strict=True):
                node, key = _target(expanded, path, horizon)
                node[key] = copy.deepcopy(value)
            coordinates[expanded["name"]] = dict(zip(paths, combo, strict=True))
            value_index[expanded["name"]] = dict(zip(paths, indices, strict=True))
            out.append(expanded)
    return SweepResult(out, coordinates, problems, value_index)
