"""Small offline runs of the same agents, for the tests of agents compared across runs: the mock
cooperative LLM (garbage replies 30% of the time, so fallbacks make its games differ) against
TFT, and GRIM against ALLD."""

from __future__ import annotations

from pathlib import Path

from tests.support.configs import experiment, llm, policy, write_config

from pdbench.runners.config.loader import load_config
from pdbench.runners.science.experiment import RunOptions, run_experiment

COOP = "cooperative"


def make_agent_run(
    base: Path, name: str, seed: int, replicates: int, noisy: bool = False, n_rounds: int = 20
) -> Path:
    """Run `name` into `base/<name>` (its config in `base/<name>_config`); with `noisy`, a third
    condition: the LLM against TFT with 10% noise. Returns the run directory."""
    agent = llm(COOP, mock={"invalid_rate": 0.3})
    data = experiment(
        [("llm_vs_TFT", agent, policy("TFT")), ("GRIM_vs_ALLD", policy("GRIM"), policy("ALLD"))],
        replicates=replicates,
        horizon={"type": "fixed", "n_rounds": n_rounds},
        run={"run_id": name, "seed": seed, "output_dir": str(base / name)},
    )
    if noisy:
        data["experiment"]["conditions"].append(
            {"name": "llm_vs_TFT_noisy", "agent_a": agent, "agent_b": policy("TFT"), "noise": 0.1}
        )
    run_experiment(load_config(write_config(data, base / f"{name}_config")), RunOptions())
    return base / name
