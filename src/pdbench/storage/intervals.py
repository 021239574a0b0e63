"""The intervals of a run's aggregates: the settings its manifest records, each condition's
generator (seeded from the run seed and the condition's name) and each condition's feasible
ranges (its MetricDesign, from the payoff matrix and the horizon)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from pdbench.core.metrics import BAND_RESAMPLES, MetricDesign, add_intervals
from pdbench.core.rng import derive_seed
from pdbench.core.stats import DEFAULT_RESAMPLES, LEVEL, IntervalSettings


def interval_settings(manifest: dict[str, Any]) -> IntervalSettings:
    """The interval settings a run's manifest records (the run seed when it records none)."""
    recorded = manifest.get("intervals") or {}
    return IntervalSettings(
        resamples=int(recorded.get("resamples", DEFAULT_RESAMPLES)),
        level=float(recorded.get("level", LEVEL)),
        seed=int(recorded.get("seed", manifest.get("seed") or 0)),
    )


def interval_generators(settings: IntervalSettings) -> Callable[[str], np.random.Generator]:
    """The generator of each condition's intervals: seeded from the run seed and the
    condition's name (`derive_seed(seed, "intervals", condition)`)."""

    def generator_for(condition: str) -> np.random.Generator:
        return np.random.default_rng(_seed(settings, condition))

    return generator_for


def _seed(settings: IntervalSettings, condition: str) -> int:
    return derive_seed(settings.seed, "intervals", condition)


class PredrawnGenerator(np.random.Generator):
    """A condition's generator (`interval_generators`) whose first multinomial draws were made
    ahead: each call that asks for the next draw made ahead (same n, size and probabilities)
    gets its result, and the generator moves to the state that draw left; the first call that
    asks for anything else, and every call after it, draws from that state as usual. So its
    numbers are exactly those of `np.random.default_rng` on the same seed."""

    def __init__(self, seed: int, ahead: list[tuple[int, int, np.ndarray, dict[str, Any]]]):
        super().__init__(np.random.PCG64(seed))
        self._ahead = list(ahead)  # (n, size, result, bit generator state after it)

    def multinomial(self, n: Any, pvals: Any, size: Any = None) -> np.ndarray:
        """`Generator.multinomial`, from the draws made ahead while they match."""
        if self._ahead:
            games, resamples, result, state = self._ahead.pop(0)
            if (
                isinstance(n, int)
                and n == games
                and size == resamples
                and np.array_equal(pvals, _uniform(games))
            ):
                self.bit_generator.state = state
                return result
            self._ahead = []
        return super().multinomial(n, pvals, size)


def _uniform(n: int) -> np.ndarray:
    """The probabilities `resample_weights` draws with: each of n games 1/n."""
    return np.full(n, 1.0 / n)


# Draws made ahead and not yet handed out: at most this many bytes (or one condition's, when a
# condition's alone is more), so a run of many large conditions never holds all its draws at
# once (at 1,000 games a condition, 19 MB a condition).
AHEAD_BYTES = 24 << 20


class Predrawn:
    """The resampling weights `add_intervals` draws first for each condition (`resamples`
    draws of its games, then the bands' draws), drawn in a thread started now, e.g. while
    the games play (NumPy draws without holding the GIL), in the conditions' order and at most
    `AHEAD_BYTES` ahead of the conditions handed out; `generator_for` gives each condition's
    `PredrawnGenerator`. `games`: each condition's number of games, as expected; a condition
    whose games differ, or asked for before its turn to be drawn came, simply draws as usual."""

    def __init__(self, settings: IntervalSettings, games: Mapping[str, int]) -> None:
        self.settings = settings
        self._ahead: dict[str, list[tuple[int, int, np.ndarray, dict[str, Any]]]] = {}
        # set when a condition's draws are made (or given up): a condition waits for its own
        self._ready = {condition: threading.Event() for condition in games}
        self._room = threading.Condition()  # guards _held, _sizes, _started, _taken
        self._held = 0  # bytes of the draws made and not handed out
        self._sizes: dict[str, int] = {}
        self._started: set[str] = set()  # conditions whose draws were begun
        self._taken: set[str] = set()  # conditions asked for before their draws began
        threading.Thread(
            target=self._draw, args=(dict(games),), name="pdbench-draws", daemon=True
        ).start()

    def _draw(self, games: dict[str, int]) -> None:
        sizes = (self.settings.resamples, min(BAND_RESAMPLES, self.settings.resamples))
        try:
            for condition, n in games.items():
                with self._room:
                    self._room.wait_for(
                        lambda c=condition: self._held < AHEAD_BYTES or c in self._taken
                    )
                    if condition in self._taken:  # drawn by its own generator already
                        self._ready[condition].set()
                        continue
                    self._started.add(condition)
                try:
                    rng = np.random.default_rng(_seed(self.settings, condition))
                    ahead = []
                    for size in sizes:
                        result = rng.multinomial(n, _uniform(n), size=size)
                        ahead.append((n, size, result, rng.bit_generator.state))
                    with self._room:
                        self._ahead[condition] = ahead
                        self._sizes[condition] = sum(made[2].nbytes for made in ahead)
                        self._held += self._sizes[condition]
                except (ValueError, TypeError, ZeroDivisionError):  # no games: drawn as usual
                    pass
                self._ready[condition].set()
        finally:
            for ready in self._ready.values():
                ready.set()

    def generator_for(self, condition: str) -> np.random.Generator:
        """The condition's generator: `PredrawnGenerator` with its draws made ahead (waiting
        for them if they are being made), handed over once (the memory is freed as the
        conditions' intervals are computed, making room for the next conditions' draws); asked
        for before its draws began, or asked again, a condition's generator draws as usual."""
        ready = self._ready.get(condition)
        if ready is not None:
            with self._room:
                begun = condition in self._started
                if not begun:  # the thread will skip it; nothing to wait for
                    self._taken.add(condition)
                    self._room.notify_all()
            if begun:
                ready.wait()
        with self._room:
            ahead = self._ahead.pop(condition, [])
            self._held -= self._sizes.pop(condition, 0)
            self._room.notify_all()
        return PredrawnGenerator(_seed(self.settings, condition), ahead)


def predraw_for(manifest: dict[str, Any]) -> Predrawn | None:
    """`Predrawn` for a run's manifest (its interval settings, each condition's planned games);
    None when the manifest lists no conditions' games."""
    games: dict[str, int] = {}
    try:
        for condition in manifest.get("conditions") or []:
            games[str(condition["name"])] = len(condition["games"])
        settings = interval_settings(manifest)
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    return Predrawn(settings, games) if games else None


def with_intervals(
    rows: list[dict[str, Any]],
    settings: IntervalSettings,
    designs: dict[str, MetricDesign] | None = None,
    predrawn: Predrawn | None = None,
    exact: dict[str, bool] | None = None,
) -> list[dict[str, Any]]:
    """`rows` with the interval columns of every condition row (core.metrics.add_intervals),
    clipped to each condition's feasible ranges (`designs`, by condition name); `predrawn`:
    weights drawn ahead for these settings (the same numbers, sooner); `exact`: the conditions
    the manifest records as deterministic by construction (`core.exact.recorded_exact`)."""
    found = designs or {}
    generators = (
        predrawn.generator_for
        if predrawn is not None and predrawn.settings == settings
        else interval_generators(settings)
    )
    return add_intervals(rows, settings, generators, found.get, (exact or {}).get)


def metric_designs(manifest: dict[str, Any]) -> dict[str, MetricDesign]:
    """Per condition of an experiment manifest: the payoff range of the matrix and the rounds
    its horizon allows (the bounds of its metrics); {} when the manifest does not say."""
    config = manifest.get("config") or {}
    matrix = (config.get("game") or {}).get("payoff_matrix") if isinstance(config, dict) else None
    try:
        payoffs = [float(v) for row in matrix.values() for pair in row.values() for v in pair]
    except (AttributeError, TypeError, ValueError):
        return {}
    if not payoffs:
        return {}
    out: dict[str, MetricDesign] = {}
    for condition in manifest.get("conditions") or []:
        try:
            out[str(condition["name"])] = design_of(
                min(payoffs), max(payoffs), condition.get("horizon") or {}
            )
        except (KeyError, TypeError, ValueError):
            continue
    return out


def design_of(payoff_min: float, payoff_max: float, horizon: dict[str, Any]) -> MetricDesign:
    """The MetricDesign of a condition from its payoff range and its horizon's settings."""
    if horizon.get("type") == "fixed":
        n = int(horizon["n_rounds"])
        return MetricDesign(payoff_min, payoff_max, n, n)
    most = horizon.get("max_rounds")
    return MetricDesign(payoff_min, payoff_max, 1, None if most is None else int(most))
