"""Live play: a person's game against any agent, replayed by the one engine after every move.

The app's Play tab keeps the moves a person has made so far. `replay_game(config_path, moves)`
loads the game's config (an experiment with one condition, a `type: human` agent on one side and
the opponent on the other, one replicate, a fixed horizon), gives the human agent the moves made
so far, and plays that many rounds of the game with the engine, the agents told the game's full
length; an LLM opponent's calls go through a broker with the response cache, in the directory a
run uses. It returns the rounds.jsonl records of those rounds and what the opponent is shown next.

Saving the game runs the same config, with every move, through the normal runner: the opponent
has the same seed and sees the same history, and an LLM opponent's replies come from the cache,
so the saved run's rounds are the rounds the person played.

In a game with a message channel the person also types a message before each move (`messages`,
one per exchange, indexed by the round it precedes). Before they have written the next one, the
exchange before the next move is played up to their turn: the opponent's messages they may read
first (it writes first in that exchange) are `LiveGame.pending`, and with simultaneous order
there are none. Once they have written it, the whole exchange is played and `pending` holds
every message of it, theirs included, before they choose their move.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pdbench.agents.factory import AgentSpec
from pdbench.agents.llm import LLMAgent
from pdbench.agents.providers.pool import require_api_key
from pdbench.core.config import BudgetConfig, HumanAgentConfig, LLMAgentConfig
from pdbench.core.talk import speaking_groups
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action
from pdbench.errors import RunError
from pdbench.runners.config.loader import load_config
from pdbench.runners.engine.broker import Budget, CallBroker
from pdbench.runners.engine.engine import Engine, GamePlan
from pdbench.runners.science.experiment import plan_games
from pdbench.storage.cache import ResponseCache, default_cache_dir
from pdbench.storage.record.fields import side_fields
from pdbench.storage.record.jsonl import RoundsEncoder


@dataclass(frozen=True)
class LiveGame:
    """A person's game so far: the records of the rounds played and the opponent's view."""

    n_rounds: int  # the whole game's length
    human_side: int  # 0: the person is agent A, 1: agent B
    records: list[dict[str, Any]] = field(default_factory=list)  # as rounds.jsonl has them
    system_prompt: str | None = None  # an LLM opponent's system prompt
    next_prompt: str | None = None  # an LLM opponent's prompt for the next round (if any)
    # A game with a message channel: whether the person writes before the next move (and has
    # not yet), and the message entries (as rounds.jsonl has them) of that exchange so far.
    talks: bool = False
    awaiting_message: bool = False
    pending: list[dict[str, Any]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        """Whether every round has been played."""
        return len(self.records) >= self.n_rounds


def replay_game(
    config_path: Path,
    moves: Sequence[str],
    cache_dir: Path | None = None,
    use_cache: bool = True,
    messages: Sequence[str] | None = None,
) -> LiveGame:
    """Play the first `len(moves)` rounds of the one game of `config_path`, the human agent
    making `moves` and, in a game with a message channel, writing `messages` (its moves and
    messages in the file are replaced; `messages` None keeps the file's); see the module
    docstring. Raises ConfigError for a config that is not one human game, RunError when the
    opponent fails."""
    loaded = load_config(config_path, kind="experiment")
    plans = plan_games(loaded)
    humans = [i for i, s in enumerate(plans[0].agents) if isinstance(s.config, HumanAgentConfig)]
    if len(plans) != 1 or len(humans) != 1:
        raise RunError(f"{config_path}: not one game of a human agent against another agent")
    plan, side = plans[0], humans[0]
    if len(moves) > plan.n_rounds:
        raise RunError(f"{len(moves)} moves for a game of {plan.n_rounds} rounds")
    human = plan.agents[side].config
    assert isinstance(human, HumanAgentConfig)
    specs = list(plan.agents)
    update: dict[str, Any] = {"moves": [m.upper() for m in moves]}
    if messages is not None:
        update["messages"] = list(messages)
    human = human.model_copy(update=update)
    specs[side] = AgentSpec(human)
    plan.agents = (specs[0], specs[1])
    talk_next, awaiting = _talk_next(plan, side, len(moves), len(human.messages))
    for spec in plan.agents:
        if isinstance(spec.config, LLMAgentConfig):
            require_api_key(spec.config)
    run = loaded.config.run
    cache = (
        ResponseCache(Path(cache_dir or default_cache_dir()))
        if use_cache and plan.has_llm
        else None
    )
    encoder = RoundsEncoder(loaded.matrix(), store_prompts=True, store_raw=run.store_raw_responses)
    try:
        engine = Engine(
            run_id=run.run_id,
            matrix=loaded.matrix(),
            broker=CallBroker(cache, Budget(BudgetConfig()), None, 1),
            encoder=encoder,
            writer=None,
            on_result=lambda _: None,
            concurrency=1,
        )
        result, agents = engine.play_prefix(plan, len(moves), talk_next)
    finally:
        if cache is not None:
            cache.close()
    records = [orjson.loads(line) for line in result.lines.splitlines() if line.strip()]
    opponent = agents[1 - side]
    talk = {
        "talks": plan.talks,
        "awaiting_message": awaiting,
        "pending": [encoder.message_record(m, u) for m, u in result.pending],
    }
    game = LiveGame(plan.n_rounds, side, records, **talk)
    if not isinstance(opponent, LLMAgent):
        return game
    next_prompt = None
    if result.pending_obs is not None:  # a game with talk: the move prompt shows the messages
        if not awaiting:
            next_prompt = opponent.round_prompt(result.pending_obs[1 - side])
    elif not game.finished:
        transcript = Transcript(loaded.matrix())
        actions = side_fields("action")
        for record in records:
            transcript.record(Action(record[actions[0]]), Action(record[actions[1]]))
        view = plan.agents[1 - side].view(plan.horizon, plan.n_rounds)
        obs = transcript.observation(
            1 - side,
            history_window=view.history_window,
            include_totals=view.include_totals,
            horizon_type=plan.horizon.type,
            total_rounds=view.total_rounds,
            stop_prob=view.stop_prob,
        )
        next_prompt = opponent.round_prompt(obs)
    return LiveGame(plan.n_rounds, side, records, opponent.system_prompt, next_prompt, **talk)


def _talk_next(plan: GamePlan, side: int, played: int, written: int) -> tuple[int | None, bool]:
    """How many speaking groups of the exchange before the next move to play (None: the game
    has no message channel, or is over), and whether the person has still to write their
    message of that exchange (`written`: the messages they typed, one per exchange)."""
    channel = plan.communication
    if channel is None or not plan.talks or played >= plan.n_rounds:
        return None, False
    groups = speaking_groups(channel.order, played, channel.turns)
    if not channel.exchange_before(played):
        return len(groups), False  # no exchange: what the agents are shown still counts
    if written > played:
        return len(groups), False
    return next(i for i, group in enumerate(groups) if side in group), True
