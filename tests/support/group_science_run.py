"""A real group tournament and group evolution for the app's tests: `pdbench tournament
configs/group_tournament.yaml` and `pdbench evolve configs/group_evolution.yaml` (offline,
policies only, a few seconds), run in this process into a working directory's
`data/tournaments/` and `data/evolutions/`."""

from __future__ import annotations

from pathlib import Path

REPO_CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def make_real_group_science(base: Path) -> tuple[Path, Path]:
    """Run both example configs under `base` (the working directory the app is started in);
    returns (group tournament dir, group evolution dir)."""
    from tests.support.cli import run_uncaptured

    tournament = base / "data" / "tournaments" / "group_tournament_ui"
    evolution = base / "data" / "evolutions" / "group_evolution_ui"
    for command, config, out in (
        ("tournament", "group_tournament.yaml", tournament),
        ("evolve", "group_evolution.yaml", evolution),
    ):
        code, err = run_uncaptured([command, str(REPO_CONFIGS / config), "-o", str(out)])
        if code != 0:
            raise RuntimeError(f"pdbench {command} failed ({code}): {err.strip()[-400:]}")
    return tournament, evolution
