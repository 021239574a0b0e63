"""The strategies `pdbench profile` fits an agent's moves to: every built-in policy with a state
machine (agents/policy.py, with its default parameters; a fractional state such as GTFT's
forgiveness or RANDOM's rate is fitted), the memory-one family (five free probabilities), and,
with `library="all"`, the Axelrod library's deterministic strategies replayed on the actual
history (the `axelrod` extra)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import cache, lru_cache
from typing import Any

import numpy as np

from pdbench.agents.policy import POLICY_REGISTRY
from pdbench.core.batch import StateMachine
from pdbench.core.config import PolicyParams
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.strategy_card import EVERY_ROUND
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
        return (EVERY_ROUND,)
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


@contextmanager
def _memoized_introspection() -> Iterator[None]:
    """While the Axelrod library is imported and its players built, remember inspect's
    getsource and signature per function or class. Every Axelrod player, when built, reads the
    source of its class and methods (to classify what it uses) and the signature of its
    __init__; Python re-reads and re-parses the module for each call, which made the import and
    the replays take tens of seconds. Both answers are fixed for a loaded function or class, so
    remembering them changes no result. The originals are restored afterwards."""
    getsource, signature = inspect.getsource, inspect.signature
    sources: dict[Any, tuple[str | None, Exception | None]] = {}
    signatures: dict[Any, inspect.Signature] = {}

    def cached_source(obj: Any) -> str:
        key = getattr(obj, "__func__", obj)
        try:
            source, error = sources[key]
        except (KeyError, TypeError):
            try:
                source, error = getsource(obj), None
            except (OSError, TypeError) as exc:
                source, error = None, exc
            with suppress(TypeError):
                sources[key] = (source, error)
        if error is not None:
            raise error
        assert source is not None
        return source

    def cached_signature(obj: Any, *args: Any, **kwargs: Any) -> inspect.Signature:
        if args or kwargs:
            return signature(obj, *args, **kwargs)
        try:
            return signatures[obj]
        except KeyError:
            found = signatures[obj] = signature(obj)
            return found
        except TypeError:
            return signature(obj)

    inspect.getsource, inspect.signature = cached_source, cached_signature  # type: ignore[assignment]
    try:
        yield
    finally:
        inspect.getsource, inspect.signature = getsource, signature  # type: ignore[assignment]


@cache
def _axelrod_players() -> tuple[Any, ...]:
    """One player of each of the Axelrod library's deterministic strategies (not stochastic,
    not long-running, not reading or changing the opponent), built once per process."""
    with _memoized_introspection():
        import axelrod as axl

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
            out.append(player)
    return tuple(out)


def axelrod_candidates(games: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[Candidate]:
    """The Axelrod library's deterministic strategies, each replayed on every game's actual
    history: its prescribed move in each round. A strategy that cannot be replayed on one of
    the games is left out. Needs the `axelrod` extra."""
    players = _axelrod_players()  # first: imports the library with introspection memoized
    replays = [
        _replay(np.asarray(own, dtype=bool).tobytes(), np.asarray(opp, dtype=bool).tobytes())
        for own, opp in games
    ]
    out = []
    for k, player in enumerate(players):
        if all(ok[k] for _, ok in replays):
            out.append(
                Candidate(f"axelrod:{player.name}", prescribed=[moves[k] for moves, _ in replays])
            )
    return out


@lru_cache(maxsize=4096)
def _replay(own: bytes, opp: bytes) -> tuple[np.ndarray, tuple[bool, ...]]:
    """Every deterministic Axelrod player's prescribed moves (players x rounds; 1.0 = C) on one
    history (own and opponent's moves as bytes of boolean arrays), and whether each could be
    replayed. Remembered per history: replicates of deterministic games repeat it. A player
    is reset before each history (as the library's own matches do) rather than built again."""
    import axelrod as axl

    C, D = axl.Action.C, axl.Action.D
    mine = [C if m else D for m in own]
    theirs = [C if m else D for m in opp]
    players = _axelrod_players()
    moves = np.zeros((len(players), len(mine)))
    ok = [True] * len(players)
    with _memoized_introspection():
        other = axl.Player()
        for k, player in enumerate(players):
            try:
                player.reset()
                other.reset()
                for t, (m, o) in enumerate(zip(mine, theirs, strict=True)):
                    moves[k, t] = 1.0 if player.strategy(other) == C else 0.0
                    player.update_history(m, o)
                    other.update_history(o, m)
            except Exception:  # noqa: BLE001 - a strategy that cannot be replayed is left out
                ok[k] = False
    moves.setflags(write=False)
    return moves, tuple(ok)
