"""The Play tab's back end: the config of a person's game (agent type `human`) against any
agent, the game so far replayed by the engine after each move, and the finished game saved as a
run. With `launcher.py` and `planning.py`, the only part of the app that calls the runners.

A game in progress is also kept in a small JSON file (`save_game`: the request and the moves and
messages so far, and the saved run once finished) under the app's data folder, named by a random
id the tab puts in the page's URL (`?game=<id>`): a browser Refresh opens a new session, which
finds the game by that id (`load_game`) and replays it."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pdbench.core.payoff import PayoffMatrix
from pdbench.core.talk import MESSAGE_RULES
from pdbench.storage.files import write_json_atomic
from pdbench.ui.launcher import AgentOption, agent_entry, agent_options, prepare, run_section

if TYPE_CHECKING:
    from pdbench.runners.live import LiveGame


# Talk before each move (a message channel, `communication` of the config): the orders the tab
# offers (the person is agent A), and the message rules a policy opponent may speak by.
TALK_ORDERS = {
    "simultaneous": "at the same time (you see their message once you have sent yours)",
    "a_first": "you write first, then they answer",
    "alternate": "in turns (you open rounds 1, 3, 5, …, they open the others)",
}
TALK_RULES = {k: d for k, (d, _) in MESSAGE_RULES.items() if k not in ("silent", "fixed")}
MAX_CHARS = 280  # a message's length (the channel's max_chars)


def can_talk(option: AgentOption) -> bool:
    """Whether the tab offers talk against this opponent: a policy (it speaks by a message
    rule) or a mock LLM persona."""
    return option.kind in ("policy", "persona")


@dataclass(frozen=True, slots=True)
class PlayRequest:
    """What the Play tab asks for: the opponent, the person's name and the game (the person is
    agent A; the horizon is fixed and disclosed; no noise; one game), and whether the two talk
    before each move (`order`: a key of TALK_ORDERS; `rule`: a policy opponent's message rule)."""

    opponent: AgentOption
    name: str
    n_rounds: int
    seed: int
    matrix: PayoffMatrix
    talk: bool = False
    order: str = "simultaneous"
    rule: str = "honest"

    @property
    def human_name(self) -> str:
        """The name the records give the person ('human' when none was typed)."""
        return " ".join(self.name.split())[:40] or "human"

    @property
    def condition_name(self) -> str:
        """e.g. 'human_vs_TFT'."""
        name = f"human_vs_{self.opponent.short_name}" + ("_talk" if self.talk else "")
        return re.sub(r"[^A-Za-z0-9._+-]", "-", name)


def build_play(
    request: PlayRequest,
    moves: Sequence[str],
    run_id: str,
    output_dir: Path,
    config_dir: Path,
    messages: Sequence[str] = (),
) -> dict[str, Any]:
    """The experiment config of one human game: a `type: human` agent making `moves` (a string
    such as 'CCDC') against the opponent, one replicate of `n_rounds` rounds; with talk, a
    message channel before every move, the person's typed `messages` (one per exchange) and a
    policy opponent's message rule."""
    run = run_section(run_id, request.seed, output_dir)
    run.update(store_prompts=True, store_raw_responses=True)
    human: dict[str, Any] = {"type": "human", "name": request.human_name, "moves": "".join(moves)}
    opponent = agent_entry(request.opponent, config_dir)
    config: dict[str, Any] = {
        "run": run,
        "game": {"payoff_matrix": request.matrix.as_nested(), "noise": 0.0},
        "horizon": {"type": "fixed", "n_rounds": int(request.n_rounds)},
    }
    if request.talk:
        config["communication"] = {
            "mode": "every_round",
            "order": request.order,
            "max_chars": MAX_CHARS,
        }
        human["messages"] = list(messages)
        if request.opponent.kind == "policy":
            (opponent["overrides"] if "overrides" in opponent else opponent)["talk"] = request.rule
    config["experiment"] = {
        "replicates": 1,
        "conditions": [{"name": request.condition_name, "agent_a": human, "agent_b": opponent}],
    }
    return config


LIVE_PREFIX = "pdbench_play_"


def prepare_play(
    request: PlayRequest,
    config_dir: Path,
    root: Path,
    moves: Sequence[str] | None = None,
    messages: Sequence[str] = (),
) -> Path:
    """Write the config of a human game; returns its path. With `moves` (a finished game, and
    with talk the person's `messages`): a new run directory under `root` (the app's runs
    folder). Without (a game being played): a new temporary directory, `root` unused, with one
    placeholder C per round and no message (live play gives the human agent the moves and
    messages made so far; see `replay_play`); remove it with `discard_live`."""
    if moves is None:
        root = Path(tempfile.mkdtemp(prefix=LIVE_PREFIX))
        moves, messages = ["C"] * int(request.n_rounds), ()
    return prepare(
        "experiment",
        lambda run_id, out: build_play(request, moves, run_id, out, config_dir, messages),
        root,
        config_dir,
    )


def replay_play(
    config_path: Path, moves: Sequence[str], messages: Sequence[str] | None = None
) -> LiveGame:
    """The game of `config_path` (see `prepare_play`) played up to now: the first len(moves)
    rounds, the person making `moves` and writing `messages` (with talk: one per exchange, the
    last one possibly for the next move; see `runners.live`), by the engine a run uses (an LLM
    opponent's replies through the response cache); library errors propagate."""
    from pdbench.runners.live import replay_game

    return replay_game(config_path, moves, messages=messages)


def discard_live(config_path: Path) -> None:
    """Remove the temporary directory of a live game's config (see `prepare_play`)."""
    for parent in config_path.parents:
        if (
            parent.name.startswith(LIVE_PREFIX)
            and parent.parent == Path(tempfile.gettempdir()).resolve()
        ):
            shutil.rmtree(parent, ignore_errors=True)
            return


def profile_saved(run_dir: Path) -> list[dict[str, Any]]:
    """The strategy card of a saved game (`pdbench profile` on its run: writes
    strategy_fit.parquet there, as `pdbench report` would), the person's (agent A's) rows."""
    from pdbench.runners.science.profile import profile_run

    return [row for row in profile_run(run_dir).rows if row["agent"] == "a"]


# --------------------------------------------------------------------------------------------
# A game kept across a browser Refresh

GAME_ID = re.compile(r"[0-9a-f]{12}")  # what `new_game_id` makes; anything else is refused
GAMES_FOLDER = "play"  # under the app's data folder (the parent of its runs folder)


@dataclass(frozen=True, slots=True)
class KeptGame:
    """A game read back by `load_game`: the request, the moves and messages so far, and the
    saved run's directory once the game was finished and saved."""

    request: PlayRequest
    moves: list[str]
    messages: list[str]
    saved: str | None


def new_game_id() -> str:
    """A random id for a new game (12 hex digits)."""
    return uuid.uuid4().hex[:12]


def game_file(data_dir: Path, game_id: str) -> Path | None:
    """Where the game `game_id` is kept (None for an id `new_game_id` cannot have made: the id
    comes from the URL and must not name another file)."""
    if not GAME_ID.fullmatch(game_id):
        return None
    return data_dir / GAMES_FOLDER / f"{game_id}.json"


def save_game(
    data_dir: Path,
    game_id: str,
    request: PlayRequest,
    moves: Sequence[str],
    messages: Sequence[str],
    saved: str | None = None,
) -> None:
    """Keep a game (see `load_game`); written atomically."""
    path = game_file(data_dir, game_id)
    if path is None:
        raise ValueError(f"not a game id: {game_id!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(
        path,
        {
            "opponent": request.opponent.key,
            "name": request.name,
            "n_rounds": request.n_rounds,
            "seed": request.seed,
            "payoff_matrix": request.matrix.as_nested(),
            "talk": request.talk,
            "order": request.order,
            "rule": request.rule,
            "moves": list(moves),
            "messages": list(messages),
            "saved": saved,
        },
    )


def load_game(data_dir: Path, game_id: str, config_dir: Path) -> KeptGame | None:
    """The game kept under `game_id`, or None when there is none (or it cannot be read, or its
    opponent is no longer offered)."""
    path = game_file(data_dir, game_id)
    if path is None or not path.is_file():
        return None
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        options = {o.key: o for o in agent_options(config_dir)}
        request = PlayRequest(
            opponent=options[kept["opponent"]],
            name=str(kept["name"]),
            n_rounds=int(kept["n_rounds"]),
            seed=int(kept["seed"]),
            matrix=PayoffMatrix.from_nested(kept["payoff_matrix"]),
            talk=bool(kept["talk"]),
            order=str(kept["order"]),
            rule=str(kept["rule"]),
        )
        moves = [str(m) for m in kept["moves"]]
        messages = [str(m) for m in kept["messages"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not set(moves) <= {"C", "D"} or len(moves) > request.n_rounds:
        return None
    saved = kept.get("saved")
    return KeptGame(request, moves, messages, str(saved) if saved else None)


def forget_game(data_dir: Path, game_id: str) -> None:
    """Remove a kept game (nothing when there is none)."""
    path = game_file(data_dir, game_id)
    if path is not None:
        path.unlink(missing_ok=True)
