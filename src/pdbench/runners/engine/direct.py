"""Games that call no provider, played synchronously: the engine's middle speed.

A game between Axelrod strategies, or between an Axelrod strategy and a policy that the
vectorized engine cannot play (or any other pair of agents without a provider), needs no event
loop: `play_direct` plays it in a plain loop, with the moves of the round-by-round engine
(`Engine.play_game`) for the same plan:

- both agents are reset with the same agent seeds, and noise flips a move where
  `counter_uniform(agent seed, round, NOISE) < noise`, drawn here for the whole game at once;
- two Axelrod strategies play each other as in `axelrod.Match` (`play_axelrod_pair`): no
  observation is built, each player reads the other's history through its stand-in;
- otherwise a transcript is kept and an agent that reads observations gets the one it would get
  round by round, while an Axelrod agent is fed each played round (`AxelrodAgent.record`).

The result is the arrays the vectorized engine gives (`played_a/b`, `intended_a/b`, True for C,
and `payoffs_a/b`), so logged games are encoded by `RoundsEncoder.write_game`, which writes the
lines `round_line` writes round by round (`timestamp_utc` aside: one per game).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from pdbench.agents.axelrod_adapter import AxelrodAgent, play_axelrod_pair
from pdbench.agents.factory import View
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.rng import Purpose, agent_seed, counter_uniform_array
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action, Observation


class Chooser(Protocol):
    """An agent that picks its move synchronously from an observation (policies, Axelrod)."""

    name: str

    def reset(self, seed: int | None = None) -> None:
        """Start a new game."""
        ...

    def choose(self, obs: Observation) -> Action:
        """The move for this observation."""
        ...


def noise_flips(seed: int, n_rounds: int, noise: float) -> np.ndarray:
    """Per round, whether noise flips the move of the agent with this seed (bool array); the
    draws of the round-by-round engine, `counter_uniform(seed, round, NOISE) < noise`."""
    if noise <= 0.0 or n_rounds == 0:
        return np.zeros(n_rounds, dtype=bool)
    rounds = np.arange(n_rounds, dtype=np.uint64)
    return counter_uniform_array(np.uint64(seed), rounds, Purpose.NOISE) < noise


def payoff_arrays(
    matrix: PayoffMatrix, played_a: np.ndarray, played_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each round's payoffs to A and to B (float64) from the played moves (True for C)."""
    cells = (matrix.cc, matrix.cd, matrix.dc, matrix.dd)  # index: 2 * a_defects + b_defects
    pair = (~played_a).astype(np.int64) * 2 + (~played_b).astype(np.int64)
    to_a = np.array([float(c[0]) for c in cells], dtype=np.float64)
    to_b = np.array([float(c[1]) for c in cells], dtype=np.float64)
    return to_a[pair], to_b[pair]


def play_direct(
    agents: tuple[Chooser, Chooser],
    views: Sequence[View],
    *,
    seed: int,
    n_rounds: int,
    noise: float,
    horizon_type: str,
    matrix: PayoffMatrix,
) -> dict[str, np.ndarray]:
    """Play one game of `n_rounds` rounds between two agents that call no provider.

    `views` are what each agent is shown (`AgentSpec.view`), `seed` the game seed. Returns
    `played_a/b`, `intended_a/b` (bool, True for C) and `payoffs_a/b` (float64).
    """
    seeds = (agent_seed(seed, 0), agent_seed(seed, 1))
    for agent, agent_s in zip(agents, seeds, strict=True):
        agent.reset(agent_s)
    flips = [noise_flips(s, n_rounds, noise) for s in seeds]
    first, second = agents
    if isinstance(first, AxelrodAgent) and isinstance(second, AxelrodAgent):
        for side, agent in enumerate((first, second)):
            agent.start(matrix.seen_by(side), views[side].total_rounds, linked=True)
        moves: Any = play_axelrod_pair(first, second, flips[0].tolist(), flips[1].tolist())
        intended_a, intended_b, played_a, played_b = (np.array(m, dtype=bool) for m in moves)
        payoffs_a, payoffs_b = payoff_arrays(matrix, played_a, played_b)
    else:
        intended_a, intended_b, played_a, played_b, payoffs_a, payoffs_b = _play_observed(
            agents, views, flips, n_rounds, horizon_type, matrix
        )
    return {
        "played_a": played_a,
        "played_b": played_b,
        "intended_a": intended_a,
        "intended_b": intended_b,
        "payoffs_a": payoffs_a,
        "payoffs_b": payoffs_b,
    }


def _play_observed(
    agents: tuple[Chooser, Chooser],
    views: Sequence[View],
    flips: Sequence[np.ndarray],
    n_rounds: int,
    horizon_type: str,
    matrix: PayoffMatrix,
) -> tuple[np.ndarray, ...]:
    """The general loop: a transcript, an observation for each agent that reads one, and each
    played round fed to the Axelrod agents."""
    transcript = Transcript(matrix)
    fed = [agent if isinstance(agent, AxelrodAgent) else None for agent in agents]
    for side, agent in enumerate(fed):
        if agent is not None:
            agent.start(matrix.seen_by(side), views[side].total_rounds)
    flip_lists = [f.tolist() for f in flips]
    intended: tuple[list[Action], list[Action]] = ([], [])
    for r in range(n_rounds):
        chosen: list[Action] = []
        for side in (0, 1):
            axelrod = fed[side]
            if axelrod is not None:
                chosen.append(axelrod.next_move())
                continue
            view = views[side]
            obs = transcript.observation(
                side,
                history_window=view.history_window,
                include_totals=view.include_totals,
                horizon_type=horizon_type,
                total_rounds=view.total_rounds,
                stop_prob=view.stop_prob,
            )
            chosen.append(agents[side].choose(obs))
        played = [a.flipped if flip_lists[s][r] else a for s, a in enumerate(chosen)]
        transcript.record(played[0], played[1])
        for side, axelrod in enumerate(fed):
            intended[side].append(chosen[side])
            if axelrod is not None:
                axelrod.record(played[side], played[1 - side])

    def as_bools(actions: list[Action]) -> np.ndarray:
        return np.array([a is Action.C for a in actions], dtype=bool)

    return (
        as_bools(intended[0]),
        as_bools(intended[1]),
        as_bools(transcript.actions_a),
        as_bools(transcript.actions_b),
        np.asarray(transcript.payoffs_a, dtype=np.float64),
        np.asarray(transcript.payoffs_b, dtype=np.float64),
    )
