"""The Run Experiment tab's back end: which agents can be picked, the payoff editor's table, and
turning a form into a one-condition experiment in a new run directory.

A new run lives in `data/runs/ui_<timestamp>/`. Refs may not leave the config root, so the
config's `agents/` and `prompts/` folders are copied into `<run>/config/` and the generated
`experiment.yaml` is written beside them (it references the copies). Nothing is written into the
source configs folder.
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

from pdbench.agents.policy import POLICY_REGISTRY, policy_names
from pdbench.core.payoff import PayoffError, PayoffMatrix
from pdbench.ui.style import PERSONA_TEXT, Profile, persona_profile, policy_profile

CONFIG_DIR_ENV = "PDBENCH_CONFIG_DIR"
PAYOFF_ROWS = ("A plays C", "A plays D")
PAYOFF_COLS = ("B plays C", "B plays D")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


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
            return f"🤖 Mock LLM · {self.value}"
        return f"📄 {self.value} · {self.profile.subtitle}"

    @property
    def short_name(self) -> str:
        """A condition-name fragment."""
        if self.kind == "policy":
            return self.value
        if self.kind == "persona":
            return f"LLM-{self.value}"
        return Path(self.value).stem


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


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
        data = _read_yaml(path)
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
    data = _read_yaml(path) if path.is_file() else {}
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
# Building and running


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

    @property
    def condition_name(self) -> str:
        """e.g. 'TFT_vs_ALLD' (only characters a condition name may hold)."""
        name = f"{self.agent_a.short_name}_vs_{self.agent_b.short_name}"
        return re.sub(r"[^A-Za-z0-9._+-]", "-", name)


def build_experiment(
    request: ExperimentRequest, run_id: str, output_dir: Path, config_dir: Path
) -> dict[str, Any]:
    """The experiment config (a YAML-ready mapping) of a one-condition run."""
    return {
        "run": {
            "run_id": run_id,
            "seed": int(request.seed),
            "output_dir": str(output_dir),
            "store_prompts": True,
            "store_raw_responses": True,
        },
        "game": {"payoff_matrix": request.matrix.as_nested(), "noise": float(request.noise)},
        "horizon": dict(request.horizon),
        "experiment": {
            "replicates": int(request.replicates),
            "conditions": [
                {
                    "name": request.condition_name,
                    "agent_a": agent_entry(request.agent_a, config_dir),
                    "agent_b": agent_entry(request.agent_b, config_dir),
                }
            ],
        },
    }


def new_run_dir(runs_root: Path, now: datetime | None = None) -> Path:
    """A fresh `ui_<timestamp>` directory name under `runs_root` (not created)."""
    stamp = (now or datetime.now()).strftime("%Y%m%d_%H%M%S")
    candidate = runs_root / f"ui_{stamp}"
    n = 2
    while candidate.exists():
        candidate = runs_root / f"ui_{stamp}_{n}"
        n += 1
    return candidate


def prepare_run(request: ExperimentRequest, config_dir: Path, runs_root: Path) -> Path:
    """Create the run directory with a copy of the agent/prompt files and experiment.yaml;
    returns the path of the experiment.yaml."""
    run_dir = new_run_dir(runs_root).resolve()
    target = run_dir / "config"
    target.mkdir(parents=True)
    for sub in ("agents", "prompts"):
        if (config_dir / sub).is_dir():
            shutil.copytree(config_dir / sub, target / sub)
    config = build_experiment(request, run_dir.name, run_dir, config_dir)
    path = target / "experiment.yaml"
    path.write_text(
        "# Written by the pdbench UI (Run Experiment tab).\n"
        + yaml.safe_dump(config, sort_keys=False),
        encoding="utf-8",
    )
    return path


def discard_run(config_path: Path) -> None:
    """Remove a run directory made by `prepare_run` that never started (only config/ inside)."""
    run_dir = config_path.parent.parent
    if run_dir.is_dir() and {p.name for p in run_dir.iterdir()} <= {"config"}:
        shutil.rmtree(run_dir)


def execute(config_path: Path, progress: Callable[[int, int], None] | None = None) -> Any:
    """Validate and run a prepared experiment; library errors (ConfigError, RunError) propagate."""
    from pdbench.runners.registry import load_experiment
    from pdbench.runners.run_experiment import run_experiment

    loaded = load_experiment(config_path)
    run_dir = Path(loaded.config.run.output_dir)
    return run_experiment(loaded, overwrite=True, progress=progress, output_dir=run_dir)


def policy_description(key: str) -> str:
    """The registered description of a policy ('' if unknown)."""
    cls = POLICY_REGISTRY.get(key.upper())
    return cls.description if cls else ""
