"""Agents across runs (pure): who an agent is, what it faced, and how two of its appearances
compare.

- An agent's identity: an LLM agent is its provider, model, persona and prompt version (a short
  hash of the contents of the prompt files it used, as the manifest records them, and of the
  settings that shape its prompts: labels, payoff scale, horizon disclosure, history window, ...);
  a policy agent is its policy name and the parameters it sets; a human player is "human".
- The design an agent faced in a condition, from its side: the opponent's identity, the payoff
  matrix (own payoff first), the horizon, the noise and the communication channel. Two
  appearances are compared only when their designs are equal; otherwise the fields that differ
  are named.
- The comparison of two appearances (`appearance_contrasts`): for each headline metric, the
  difference of the later appearance's mean over games minus the first's, with the interval
  and permutation p-value of `core.compare.contrast` (the method `pdbench compare` uses within a
  run: games as the unit, hull of bootstrap and MOVER), seeded from the two appearances' keys.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pdbench.core.compare import Contrast, contrast
from pdbench.core.metrics import MetricDesign, feasible_range
from pdbench.core.rng import derive_seed

OPTIONAL_PROMPTS: tuple[str, ...] = ("first_round", "history", "history_line")
# The LLM agent settings that change the text of its prompts (part of the prompt version).
PROMPT_SETTINGS: tuple[str, ...] = (
    "prompt_mode",
    "output_format",
    "action_labels",
    "payoff_scale",
    "horizon_disclosure",
    "history_window",
    "include_totals",
    "answer_pattern",
    "verbatim_prompts",
    "talk_text",
)
# Settings that shape how replies are read, in the prompt version only when set (so that the
# versions of agents recorded before they existed stay the same).
READING_SETTINGS: tuple[str, ...] = ("parse",)
# The per-game metrics compared across runs (per agent: `agent_<side>_<metric>`), with labels.
HEADLINE_METRICS: tuple[tuple[str, str], ...] = (
    ("cooperation_rate", "cooperation"),
    ("payoff_per_round", "payoff per round"),
    ("retaliation_rate", "retaliation"),
    ("forgiveness_rate", "forgiveness"),
)
DESIGN_FIELDS: tuple[tuple[str, str], ...] = (
    ("opponent", "opponent"),
    ("payoffs", "payoff matrix"),
    ("horizon", "horizon"),
    ("noise", "noise"),
    ("communication", "communication"),
)
VERSION_DIGITS = 8


@dataclass(frozen=True, slots=True)
class AgentIdentity:
    """Who an agent is, the same in every run: `key` is canonical (equal keys, same agent)."""

    kind: str  # llm, policy, human or unknown
    key: str
    label: str  # e.g. "mock-persona-v1[cooperative] · prompt 1a2b3c4d" or "GTFT(generous_prob=0.1)"
    details: tuple[tuple[str, str], ...] = ()  # (name, value) shown beside the label


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _matches(path: str, recorded: Mapping[str, str]) -> str | None:
    """The recorded prompt file (relative to the config's root) a configured path names: the
    same path, or the one it ends with once `./` and `../` parts are dropped."""
    clean = posixpath.normpath(str(path).replace("\\", "/"))
    parts = [p for p in clean.split("/") if p not in ("..", ".")]
    tail = "/".join(parts)
    if tail in recorded:
        return tail
    found = sorted(k for k in recorded if k.endswith("/" + tail))
    return found[0] if len(found) == 1 else None


def prompt_version(config: Mapping[str, Any], prompt_files: Mapping[str, str]) -> str:
    """A short hash of an LLM agent's prompt files' contents (the manifest's `prompt_files`:
    path -> sha256; a file the manifest does not record counts by its path) and of the
    settings in PROMPT_SETTINGS (and READING_SETTINGS that are set)."""
    prompts = dict(config.get("prompts") or {})
    parts: dict[str, Any] = {}
    round_key: str | None = None
    for role in ("system", "round", *OPTIONAL_PROMPTS):
        path = prompts.get(role)
        if path is None:
            continue
        found = _matches(str(path), prompt_files)
        parts[role] = prompt_files[found] if found else f"path:{path}"
        if role == "round":
            round_key = found
    if round_key is not None:  # parts not named: `<round stem>.<part>.md` beside the round file
        stem = posixpath.splitext(round_key)[0]
        for role in OPTIONAL_PROMPTS:
            if role not in parts and f"{stem}.{role}.md" in prompt_files:
                parts[role] = prompt_files[f"{stem}.{role}.md"]
    persona = config.get("persona")
    if persona is not None:
        where = posixpath.join(str(prompts.get("personas_dir") or "prompts/personas"), persona)
        found = _matches(f"{where}.md", prompt_files)
        parts["persona"] = prompt_files[found] if found else f"path:{where}.md"
    parts["settings"] = {name: config.get(name) for name in PROMPT_SETTINGS}
    for name in READING_SETTINGS:
        if config.get(name) is not None:
            parts["settings"][name] = config.get(name)
    return hashlib.sha256(_canonical(parts).encode()).hexdigest()[:VERSION_DIGITS]


def agent_identity(
    config: Mapping[str, Any] | None, name: str, prompt_files: Mapping[str, str]
) -> AgentIdentity:
    """The identity of an agent from its resolved config in the manifest (`name`: the agent's
    name in the aggregates, used when there is no config)."""
    kind = str((config or {}).get("type") or "unknown")
    if config is None or kind not in ("llm", "policy", "human"):
        return AgentIdentity("unknown", f"name:{name}", name or "?")
    if kind == "human":
        return AgentIdentity("human", "human", name or "human")
    if kind == "policy":
        policy = str(config.get("policy") or "?").upper()
        params = {k: v for k, v in sorted((config.get("params") or {}).items()) if v is not None}
        shown = ", ".join(f"{k}={v}" for k, v in params.items())
        label = f"{policy}({shown})" if shown else policy
        return AgentIdentity(
            "policy", f"policy:{policy}:{_canonical(params)}", label, (("policy", label),)
        )
    provider, model = str(config.get("provider") or "?"), str(config.get("model") or "?")
    persona = config.get("persona")
    version = prompt_version(config, prompt_files)
    base = f"{model}[{persona}]" if persona else model
    return AgentIdentity(
        "llm",
        f"llm:{provider}:{model}:{persona}:{version}",
        f"{base} · prompt {version}",
        (
            ("model", f"{provider}/{model}"),
            ("persona", str(persona) if persona else "(none)"),
            ("prompt version", version),
        ),
    )


def side_payoffs(
    matrix: Mapping[str, Any] | None, side: str
) -> tuple[tuple[str, float, float], ...]:
    """The payoff matrix from one side: (own move + opponent's move, own payoff, opponent's);
    (("unknown", 0, 0),) when the manifest records no readable matrix."""
    out: list[tuple[str, float, float]] = []
    for mine in "CD":
        for theirs in "CD":
            a_move, b_move = (mine, theirs) if side == "a" else (theirs, mine)
            try:
                pa, pb = (matrix or {})[a_move][b_move]
            except (KeyError, TypeError, ValueError):
                return (("unknown", 0.0, 0.0),)
            own, other = (pa, pb) if side == "a" else (pb, pa)
            out.append((mine + theirs, float(own), float(other)))
    return tuple(out)


def condition_design(
    side: str,
    opponent: AgentIdentity,
    opponent_name: str,
    matrix: Mapping[str, Any] | None,
    horizon: Mapping[str, Any] | None,
    noise: float | None,
    communication: Any,
) -> dict[str, str]:
    """The design an agent faced from its side, each field as canonical text (`opponent`: the
    opponent's name as the run shows it; `opponent_key`: its identity)."""
    return {
        "opponent": opponent_name or opponent.label,
        "opponent_key": opponent.key,
        "payoffs": _canonical(side_payoffs(matrix, side)),
        "horizon": _canonical({k: v for k, v in (horizon or {}).items() if v is not None}),
        "noise": _canonical(0.0 if noise is None else float(noise)),
        "communication": _canonical(communication),
    }


def design_differences(first: Mapping[str, str], other: Mapping[str, str]) -> list[str]:
    """The design fields that differ, as words ("opponent TFT vs GRIM", "horizon"); [] when the
    designs are the same."""
    out = []
    for field, label in DESIGN_FIELDS:
        key = "opponent_key" if field == "opponent" else field
        if first.get(key) != other.get(key):
            if field == "opponent":
                a, b = first.get("opponent"), other.get("opponent")
                out.append(
                    f"opponent {a} vs {b}" if a != b else "opponent (same name, settings differ)"
                )
            elif field in ("horizon", "noise"):
                out.append(f"{label} {first.get(field)} vs {other.get(field)}")
            else:
                out.append(label)
    return out


@dataclass(frozen=True, slots=True)
class MetricContrast:
    """One headline metric of one appearance against the first one."""

    metric: str
    label: str
    result: Contrast


def appearance_contrasts(
    first_key: str,
    other_key: str,
    first_games: Mapping[str, Sequence[float | None]],
    other_games: Mapping[str, Sequence[float | None]],
    designs: tuple[MetricDesign | None, MetricDesign | None] = (None, None),
) -> list[MetricContrast]:
    """Each headline metric: mean over `other`'s games minus mean over `first`'s, with its
    interval and p-value (`core.compare.contrast`), one generator per metric seeded from the two
    appearances' keys (so a pair gives the same numbers whatever else is compared)."""
    out = []
    for metric, label in HEADLINE_METRICS:
        seed = derive_seed(0, "compare_across_runs", metric, first_key, other_key)
        rng = np.random.Generator(np.random.PCG64(seed))  # numpy's default_rng(seed)
        bounds = (feasible_range(metric, designs[0]), feasible_range(metric, designs[1]))
        result = contrast(
            first_games.get(metric, []), other_games.get(metric, []), rng, bounds=bounds
        )
        out.append(MetricContrast(metric, label, result))
    return out


def signed(value: float | None, digits: int = 3) -> str:
    """'+0.123' (or '-' for no value), as `pdbench compare` prints a difference."""
    return "-" if value is None else f"{value:+.{digits}f}"


def difference_text(result: Contrast) -> str:
    """'+0.123 [-0.050, +0.300]': a difference and its 95% interval, or why there is none."""
    if result.difference is None:
        return f"- ({result.method})"
    if result.ci_low is None or result.ci_high is None:
        return f"{signed(result.difference)} (no interval: {result.method})"
    return f"{signed(result.difference)} [{signed(result.ci_low)}, {signed(result.ci_high)}]"


def interval_text(mean: float | None, low: float | None, high: float | None) -> str:
    """'0.873 [0.770, 0.977]': a mean and its 95% interval ('-' without a mean; '0.333 (no
    interval)' when the run has none for it, e.g. a memory-one state visited in one game)."""
    if mean is None:
        return "-"
    if low is None or high is None:
        return f"{mean:.3f} (no interval)"
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"
