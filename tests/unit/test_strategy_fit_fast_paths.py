"""The strategy card's fast paths give the values of the plain computations they replace.

- The machines, all run at once by table lookups, are in the states a literal round-by-round
  run of each machine (its `next_state` tuples) reaches.
- game_stats' counts and (soft-label) sums equal literal per-round sums in round order, bit for
  bit: 0/1 labels are counted, soft labels summed in the order of the rounds.
- The EM computed on the (resample, game) pairs of positive weight, strategy by strategy,
  equals the EM over every pair (the straightforward form, written out here), bit for bit,
  for any number of strategies.
- The share intervals started from sfem's estimate equal those that fit it again.
- The goodness-of-fit designs built from the machine states game_stats kept equal those built
  by running the machines again.
"""

from __future__ import annotations

import numpy as np
import pytest

from pdbench.agents.strategy_library import builtin_candidates
from pdbench.core.batch import N_STATES
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.strategy_fit import (
    TREMBLE_FLOOR,
    _em,
    _mixture_data,
    _MixtureData,
    game_stats,
    run_machines,
    sfem,
    share_intervals,
)
from pdbench.core.strategy_gof import round_designs

Game = tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]


def random_games(rng: np.random.Generator, soft: bool) -> list[Game]:
    """Games of different lengths, some with fallbacks, some with P(C) per round."""
    games: list[Game] = []
    for _ in range(12):
        n = int(rng.integers(1, 40))
        own, opp = rng.random(n) < 0.6, rng.random(n) < 0.5
        decided = None if rng.random() < 0.5 else rng.random(n) < 0.85
        p = None
        if soft and rng.random() < 0.7:
            p = rng.random(n)
            p[rng.random(n) < 0.3] = np.nan
        games.append((own, opp, decided, p))
    return games


def literal_states(machine, own: np.ndarray, opp: np.ndarray) -> list[int]:  # noqa: ANN001
    state, out = 0, []
    for mine, theirs in zip(own, opp, strict=True):
        out.append(state)
        state = machine.next_state[state][int(not mine)][int(not theirs)]
    return out


def test_machines_run_at_once_reach_the_states_of_a_literal_run() -> None:
    rng = np.random.default_rng(11)
    candidates = builtin_candidates(PayoffMatrix(), 0)
    machines = [c.machine for c in candidates]
    nexts = np.stack([m.arrays()[1] for m in machines])
    own = rng.random((7, 30)) < 0.5
    opp = rng.random((7, 30)) < 0.5
    states = run_machines(nexts, (~own).astype(np.int64), (~opp).astype(np.int64))
    for row, machine in enumerate(machines):
        for g in range(7):
            want = literal_states(machine, own[g], opp[g])
            got = (states[:, row, g] - row * N_STATES).tolist()
            assert got == want, candidates[row].name


@pytest.mark.parametrize("soft", [False, True])
def test_game_stats_equal_literal_sums_in_round_order(soft: bool) -> None:
    rng = np.random.default_rng(5 + soft)
    games = random_games(rng, soft)
    candidates = builtin_candidates(PayoffMatrix(), 1)
    stats = game_stats(games, candidates)
    for j, cand in enumerate(candidates):
        probs = cand.machine.coop_prob
        for i, (own, opp, decided, p) in enumerate(games):
            mismatches = prescribing = 0.0
            visits = [0.0] * N_STATES
            coops = [0.0] * N_STATES
            for t, s in enumerate(literal_states(cand.machine, own, opp)):
                if decided is not None and not decided[t]:
                    continue
                y = float(own[t]) if p is None or np.isnan(p[t]) else float(p[t])
                if probs[s] in (0.0, 1.0):
                    prescribing += 1.0
                    mismatches += abs(y - probs[s])
                else:
                    visits[s] += 1.0
                    coops[s] += y
            assert stats.mismatches[i, j] == mismatches
            assert stats.prescribing[i, j] == prescribing
            assert stats.visits[i, j].tolist() == visits
            assert stats.coops[i, j].tolist() == coops


def em_every_pair(data, weights, phi, eps, tolerance, iterations=500):  # noqa: ANN001, ANN201
    """The EM over every (resample, game) pair, as written before the fast path."""
    previous = np.full(weights.shape[0], -np.inf)
    total = previous
    wsum = weights.sum(axis=1)
    matches = data.prescribing - data.mismatches
    for _ in range(iterations):
        ll = (
            np.log(eps)[:, None, None] * data.mismatches[None]
            + np.log1p(-eps)[:, None, None] * matches[None]
            + data.free_loglik[None]
        )
        with np.errstate(divide="ignore"):
            logp = ll + np.log(phi)[:, None, :]
        top = logp.max(axis=2, keepdims=True)
        game_ll = top[..., 0] + np.log(np.exp(logp - top).sum(axis=2))
        total = (weights * game_ll).sum(axis=1)
        resp = np.exp(logp - game_ll[..., None]) * weights[..., None]
        phi = resp.sum(axis=1) / wsum[:, None]
        num = (resp * data.mismatches[None]).sum(axis=(1, 2))
        den = (resp * data.prescribing[None]).sum(axis=(1, 2))
        with np.errstate(all="ignore"):
            eps = np.clip(np.where(den > 0, num / den, 0.5), TREMBLE_FLOOR, 0.5)
        if np.all(np.abs(total - previous) < tolerance * np.maximum(1.0, np.abs(total))):
            break
        previous = total
    return phi, eps, total


def test_em_on_weighted_pairs_equals_em_over_every_pair() -> None:
    rng = np.random.default_rng(3)
    games = random_games(rng, soft=True)
    candidates = builtin_candidates(PayoffMatrix(), 0)
    data = _mixture_data(game_stats(games, candidates), candidates)
    n, k = len(games), data.members.size
    draws = rng.multinomial(n, np.full(n, 1.0 / n), size=40).astype(np.float64)
    assert (draws == 0).any()  # some games left out of some resamples
    phi = rng.dirichlet(np.ones(k), size=40)
    phi[:5, 0] = 0.0  # a share of 0: log 0 = -inf in the E-step
    phi /= phi.sum(axis=1, keepdims=True)
    eps = rng.uniform(0.01, 0.4, 40)
    got = _em(data, draws, phi, eps, 1e-6)
    want = em_every_pair(data, draws, phi, eps, 1e-6)
    for a, b in zip(got, want, strict=True):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("rounds", [20, 1000])
@pytest.mark.parametrize("k", [1, 3, 8, 13, 130])
def test_em_equals_em_over_every_pair_for_any_number_of_strategies(k: int, rounds: int) -> None:
    # As many strategies as below, at and beyond NumPy's 8 running sums and 128-term blocks;
    # short games (strategies of like likelihood: the order of a sum shows) and long ones
    # (hundreds of mismatches: terms far below the largest, exp underflows to 0, shares die).
    rng = np.random.default_rng(40 + k + rounds)
    games = 30
    prescribing = rng.integers(rounds // 20, rounds, (games, k)).astype(np.float64)
    mismatches = np.floor(prescribing * rng.uniform(0.0, 0.6, (games, k)))
    free = -rng.uniform(0.0, rounds / 20, (games, k)) * (rng.random((games, k)) < 0.3)
    data = _MixtureData(np.arange(k), mismatches, prescribing, free)
    draws = rng.multinomial(games, np.full(games, 1.0 / games), size=25).astype(np.float64)
    phi = rng.dirichlet(np.ones(k), size=25)
    eps = rng.uniform(0.01, 0.4, 25)
    got = _em(data, draws, phi, eps, 1e-9)
    want = em_every_pair(data, draws, phi, eps, 1e-9)
    for a, b in zip(got, want, strict=True):
        assert a.tobytes() == b.tobytes()


def test_share_intervals_from_sfems_estimate_equal_those_that_fit_it_again() -> None:
    games = random_games(np.random.default_rng(12), soft=True)
    candidates = builtin_candidates(PayoffMatrix(), 1)
    stats = game_stats(games, candidates)
    again = share_intervals(stats, candidates, np.random.default_rng(4), 60)
    given = share_intervals(
        stats, candidates, np.random.default_rng(4), 60, mixture=sfem(stats, candidates)
    )
    for a, b in zip(again, given, strict=True):
        assert a.tobytes() == b.tobytes()
    assert np.isfinite(again[0]).any()


def test_designs_from_kept_machine_states_equal_designs_from_running_them() -> None:
    games = random_games(np.random.default_rng(8), soft=False)
    candidates = builtin_candidates(PayoffMatrix(), 0)
    stats = game_stats(games, candidates)
    kept = round_designs(games, candidates, [stats.states_of(j) for j in range(len(candidates))])
    for a, b in zip(kept, round_designs(games, candidates), strict=True):
        for field in ("moves", "prescription", "free_state", "history"):
            x, y = getattr(a, field), getattr(b, field)
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
