"""Any strategy of the Axelrod library as a pdbench agent (`axelrod:Prober`), via a small adapter.

The Axelrod library (optional extra: `uv sync --extra axelrod`) is imported only when such an
agent is built. An Axelrod player keeps its own history and reads its opponent's; the adapter
gives it a stand-in opponent that has a history and nothing else. At the first round it does what
`axelrod.Match.play` does: reset, set the match attributes (length, game, noise) and seed the
player's generator from the pdbench agent seed, so stochastic strategies are reproducible.

Two ways to play, with the same moves:
- `choose(obs)`, for the round-by-round engine: before each move the adapter appends the rounds
  it has not seen yet (played moves, as the observation shows them) with
  `update_history(own, opponent)` on the player and the mirror on the stand-in, then calls
  `strategy(stand_in)`.
- `next_move()` / `record(mine, theirs)`, for the synchronous engine: no observation at all, one
  round fed at a time; and `play_axelrod_pair`, where both players are Axelrod strategies: each
  one's stand-in reads the other player's own history (`LinkedOpponent`), so a round costs what it
  costs in `axelrod.Match`: two `strategy` calls and two `update_history` calls.

Strategies that inspect or manipulate their opponent's source or state (cheaters) are refused:
the stand-in opponent has a history, nothing else.
"""

from __future__ import annotations

import difflib
import inspect
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

from pdbench.agents.base import AgentBase
from pdbench.core.config import AXELROD_PREFIX
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.types import Action, Decision, Observation
from pdbench.errors import RunError

INSTALL_HINT = "install with `uv sync --extra axelrod`"
_CHEATING = ("inspects_source", "manipulates_source", "manipulates_state")


# inspect.getsource results (or the OSError raised) by code object or class; see below.
_SOURCES: dict[Any, str | OSError] = {}
# inspect.signature results by callable (a Signature is immutable); see below.
_SIGNATURES: dict[Any, inspect.Signature] = {}


@contextmanager
def _memoized_inspect() -> Iterator[None]:
    """Memoize `inspect.getsource` and `inspect.signature` while axelrod is imported and while
    its players are made.

    Axelrod 4.13 classifies every strategy at import time and calls `inspect.getsource` on the
    same few dozen methods and classes about 12,000 times, which takes tens of seconds on
    Python 3.12; and a transformed strategy (FirstByTidemanAndChieruzzi, the meta players'
    teams) reclassifies itself every time it is made, reading its methods' source again (15 ms
    for one player, 150 to 400 ms for a meta player). A function's source depends only on its
    code object and a class's on the class, so caching by those (the OSError of a class made at
    run time too) changes no result. Every player made also reads the signature of its
    `__init__` (`Player.init_params`), about a sixth of the cost of making one; a signature
    depends only on the callable. The original functions are restored afterwards.
    """
    original = inspect.getsource

    def getsource(obj: Any) -> str:
        key = getattr(getattr(obj, "__func__", obj), "__code__", obj)
        try:
            found = _SOURCES[key]
        except KeyError:
            try:
                found = original(obj)
            except OSError as exc:
                found = exc
            _SOURCES[key] = found
        except TypeError:  # unhashable: not worth caching
            return original(obj)
        if isinstance(found, OSError):
            raise type(found)(*found.args)
        return found

    original_signature = inspect.signature

    def signature(obj: Any, *args: Any, **kwargs: Any) -> inspect.Signature:
        if args or kwargs:
            return original_signature(obj, *args, **kwargs)
        try:
            return _SIGNATURES[obj]
        except KeyError:
            _SIGNATURES[obj] = found = original_signature(obj)
            return found
        except TypeError:  # unhashable
            return original_signature(obj)

    inspect.getsource = getsource  # type: ignore[assignment]
    inspect.signature = signature  # type: ignore[assignment]
    try:
        yield
    finally:
        inspect.getsource = original
        inspect.signature = original_signature


def import_axelrod() -> Any:
    """The axelrod module; RunError with the install command when the extra is missing."""
    try:
        if "axelrod" in sys.modules:
            import axelrod
        else:
            with _memoized_inspect(), warnings.catch_warnings():
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
    by_class, by_name = _strategy_index(axl)
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


def is_stochastic(strategy: str) -> bool:
    """Whether an Axelrod strategy may draw (the library's `stochastic` classifier; a strategy
    the library does not classify counts as stochastic)."""
    return strategy_class(strategy).classifier.get("stochastic", True) is not False


def playable_strategies() -> list[str]:
    """Class names of every strategy in `axelrod.all_strategies` that pdbench can play (all but
    the cheaters), in the library's order."""
    axl = import_axelrod()
    return [cls.__name__ for cls in axl.all_strategies if strategy_problem(cls.__name__) is None]


@cache
def _strategy_index(axl: Any) -> tuple[dict[str, type], dict[str, type]]:
    """Strategies by class name and by lower-cased display name (built once: every game's
    agent looks its class up)."""
    by_class = {cls.__name__: cls for cls in axl.all_strategies}
    by_name = {str(cls.name).lower(): cls for cls in axl.all_strategies}
    return by_class, by_name


@cache
def _stand_in_class(axl: Any) -> type:
    class ObservedOpponent(axl.Player):
        """The opponent as an Axelrod player sees it: a name and a history."""

        name = "pdbench opponent"

        def strategy(self, opponent: Any) -> Any:
            raise RuntimeError("the stand-in opponent never moves")

    return ObservedOpponent


@cache
def _linked_class(axl: Any) -> type:
    class LinkedOpponent(_stand_in_class(axl)):  # type: ignore[misc]
        """The stand-in when the opponent is an Axelrod player too: its history is that player's
        own, read at every access (a strategy may replace its history object during its move,
        as the dual transformer does), so it needs no updates of its own."""

        target: Any = None

        @property
        def history(self) -> Any:
            return self.target._history

        @property
        def cooperations(self) -> int:
            return self.target._history.cooperations

        @property
        def defections(self) -> int:
            return self.target._history.defections

        @property
        def state_distribution(self) -> Any:
            return self.target._history.state_distribution

    return LinkedOpponent


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
        """Start a new game; the player itself is prepared at the first round (or `start`)."""
        self.seed = int(seed or 0)
        self.player = None
        self._seen = 0

    def start(self, matrix: PayoffMatrix, total_rounds: int | None, linked: bool = False) -> None:
        """Fresh player and stand-in, with match attributes and a seed (like Match.play).

        `matrix` is the game from this player's seat, `total_rounds` the length it is told (None:
        unknown); `linked`: the stand-in will read another Axelrod player's history
        (`play_axelrod_pair`) instead of keeping its own.
        """
        game = _game(self.axl, matrix.reward, matrix.sucker, matrix.temptation, matrix.punishment)
        length = total_rounds if total_rounds is not None else float("inf")
        attributes = {"length": length, "game": game, "noise": self.noise}
        with _memoized_inspect():
            self.player = self.cls()
            self.opponent = (_linked_class(self.axl) if linked else self._stand_in)()
            for player in (self.player, self.opponent):
                player.reset()
                player.set_match_attributes(**attributes)
        _seed_player(self.axl, self.player, self.seed % (2**32))
        self._seen = 0

    def choose(self, obs: Observation) -> Action:
        """The strategy's move after catching up with the rounds played since the last call."""
        if self.player is None or obs.round_index < self._seen:
            self.start(obs.payoff_matrix, obs.total_rounds)
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

    def next_move(self) -> Action:
        """The strategy's move for the next round (after `start`; rounds fed with `record`)."""
        return self._from_axl[self.player.strategy(self.opponent)]

    def record(self, mine: Action, theirs: Action) -> None:
        """Feed one played round (this player's move, the opponent's) to player and stand-in."""
        mine_axl, theirs_axl = self._to_axl[mine], self._to_axl[theirs]
        self.player.update_history(mine_axl, theirs_axl)
        self.opponent.update_history(theirs_axl, mine_axl)
        self._seen += 1

    async def decide(self, obs: Observation) -> Decision:
        """The move wrapped as a Decision."""
        return Decision(self.choose(obs))


def _seed_player(axl: Any, player: Any, seed: int) -> None:
    """`player.set_seed(seed)`, its generator made at its first use.

    Seeding a generator (a NumPy RandomState) costs more than a short match of a deterministic
    strategy, which never draws. A player whose class keeps `Player.set_seed` gets its `_seed` and
    a `_LazyRandom` that makes `RandomGenerator(seed)` (what set_seed makes) at its first use, so
    every draw is the same; a class with its own `set_seed` (meta players seed their team) is
    seeded at once.
    """
    if type(player).set_seed is not axl.Player.set_seed:
        player.set_seed(seed)
        return
    player._seed = seed
    player._random = _LazyRandom(axl, player, seed)


_LAZY_SLOTS = ("_axl", "_player", "_seed", "_generator")


class _LazyRandom:
    """A player's random generator, made (and put in the player's place) at first use."""

    def __init__(self, axl: Any, player: Any, seed: int) -> None:
        self._axl = axl
        self._player = player
        self._seed = seed
        self._generator: Any = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in _LAZY_SLOTS:  # copy/pickle probes, half-made copies
            raise AttributeError(name)
        generator = self._generator
        if generator is None:
            generator = self._generator = self._axl.RandomGenerator(seed=self._seed)
            if self._player.__dict__.get("_random") is self:
                self._player._random = generator
        return getattr(generator, name)


def _game(axl: Any, r: float, s: float, t: float, p: float) -> Any:
    """An Axelrod Game with these payoffs."""
    return axl.Game(r=r, s=s, t=t, p=p)


def play_axelrod_pair(
    agent_a: AxelrodAgent,
    agent_b: AxelrodAgent,
    flips_a: Sequence[bool],
    flips_b: Sequence[bool],
) -> tuple[list[bool], list[bool], list[bool], list[bool]]:
    """Two started Axelrod agents (`start(..., linked=True)`) play `len(flips_a)` rounds the way
    `axelrod.Match` plays them; a move is flipped where its side's `flips` is true.

    Returns the moves as True for C: intended A, intended B, played A, played B. The moves are
    those of `choose` round by round: each player sees the played moves, and its stand-in reads
    the other player's history, which holds exactly what the stand-in would have been fed.
    """
    player_a, player_b = agent_a.player, agent_b.player
    seen_by_a, seen_by_b = agent_a.opponent, agent_b.opponent
    seen_by_a.target, seen_by_b.target = player_b, player_a
    coop, defect = agent_a.axl.Action.C, agent_a.axl.Action.D
    flipped = {coop: defect, defect: coop}
    intended_a: list[Any] = []
    intended_b: list[Any] = []
    played_a: list[Any] = []
    played_b: list[Any] = []
    update_a, update_b = player_a.update_history, player_b.update_history
    for flip_a, flip_b in zip(flips_a, flips_b, strict=True):
        move_a = player_a.strategy(seen_by_a)
        move_b = player_b.strategy(seen_by_b)
        intended_a.append(move_a)
        intended_b.append(move_b)
        if flip_a:
            move_a = flipped[move_a]
        if flip_b:
            move_b = flipped[move_b]
        played_a.append(move_a)
        played_b.append(move_b)
        update_a(move_a, move_b)
        update_b(move_b, move_a)
    agent_a._seen = agent_b._seen = len(played_a)
    moves = [intended_a, intended_b, played_a, played_b]
    for moves_of_one in moves[:2]:  # what `choose` would refuse (not an Action) is refused here
        if any(m is not coop and m is not defect for m in moves_of_one):
            bad = next(m for m in moves_of_one if m is not coop and m is not defect)
            raise RunError(f"an Axelrod strategy returned {bad!r}, not an Action")
    return tuple([m is coop for m in side] for side in moves)  # type: ignore[return-value]
