"""Which strategy does an agent play like? Likelihoods with trembles, and the mixture shares of
the strategy-frequency estimation method (SFEM) of Dal Bo and Frechette (2011), from the moves
an agent actually made (pure: the random generator for the bootstrap is passed in).

A candidate strategy is a state machine (core.batch.StateMachine) run on the ACTUAL history of
both players, as in Dal Bo and Frechette: in every round it is in a known state. A state whose
P(C) is 0 or 1 prescribes a move, which the agent plays with probability 1 - tremble; a state
with a fractional P(C) (GTFT's forgiveness, RANDOM's rate, the memory-one family's four
probabilities and first move) is a free parameter, fitted by maximum likelihood. Candidates
given as prescribed moves per round (the Axelrod library's deterministic strategies) have only
prescribing rounds.

Observations: the agent's decided moves (fallback moves after invalid LLM replies are left out:
they are not the agent's choice). When the model's probability of C is known for a round (from
log-probabilities), it replaces the 0/1 move as a soft label y in [0, 1]: the log-likelihood of
a round with P(C) = q is y log q + (1 - y) log(1 - q), the expected log-likelihood of a move drawn
from the model's own distribution.

Fit of one strategy to a set of games (pooled): tremble = (expected) mismatches / prescribing
rounds, clipped to [TREMBLE_FLOOR, 0.5] so a perfect fit keeps a finite likelihood; a free
state's P(C) = cooperations / visits (clipped likewise in the likelihood). That is the
joint maximum likelihood (the free states' likelihood does not depend on the tremble). Ranking:
BIC = -2 log-likelihood + parameters x ln(decided moves); parameters = 1 for the tremble (when
the strategy prescribes in some state) + 1 per free state; ties go to fewer parameters, then
library order. The card's own rank (RANDOM(p) against rules with a large tremble) and the
candidates it names as indistinguishable are core/strategy_card.py's.

SFEM: each game is played by one strategy of the mixture throughout; shares phi and a tremble
common to all strategies maximise sum_games log sum_k phi_k L_k(game), by EM. In the mixture
every strategy keeps its own definition (GTFT's forgiveness and RANDOM's rate at the values of
its machine, e.g. 1/3 and 1/2), as Dal Bo and Frechette's strategies are fixed: a strategy with
free parameters would otherwise mimic the strategies it nests (GTFT with forgiveness 0 is TFT)
and their shares would not be identified. The individually fitted parameters are reported per
strategy. Shares get bootstrap intervals over games
(expanded percentile, as core/stats.py). The memory-one family nests every memory-one policy, so
it is fitted and ranked but kept out of the mixture (its share is null).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pdbench.core.batch import N_STATES, StateMachine
from pdbench.core.pairwise import sum_rows
from pdbench.core.stats import expanded_tail, wilson_interval

TREMBLE_FLOOR = 1e-3
EM_ITERATIONS = 500
EM_TOLERANCE = 1e-8  # relative change of the log-likelihood
BOOTSTRAP_TOLERANCE = 1e-6  # resamples start from the full sample's estimate
DEFAULT_BOOTSTRAP = 200


def memory_one_machine(first: float, cc: float, cd: float, dc: float, dd: float) -> StateMachine:
    """The memory-one strategy with these probabilities of C (state = own move, opponent's)."""
    to = ((1, 2), (3, 4))  # next state after (my_D, opp_D)
    return StateMachine((first, cc, cd, dc, dd), (to,) * 5)


MEMORY_ONE_FREE = memory_one_machine(0.5, 0.5, 0.5, 0.5, 0.5)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A strategy to fit: a state machine (fractional states are free parameters), or
    prescribed moves per game (1.0 = C, 0.0 = D; NaN = no prescription that round)."""

    name: str
    machine: StateMachine | None = None
    prescribed: Sequence[np.ndarray] | None = None
    in_mixture: bool = True
    state_names: tuple[str, ...] = ()  # names of the machine's states, for fitted parameters

    def parameters(self, free_probabilities: dict[int, float]) -> dict[str, float]:
        """Fitted free probabilities keyed by state name."""
        return {
            (self.state_names[s] if s < len(self.state_names) else f"state_{s}"): p
            for s, p in sorted(free_probabilities.items())
        }


@dataclass(slots=True)
class GameStats:
    """Sufficient statistics of games (rows) under candidates (columns)."""

    mismatches: np.ndarray  # (games, candidates): expected mismatches in prescribing rounds
    prescribing: np.ndarray  # (games, candidates): decided rounds in a prescribing state
    visits: np.ndarray  # (games, candidates, N_STATES): decided rounds in each free state
    coops: np.ndarray  # (games, candidates, N_STATES): (expected) cooperations there
    moves: np.ndarray  # (games,): decided rounds
    free: np.ndarray = field(default_factory=lambda: np.zeros((0, N_STATES), dtype=bool))
    # The machines as run: (rounds, machines, games) numbers 4 * (row * N_STATES + state), and
    # each machine candidate's row.
    machine_states: np.ndarray | None = None
    machine_rows: dict[int, int] = field(default_factory=dict)

    def states_of(self, j: int) -> np.ndarray | None:
        """Candidate j's machine state in every round of every game (games, longest), as run
        on the actual history; None for a candidate without a machine."""
        row = self.machine_rows.get(j)
        if row is None or self.machine_states is None:
            return None
        return ((self.machine_states[:, row, :].astype(np.int64) >> 2) - row * N_STATES).T


def _labels(
    mine: np.ndarray, decided: np.ndarray | None, p_cooperate: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """(y in [0, 1] per round, decided mask)."""
    y = np.asarray(mine, dtype=np.float64)
    if p_cooperate is not None:
        p = np.asarray(p_cooperate, dtype=np.float64)
        y = np.where(np.isnan(p), y, p)
    mask = np.ones(y.size, dtype=bool) if decided is None else np.asarray(decided, dtype=bool)
    return y, mask


def game_stats(
    games: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]],
    candidates: Sequence[Candidate],
) -> GameStats:
    """Statistics of each game under each candidate. A game is (own moves, opponent's moves,
    decided mask or None, P(C) per round or None), moves as booleans (True = C)."""
    g, k = len(games), len(candidates)
    stats = GameStats(
        np.zeros((g, k)),
        np.zeros((g, k)),
        np.zeros((g, k, N_STATES)),
        np.zeros((g, k, N_STATES)),
        np.zeros(g),
        np.zeros((k, N_STATES), dtype=bool),
    )
    machines = [(j, c.machine) for j, c in enumerate(candidates) if c.machine is not None]
    labelled = [_labels(np.asarray(mine, dtype=bool), decided, p) for mine, _, decided, p in games]
    for i, (_, mask) in enumerate(labelled):
        stats.moves[i] = mask.sum()
    if machines and g:
        _machine_stats(stats, games, labelled, machines)
    for j, cand in enumerate(candidates):
        if cand.prescribed is None:
            continue
        for i, (y, mask) in enumerate(labelled):
            pres = np.asarray(cand.prescribed[i], dtype=np.float64)
            use = mask & ~np.isnan(pres)
            stats.prescribing[i, j] = use.sum()
            stats.mismatches[i, j] = float(np.abs(y[use] - pres[use]).sum())
    return stats


def _machine_stats(
    stats: GameStats,
    games: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]],
    labelled: list[tuple[np.ndarray, np.ndarray]],
    machines: list[tuple[int, StateMachine]],
) -> None:
    """Run every machine over every game's actual history at once (games padded to the
    longest, padding masked out) and accumulate the statistics: per game, machine and state,
    the decided rounds and the sum of their labels, each summed in round order."""
    index = [j for j, _ in machines]
    probs = np.stack([m.arrays()[0] for _, m in machines])  # (M, S)
    nexts = np.stack([m.arrays()[1] for _, m in machines])  # (M, S, 2, 2)
    fixed = (probs == 0.0) | (probs == 1.0)
    for row, j in enumerate(index):
        stats.free[j] = ~fixed[row]
    g, m = len(games), len(machines)
    longest = max(len(own) for own, *_ in games)
    my_d = np.zeros((g, longest), dtype=np.int64)
    opp_d = np.zeros((g, longest), dtype=np.int64)
    y = np.zeros((g, longest))
    mask = np.zeros((g, longest), dtype=bool)
    for i, ((own, opp, _, _), (labels, decided)) in enumerate(zip(games, labelled, strict=True)):
        n = len(own)
        my_d[i, :n] = ~np.asarray(own, dtype=bool)
        opp_d[i, :n] = ~np.asarray(opp, dtype=bool)
        y[i, :n] = labels
        mask[i, :n] = decided
    states4 = _run_machines4(nexts, my_d, opp_d)  # (T, M, G): 4 * (machine * N_STATES + state)
    stats.machine_states, stats.machine_rows = states4, {j: row for row, j in enumerate(index)}
    size = g * m * N_STATES
    if np.all((y == 0.0) | (y == 1.0)):
        # 0/1 labels: counts only, exact whatever the order they are added in. One key per
        # (game, machine, state, label; 2 = not decided): 4 * (game, machine, state) + label.
        # A machine at a time, so the keys take one machine's rounds of memory.
        label = np.where(mask, y, 2.0).astype(np.int64)
        offset = label.T + (4 * m * N_STATES) * np.arange(g, dtype=np.int64)  # (T, G)
        tally = np.zeros(4 * size, dtype=np.int64)
        for row in range(m):
            tally += np.bincount((states4[:, row, :] + offset).ravel(), minlength=4 * size)
        tally = tally.reshape(g, m, N_STATES, 4)
        sums = tally[..., 1].astype(np.float64)
        counts = sums + tally[..., 0]
        says_c = fixed & (probs == 1.0)
        says_d = fixed & (probs == 0.0)
        mismatches = np.where(says_c, counts - sums, 0.0) + np.where(says_d, sums, 0.0)
        stats.mismatches[:, index] = mismatches.sum(axis=2)
    else:
        # Soft labels: one key per (game, machine, state); the decided rounds' keys in round
        # order, so that bincount sums each key's labels in round order, as a sum over rounds
        # would, and |label - prescription| summed over rounds.
        states = states4.astype(np.int64) >> 2
        keys = states + (np.arange(g, dtype=np.int64) * (m * N_STATES))
        decided = np.broadcast_to(mask.T[:, None, :], keys.shape)
        keys = keys[decided]
        counts = np.bincount(keys, minlength=size).reshape(g, m, N_STATES).astype(np.float64)
        labels = np.broadcast_to(y.T[:, None, :], states.shape)
        sums = np.bincount(keys, weights=labels[decided], minlength=size)
        sums = sums.reshape(g, m, N_STATES)
        p = probs.ravel()[states]
        weight = decided & fixed.ravel()[states]
        stats.mismatches[:, index] = (np.abs(labels - p) * weight).sum(axis=0).T
    stats.prescribing[:, index] = np.where(fixed, counts, 0.0).sum(axis=2)
    stats.visits[:, index] = np.where(fixed, 0.0, counts)
    stats.coops[:, index] = np.where(fixed, 0.0, sums)


def run_machines(nexts: np.ndarray, my_d: np.ndarray, opp_d: np.ndarray) -> np.ndarray:
    """The state of each of M machines (next states `nexts`, (M, N_STATES, 2, 2)) in every round
    of G games run on their actual history (my_d, opp_d: (G, T), 1 for a played D), as
    (T, M, G) numbers machine * N_STATES + state: one table lookup per round for all machines
    and games."""
    return _run_machines4(nexts, my_d, opp_d).astype(np.int64) >> 2


def _run_machines4(nexts: np.ndarray, my_d: np.ndarray, opp_d: np.ndarray) -> np.ndarray:
    """run_machines times 4: a round's lookup is then one addition and one take,
    table[4 * state + 2 * my_D + opp_D] = 4 * next state."""
    m = nexts.shape[0]
    g, longest = my_d.shape
    base = np.arange(m, dtype=np.int64) * N_STATES
    # int16 while the numbers fit (a few bytes a round and machine), else int64
    kind = np.int16 if 4 * m * N_STATES <= np.iinfo(np.int16).max else np.int64
    table = (4 * (nexts.reshape(m, N_STATES, 4) + base[:, None, None])).ravel().astype(kind)
    moves = np.ascontiguousarray((2 * my_d + opp_d).T).astype(kind)  # (T, G)
    states = np.empty((longest, m, g), dtype=kind)
    if longest:
        states[0] = 4 * base[:, None]
    lookup = np.empty((m, g), dtype=kind)
    for t in range(longest - 1):
        np.add(states[t], moves[t], out=lookup)
        table.take(lookup, out=states[t + 1], mode="clip")
    return states


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.where(x > 0, x * np.log(y), 0.0)


def _loglik(
    mismatches: np.ndarray,
    prescribing: np.ndarray,
    visits: np.ndarray,
    coops: np.ndarray,
    tremble: np.ndarray | float,
    q: np.ndarray,
) -> np.ndarray:
    """Log-likelihood from statistics (broadcast over leading axes); q: free-state P(C)."""
    eps = np.asarray(tremble, dtype=np.float64)
    fixed = _xlogy(mismatches, eps) + _xlogy(prescribing - mismatches, 1.0 - eps)
    qc = np.clip(q, TREMBLE_FLOOR, 1.0 - TREMBLE_FLOOR)
    free = (_xlogy(coops, qc) + _xlogy(visits - coops, 1.0 - qc)).sum(axis=-1)
    return fixed + free


@dataclass(frozen=True, slots=True)
class StrategyFit:
    """One candidate fitted alone to a set of games."""

    strategy: str
    log_likelihood: float
    tremble: float | None  # None: the strategy prescribes in no state (e.g. RANDOM)
    n_params: int
    bic: float
    free_probabilities: dict[int, float]  # state -> fitted P(C)
    rank: int = 0
    indistinguishable_from: tuple[str, ...] = ()  # filled by core.strategy_card.card_ranking


def fit_each(
    stats: GameStats, candidates: Sequence[Candidate], weights: np.ndarray | None = None
) -> list[StrategyFit]:
    """Every candidate fitted alone to the games (weighted), ranked by BIC (1 = best)."""
    w = np.ones(stats.moves.size) if weights is None else np.asarray(weights, dtype=np.float64)
    moves = float(w @ stats.moves)
    fits = []
    for j, cand in enumerate(candidates):
        mis = float(w @ stats.mismatches[:, j])
        pres = float(w @ stats.prescribing[:, j])
        visits = w @ stats.visits[:, j]
        coops = w @ stats.coops[:, j]
        free_states = stats.free[j] & (visits > 0)
        tremble = min(0.5, max(TREMBLE_FLOOR, mis / pres)) if pres > 0 else None
        q = np.where(visits > 0, coops / np.maximum(visits, 1e-300), 0.5)
        ll = float(_loglik(mis, pres, visits, coops, tremble or 0.5, q))
        n_params = (1 if tremble is not None else 0) + int(free_states.sum())
        bic = -2.0 * ll + n_params * math.log(max(moves, 1.0))
        free_p = {int(s): float(q[s]) for s in np.flatnonzero(free_states)}
        fits.append(StrategyFit(cand.name, ll, tremble, n_params, bic, free_p))
    order = sorted(range(len(fits)), key=lambda j: (round(fits[j].bic, 9), fits[j].n_params, j))
    ranked = list(fits)
    for position, j in enumerate(order, start=1):
        f = fits[j]
        ranked[j] = StrategyFit(
            f.strategy,
            f.log_likelihood,
            f.tremble,
            f.n_params,
            f.bic,
            f.free_probabilities,
            position,
        )
    return ranked


@dataclass(frozen=True, slots=True)
class Mixture:
    """The SFEM estimate: shares (in candidate order; NaN for candidates not in the mixture),
    the common tremble and the log-likelihood."""

    shares: np.ndarray
    tremble: float
    log_likelihood: float


@dataclass(frozen=True, slots=True)
class _MixtureData:
    """The mixture members' statistics; the free states' log-likelihood at each strategy's own
    probabilities does not change during EM, so it is computed once."""

    members: np.ndarray  # candidate indexes in the mixture
    mismatches: np.ndarray  # (games, k)
    prescribing: np.ndarray  # (games, k)
    free_loglik: np.ndarray  # (games, k)


def _mixture_data(stats: GameStats, candidates: Sequence[Candidate]) -> _MixtureData:
    members = np.flatnonzero([c.in_mixture for c in candidates])
    free = np.zeros((stats.moves.size, members.size))
    for j, c in enumerate(members):
        machine = candidates[c].machine
        for state in np.flatnonzero(stats.free[c]):
            if machine is None:
                continue
            q = min(1.0 - TREMBLE_FLOOR, max(TREMBLE_FLOOR, machine.coop_prob[state]))
            visits = stats.visits[:, c, state]
            coops = stats.coops[:, c, state]
            free[:, j] += _xlogy(coops, np.float64(q)) + _xlogy(visits - coops, np.float64(1 - q))
    return _MixtureData(members, stats.mismatches[:, members], stats.prescribing[:, members], free)


def _em(
    data: _MixtureData,
    weights: np.ndarray,
    phi: np.ndarray,
    eps: np.ndarray,
    tolerance: float = EM_TOLERANCE,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """EM for a batch of game weightings (B, games), from starting shares phi (B, k) and
    trembles eps (B,); returns (phi, eps, log-likelihood per batch).

    A game of weight 0 in a weighting (a resample that did not draw it) has no responsibility
    there and adds nothing to the log-likelihood: the E-step is computed for the weighted
    (batch, game) pairs only, and the M-step sums over the full (B, games, k) array with zeros
    elsewhere, so each sum adds the same terms in the same order as over every pair."""
    previous = np.full(weights.shape[0], -np.inf)
    total = previous
    wsum = weights.sum(axis=1)
    matches = data.prescribing - data.mismatches
    rows, games = np.nonzero(weights)
    k = data.members.size
    pair = rows * weights.shape[1] + games  # the pair's row in resp.reshape(-1, k)
    weight = weights.reshape(-1)[pair]
    # The pairs' terms strategy by strategy, (k, pairs): every operation below is then on
    # whole rows, and each value is the one the (pairs, k) expression gives.
    mismatches = np.ascontiguousarray(data.mismatches[games].T)
    matched = np.ascontiguousarray(matches[games].T)
    free = np.ascontiguousarray(data.free_loglik[games].T)
    # Where a pair has weight 0 its terms are 0: resp 0, and weight x log-likelihood -0.0.
    game_ll = np.full(weights.shape, -1.0)
    resp = np.zeros((*weights.shape, k))
    # Buffers written in place every iteration (fresh arrays of this size cost more to
    # allocate than to compute); each holds the value the expression names.
    logp = np.empty(mismatches.shape)  # (k, pairs)
    work = np.empty(mismatches.shape)
    top = np.empty(rows.size)
    total_exp = np.empty(rows.size)
    product = np.empty(resp.shape)
    for _ in range(EM_ITERATIONS):
        # eps stays within [TREMBLE_FLOOR, 0.5]: both logarithms are finite
        np.multiply(np.log(eps)[rows], mismatches, out=logp)
        np.multiply(np.log1p(-eps)[rows], matched, out=work)
        np.add(logp, work, out=logp)
        np.add(logp, free, out=logp)  # the log-likelihood of each pair under each strategy
        with np.errstate(divide="ignore"):
            np.add(logp, np.take(np.log(phi).T, rows, axis=1, out=work), out=logp)
        np.copyto(top, logp[0])  # each pair's largest term
        for j in range(1, k):
            np.maximum(top, logp[j], out=top)
        np.subtract(logp, top, out=work)
        # the sum over strategies in the order of work.T.sum(axis=1)
        pair_ll = top + np.log(sum_rows(np.exp(work, out=work), out=total_exp))
        game_ll.reshape(-1)[pair] = pair_ll
        total = (weights * game_ll).sum(axis=1)
        np.subtract(logp, pair_ll, out=work)
        resp.reshape(-1, k)[pair] = np.multiply(np.exp(work, out=work), weight, out=work).T
        phi = resp.sum(axis=1) / wsum[:, None]
        num = np.multiply(resp, data.mismatches[None], out=product).sum(axis=(1, 2))
        den = np.multiply(resp, data.prescribing[None], out=product).sum(axis=(1, 2))
        with np.errstate(all="ignore"):
            eps = np.clip(np.where(den > 0, num / den, 0.5), TREMBLE_FLOOR, 0.5)
        if np.all(np.abs(total - previous) < tolerance * np.maximum(1.0, np.abs(total))):
            break
        previous = total
    return phi, eps, total


def sfem(
    stats: GameStats, candidates: Sequence[Candidate], weights: np.ndarray | None = None
) -> Mixture:
    """Dal Bo-Frechette mixture by EM over the candidates with `in_mixture` (games weighted)."""
    data = _mixture_data(stats, candidates)
    shares = np.full(len(candidates), np.nan)
    if data.members.size == 0 or stats.moves.size == 0:
        return Mixture(shares, math.nan, math.nan)
    w = np.ones((1, stats.moves.size)) if weights is None else np.asarray(weights)[None, :]
    k = data.members.size
    phi, eps, total = _em(data, w, np.full((1, k), 1.0 / k), np.array([0.1]))
    shares[data.members] = phi[0]
    return Mixture(shares, float(eps[0]), float(total[0]))


def share_intervals(
    stats: GameStats,
    candidates: Sequence[Candidate],
    rng: np.random.Generator,
    resamples: int = DEFAULT_BOOTSTRAP,
    level: float = 0.95,
    mixture: Mixture | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per candidate: bootstrap over games of the SFEM shares (expanded percentile;
    NaN with fewer than 2 games or outside the mixture), widened to at least the Wilson interval
    of the share as a share of the n games: a share of games can never be known better than
    a yes/no count of them, and the bootstrap alone gives zero width when every game looks
    alike. Every resample's EM starts from the full sample's estimate (nudged off zero), all
    resamples at once; `mixture`: that estimate when already made (`sfem` of the same stats
    and candidates), else it is made here."""
    n = stats.moves.size
    k_all = len(candidates)
    data = _mixture_data(stats, candidates)
    low = np.full(k_all, np.nan)
    high = np.full(k_all, np.nan)
    if n < 2 or data.members.size == 0:
        return low, high
    k = data.members.size
    if mixture is None:
        phi0, eps0, _ = _em(data, np.ones((1, n)), np.full((1, k), 1.0 / k), np.array([0.1]))
    else:  # sfem's values as they came out of the same EM
        phi0, eps0 = mixture.shares[data.members][None, :], np.array([mixture.tremble])
    draws = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)
    start = (phi0 + 1e-3) / (1.0 + 1e-3 * k)  # a share of exactly 0 could not grow again
    phi, _, _ = _em(
        data,
        draws,
        np.repeat(start, resamples, axis=0),
        np.repeat(eps0, resamples),
        BOOTSTRAP_TOLERANCE,
    )
    tail = expanded_tail(n, level)
    boot_low, boot_high = np.percentile(phi, [100 * tail, 100 * (1 - tail)], axis=0)
    for position, member in enumerate(data.members):
        share = float(phi0[0, position])
        floor_low, floor_high = wilson_interval(share * n, n, level)
        if floor_low is None or floor_high is None:  # a NaN share: no interval (NaN)
            continue
        low[member] = min(float(boot_low[position]), floor_low)
        high[member] = max(float(boot_high[position]), floor_high)
    return low, high
