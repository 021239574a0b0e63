"""When a game ends: a fixed number of rounds, or a geometric horizon drawn from the game's stream."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdbench.core.rng import Purpose, counter_uniform, counter_uniform_array


@dataclass(frozen=True, slots=True)
class FixedHorizon:
    """Exactly `n_rounds` rounds."""

    n_rounds: int
    type: str = "fixed"

    def stops_after(self, round_index: int, game_seed: int) -> bool:
        """True when the game ends after the 0-based round `round_index`."""
        return round_index + 1 >= self.n_rounds

    def length(self, game_seed: int) -> int:
        """The number of rounds a game with this seed lasts."""
        return self.n_rounds

    def lengths(self, game_seeds: np.ndarray) -> np.ndarray:
        """Vectorized `length`."""
        return np.full(len(game_seeds), self.n_rounds, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class GeometricHorizon:
    """After each round the game stops with probability `stop_prob` (draw keyed by seed and round).

    `max_rounds`, when set, caps the length. The expected length without a cap is 1 / stop_prob.
    """

    stop_prob: float
    max_rounds: int | None = None
    type: str = "geometric"

    def stops_after(self, round_index: int, game_seed: int) -> bool:
        """True when the game ends after the 0-based round `round_index`."""
        if self.max_rounds is not None and round_index + 1 >= self.max_rounds:
            return True
        return counter_uniform(game_seed, round_index, Purpose.STOP) < self.stop_prob

    def length(self, game_seed: int) -> int:
        """The number of rounds a game with this seed lasts."""
        round_index = 0
        while not self.stops_after(round_index, game_seed):
            round_index += 1
        return round_index + 1

    def lengths(self, game_seeds: np.ndarray) -> np.ndarray:
        """Vectorized `length`: identical to calling `length` on each seed."""
        seeds = np.asarray(game_seeds, dtype=np.uint64)
        out = np.zeros(len(seeds), dtype=np.int64)
        alive = np.arange(len(seeds))
        round_index = 0
        chunk = 256
        while alive.size:
            rounds = np.arange(round_index, round_index + chunk, dtype=np.uint64)
            u = counter_uniform_array(seeds[alive][:, None], rounds[None, :], Purpose.STOP)
            stop = u < self.stop_prob
            if self.max_rounds is not None:
                stop |= (rounds[None, :] + 1) >= self.max_rounds
            hit = stop.any(axis=1)
            first = stop.argmax(axis=1)
            out[alive[hit]] = round_index + first[hit] + 1
            alive = alive[~hit]
            round_index += chunk
        return out


Horizon = FixedHorizon | GeometricHorizon
