"""Starting runs from the app, for every kind (experiment, tournament, evolution): which agents
can be picked, the payoff editor's table, turning a form into a config in a new run directory,
and running a prepared config with the library; for the Play tab, a person's game as a config
(`prepare_play`) and the game so far (`replay_play`).

A new run lives in `<root>/ui_<timestamp>/` (roots: `data/runs`, `data/tournaments`,
`data/evolutions`); its config is `<run>/config/<kind>.yaml`. Refs may not leave the config root,
so when an agent is a ref the config's `agents/` and `prompts/` folders are copied into
`<run>/config/` first and the config references the copies. Nothing is written into the source
configs folder.

With `planning.py` and `play_launcher.py`, the only UI modules that import `pdbench.runners`
(lazily): `execute` loads a config and starts it through the runners' front door
(`pdbench.runners.start.start`), the one the CLI's run commands use.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import yaml

from pdbench.agents.policy import policy_names
from pdbench.core.payoff import PayoffError, PayoffMatrix
from pdbench.ui.presets import EvolutionSettings, read_yaml
from pdbench.ui.style import PERSONA_TEXT, Profile, persona_profile, policy_profile

CONFIG_DIR_ENV = "PDBENCH_CONFIG_DIR"
PAYOFF_ROWS = ("A plays C", "A plays D")
PAYOFF_COLS = ("B plays C", "B plays D")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
TITLES = {"experiment": "Run", "tournament": "Tournament", "evolution": "Evolution"}


def find_config_dir() -> Path | None:
    """The configs folder to read agents from: $PDBENCH_CONFIG_DIR, ./configs, or the repo's."""
    candidates = [
        os.environ.get(CONFIG_DIR_ENV),
        "configs",
        Path(__file__).resolve().parents[3] / "configs",
    ]
    for candidate in candidates:
        if candidate and (Path(candidate) / "agents").is_dir():
            return Path(candidate).resolve()
    return None


# --------------------------------------------------------------------------------------------
# Agents


@dataclass(frozen=True, slots=True)
class AgentOption:
    """A pickable agent: a policy, a mock LLM persona, or an LLM agent file."""

    kind: Literal["policy", "persona", "llm_file"]
    value: str  # policy key, persona name, or agent file path relative to the config dir
    profile: Profile
    base: str | None = None  # for personas: the mock LLM agent file they override

    @property
    def key(self) -> str:
        """A stable id for widgets."""
        return f"{self.kind}:{self.value}"

    @property
    def label(self) -> str:
        """What the select box shows."""
        if self.kind == "policy":
            return f"{self.profile.emoji} {self.value} · {self.profile.title}"
        if self.kind == "persona":
            return f"💬 Mock LLM · {self.value}"
        return f"📄 {self.value} · {self.profile.subtitle}"

    @property
    def short_name(self) -> str:
        """A condition-name fragment."""
        if self.kind == "policy":
            return self.value
        if self.kind == "persona":
            return f"LLM-{self.value}"
        return Path(self.value).stem


def _persona_text(path: Path) -> str:
    """The first sentence after 'Persona: name.' in a persona file."""
    text = " ".join(path.read_text(encoding="utf-8").split())
    text = re.sub(r"^Persona:\s*[\w-]+\.\s*", "", text)
    return text.split(". ")[0].rstrip(".") + "." if text else ""


def agent_options(config_dir: Path) -> list[AgentOption]:
    """Every registered policy, every mock persona (when a mock LLM agent file exists to carry
    them) and every LLM agent file under `config_dir/agents`."""
    options = [AgentOption("policy", key, policy_profile(key)) for key in policy_names()]
    llm_files: list[tuple[str, dict[str, Any]]] = []
    for path in sorted((config_dir / "agents").glob("*.yaml")):
        data = read_yaml(path)
        if data.get("type") == "llm":
            llm_files.append((path.relative_to(config_dir).as_posix(), data))
    mock = [f for f in llm_files if f[1].get("provider") == "mock"]
    mock.sort(key=lambda f: f[0] != "agents/llm_default.yaml")
    personas_dir = config_dir / "prompts" / "personas"
    if mock and personas_dir.is_dir():
        base, data = mock[0]
        for path in sorted(personas_dir.glob("*.md")):
            profile = persona_profile(path.stem, str(data.get("model", "")), "mock")
            if path.stem not in PERSONA_TEXT:
                profile = Profile(
                    profile.emoji,
                    profile.title,
                    profile.subtitle,
                    _persona_text(path),
                    profile.gradient,
                )
            options.append(AgentOption("persona", path.stem, profile, base))
    for rel, data in llm_files:
        profile = persona_profile(
            data.get("persona"), str(data.get("model", "")), str(data.get("provider", ""))
        )
        options.append(AgentOption("llm_file", rel, profile))
    return options


def _policies_file(config_dir: Path) -> str | None:
    path = config_dir / "agents" / "policies.yaml"
    data = read_yaml(path) if path.is_file() else {}
    return "agents/policies.yaml" if data.get("type") == "policy" and "policy" in data else None


def agent_entry(option: AgentOption, config_dir: Path) -> dict[str, Any]:
    """The experiment.yaml entry of an agent (a ref to the copied agent files)."""
    if option.kind == "policy":
        ref = _policies_file(config_dir)
        if ref is None:
            return {"type": "policy", "policy": option.value}
        return {"ref": ref, "overrides": {"policy": option.value}}
    if option.kind == "persona":
        return {"ref": option.base, "overrides": {"persona": option.value}}
    return {"ref": option.value}


# --------------------------------------------------------------------------------------------
# The payoff editor


class PayoffInputError(ValueError):
    """Cells of the payoff editor that are not two numbers; one message per bad cell."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def payoff_frame(matrix: PayoffMatrix | None = None) -> pd.DataFrame:
    """The 2x2 editor table: cells 'payoff to A, payoff to B'."""
    matrix = matrix or PayoffMatrix()
    cells = [[matrix.cc, matrix.cd], [matrix.dc, matrix.dd]]
    return pd.DataFrame(
        [[f"{a:g}, {b:g}" for a, b in row] for row in cells],
        index=list(PAYOFF_ROWS),
        columns=list(PAYOFF_COLS),
    )


def parse_payoff_frame(frame: pd.DataFrame) -> PayoffMatrix:
    """The matrix typed into the editor; PayoffInputError lists every bad cell."""
    problems: list[str] = []
    nested: dict[str, dict[str, list[float]]] = {"C": {}, "D": {}}
    for i, mine in enumerate("CD"):
        for j, theirs in enumerate("CD"):
            text = "" if frame.iat[i, j] is None else str(frame.iat[i, j])
            numbers = _NUMBER.findall(text)
            if len(numbers) != 2:
                problems.append(
                    f"{PAYOFF_ROWS[i]} / {PAYOFF_COLS[j]}: expected two numbers like '3, 3' "
                    f"(got {text!r})"
                )
                continue
            nested[mine][theirs] = [float(n) for n in numbers]
    if problems:
        raise PayoffInputError(problems)
    try:
        return PayoffMatrix.from_nested(nested)
    except PayoffError as exc:
        raise PayoffInputError([str(exc)]) from None


# --------------------------------------------------------------------------------------------
# Forms -> configs


@dataclass(frozen=True, slots=True)
class ExperimentRequest:
    """What the Run Experiment form asks for."""

    agent_a: AgentOption
    agent_b: AgentOption
    horizon: dict[str, Any]  # a HorizonConfig mapping
    noise: float
    replicates: int
    seed: int
    matrix: PayoffMatrix
    # experiment.sweep: one dotted path inside the condition -> its values (None: no sweep)
    sweep: tuple[str, tuple[float, ...]] | None = None

    @property
    def condition_name(self) -> str:
        """e.g. 'TFT_vs_ALLD' (only characters a condition name may hold)."""
        name = f"{self.agent_a.short_name}_vs_{self.agent_b.short_name}"
        return re.sub(r"[^A-Za-z0-9._+-]", "-", name)


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


def run_section(run_id: str, seed: int, output_dir: Path) -> dict[str, Any]:
    """The `run` section of a config a form writes."""
    return {"run_id": run_id, "seed": int(seed), "output_dir": str(output_dir)}


def build_experiment(
    request: ExperimentRequest, run_id: str, output_dir: Path, config_dir: Path
) -> dict[str, Any]:
    """The experiment config (a YAML-ready mapping) of a one-condition run."""
    run = run_section(run_id, request.seed, output_dir)
    run.update(store_prompts=True, store_raw_responses=True)
    experiment: dict[str, Any] = {
        "replicates": int(request.replicates),
        "conditions": [
            {
                "name": request.condition_name,
                "agent_a": agent_entry(request.agent_a, config_dir),
                "agent_b": agent_entry(request.agent_b, config_dir),
            }
        ],
    }
    if request.sweep is not None:
        path, values = request.sweep
        whole = path.endswith("n_rounds")  # an integer setting
        experiment["sweep"] = {path: [int(v) if whole else float(v) for v in values]}
    return {
        "run": run,
        "game": {"payoff_matrix": request.matrix.as_nested(), "noise": float(request.noise)},
        "horizon": dict(request.horizon),
        "experiment": experiment,
    }


def build_tournament(
    request: TournamentRequest, run_id: str, output_dir: Path, config_dir: Path
) -> dict[str, Any]:
    """The tournament config (a YAML-ready mapping)."""
    players = [
        p.value if p.kind == "policy" else agent_entry(p, config_dir) for p in request.players
    ]
    return {
        "run": run_section(run_id, request.seed, output_dir),
        "game": {"noise": float(request.noise)},
        "horizon": dict(request.horizon),
        "tournament": {
            "repetitions": int(request.repetitions),
            "self_play": bool(request.self_play),
            "log_rounds": False,
            "players": players,
        },
    }


def evolution_members(settings: EvolutionSettings, config_dir: Path | None) -> list[dict[str, Any]]:
    """The population entries: policies with individuals, then the LLM members (a ref to the
    copied agent file, as `agent_entry`); ValueError names an LLM agent no longer offered."""
    members: list[dict[str, Any]] = [
        {"player": k, "count": n} for k, n in settings.population.items()
    ]
    if settings.llm_members:
        options = {o.key: o for o in agent_options(config_dir)} if config_dir else {}
        for key, n in settings.llm_members.items():
            if key not in options or options[key].kind == "policy":
                raise ValueError(f"not an LLM agent of the configs folder: {key}")
            members.append({"player": agent_entry(options[key], config_dir), "count": n})
    return members


def build_evolution(
    settings: EvolutionSettings, run_id: str, output_dir: Path, config_dir: Path | None = None
) -> dict[str, Any]:
    """The evolution config (a YAML-ready mapping); only strategies with individuals take part
    (LLM members need `config_dir`), and `eliminate` is written only for eliminate_clone (the
    other processes refuse it)."""
    section: dict[str, Any] = {"process": settings.process}
    if settings.process == "eliminate_clone":
        section["eliminate"] = int(settings.eliminate)
    section.update(
        generations=int(settings.generations),
        mutation_rate=float(settings.mutation_rate),
        repetitions=int(settings.repetitions),
        seeds=int(settings.seeds),
        population=evolution_members(settings, config_dir),
    )
    if settings.fitness != "auto":
        section["fitness"] = settings.fitness
    return {
        "run": run_section(run_id, settings.seed, output_dir),
        "game": {"noise": float(settings.noise)},
        "horizon": {"type": "fixed", "n_rounds": int(settings.rounds)},
        "evolution": section,
    }


# --------------------------------------------------------------------------------------------
# Preparing and running


def new_run_dir(root: Path, now: datetime | None = None) -> Path:
    """A new empty directory `root/ui_<timestamp>`, made here (with `root` when missing); when
    that second's name is taken, `ui_<timestamp>_2`, `_3`, ... Each name is claimed by mkdir,
    which fails when it exists, so app sessions starting runs in the same second (threads of
    one process) each get their own directory: there is no check-then-create race."""
    stamp = (now or datetime.now()).strftime("%Y%m%d_%H%M%S")
    root.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        candidate = root / (f"ui_{stamp}" if n == 1 else f"ui_{stamp}_{n}")
        try:
            candidate.mkdir()
        except FileExistsError:  # taken (by an earlier run, or another session just now)
            n += 1
            continue
        return candidate


def prepare(
    kind: str,
    build: Callable[[str, Path], dict[str, Any]],
    root: Path,
    copy_from: Path | None = None,
) -> Path:
    """Create `root/ui_<timestamp>/config/` (with copies of `copy_from`'s agents/ and prompts/
    when given), write `<kind>.yaml` there from `build(run_id, run_dir)`; returns its path.
    When that fails (OSError, a build error), the new directory is removed again."""
    run_dir = new_run_dir(root).resolve()
    try:
        target = run_dir / "config"
        target.mkdir()
        if copy_from is not None:
            for sub in ("agents", "prompts"):
                if (copy_from / sub).is_dir():
                    shutil.copytree(copy_from / sub, target / sub)
        path = target / f"{kind}.yaml"
        path.write_text(
            f"# Written by the pdbench UI ({kind}).\n"
            + yaml.safe_dump(build(run_dir.name, run_dir), sort_keys=False),
            encoding="utf-8",
        )
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    return path


def prepare_experiment(request: ExperimentRequest, config_dir: Path, root: Path) -> Path:
    """Write a new run directory's experiment.yaml (agent files copied); returns its path."""
    return prepare(
        "experiment",
        lambda run_id, out: build_experiment(request, run_id, out, config_dir),
        root,
        config_dir,
    )


def prepare_tournament(request: TournamentRequest, config_dir: Path, root: Path) -> Path:
    """Write a new tournament directory's config; returns its path."""
    return prepare(
        "tournament",
        lambda run_id, out: build_tournament(request, run_id, out, config_dir),
        root,
        config_dir if request.needs_refs else None,
    )


def prepare_evolution(
    settings: EvolutionSettings, root: Path, config_dir: Path | None = None
) -> Path:
    """Write a new evolution directory's config (with copies of the agent files when LLM agents
    take part); returns its path."""
    return prepare(
        "evolution",
        lambda run_id, out: build_evolution(settings, run_id, out, config_dir),
        root,
        config_dir if settings.llm_members else None,
    )


def discard_run(config_path: Path) -> None:
    """Remove a run directory made by `prepare` that never started (only config/ inside)."""
    run_dir = config_path.parent.parent
    if run_dir.is_dir() and {p.name for p in run_dir.iterdir()} <= {"config"}:
        shutil.rmtree(run_dir)


@dataclass(frozen=True)
class Finished:
    """A run the library finished: its kind, directory and manifest."""

    kind: str
    run_dir: Path
    manifest: dict[str, Any]

    def message(self) -> str:
        """One line for the page, e.g. 'Tournament t1 finished: 3 players, 6 matches, ...'."""
        m = self.manifest
        totals = m.get("totals") or {}
        if self.kind == "experiment":
            what = f"{totals.get('games', 0):,} games, {totals.get('rounds', 0):,} rounds"
        elif self.kind == "tournament":
            what = (
                f"{len(m.get('players') or [])} players, {totals.get('matches', 0):,} matches, "
                f"{totals.get('rounds', 0):,} rounds"
            )
        else:
            fixated = m.get("fixated")
            what = f"{m.get('generations_run', '?')} generations, " + (
                f"fixated on {fixated}" if fixated else "no fixation"
            )
        return f"{TITLES[self.kind]} {m.get('run_id')} finished: {what} → {self.run_dir}"


def execute(
    config_path: Path, kind: str, progress: Callable[[int, int], None] | None = None
) -> Finished:
    """Validate a prepared config of this kind and run it into its run.output_dir (overwriting
    what a previous attempt left) through the runners' front door, as the CLI does; library
    errors (ConfigError, RunError) propagate."""
    from pdbench.runners.config.loader import load_config
    from pdbench.runners.start import RunOptions, start

    loaded = load_config(config_path, kind=kind)
    run_dir = Path(loaded.config.run.output_dir)
    result = start(loaded, RunOptions(output_dir=run_dir, overwrite=True, progress=progress))
    return Finished(kind, run_dir, result.manifest)
