"""Does the strategy card's best strategy fit at all? A goodness-of-fit test of a fitted strategy
against a richer model, so the card can say that no strategy in the library fits (pure: the
random generator for the bootstrap is passed in).

The richer model is memory-three with a free probability of C in every history state: the state
of a round is the moves of both players in the last min(round - 1, 3) rounds, 1 + 4 + 16 + 64 = 85
states (round 1, round 2, round 3, and every later round by its last three rounds). It nests any
rule that looks at most three rounds back, played with a tremble or not (a free probability per
state absorbs the noise), and it has no tremble of its own.

The statistic is the likelihood ratio LR = 2 (log L(memory-three) - log L(strategy)), both fitted
by maximum likelihood (the strategy as in core.strategy_fit: a tremble in prescribing states,
a free P(C) per fractional state; probabilities clipped to [TREMBLE_FLOOR, 1 - TREMBLE_FLOOR] in
both likelihoods). LR is not chi-squared here: most of the 85 states are visited a few times
only (their fitted probability sits on 0 or 1), and a strategy that remembers the whole game
(GRIM) is not nested in memory-three. So its null distribution comes from a parametric
bootstrap with a fixed design: the agent's decided moves are redrawn from the fitted strategy's
own P(C) in each round, given the ACTUAL history (the states of both models do not change),
both models are refitted to the redrawn moves, and the p-value is (1 + #{LR* >= LR}) / (1 + B).
Rounds alike under both models (one history state, one strategy category: prescribes C,
prescribes D, or free state s) are exchangeable under the null and both fits depend on their
cooperation counts only, so the bootstrap draws a binomial count per such cell: its cost does
not grow with the number of rounds.
Partial likelihoods conditional on the history are the likelihoods core.strategy_fit uses; the
fixed design keeps the opponent's replies as they were, so an opponent who reacts to the agent
needs no model.

The test uses the agent's decided moves (fallback moves left out), never the soft labels from
log-probabilities: the bootstrap redraws moves, so the observed statistic must be on moves too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pdbench.core.strategy_fit import TREMBLE_FLOOR, Candidate, GameStats, run_machines

GOF_MEMORY = 3
GOF_RESAMPLES = 199
GOF_ALPHA = 0.05
MEMORY_ONE_NAME = "MEMORY_ONE"  # the memory-one family's name on the card
GOF_METHOD = (
    "likelihood ratio against memory-three with a free P(C) per history state (85 states: "
    "rounds 1-3 and the last three rounds of both players), p-value from a fixed-design "
    "parametric bootstrap under the fitted strategy (moves redrawn given the actual history, "
    "both models refitted); decided moves only (no soft labels)"
)

Game = tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]


def history_states(own: np.ndarray, opp: np.ndarray, memory: int = GOF_MEMORY) -> np.ndarray:
    """The memory-`memory` history state of every round: round t (0-based) looks at the last
    k = min(t, memory) rounds; states of k rounds are numbered after those of fewer rounds,
    each round's (own, opponent's) moves a base-4 digit, the most recent round first."""
    own_d = ~np.asarray(own, dtype=bool)[None]
    opp_d = ~np.asarray(opp, dtype=bool)[None]
    return _history_states(own_d, opp_d, memory)[0]


def _history_states(own_d: np.ndarray, opp_d: np.ndarray, memory: int = GOF_MEMORY) -> np.ndarray:
    """history_states of several games at once, from their D moves (games, rounds); games
    padded at the end (a padded round changes no earlier round's state)."""
    digit = 2 * own_d.astype(np.int64) + opp_d.astype(np.int64)  # (C,C)=0 ... (D,D)=3
    n = digit.shape[1]
    states = np.zeros(digit.shape, dtype=np.int64)
    offset = 0
    for k in range(memory + 1):
        # rounds that look k rounds back: round k alone, or every round from `memory` on
        start, stop = k, (min(k + 1, n) if k < memory else n)
        if start < stop:
            code = np.zeros((digit.shape[0], stop - start), dtype=np.int64)
            for lag in range(1, k + 1):
                code = code * 4 + digit[:, start - lag : stop - lag]
            states[:, start:stop] = offset + code
        offset += 4**k
    return states


@dataclass(frozen=True, slots=True)
class RoundDesign:
    """The decided rounds of a set of games under one strategy and the richer model."""

    moves: np.ndarray  # (T,) 1.0 = C, 0.0 = D: the agent's decided moves
    prescription: np.ndarray  # (T,) the strategy's move (1.0/0.0), NaN in its free states
    free_state: np.ndarray  # (T,) the strategy's free state, -1 in prescribing rounds
    history: np.ndarray  # (T,) memory-three history state


def round_design(games: Sequence[Game], candidate: Candidate) -> RoundDesign:
    """The design of `games` (own moves, opponent's moves, decided mask or None, P(C) unused)
    under `candidate` (a machine run on the actual history, or its prescribed moves per game;
    rounds where a prescribed-moves candidate prescribes nothing are left out)."""
    return round_designs(games, [candidate])[0]


def round_designs(
    games: Sequence[Game],
    candidates: Sequence[Candidate],
    states: Sequence[np.ndarray | None] | None = None,
) -> list[RoundDesign]:
    """round_design of each candidate, the games' histories read once: every game's rounds
    in a row of (games, longest) arrays, the padding and undecided rounds left out; the
    rounds kept in game order, then round order. `states`: per candidate, its machine's
    states on these games (games, longest) when already run (GameStats.states_of), or None."""
    if not games:
        return [RoundDesign(*(np.zeros(0, t) for t in (np.float64,) * 2 + (np.int64,) * 2))] * len(
            candidates
        )
    lengths = np.array([len(own) for own, *_ in games], dtype=np.int64)
    longest = int(lengths.max())
    own_d = np.zeros((len(games), longest), dtype=bool)
    opp_d = np.zeros((len(games), longest), dtype=bool)
    decided = np.arange(longest)[None, :] < lengths[:, None]
    for g, (own, opp, mask, _) in enumerate(games):
        own_d[g, : lengths[g]] = ~np.asarray(own, dtype=bool)
        opp_d[g, : lengths[g]] = ~np.asarray(opp, dtype=bool)
        if mask is not None:
            decided[g, : lengths[g]] = np.asarray(mask, dtype=bool)
    history = _history_states(own_d, opp_d)
    out = []
    for j, candidate in enumerate(candidates):
        keep = decided
        if candidate.machine is not None:
            probs, nexts = candidate.machine.arrays()
            s = None if states is None else states[j]
            if s is None:
                run = run_machines(nexts[None], own_d.astype(np.int64), opp_d.astype(np.int64))
                s = run[:, 0, :].T  # (games, longest)
            p = probs[s]
            fixed = (p == 0.0) | (p == 1.0)
            prescription = np.where(fixed, p, np.nan)
            free_state = np.where(fixed, -1, s)
        else:
            assert candidate.prescribed is not None
            prescription = np.full(own_d.shape, np.nan)
            for g, moves in enumerate(candidate.prescribed):
                prescription[g, : lengths[g]] = np.asarray(moves, dtype=np.float64)
            free_state = np.full(own_d.shape, -1, dtype=np.int64)
            keep = keep & ~np.isnan(prescription)
        out.append(
            RoundDesign(
                (~own_d[keep]).astype(np.float64),
                prescription[keep].astype(np.float64),
                free_state[keep].astype(np.int64),
                history[keep],
            )
        )
    return out


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.where(x > 0, x * np.log(y), 0.0)


@dataclass(frozen=True, slots=True)
class _Cells:
    """The design grouped into cells of rounds alike under both models: one history state and
    one strategy category (prescribes D, prescribes C, or free state s). Both fits and the null
    P(C) depend on the cooperations per cell only, so the bootstrap draws them binomially."""

    size: np.ndarray  # (K,) rounds per cell
    coops: np.ndarray  # (K,) observed cooperations
    prescription: np.ndarray  # (K,) 1.0 / 0.0, NaN for a free state
    to_free: np.ndarray  # (K, free states visited) 0/1
    to_history: np.ndarray  # (K, history states visited) 0/1
    history_starts: np.ndarray  # the first cell of each history state (cells in key order)


def _cells(design: RoundDesign) -> _Cells:
    category = np.where(
        np.isnan(design.prescription),
        2 + design.free_state,
        np.nan_to_num(design.prescription).astype(np.int64),
    )
    width = 2 + max(int(design.free_state.max(initial=-1)) + 1, 0)
    key = design.history * width + category
    # The cells are the keys present, in key order (a key is small: history x category);
    # each cell's cooperations summed in round order.
    counts = np.bincount(key)
    keys = np.flatnonzero(counts)
    size = counts[keys].astype(np.float64)
    coops = np.bincount(key, weights=design.moves, minlength=counts.size)[keys]
    cat = keys % width
    free_ids, free_col = np.unique(cat[cat >= 2], return_inverse=True)
    to_free = np.zeros((keys.size, free_ids.size))
    to_free[np.flatnonzero(cat >= 2), free_col] = 1.0
    history = keys // width  # non-decreasing: a history state's cells are adjacent
    hist_ids, hist_col = np.unique(history, return_inverse=True)
    to_history = np.zeros((keys.size, hist_ids.size))
    to_history[np.arange(keys.size), hist_col] = 1.0
    starts = np.flatnonzero(np.diff(history, prepend=-1))
    prescription = np.where(cat >= 2, np.nan, cat.astype(np.float64))
    return _Cells(size, coops, prescription, to_free, to_history, starts)


def _free_loglik(coops: np.ndarray, visits: np.ndarray) -> np.ndarray:
    """Log-likelihood with a free P(C) per state: coops (B, S), visits (S,)."""
    q = np.clip(coops / np.maximum(visits, 1.0), TREMBLE_FLOOR, 1.0 - TREMBLE_FLOOR)
    return (_xlogy(coops, q) + _xlogy(visits - coops, 1.0 - q)).sum(axis=1)


def _statistic(y: np.ndarray, cells: _Cells) -> tuple[np.ndarray, np.ndarray]:
    """(LR (B,), the strategy's tremble (B,)) for cooperations per cell y (B, K)."""
    pres = ~np.isnan(cells.prescription)
    n_pres = float(cells.size[pres].sum())
    if n_pres > 0:
        says_c = cells.prescription[pres] == 1.0
        mism = np.where(says_c, cells.size[pres] - y[:, pres], y[:, pres]).sum(axis=1)
        eps = np.clip(mism / n_pres, TREMBLE_FLOOR, 0.5)
        ll = _xlogy(mism, eps) + _xlogy(n_pres - mism, 1.0 - eps)
    else:
        eps = np.full(y.shape[0], np.nan)
        ll = np.zeros(y.shape[0])
    ll = ll + _free_loglik(y @ cells.to_free, cells.size @ cells.to_free)
    # y @ to_history as sums of adjacent cells: counts are whole numbers, so their sums are
    # exact in any order
    ll_rich = _free_loglik(
        np.add.reduceat(y, cells.history_starts, axis=1), cells.size @ cells.to_history
    )
    return 2.0 * (ll_rich - ll), eps


@dataclass(frozen=True, slots=True)
class GofResult:
    """The statistic, its bootstrap p-value and the number of decided moves tested."""

    statistic: float
    p_value: float
    n_moves: int


def gof_test(
    design: RoundDesign, rng: np.random.Generator, resamples: int = GOF_RESAMPLES
) -> GofResult:
    """Parametric-bootstrap likelihood-ratio test of the strategy against memory-three (see the
    module docstring). NaN p-value without decided moves."""
    n = design.moves.size
    if n == 0:
        return GofResult(float("nan"), float("nan"), 0)
    cells = _cells(design)
    observed, eps = _statistic(cells.coops[None, :], cells)
    # P(C) in every cell under the fitted strategy: 1 - tremble / tremble where it prescribes
    # C / D, the fitted frequency in its free states.
    pres = ~np.isnan(cells.prescription)
    e = float(eps[0]) if pres.any() else 0.0
    p = np.where(cells.prescription == 1.0, 1.0 - e, e)
    if (~pres).any():
        q = (cells.coops @ cells.to_free) / (cells.size @ cells.to_free)
        p = np.where(pres, p, cells.to_free @ q)
    draws = rng.binomial(cells.size.astype(np.int64), p, size=(resamples, p.size))
    simulated, _ = _statistic(draws.astype(np.float64), cells)
    # A tolerance: equal statistics (e.g. both 0 for a perfect fit) count as reaching it.
    reached = int((simulated >= observed[0] - 1e-9 * max(1.0, abs(observed[0]))).sum())
    return GofResult(float(observed[0]), (1 + reached) / (1 + resamples), n)


def moves_explained(stats: GameStats, j: int) -> float:
    """The share of decided moves candidate j predicts: in prescribing rounds the (expected)
    moves equal to its prescription, in a free state the more frequent move there. NaN without
    moves."""
    total = float(stats.moves.sum())
    if total <= 0:
        return float("nan")
    matched = float(stats.prescribing[:, j].sum() - stats.mismatches[:, j].sum())
    visits = stats.visits[:, j].sum(axis=0)
    coops = stats.coops[:, j].sum(axis=0)
    matched += float(np.maximum(coops, visits - coops)[stats.free[j]].sum())
    return matched / total


def card_verdict(rows: Sequence[dict]) -> str | None:
    """What the strategy card of one condition and agent must say in words, from its
    strategy_fit rows: None when the best named strategy fits (or the rows predate the test),
    else 'no strategy in the library fits; closest: X, which explains Y% of moves' with the
    test's p-value (and whether the free memory-one model fits)."""
    if not rows or rows[0].get("adequate") is None or rows[0]["adequate"]:
        return None
    ranked = sorted(rows, key=lambda r: r["rank"])
    tested = [r for r in ranked if r.get("gof_p_value") is not None]
    closest = next((r for r in tested if r["strategy"] != MEMORY_ONE_NAME), ranked[0])
    explained = closest.get("moves_explained")
    text = f"no strategy in the library fits; closest: {closest['strategy']}"
    if explained is not None:
        text += f", which explains {100 * explained:.0f}% of moves"
    p = closest.get("gof_p_value")
    if p is not None:
        text += f" (goodness of fit against memory-three: p = {p:.3f})"
    memory_one = next((r for r in tested if r["strategy"] == MEMORY_ONE_NAME), None)
    if memory_one is not None:
        fits = memory_one["gof_p_value"] >= GOF_ALPHA
        text += (
            "; the free memory-one model fits"
            if fits
            else "; the free memory-one model does not fit either"
        ) + f" (p = {memory_one['gof_p_value']:.3f})"
    return text + ". No share is shown: shares are conditional on the library."
