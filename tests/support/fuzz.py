"""Random mutations of the example configs, for the config fuzz test.

A mutant is an example config (experiment, tournament or evolution, refs and all) with one to
three random edits: a value replaced by a value of another type or range (numbers at and past
the limits, NaN, huge and unicode strings, nested lists and maps, bad refs and paths, hostile
templates), a plausible nudge (a number doubled, a flag flipped, another policy name), a key dropped, a key added or misspelt, a value wrapped in a list or map. Every
mutant must either load into a valid run plan or be refused with one line per problem.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = ("experiment.yaml", "tournament.yaml", "evolution.yaml")

VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2,
    7,
    10**7,
    10**12,
    2**63,
    -(2**63) - 1,
    0.0,
    -0.0,
    0.5,
    1.0,
    1e-300,
    1e-7,
    1e308,
    -1e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    "",
    " ",
    "TFT",
    "tft",
    "axelrod:Prober",
    "axelrod:NoSuchStrategy",
    "NOPE",
    "mock",
    "openai",
    "json",
    "geometric",
    "名前",
    "💥" * 20,
    "x" * 20_000,
    "a_vs_b",
    "{persona.foo}",
    "../../etc/passwd",
    "/etc/passwd",
    "agents/missing.yaml",
    "agents/policies.yaml",
    "http://user:sk-secret@127.0.0.1/v1",
    "::::",
    "sk-live-0123456789abcdef",
    [],
    [1, 2],
    ["TFT"],
    [{"player": "TFT", "count": 2}],
    {},
    {"ref": "agents/policies.yaml"},
    {"ref": "agents/policies.yaml", "overrides": {"policy": "GTFT"}},
    {"ref": "../outside.yaml"},
    {"ref": "agents/llm_default.yaml", "overrides": {"persona": "nobody"}},
    {"type": "policy", "policy": "RANDOM", "params": {"coop_prob": 0.3}},
    {"type": "llm"},
    {"type": "robot"},
    {"a": {"b": {"c": [1, {"d": None}]}}},
]
KEYS = ["extra", "colour", "n_round", "polcy", "tyoe", "ref", "overrides", "名前", ""]


def examples() -> list[tuple[str, Any]]:
    """(file name, parsed YAML) of the example configs."""
    return [(n, yaml.safe_load((REPO / "configs" / n).read_text())) for n in EXAMPLES]


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every location in a YAML tree (maps and lists), the root excluded."""
    out = []
    if isinstance(node, dict):
        for key, value in node.items():
            out.append(prefix + (key,))
            out.extend(_paths(value, prefix + (key,)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out.append(prefix + (i,))
            out.extend(_paths(value, prefix + (i,)))
    return out


def _parent(tree: Any, path: tuple[Any, ...]) -> Any:
    node = tree
    for part in path[:-1]:
        node = node[part]
    return node


NAMES = ["TFT", "ALLC", "ALLD", "GTFT", "WSLS", "axelrod:Prober", "axelrod:Grudger"]


def _nudge(value: Any, rng: random.Random) -> Any:
    """A plausible neighbour of `value`: same type, nearby or another valid-looking choice."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rng.choice([value + 1, max(value - 1, 0), value * 2, 1])
    if isinstance(value, float):
        return rng.choice([value / 2, min(value * 1.5, 1.0), 0.0, 1.0, 0.99])
    if isinstance(value, str):
        return rng.choice(NAMES + [value.upper(), value + " "])
    return value


OPERATORS = (
    "nudge",
    "replace",
    "drop_key",
    "rename_key",
    "add_key",
    "wrap_in_list",
    "wrap_in_map",
    "duplicate_list_entry",
)


def mutate(tree: Any, rng: random.Random, applied: Counter[str] | None = None) -> Any:
    """A copy of `tree` with one to three random edits, most of them plausible nudges. Each edit
    is counted in `applied` by operator (see OPERATORS) and, for a value from VALUES or a key
    from KEYS, as `value:<index>` or `key:<index>` (the random draws are the same either way)."""
    applied = Counter() if applied is None else applied
    tree = copy.deepcopy(tree)
    for _ in range(rng.choice([1, 1, 2, 3])):
        paths = _paths(tree)
        if not paths:
            break
        path = rng.choice(paths)
        parent, last = _parent(tree, path), path[-1]
        op = rng.randrange(9)
        if op >= 6:  # nudge a value
            parent[last] = _nudge(parent[last], rng)
            applied["nudge"] += 1
        elif op <= 1:  # replace a value
            parent[last] = _value(rng, applied)
            applied["replace"] += 1
        elif op == 2 and isinstance(parent, dict):  # drop a key
            del parent[last]
            applied["drop_key"] += 1
        elif op == 3 and isinstance(parent, dict):  # add or misspell a key
            renamed = rng.random() < 0.5
            value = parent.pop(last) if renamed else _value(rng, applied)
            applied["rename_key" if renamed else "add_key"] += 1
            if rng.random() < 0.7:
                k = rng.randrange(len(KEYS))
                parent[KEYS[k]] = value
            else:
                k = rng.randrange(len(KEYS))
                parent[f"{last}{KEYS[k]}"] = value
            applied[f"key:{k}"] += 1
        elif op == 4:  # wrap a value
            in_list = rng.random() < 0.5
            parent[last] = [parent[last]] if in_list else {"x": parent[last]}
            applied["wrap_in_list" if in_list else "wrap_in_map"] += 1
        elif isinstance(parent, list) and parent:  # duplicate a list entry
            parent.append(copy.deepcopy(parent[last]))
            applied["duplicate_list_entry"] += 1
        else:
            parent[last] = _value(rng, applied)
            applied["replace"] += 1
    return tree


def _value(rng: random.Random, applied: Counter[str]) -> Any:
    """A copy of a random entry of VALUES (drawn as `rng.choice(VALUES)` draws it)."""
    i = rng.randrange(len(VALUES))
    applied[f"value:{i}"] += 1
    return copy.deepcopy(VALUES[i])
