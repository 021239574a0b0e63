"""Any strategy of the Axelrod library as a pdbench agent (`axelrod:Prober`), via a small adapter.

The Axelrod library (optional extra: `uv sync --extra axelrod`) is imported only when such an
agent is built. An Axelrod player keeps its own history and reads its opponent's; the adapter
rebuilds both from pdbench's observation: before each move it appends the rounds it has not seen
yet (played moves, as the observation shows them) with `update_history(own, opponent)` on the
player and the mirror on a stand-in opponent, then calls `strategy(opponent)`. At the first round
it does what `axelrod.Match.play` does: reset, set the match attributes (length, game, noise) and
seed the player's generator from the pdbench agent seed, so stochastic strategies are reproducible.

Strategies that inspect or manipulate their opponent's source or state (cheaters) are refused:
the stand-in opponent has a history, nothing else.
"""

from __future__ import annotations

import difflib
import inspect
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from pdbench.agents.base import AgentBase
from pdbench.core.config import AXELROD_PREFIX
from pdbench.core.types import Action, Decision, Observation
from pdbench.errors import RunError

INSTALL_HINT = "install with `uv sync --extra axelrod`"
_CHEATING = ("inspects_source", "manipulates_source", "manipulates_state")


@contextmanager
def _memoized_getsource() -> Iterator[None]:
    """Memoize `inspect.getsource` of functions while axelrod is being imported.

    Axelrod 4.13 classifies every strategy at import time and calls `inspect.getsource` on the
    same few dozen methods and classes about 12,000 times, which takes tens of seconds on
    Python 3.12. A function's source depends only on its code object and a class's on the class,
    so caching by those changes no result; the original function is restored afterwards.
    """
    original = inspect.getsource
    cache: dict[Any, str] = {}

    def getsource(obj: Any) -> str:
        key = getattr(getattr(obj, "__func__", obj), "__code__", obj)
        try:
            return cache[key]
        except KeyError:
            cache[key] = original(obj)
            return cache[key]
        except TypeError:  # unhashable: not worth caching
            return original(obj)

    inspect.getsource = getsource  # type: ignore[assignment]
    try:
        yield
    finally:
        inspect.getsource = original


def import_axelrod() -> Any:
    """The axelrod module; RunError with the install command when the extra is missing."""
    try:
        if "axelrod" in sys.modules:
            import axelrod
        else:
            with _memoized_getsource(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import axelrod
    except ImportError:
        raise RunError(
            f"Axelrod strategies need the optional axelrod extra: {INSTALL_HINT}"
        ) from None
    return axelrod


def strategy_problem(strategy: str) -> str | None:
    """Why `strategy` cannot be used as a player (None when it can)."""
    try:
        strategy_class(strategy)
    except (RunError, KeyError, ValueError) as exc:
        return str(exc.args[0]) if exc.args else str(exc)
    return None


def strategy_class(strategy: str) -> type:
    """The Axelrod Player class named `strategy` (class name, or the player's display name).

    KeyError (with close matches) for an unknown name, ValueError for a cheating strategy,
    RunError when the extra is missing.
    """
    axl = import_axelrod()
    by_class = {cls.__name__: cls for cls in axl.all_strategies}
    by_name = {str(cls.name).lower(): cls for cls in axl.all_strategies}
    cls = by_class.get(strategy) or by_name.get(strategy.lower())
    if cls is None:
        lowered = {name.lower(): name for name in by_class}
        close = difflib.get_close_matches(strategy.lower(), list(lowered), n=3, cutoff=0.6)
        hint = f" (close: {', '.join(lowered[c] for c in close)})" if close else ""
        raise KeyError(f"unknown Axelrod strategy {strategy!r}{hint}")
    cheats = [key for key in _CHEATING if cls.classifier.get(key)]
    if cheats:
        raise ValueError(
            f"Axelrod strategy {strategy!r} {' and '.join(cheats)}; it cannot play through pdbench"
        )
    return cls


@cache
def _stand_in_class(axl: Any) -> type:
    class ObservedOpponent(axl.Player):
        """The opponent as an Axelrod player sees it: a name and a history."""

        name = "pdbench opponent"

        def strategy(self, opponent: Any) -> Any:
            raise RuntimeError("the stand-in opponent never moves")

    return ObservedOpponent


class AxelrodAgent(AgentBase):
    """An Axelrod strategy behind pdbench's agent interface; see the module docstring."""

    def __init__(self, strategy: str, name: str | None = None, noise: float = 0.0) -> None:
        self.axl = import_axelrod()
        self.strategy = strategy
        self.cls = strategy_class(strategy)
        self.name = name or f"{AXELROD_PREFIX}{strategy}"
        self.noise = noise
        self.seed = 0
        self._to_axl = {Action.C: self.axl.Action.C, Action.D: self.axl.Action.D}
        self._from_axl = {value: key for key, value in self._to_axl.items()}
        self._stand_in = _stand_in_class(self.axl)
        self.player: Any = None
        self.opponent: Any = None
        self._seen = 0

    def reset(self, seed: int | None = None) -> None:
        """Start a new game; the player itself is prepared at the first round."""
        self.seed = int(seed or 0)
        self.player = None
        self._seen = 0

    def _start(self, obs: Observation) -> None:
        """Fresh player and stand-in, with match attributes and a seed (like Match.play)."""
        matrix = obs.payoff_matrix
        game = self.axl.Game(
            r=matrix.reward, s=matrix.sucker, t=matrix.temptation, p=matrix.punishment
        )
        length = obs.total_rounds if obs.total_rounds is not None else float("inf")
        attributes = {"length": length, "game": game, "noise": self.noise}
        self.player = self.cls()
        self.opponent = self._stand_in()
        for player in (self.player, self.opponent):
            player.reset()
            player.set_match_attributes(**attributes)
        self.player.set_seed(self.seed % (2**32))
        self._seen = 0

    def choose(self, obs: Observation) -> Action:
        """The strategy's move after catching up with the rounds played since the last call."""
        if self.player is None or obs.round_index < self._seen:
            self._start(obs)
        missing = obs.round_index - self._seen
        if missing > len(obs.history):
            raise RunError(
                f"{self.name}: cannot rebuild the history (needs the last {missing} rounds, "
                f"the observation shows {len(obs.history)})"
            )
        for entry in obs.history[len(obs.history) - missing :]:
            mine, theirs = self._to_axl[entry.my_action], self._to_axl[entry.opp_action]
            self.player.update_history(mine, theirs)
            self.opponent.update_history(theirs, mine)
        self._seen = obs.round_index
        return self._from_axl[self.player.strategy(self.opponent)]

    async def decide(self, obs: Observation) -> Decision:
        """The move wrapped as a Decision."""
        return Decision(self.choose(obs))
