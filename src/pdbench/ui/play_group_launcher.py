"""The back end of a group game in the Play tab: the person takes one seat (seat A) of a group of
N = 3..6 and plays round by round against co-players picked from the group policies and the
mock LLM personas, in a public goods game, the linear N-player Prisoner's Dilemma or the
volunteer's dilemma. With `play_launcher.py`, `launcher.py` and `planning.py`, one of the UI
modules that call the runners.

The game is a groups config (one condition, one replicate, a fixed horizon, no noise, no talk)
whose seat A is a `type: human` agent holding the person's moves. A config file may not seat a
person, so the config is built here and loaded through the mapping loader with `human_seats`
(`runners.config.loader.load_mapping`). After each click the game so far is replayed by the
group engine (`runners.live_group.replay_group_game`); the finished game is written into a new
run directory under the runs folder (its config beside it, as every app run has) and run there
by the groups runner, so the Groups tab replays it.

A game in progress is kept in a small JSON file under the app's data folder, named by a random
id the tab puts in the URL (`?group=<id>`), so a browser Refresh finds it (`load_group_game`).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pdbench.agents.policy import POLICY_REGISTRY
from pdbench.core.group_config import GroupGameConfig
from pdbench.core.group_game import GroupGame
from pdbench.core.payoff import PayoffMatrix
from pdbench.storage.files import write_json_atomic
from pdbench.ui.launcher import Finished, discard_run, prepare, run_section
from pdbench.ui.play_launcher import GAME_ID, GAMES_FOLDER
from pdbench.ui.style import PERSONA_TEXT, UNKNOWN_STYLE, Profile, persona_profile

if TYPE_CHECKING:
    from pdbench.runners.config.loader import LoadedConfig
    from pdbench.runners.live_group import LiveGroupGame

MIN_PLAYERS, MAX_PLAYERS = 3, 6  # the group sizes the tab offers (the person included)
GAMES = {  # the games the tab offers: kind -> what the select box shows
    "public_goods": "Public goods game (contributions multiplied by r, shared by all)",
    "linear_pd": "Linear N-player Prisoner's Dilemma (pdbench's payoffs 3/0/5/1)",
    "volunteer": "Volunteer's dilemma (everyone gets b when someone volunteers)",
}
COST = 1.0  # what cooperating costs in the public goods game and the volunteer's dilemma
GROUP_AGENT_FILE = "agents/llm_group.yaml"  # the mock LLM agent with the group prompts
GROUP_PERSONAS = "prompts/group_personas"
LIVE_RUN_ID = "play_group_live"
CC_EMOJI = "🤲"  # the conditional cooperator (no pairwise policy of that name has a look)


@dataclass(frozen=True, slots=True)
class CoPlayer:
    """A co-player the tab offers: a group policy or a mock LLM persona."""

    kind: Literal["policy", "persona"]
    value: str  # group policy name, or persona name
    profile: Profile

    @property
    def key(self) -> str:
        """A stable id for widgets and kept games."""
        return f"{self.kind}:{self.value}"

    @property
    def label(self) -> str:
        """What the select box shows."""
        if self.kind == "policy":
            return f"{self.profile.emoji} {self.value} · {self.profile.description}"
        return f"💬 Mock LLM · {self.value}"

    def entry(self) -> dict[str, Any]:
        """The seat's entry in the groups config."""
        if self.kind == "policy":
            return {"type": "policy", "policy": self.value}
        return {"ref": GROUP_AGENT_FILE, "overrides": {"persona": self.value}}


def _policy_profile(name: str, description: str) -> Profile:
    """A group policy's look: the pairwise policy's of the same name when there is one."""
    pairwise = POLICY_REGISTRY.get(name)
    if pairwise is not None:
        look = pairwise.look
        return Profile(look.emoji, name, f"group policy ({look.nickname})", description, look.card)
    emoji = CC_EMOJI if name == "CC" else UNKNOWN_STYLE[0]
    return Profile(emoji, name, "group policy", description, UNKNOWN_STYLE[1])


def co_player_options(config_dir: Path) -> list[CoPlayer]:
    """Every group policy, then every group persona of the mock LLM agent (when the configs
    folder has the group agent file and its personas)."""
    from pdbench.runners.live_group import group_policies

    options = [CoPlayer("policy", name, _policy_profile(name, d)) for name, d in group_policies()]
    personas = config_dir / GROUP_PERSONAS
    if (config_dir / GROUP_AGENT_FILE).is_file() and personas.is_dir():
        for path in sorted(personas.glob("*.md")):
            profile = persona_profile(path.stem, "Mock LLM", "mock")
            if path.stem not in PERSONA_TEXT:
                profile = Profile(
                    profile.emoji, profile.title, profile.subtitle, "", profile.gradient
                )
            options.append(CoPlayer("persona", path.stem, profile))
    return options


@dataclass(frozen=True, slots=True)
class GroupPlayRequest:
    """What the tab asks for: the co-players (seats B, C, ...; the person is seat A), the
    person's name, the game (`game`: a key of GAMES; `r` the public goods multiplier, `b` the
    volunteer's benefit), its length and seed (one game, no noise, no talk)."""

    co_players: tuple[CoPlayer, ...]
    name: str
    n_rounds: int
    seed: int
    game: str = "public_goods"
    r: float = 2.0
    b: float = 2.0

    @property
    def n_players(self) -> int:
        """The group's size, the person included."""
        return 1 + len(self.co_players)

    @property
    def human_name(self) -> str:
        """The name the records give the person ('human' when none was typed)."""
        return " ".join(self.name.split())[:40] or "human"

    @property
    def condition_name(self) -> str:
        """e.g. 'human_in_public_goods_of_3'."""
        name = f"human_in_{self.game}_of_{self.n_players}"
        return re.sub(r"[^A-Za-z0-9._+-]", "-", name)

    @property
    def needs_refs(self) -> bool:
        """Whether a co-player is a ref to the group agent file (then agents/ and prompts/ are
        copied into the saved run's config folder)."""
        return any(p.kind != "policy" for p in self.co_players)

    def game_section(self) -> dict[str, Any]:
        """The config's `group_game`."""
        if self.game == "public_goods":
            return {"kind": "public_goods", "r": float(self.r), "c": COST}
        if self.game == "volunteer":
            return {"kind": "volunteer", "b": float(self.b), "c": COST}
        return {"kind": self.game}

    def stage_game(self) -> GroupGame:
        """The stage game of the group (ValueError when it cannot be built)."""
        return GroupGameConfig.model_validate(self.game_section()).build(
            self.n_players, PayoffMatrix()
        )


def payoff_rows(game: GroupGame) -> list[dict[str, Any]]:
    """The payoff table shown before a game: one row per number of others cooperating."""
    return [
        {
            "others cooperating": k,
            "you cooperate": round(game.pay_c[k], 4),
            "you defect": round(game.pay_d[k], 4),
        }
        for k in range(game.n_players)
    ]


def build_group_play(
    request: GroupPlayRequest,
    moves: Sequence[str],
    run_id: str,
    output_dir: Path,
) -> dict[str, Any]:
    """The groups config of one person's group game: seat A a `type: human` agent making
    `moves` (a string such as 'CCDC'), the co-players in seats B, C, ...; one replicate of
    `n_rounds` rounds, no noise."""
    run = run_section(run_id, request.seed, output_dir)
    run.update(store_prompts=True, store_raw_responses=True)
    human = {"type": "human", "name": request.human_name, "moves": "".join(moves)}
    seats = [human, *(p.entry() for p in request.co_players)]
    return {
        "run": run,
        "game": {"noise": 0.0},
        "horizon": {"type": "fixed", "n_rounds": int(request.n_rounds)},
        "group_game": request.game_section(),
        "groups": {
            "replicates": 1,
            "conditions": [{"name": request.condition_name, "seats": seats}],
        },
    }


def load_group_play(config: dict[str, Any], base_dir: Path, name: str) -> LoadedConfig:
    """A group game's config loaded and checked with its human seat allowed (refs resolve from
    `base_dir`); ConfigError lists every problem."""
    from pdbench.runners.config.loader import load_mapping

    return load_mapping(config, name, base_dir, kind="groups", human_seats=True)


def replay_group_play(
    request: GroupPlayRequest, config_dir: Path, moves: Sequence[str]
) -> LiveGroupGame:
    """The group game played up to now: its first len(moves) rounds, the person making `moves`,
    by the group engine a run uses (an LLM co-player's replies through the response cache);
    library errors propagate. The config's refs resolve from `config_dir`; nothing is written
    but the cache."""
    from pdbench.runners.live_group import replay_group_game

    placeholder = ["C"] * int(request.n_rounds)  # the live game gives the seat its moves so far
    output = Path(tempfile.gettempdir()) / LIVE_RUN_ID  # named in the config, never written
    config = build_group_play(request, placeholder, LIVE_RUN_ID, output)
    return replay_group_game(load_group_play(config, config_dir, "play (group)"), moves)


def save_group_play(
    request: GroupPlayRequest,
    config_dir: Path,
    root: Path,
    moves: Sequence[str],
    progress: Callable[[int, int], None] | None = None,
) -> Finished:
    """Save a finished group game as a groups run: a new `root/ui_<timestamp>/` with its
    config (`config/groups.yaml`, the agent files copied when a co-player is a mock LLM), run
    by the groups runner through the runners' front door; library errors propagate (the new
    directory is then removed)."""
    from pdbench.runners.start import RunOptions, start

    built: dict[str, Any] = {}

    def build(run_id: str, out: Path) -> dict[str, Any]:
        built.update(build_group_play(request, moves, run_id, out))
        return built

    config_path = prepare("groups", build, root, config_dir if request.needs_refs else None)
    run_dir = config_path.parent.parent
    try:
        loaded = load_group_play(built, config_path.parent, config_path.name)
        loaded.path = config_path  # the manifest names the written config
        result = start(loaded, RunOptions(output_dir=run_dir, overwrite=True, progress=progress))
    except BaseException:
        discard_run(config_path)
        raise
    return Finished("groups", run_dir, result.manifest)


# --------------------------------------------------------------------------------------------
# A game kept across a browser Refresh


@dataclass(frozen=True, slots=True)
class KeptGroupGame:
    """A group game read back by `load_group_game`: the request, the moves so far and the
    saved run's directory once the game was finished and saved."""

    request: GroupPlayRequest
    moves: list[str]
    saved: str | None


def group_game_file(data_dir: Path, game_id: str) -> Path | None:
    """Where the group game `game_id` is kept (None for an id `play_launcher.new_game_id`
    cannot have made: the id comes from the URL and must not name another file)."""
    if not GAME_ID.fullmatch(game_id):
        return None
    return data_dir / GAMES_FOLDER / f"group_{game_id}.json"


def save_group_game(
    data_dir: Path,
    game_id: str,
    request: GroupPlayRequest,
    moves: Sequence[str],
    saved: str | None = None,
) -> None:
    """Keep a group game (see `load_group_game`); written atomically."""
    path = group_game_file(data_dir, game_id)
    if path is None:
        raise ValueError(f"not a game id: {game_id!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(
        path,
        {
            "co_players": [p.key for p in request.co_players],
            "name": request.name,
            "n_rounds": request.n_rounds,
            "seed": request.seed,
            "game": request.game,
            "r": request.r,
            "b": request.b,
            "moves": list(moves),
            "saved": saved,
        },
    )


def load_group_game(data_dir: Path, game_id: str, config_dir: Path) -> KeptGroupGame | None:
    """The group game kept under `game_id`, or None when there is none (or it cannot be read,
    or a co-player is no longer offered)."""
    path = group_game_file(data_dir, game_id)
    if path is None or not path.is_file():
        return None
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        options = {o.key: o for o in co_player_options(config_dir)}
        request = GroupPlayRequest(
            co_players=tuple(options[str(k)] for k in kept["co_players"]),
            name=str(kept["name"]),
            n_rounds=int(kept["n_rounds"]),
            seed=int(kept["seed"]),
            game=str(kept["game"]),
            r=float(kept["r"]),
            b=float(kept["b"]),
        )
        moves = [str(m) for m in kept["moves"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if request.game not in GAMES or not MIN_PLAYERS <= request.n_players <= MAX_PLAYERS:
        return None
    if not set(moves) <= {"C", "D"} or len(moves) > request.n_rounds:
        return None
    saved = kept.get("saved")
    return KeptGroupGame(request, moves, str(saved) if saved else None)


def forget_group_game(data_dir: Path, game_id: str) -> None:
    """Remove a kept group game (nothing when there is none)."""
    path = group_game_file(data_dir, game_id)
    if path is not None:
        path.unlink(missing_ok=True)
