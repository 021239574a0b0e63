"""The forms' plans before they run: the sweep a Run form may ask for, an LLM agent picked twice
for one population, and `--dry-run`'s plan of the config a form would write (games, rounds, LLM
calls, tokens and cost per model). With
`launcher.py`, the only part of the app that calls the runners."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pdbench.ui.launcher import (
    AgentOption,
    ExperimentRequest,
    PayoffInputError,
    TournamentRequest,
    agent_options,
    build_evolution,
    build_experiment,
    build_tournament,
)
from pdbench.ui.presets import EvolutionSettings, read_yaml

Request = ExperimentRequest | TournamentRequest | EvolutionSettings

SWEEPABLE = {
    "game.noise": "noise (move flip probability)",
    "agent_a.overrides.temperature": "agent A's temperature (LLM)",
    "agent_b.overrides.temperature": "agent B's temperature (LLM)",
    "agent_a.overrides.params.coop_prob": "agent A's coop_prob (RANDOM)",
    "agent_b.overrides.params.coop_prob": "agent B's coop_prob (RANDOM)",
    "agent_a.overrides.params.generous_prob": "agent A's generous_prob (GTFT)",
    "agent_b.overrides.params.generous_prob": "agent B's generous_prob (GTFT)",
    "horizon.n_rounds": "rounds (fixed horizon)",
}


def parse_values(text: str) -> tuple[float, ...]:
    """ "0, 0.05, 0.1" -> (0.0, 0.05, 0.1); PayoffInputError names what is not a number."""
    parts = [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]
    bad = []
    values = []
    for part in parts:
        try:
            values.append(float(part))
        except ValueError:
            bad.append(f"not a number: {part!r}")
    if bad or not values:
        raise PayoffInputError(bad or ["give at least one value, e.g. 0, 0.05, 0.1"])
    return tuple(dict.fromkeys(values))


def llm_name(option: AgentOption, config_dir: Path) -> str:
    """The name the engine gives an LLM agent option: the file's `name`, else model[persona]
    (a mock persona is the mock agent file with that persona)."""
    data = read_yaml(config_dir / (option.base or option.value))
    persona = option.value if option.kind == "persona" else data.get("persona")
    return str(data.get("name") or f"{data.get('model')}[{persona}]")


def same_agent_twice(settings: EvolutionSettings, config_dir: Path) -> list[str]:
    """One message per LLM agent picked twice under two entries (e.g. the cooperative mock
    persona and agents/llm_default.yaml, whose persona is cooperative): the engine would refuse
    the duplicate name."""
    options = {o.key: o for o in agent_options(config_dir) if o.kind != "policy"}
    seen: dict[str, str] = {}
    out = []
    for key in settings.llm_members:
        if key not in options:
            continue
        name = llm_name(options[key], config_dir)
        if name in seen:
            out.append(
                f"{options[seen[name]].label} and {options[key].label} are the same agent "
                f"({name}): keep one and raise its count."
            )
        seen.setdefault(name, key)
    return out


_PLANS: dict[str, str] = {}  # the last plans, by request (a form redrawn asks again)


def plan_text(kind: str, request: Request, config_dir: Path) -> str:
    """What a form would run, before it runs: `pdbench --dry-run`'s plan of the config the form
    would write (games, rounds, LLM calls, tokens and estimated cost per model), checked from the
    form's mapping with the agent files of `config_dir` (nothing is written); a config problem
    comes back as its one-line messages, naming the form (`FORM_NAMES`)."""
    key = f"{kind}|{config_dir}|{request!r}"
    if key not in _PLANS:
        if len(_PLANS) > 64:
            _PLANS.clear()
        _PLANS[key] = _plan_text(kind, request, config_dir)
    return _PLANS[key]


# What a config problem of a form's plan names instead of a file.
FORM_NAMES = {
    "experiment": "Run form",
    "tournament": "Tournament form",
    "evolution": "Evolution form",
}


def form_config(kind: str, request: Request, config_dir: Path) -> dict[str, Any]:
    """The config mapping a form would write (run_id `plan`; its output dir is not created)."""
    out = config_dir / "plan"
    if isinstance(request, TournamentRequest):
        return build_tournament(request, "plan", out, config_dir)
    if isinstance(request, EvolutionSettings):
        return build_evolution(request, "plan", out, config_dir)
    return build_experiment(request, "plan", out, config_dir)


def _plan_text(kind: str, request: Request, config_dir: Path) -> str:
    from pdbench.errors import PdbenchError
    from pdbench.runners.config.loader import load_mapping
    from pdbench.runners.plan import describe_plan

    data = form_config(kind, request, config_dir)
    try:
        text = describe_plan(load_mapping(data, FORM_NAMES[kind], config_dir, kind=kind))
    except PdbenchError as exc:
        return str(exc)
    return "\n".join(line for line in text.splitlines() if not line.startswith("run_id:"))
