"""Small sample runs, tournaments and evolutions made with the library, for the UI tests and the
README screenshots."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"


def _policy(name: str) -> dict[str, Any]:
    return {"ref": "agents/policies.yaml", "overrides": {"policy": name}}


def _llm(persona: str, invalid_rate: float) -> dict[str, Any]:
    return {
        "ref": "agents/llm_default.yaml",
        "overrides": {"persona": persona, "mock": {"invalid_rate": invalid_rate}},
    }


def _talker(name: str, rule: str) -> dict[str, Any]:
    """A policy that talks by a message rule (core/talk.py) in a game with a message channel."""
    return {"ref": "agents/policies.yaml", "overrides": {"policy": name, "talk": rule}}


# Talk before every move: a liar (ALLD promising C) against an honest TFT, and the mock's
# cooperative persona against its exploitative one (which promises C and defects).
TALK_CONDITIONS: list[dict[str, Any]] = [
    {
        "name": "liar_vs_TFT",
        "agent_a": _talker("ALLD", "always_promise"),
        "agent_b": _talker("TFT", "honest"),
        "communication": {"mode": "every_round"},
    },
    {
        "name": "LLMcoop_vs_LLMexploit_talk",
        "agent_a": _llm("cooperative", 0.0),
        "agent_b": _llm("exploitative", 0.0),
        "communication": {"mode": "every_round"},
    },
    {"name": "TFT_vs_ALLD_silent", "agent_a": _policy("TFT"), "agent_b": _policy("ALLD")},
]

# Fast: three short conditions, one noisy, one with mock LLMs that sometimes reply garbage.
TEST_CONDITIONS: list[dict[str, Any]] = [
    {"name": "TFT_vs_ALLD", "agent_a": _policy("TFT"), "agent_b": _policy("ALLD")},
    {
        "name": "GTFT_vs_WSLS_noisy",
        "agent_a": _policy("GTFT"),
        "agent_b": _policy("WSLS"),
        "noise": 0.1,
    },
    {
        "name": "LLMcoop_vs_LLMexploit",
        "agent_a": _llm("cooperative", 0.5),
        "agent_b": _llm("exploitative", 0.5),
    },
]

# For screenshots: noise makes Copycat's echoes and Generous Copycat's forgiveness visible.
SHOWCASE_CONDITIONS: list[dict[str, Any]] = [
    {
        "name": "Copycat_vs_GenerousCopycat_noisy",
        "agent_a": _policy("TFT"),
        "agent_b": _policy("GTFT"),
        "noise": 0.05,
    },
    {"name": "Copycat_vs_AlwaysCheat", "agent_a": _policy("TFT"), "agent_b": _policy("ALLD")},
    {
        "name": "Grudger_vs_Simpleton_noisy",
        "agent_a": _policy("GRIM"),
        "agent_b": _policy("WSLS"),
        "noise": 0.05,
    },
    {
        "name": "LLMcoop_vs_LLMexploit",
        "agent_a": _llm("cooperative", 0.2),
        "agent_b": _llm("exploitative", 0.2),
    },
]


def write_config(
    config_dir: Path,
    output_dir: Path,
    conditions: list[dict[str, Any]],
    n_rounds: int = 30,
    replicates: int = 2,
    run_id: str = "ui_sample",
) -> Path:
    """Copy the repo's agent and prompt files into `config_dir` and write an experiment.yaml."""
    config_dir.mkdir(parents=True, exist_ok=True)
    for sub in ("agents", "prompts"):
        shutil.copytree(CONFIGS / sub, config_dir / sub, dirs_exist_ok=True)
    config = {
        "run": {"run_id": run_id, "seed": 20260126, "output_dir": str(output_dir)},
        "horizon": {"type": "fixed", "n_rounds": n_rounds},
        "experiment": {"replicates": replicates, "conditions": conditions},
    }
    path = config_dir / "experiment.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def load_config(path: Path, kind: str) -> Any:
    """The library's loaded config of this kind."""
    from pdbench.runners.config.loader import load_config as load

    return load(path, kind=kind)


def _options(output_dir: Path) -> Any:
    """Run options of a sample: into `output_dir`, overwriting, without the response cache."""
    from pdbench.runners.lifecycle.session import RunOptions

    return RunOptions(output_dir=output_dir, overwrite=True, use_cache=False)


def _write(directory: Path, config: dict[str, Any], kind: str) -> Any:
    """Write `config` beside `directory` (as `<directory>.yaml`) and load it."""
    path = directory.parent / f"{directory.name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return load_config(path, kind)


def make_run(
    base: Path,
    conditions: list[dict[str, Any]] | None = None,
    n_rounds: int = 30,
    replicates: int = 2,
    run_id: str = "ui_sample",
) -> Path:
    """Run a sample experiment into `base/data/runs/<run_id>` with the library; returns the run dir."""
    from pdbench.runners.science.experiment import run_experiment

    run_dir = base / "data" / "runs" / run_id
    config = write_config(
        base / "sample_config",
        run_dir,
        conditions or TEST_CONDITIONS,
        n_rounds=n_rounds,
        replicates=replicates,
        run_id=run_id,
    )
    run_experiment(load_config(config, kind="experiment"), _options(run_dir))
    return run_dir


def make_tournament(
    directory: Path,
    players: list[Any] | None = None,
    n_rounds: int = 20,
    repetitions: int = 2,
    noise: float = 0.0,
    run_id: str = "lib_tournament",
) -> Path:
    """Play a small tournament with the library into `directory`; returns it."""
    from pdbench.runners.science.tournament import run_tournament

    config = {
        "run": {"run_id": run_id, "seed": 7, "output_dir": str(directory)},
        "game": {"noise": noise},
        "horizon": {"type": "fixed", "n_rounds": n_rounds},
        "tournament": {"repetitions": repetitions, "players": players or ["TFT", "ALLD", "ALLC"]},
    }
    run_tournament(_write(directory, config, "tournament"), _options(directory))
    return directory


def make_evolution(
    directory: Path,
    population: dict[str, int] | None = None,
    generations: int = 8,
    noise: float = 0.0,
    run_id: str = "lib_evolution",
) -> Path:
    """Run a small evolution with the library into `directory`; returns it."""
    from pdbench.runners.science.evolve import run_evolution

    members = population or {"TFT": 4, "ALLD": 4, "ALLC": 4}
    config = {
        "run": {"run_id": run_id, "seed": 3, "output_dir": str(directory)},
        "game": {"noise": noise},
        "horizon": {"type": "fixed", "n_rounds": 10},
        "evolution": {
            "process": "eliminate_clone",
            "eliminate": 2,
            "generations": generations,
            "population": [{"player": k, "count": n} for k, n in members.items()],
        },
    }
    run_evolution(_write(directory, config, "evolution"), _options(directory))
    return directory
