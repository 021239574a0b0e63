"""The strategies `pdbench profile` fits an agent's moves to: every built-in policy with a state
machine (agents/policy.py, with its default parameters; a fractional state such as GTFT's
forgiveness or RANDOM's rate is fitted), the memory-one family (five free probabilities), and,
with `library="all"`, the Axelrod library's deterministic strategies replayed on the actual
history (the `axelrod` extra)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pdbench.agents.policy import POLICY_REGISTRY
from pdbench.core.batch import StateMachine
from pdbench.core.config import PolicyParams
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.strategy_fit import MEMORY_ONE_FREE, Candidate
from pdbench.core.strategy_gof import MEMORY_ONE_NAME

LIBRARIES = ("builtin", "all")
MEMORY_ONE = MEMORY_ONE_NAME
MEMORY_ONE_STATES = ("first", "cc", "cd", "dc", "dd")
REACTING_STATES = ("first", "after_opponent_c", "after_opponent_d")


def state_names(machine: StateMachine) -> tuple[str, ...]:
    """Readable names of a machine's states (for fitted parameters)."""
    n = len(machine.coop_prob)
    if n == 1:
        return ("every_round",)
    if n == 3 and all(row == ((1, 2), (1, 2)) for row in machine.next_state):
        return REACTING_STATES
    return tuple(f"state_{i}" for i in range(n))


def builtin_candidates(matrix: PayoffMatrix, side: int) -> list[Candidate]:
    """The built-in policies (registry order) and the memory-one family, for the agent in seat
    `side` (0 = A, 1 = B: payoff-dependent rules such as WSLS's use that seat's payoffs)."""
    seat = matrix.seen_by(side)
    out = []
    for key, cls in POLICY_REGISTRY.items():
        if cls.memory is None:
            continue
        machine = cls.machine(PolicyParams(), seat)
        out.append(Candidate(key, machine=machine, state_names=state_names(machine)))
    out.append(
        Candidate(
            MEMORY_ONE, machine=MEMORY_ONE_FREE, in_mixture=False, state_names=MEMORY_ONE_STATES
        )
    )
    return out


def axelrod_candidates(games: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[Candidate]:
    """The Axelrod library's deterministic strategies (not stochastic, not long-running, not
    reading or changing the opponent), each replayed on every game's actual history: its
    prescribed move in each round. Needs the `axelrod` extra."""
    import axelrod as axl

    C = axl.Action.C
    classifier = axl.Classifiers
    out = []
    for strategy in axl.strategies:
        player = strategy()
        if (
            classifier["stochastic"](player)
            or classifier["long_run_time"](player)
            or classifier["inspects_source"](player)
            or classifier["manipulates_source"](player)
            or classifier["manipulates_state"](player)
        ):
            continue
        prescribed = []
        try:
            for own, opp in games:
                player = strategy()
                other = axl.Player()
                moves = np.empty(len(own))
                for t in range(len(own)):
                    moves[t] = 1.0 if player.strategy(other) == C else 0.0
                    mine = C if own[t] else axl.Action.D
                    theirs = C if opp[t] else axl.Action.D
                    player.update_history(mine, theirs)
                    other.update_history(theirs, mine)
                prescribed.append(moves)
        except Exception:  # noqa: BLE001 - a strategy that cannot be replayed is left out
            continue
        out.append(Candidate(f"axelrod:{player.name}", prescribed=prescribed))
    return out
