"""What the 🏆 Tournament and 🧬 Evolution forms start from: defaults read from the example
configs, the evolution settings and their checks, and the two presets of The Evolution of Trust.

Plain values only: `pdbench.ui.launcher` turns them into configs, the tabs into widgets.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from pdbench.agents.policy import POLICY_REGISTRY

PROCESSES: dict[str, str] = {
    "eliminate_clone": "✂️ Eliminate & clone",
    "moran": "🎲 Moran",
    "wright_fisher": "👪 Wright–Fisher",
}
FITNESS_MODES: dict[str, str] = {
    "auto": "default for the process",
    "sampled": "sampled: every pair plays each generation",
    "expected": "expected: mean payoff matrix, estimated once",
}
DEFAULT_ELIMINATE = 5  # the form's N when the example config does not set one


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping, or {} when the file is missing or not a mapping."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def policy_key(player: Any) -> str | None:
    """The registered policy key of a plain policy entry ('TFT' or {type: policy, policy: TFT}
    without a display name); None for anything else."""
    if isinstance(player, str) and ":" not in player:
        key = player.strip().upper()
    elif isinstance(player, dict) and player.get("type") == "policy" and not player.get("name"):
        key = str(player.get("policy", "")).upper()
    else:
        return None
    return key if key in POLICY_REGISTRY else None


def evolution_strategies() -> list[str]:
    """Every registered policy, in registration order (The Evolution of Trust's cast first)."""
    return list(POLICY_REGISTRY)


# --------------------------------------------------------------------------------------------
# Tournament


@dataclass(frozen=True, slots=True)
class TournamentDefaults:
    """Initial values of the tournament form (from configs/tournament.yaml when readable)."""

    players: tuple[str, ...] = ("ALLC", "ALLD", "TFT", "GRIM", "GTFT", "WSLS")
    n_rounds: int = 200
    noise: float = 0.05
    repetitions: int = 10
    self_play: bool = False
    seed: int = 2024


def tournament_defaults(config_dir: Path | None) -> TournamentDefaults:
    """The example tournament config's policies, rounds, noise, repetitions and seed."""
    base = TournamentDefaults()
    data = read_yaml(config_dir / "tournament.yaml") if config_dir else {}
    section = data.get("tournament") or {}
    horizon = data.get("horizon") or {}
    keys = [k for k in map(policy_key, section.get("players") or []) if k]
    try:
        return TournamentDefaults(
            players=tuple(dict.fromkeys(keys)) or base.players,
            n_rounds=int(horizon.get("n_rounds") or base.n_rounds),
            noise=float((data.get("game") or {}).get("noise", base.noise)),
            repetitions=int(section.get("repetitions", base.repetitions)),
            self_play=bool(section.get("self_play", base.self_play)),
            seed=int((data.get("run") or {}).get("seed", base.seed)),
        )
    except (TypeError, ValueError):
        return base


# --------------------------------------------------------------------------------------------
# Evolution


@dataclass(frozen=True, slots=True)
class EvolutionSettings:
    """Everything the evolution form sets; also the presets and the defaults."""

    counts: dict[str, int] = field(default_factory=dict)  # policy key -> initial individuals
    rounds: int = 10
    noise: float = 0.0
    process: str = "eliminate_clone"
    eliminate: int = DEFAULT_ELIMINATE  # used by eliminate_clone only
    mutation_rate: float = 0.0
    generations: int = 50
    seed: int = 10
    fitness: str = "auto"
    repetitions: int = 10
    seeds: int = 1  # independent runs of the process on the same played matches
    # LLM members: agent option key ('persona:tit_for_tat', 'llm_file:agents/x.yaml') -> count
    agents: dict[str, int] = field(default_factory=dict)

    @property
    def population(self) -> dict[str, int]:
        """Strategies with at least one individual, in the sliders' order."""
        return {k: int(self.counts[k]) for k in evolution_strategies() if self.counts.get(k, 0) > 0}

    @property
    def llm_members(self) -> dict[str, int]:
        """LLM agents (option keys) with at least one individual, in the order picked."""
        return {k: int(n) for k, n in self.agents.items() if n > 0}

    @property
    def size(self) -> int:
        """Individuals in the initial population (policies and LLM agents)."""
        return sum(self.population.values()) + sum(self.llm_members.values())

    def problems(self) -> list[str]:
        """Settings the library would refuse, as one-line messages."""
        out = []
        if self.size < 2:
            out.append(f"The population needs at least 2 individuals (it has {self.size}).")
        elif self.process == "eliminate_clone" and 2 * self.eliminate > self.size:
            out.append(
                f"Eliminate & clone replaces at most half the population: N = {self.eliminate} "
                f"needs at least {2 * self.eliminate} individuals (there are {self.size})."
            )
        return out


FALLBACK_EVOLUTION = EvolutionSettings(
    counts={"ALLC": 8, "ALLD": 4, "TFT": 6, "GRIM": 1, "WSLS": 2, "GTFT": 4}
)

# The two lessons of The Evolution of Trust, found by running the engine: the same 25 players,
# 20-round matches, 5 eliminated and cloned per generation, up to 100 generations; the presets
# differ only in 5% miscommunication. Over seeds 0-39, without noise Copycat takes over (fixates)
# in 34 runs and ends with >= 60% in 36; with noise a forgiving strategy (Generous Copycat, or
# Copykitten) ends with >= 60% in all 40 and Copycat never reaches 50%. With the default seed 11,
# Copycat fixates after 14 generations; with noise Always Cheat first booms (8 -> 13) and dies
# out, Copykitten rises, and Generous Copycat fixates after 42 generations.
TRUST_POPULATION = {"ALLC": 5, "ALLD": 8, "TFT": 6, "WSLS": 2, "GTFT": 2, "TF2T": 2}
TRUST_WINS = EvolutionSettings(
    counts=TRUST_POPULATION, rounds=20, noise=0.0, eliminate=5, generations=100, seed=11
)
MISTAKES_HAPPEN = replace(TRUST_WINS, noise=0.05)
PRESETS: dict[str, tuple[str, EvolutionSettings]] = {
    "trust": ("🤝 Trust wins (no noise)", TRUST_WINS),
    "mistakes": ("🤕 Mistakes happen (5% noise)", MISTAKES_HAPPEN),
}


def evolution_defaults(config_dir: Path | None) -> EvolutionSettings:
    """The example evolution config's population (its plain policies), process and sizes."""
    data = read_yaml(config_dir / "evolution.yaml") if config_dir else {}
    section = data.get("evolution") or {}
    counts: dict[str, int] = {}
    for member in section.get("population") or []:
        key = policy_key(member.get("player")) if isinstance(member, dict) else None
        if key:
            counts[key] = counts.get(key, 0) + int(member.get("count") or 0)
    base = FALLBACK_EVOLUTION
    try:
        return EvolutionSettings(
            counts=counts or dict(base.counts),
            rounds=int((data.get("horizon") or {}).get("n_rounds") or base.rounds),
            noise=float((data.get("game") or {}).get("noise", base.noise)),
            process=str(section.get("process") or base.process),
            eliminate=int(section.get("eliminate") or base.eliminate),
            mutation_rate=float(section.get("mutation_rate", base.mutation_rate)),
            generations=int(section.get("generations", base.generations)),
            seed=int((data.get("run") or {}).get("seed", base.seed)),
            fitness=str(section.get("fitness") or "auto"),
            repetitions=int(section.get("repetitions", base.repetitions)),
            seeds=int(section.get("seeds") or 1),
        )
    except (TypeError, ValueError):
        return base
