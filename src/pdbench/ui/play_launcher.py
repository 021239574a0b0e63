"""The Play tab's back end: the config of a person's game (agent type `human`) against any
agent, the game so far replayed by the engine after each move, and the finished game saved as a
run. With `launcher.py` and `planning.py`, the only part of the app that calls the runners."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pdbench.core.payoff import PayoffMatrix
from pdbench.ui.launcher import AgentOption, agent_entry, prepare, run_section

if TYPE_CHECKING:
    from pdbench.runners.live import LiveGame


@dataclass(frozen=True, slots=True)
class PlayRequest:
    """What the Play tab asks for: the opponent, the person's name and the game (the person is
    agent A; the horizon is fixed and disclosed; no noise; one game)."""

    opponent: AgentOption
    name: str
    n_rounds: int
    seed: int
    matrix: PayoffMatrix

    @property
    def human_name(self) -> str:
        """The name the records give the person ('human' when none was typed)."""
        return " ".join(self.name.split())[:40] or "human"

    @property
    def condition_name(self) -> str:
        """e.g. 'human_vs_TFT'."""
        return re.sub(r"[^A-Za-z0-9._+-]", "-", f"human_vs_{self.opponent.short_name}")


def build_play(
    request: PlayRequest,
    moves: Sequence[str],
    run_id: str,
    output_dir: Path,
    config_dir: Path,
) -> dict[str, Any]:
    """The experiment config of one human game: a `type: human` agent making `moves` (a string
    such as 'CCDC') against the opponent, one replicate of `n_rounds` rounds."""
    run = run_section(run_id, request.seed, output_dir)
    run.update(store_prompts=True, store_raw_responses=True)
    return {
        "run": run,
        "game": {"payoff_matrix": request.matrix.as_nested(), "noise": 0.0},
        "horizon": {"type": "fixed", "n_rounds": int(request.n_rounds)},
        "experiment": {
            "replicates": 1,
            "conditions": [
                {
                    "name": request.condition_name,
                    "agent_a": {
                        "type": "human",
                        "name": request.human_name,
                        "moves": "".join(moves),
                    },
                    "agent_b": agent_entry(request.opponent, config_dir),
                }
            ],
        },
    }


LIVE_PREFIX = "pdbench_play_"


def prepare_play(
    request: PlayRequest, config_dir: Path, root: Path, moves: Sequence[str] | None = None
) -> Path:
    """Write the config of a human game; returns its path. With `moves` (a finished game): a
    new run directory under `root` (the app's runs folder). Without (a game being played): a
    new temporary directory, `root` unused, with one placeholder C per round (live play gives
    the human agent the moves made so far; see `replay_play`); remove it with `discard_live`."""
    if moves is None:
        root = Path(tempfile.mkdtemp(prefix=LIVE_PREFIX))
        moves = ["C"] * int(request.n_rounds)
    return prepare(
        "experiment",
        lambda run_id, out: build_play(request, moves, run_id, out, config_dir),
        root,
        config_dir,
    )


def replay_play(config_path: Path, moves: Sequence[str]) -> LiveGame:
    """The game of `config_path` (see `prepare_play`) played up to now: the first len(moves)
    rounds, the person making `moves`, by the engine a run uses (an LLM opponent's replies
    through the response cache); library errors propagate."""
    from pdbench.runners.live import replay_game

    return replay_game(config_path, moves)


def discard_live(config_path: Path) -> None:
    """Remove the temporary directory of a live game's config (see `prepare_play`)."""
    for parent in config_path.parents:
        if (
            parent.name.startswith(LIVE_PREFIX)
            and parent.parent == Path(tempfile.gettempdir()).resolve()
        ):
            shutil.rmtree(parent, ignore_errors=True)
            return
