"""The back end of a resource game in the Play tab (issue 31): the person takes seat A of a public
goods game (PGG-Bench's rules, punishment optional) or of a commons (GovSim's fishery) and plays
against co-players picked from the game's policies and the mock LLM personas. With
`play_group_launcher.py`, one of the UI modules that call the runners.

The game is a pgg or commons config (one condition, one replicate, no talk) whose seat A is a
`type: human` agent holding the person's answers (`amounts`, and `punishments` in a public
goods game with punishment). A config file may not seat a person, so the config is built here
and loaded through the mapping loader with `human_seats`. After each answer the game so far is
replayed by the resource engine (`runners.live_resource.replay_resource_game`); the finished
game is written into a new run directory under the runs folder (its config beside it) and run
there by the resource runner, so the Groups tab shows it.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pdbench.ui.launcher import Finished, discard_run, prepare, run_section
from pdbench.ui.style import UNKNOWN_STYLE, Profile, persona_profile

if TYPE_CHECKING:
    from pdbench.runners.config.loader import LoadedConfig
    from pdbench.runners.live_resource import LiveResourceGame

KINDS = {"pgg": "💰 A public goods game", "commons": "🐟 A commons (fishery)"}
MIN_PLAYERS, MAX_PLAYERS = 3, 6  # the group sizes offered (the person included)
AGENT_FILES = {"pgg": "agents/llm_pgg.yaml", "commons": "agents/llm_commons.yaml"}
PERSONAS = "prompts/resource_personas"
LIVE_RUN_ID = "play_resource_live"
EMOJI = {  # the policies' looks
    "FREE_RIDER": "🦊",
    "FULL_COOPERATOR": "😇",
    "CONDITIONAL_COOPERATOR": "🤲",
    "PUNISHER": "⚖️",
    "ANTISOCIAL_PUNISHER": "😈",
    "SUSTAINABLE": "🌱",
    "GREEDY": "🦈",
    "MODERATE": "🎣",
}
Tokens = list[list[int]]  # one round's punishment: [target seat, tokens] pairs


@dataclass(frozen=True, slots=True)
class ResourceCoPlayer:
    """A co-player the tab offers: a policy of the game or a mock LLM persona."""

    kind: Literal["policy", "persona"]
    value: str
    profile: Profile

    @property
    def key(self) -> str:
        """A stable id for widgets."""
        return f"{self.kind}:{self.value}"

    @property
    def label(self) -> str:
        """What the select box shows."""
        if self.kind == "policy":
            return f"{self.profile.emoji} {self.value} · {self.profile.description}"
        return f"💬 Mock LLM · {self.value}"

    def entry(self, game: str) -> dict[str, Any]:
        """The seat's entry in the config."""
        if self.kind == "policy":
            return {"type": "policy", "policy": self.value}
        return {"ref": AGENT_FILES[game], "overrides": {"persona": self.value}}


def co_player_options(game: str, config_dir: Path) -> list[ResourceCoPlayer]:
    """Every policy of `game` ("pgg" or "commons"), then every resource persona of the mock LLM
    agent (when the configs folder has the game's agent file and the personas)."""
    from pdbench.runners.live_resource import resource_policies

    options = []
    for name, description in resource_policies(game):
        emoji = EMOJI.get(name, UNKNOWN_STYLE[0])
        profile = Profile(emoji, name, "policy", description, UNKNOWN_STYLE[1])
        options.append(ResourceCoPlayer("policy", name, profile))
    personas = config_dir / PERSONAS
    if (config_dir / AGENT_FILES[game]).is_file() and personas.is_dir():
        for path in sorted(personas.glob("*.md")):
            profile = persona_profile(path.stem, "Mock LLM", "mock")
            options.append(ResourceCoPlayer("persona", path.stem, profile))
    return options


@dataclass(frozen=True, slots=True)
class ResourcePlayRequest:
    """What the tab asks for: the game ("pgg" or "commons"), the co-players (seats B, C, ...;
    the person is seat A), the person's name, the rounds (seasons), the seed, and (pgg) whether
    there is a punishment stage. The public goods game is PGG-Bench's (`preset: pgg_bench`),
    the commons GovSim's fishery (capacity 100, collapse below 5)."""

    game: str
    co_players: tuple[ResourceCoPlayer, ...]
    name: str
    n_rounds: int
    seed: int
    punishment: bool = True

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
        """e.g. 'human_in_pgg_of_4'."""
        return re.sub(r"[^A-Za-z0-9._+-]", "-", f"human_in_{self.game}_of_{self.n_players}")

    @property
    def needs_refs(self) -> bool:
        """Whether a co-player is a mock LLM (then agents/ and prompts/ are copied)."""
        return any(p.kind != "policy" for p in self.co_players)

    def section(self, human: dict[str, Any]) -> dict[str, Any]:
        """The config's `pgg` or `commons` section, seat A being `human`."""
        seats = [human, *(p.entry(self.game) for p in self.co_players)]
        game: dict[str, Any] = (
            {"preset": "pgg_bench", "punishment": bool(self.punishment)}
            if self.game == "pgg"
            else {}
        )
        condition = {"name": self.condition_name, "seats": seats}
        return {"replicates": 1, "talk": False, "game": game, "conditions": [condition]}


def build_resource_play(
    request: ResourcePlayRequest,
    amounts: Sequence[int],
    punishments: Sequence[Tokens],
    run_id: str,
    output_dir: Path,
) -> dict[str, Any]:
    """The pgg or commons config of one person's game: seat A a `type: human` agent answering
    `amounts` (and `punishments`), the co-players in seats B, C, ...; one replicate."""
    run = run_section(run_id, request.seed, output_dir)
    run.update(store_prompts=True, store_raw_responses=True)
    human: dict[str, Any] = {
        "type": "human",
        "name": request.human_name,
        "amounts": [int(a) for a in amounts],
    }
    if punishments:
        human["punishments"] = [[[int(j), int(t)] for j, t in one] for one in punishments]
    return {
        "run": run,
        "horizon": {"type": "fixed", "n_rounds": int(request.n_rounds)},
        request.game: request.section(human),
    }


def load_resource_play(
    config: dict[str, Any], game: str, base_dir: Path, name: str
) -> LoadedConfig:
    """A resource game's config loaded and checked with its human seat allowed; ConfigError
    lists every problem."""
    from pdbench.runners.config.loader import load_mapping

    return load_mapping(config, name, base_dir, kind=game, human_seats=True)


def replay_resource_play(
    request: ResourcePlayRequest,
    config_dir: Path,
    amounts: Sequence[int],
    punishments: Sequence[Tokens] = (),
) -> LiveResourceGame:
    """The game played up to now: its first len(amounts) rounds, the person answering
    `amounts` and `punishments`, by the engine a run uses; library errors propagate. Nothing
    is written but the response cache."""
    from pdbench.runners.live_resource import replay_resource_game

    placeholder = [0] * int(request.n_rounds)  # the live game gives the seat its answers so far
    output = Path(tempfile.gettempdir()) / LIVE_RUN_ID  # named in the config, never written
    config = build_resource_play(request, placeholder, [], LIVE_RUN_ID, output)
    loaded = load_resource_play(config, request.game, config_dir, "play (resource game)")
    return replay_resource_game(loaded, amounts, punishments)


def save_resource_play(
    request: ResourcePlayRequest,
    config_dir: Path,
    root: Path,
    amounts: Sequence[int],
    punishments: Sequence[Tokens],
    progress: Callable[[int, int], None] | None = None,
) -> Finished:
    """Save a finished game as a pgg or commons run: a new `root/ui_<timestamp>/` with its
    config (`config/<kind>.yaml`, the agent files copied when a co-player is a mock LLM), run
    by the resource runner through the runners' front door; library errors propagate (the new
    directory is then removed)."""
    from pdbench.runners.start import RunOptions, start

    built: dict[str, Any] = {}

    def build(run_id: str, out: Path) -> dict[str, Any]:
        built.update(build_resource_play(request, amounts, punishments, run_id, out))
        return built

    config_dir_copy = config_dir if request.needs_refs else None
    config_path = prepare(request.game, build, root, config_dir_copy)
    run_dir = config_path.parent.parent
    try:
        loaded = load_resource_play(built, request.game, config_path.parent, config_path.name)
        loaded.path = config_path  # the manifest names the written config
        result = start(loaded, RunOptions(output_dir=run_dir, overwrite=True, progress=progress))
    except BaseException:
        discard_run(config_path)
        raise
    return Finished(request.game, run_dir, result.manifest)
