"""The back end of the 🏆 Tournament and 🧬 Evolution tabs: form defaults read from the example
configs, the evolution presets, and turning a form into a config in a new directory that the
library then runs into.

A new tournament lives in `data/tournaments/ui_<timestamp>/`, a new evolution in
`data/evolutions/ui_<timestamp>/`; the generated YAML is `<dir>/config/tournament.yaml` (or
`evolution.yaml`). When a player is a mock LLM persona (a ref), the config's `agents/` and
`prompts/` folders are copied beside it first, as the Run Experiment tab does. Nothing is written
into the source configs folder.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from pdbench.agents.policy import POLICY_REGISTRY
from pdbench.ui.launcher import AgentOption, agent_entry, new_run_dir
from pdbench.ui.style import STRATEGY_STYLE

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


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping, or {} when the file is missing or not a mapping."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _policy_key(player: Any) -> str | None:
    """The policy key of a plain policy entry ('TFT' or {type: policy, policy: TFT})."""
    if isinstance(player, str) and not player.lower().startswith("axelrod:"):
        key = player.strip().upper()
    elif isinstance(player, dict) and player.get("type") == "policy" and not player.get("name"):
        key = str(player.get("policy", "")).upper()
    else:
        return None
    return key if key in POLICY_REGISTRY else None


def evolution_strategies() -> list[str]:
    """Registered policies in the order of The Evolution of Trust's cast, the rest after."""
    known = [k for k in STRATEGY_STYLE if k in POLICY_REGISTRY]
    return known + sorted(k for k in POLICY_REGISTRY if k not in known)


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
    keys = [k for k in map(_policy_key, section.get("players") or []) if k]
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


@dataclass(frozen=True, slots=True)
class TournamentRequest:
    """What the tournament form asks for."""

    players: list[AgentOption]
    horizon: dict[str, Any]  # a HorizonConfig mapping
    noise: float
    repetitions: int
    self_play: bool
    seed: int

    @property
    def needs_refs(self) -> bool:
        """Whether a player is a ref to an agent file (then agents/ and prompts/ are copied)."""
        return any(p.kind != "policy" for p in self.players)


def build_tournament(
    request: TournamentRequest, run_id: str, output_dir: Path, config_dir: Path
) -> dict[str, Any]:
    """The tournament config (a YAML-ready mapping)."""
    players = [
        p.value if p.kind == "policy" else agent_entry(p, config_dir) for p in request.players
    ]
    return {
        "run": {"run_id": run_id, "seed": int(request.seed), "output_dir": str(output_dir)},
        "game": {"noise": float(request.noise)},
        "horizon": dict(request.horizon),
        "tournament": {
            "repetitions": int(request.repetitions),
            "self_play": bool(request.self_play),
            "log_rounds": False,
            "players": players,
        },
    }


# --------------------------------------------------------------------------------------------
# Evolution


@dataclass(frozen=True, slots=True)
class EvolutionSettings:
    """Everything the evolution form sets; also the presets and the defaults."""

    counts: dict[str, int] = field(default_factory=dict)  # policy key -> initial individuals
    rounds: int = 10
    noise: float = 0.0
    process: str = "eliminate_clone"
    eliminate: int = 5
    mutation_rate: float = 0.0
    generations: int = 50
    seed: int = 10
    fitness: str = "auto"
    repetitions: int = 10

    @property
    def population(self) -> dict[str, int]:
        """Strategies with at least one individual, in the sliders' order."""
        return {k: int(self.counts[k]) for k in evolution_strategies() if self.counts.get(k, 0) > 0}

    @property
    def size(self) -> int:
        """Individuals in the initial population."""
        return sum(self.population.values())

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
        key = _policy_key(member.get("player")) if isinstance(member, dict) else None
        if key:
            counts[key] = counts.get(key, 0) + int(member.get("count") or 0)
    base = FALLBACK_EVOLUTION
    try:
        return EvolutionSettings(
            counts=counts or dict(base.counts),
            rounds=int((data.get("horizon") or {}).get("n_rounds") or base.rounds),
            noise=float((data.get("game") or {}).get("noise", base.noise)),
            process=str(section.get("process", base.process)),
            eliminate=int(section.get("eliminate", base.eliminate)),
            mutation_rate=float(section.get("mutation_rate", base.mutation_rate)),
            generations=int(section.get("generations", base.generations)),
            seed=int((data.get("run") or {}).get("seed", base.seed)),
            fitness=str(section.get("fitness") or "auto"),
            repetitions=int(section.get("repetitions", base.repetitions)),
        )
    except (TypeError, ValueError):
        return base


def build_evolution(settings: EvolutionSettings, run_id: str, output_dir: Path) -> dict[str, Any]:
    """The evolution config (a YAML-ready mapping); only strategies with individuals take part."""
    section: dict[str, Any] = {
        "process": settings.process,
        "eliminate": int(settings.eliminate),
        "generations": int(settings.generations),
        "mutation_rate": float(settings.mutation_rate),
        "repetitions": int(settings.repetitions),
        "population": [{"player": k, "count": n} for k, n in settings.population.items()],
    }
    if settings.fitness != "auto":
        section["fitness"] = settings.fitness
    return {
        "run": {"run_id": run_id, "seed": int(settings.seed), "output_dir": str(output_dir)},
        "game": {"noise": float(settings.noise)},
        "horizon": {"type": "fixed", "n_rounds": int(settings.rounds)},
        "evolution": section,
    }


# --------------------------------------------------------------------------------------------
# Preparing and running


def prepare(
    root: Path,
    filename: str,
    build: Callable[[str, Path], dict[str, Any]],
    config_dir: Path | None = None,
) -> Path:
    """Create `root/ui_<timestamp>/config/` (with copies of agents/ and prompts/ when
    `config_dir` is given) and write the config `build(run_id, output_dir)` there; returns it."""
    run_dir = new_run_dir(root).resolve()
    target = run_dir / "config"
    target.mkdir(parents=True)
    if config_dir is not None:
        for sub in ("agents", "prompts"):
            if (config_dir / sub).is_dir():
                shutil.copytree(config_dir / sub, target / sub)
    path = target / filename
    path.write_text(
        "# Written by the pdbench UI.\n"
        + yaml.safe_dump(build(run_dir.name, run_dir), sort_keys=False),
        encoding="utf-8",
    )
    return path


def prepare_tournament(request: TournamentRequest, config_dir: Path, root: Path) -> Path:
    """Write a new tournament directory's config; returns the config path."""
    return prepare(
        root,
        "tournament.yaml",
        lambda run_id, out: build_tournament(request, run_id, out, config_dir),
        config_dir if request.needs_refs else None,
    )


def prepare_evolution(settings: EvolutionSettings, root: Path) -> Path:
    """Write a new evolution directory's config; returns the config path."""
    return prepare(
        root, "evolution.yaml", lambda run_id, out: build_evolution(settings, run_id, out)
    )


def execute_tournament(
    config_path: Path, progress: Callable[[int, int], None] | None = None
) -> Any:
    """Validate and play a prepared tournament into its directory (library errors propagate)."""
    from pdbench.runners.games_config import load_tournament
    from pdbench.runners.tournament import run_tournament

    loaded = load_tournament(config_path)
    out = Path(loaded.config.run.output_dir)
    return run_tournament(loaded, output_dir=out, overwrite=True, progress=progress)


def execute_evolution(config_path: Path, progress: Callable[[int, int], None] | None = None) -> Any:
    """Validate and run a prepared evolution into its directory (library errors propagate)."""
    from pdbench.runners.evolve import run_evolution
    from pdbench.runners.games_config import load_evolution

    loaded = load_evolution(config_path)
    out = Path(loaded.config.run.output_dir)
    return run_evolution(loaded, output_dir=out, overwrite=True, progress=progress)
