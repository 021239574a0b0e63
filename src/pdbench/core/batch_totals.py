"""Per-game totals of many policy games, without per-round records: the tournament's fast path.

A tournament needs, per match, each side's total payoff and number of C moves, not the rounds.
`play_totals` plays the same games as `pdbench.core.batch.play_batch` (same machines, same
counter-based draws: POLICY and NOISE per agent seed and round) and returns only those totals,
which lets it play both sides of a game as one joint machine:

- A game's joint key packs (pair of policies, state of A, state of B, the round's outcome) and
  a round's random input: x = level * 2 + flip per side (the level as in `play_batch`: how many
  of the policy's probabilities the POLICY draw is below; flip: the NOISE draw is below the
  game's noise), read as one small integer. One table lookup per round then gives the played
  outcome and both next states for every game at once: two NumPy calls per round in place of
  `play_batch`'s six, and no move or payoff arrays to build, transpose and reorder.
- The outcomes of every round are kept (one int64 per game and round) and counted at the end:
  C moves of A and of B, and CC rounds; CD, DC and DD follow from them and the length.
- A total is sum(count x payoff) when the payoffs are whole numbers (every partial sum is then
  exact, so it equals the sum of the round payoffs in any order); otherwise, or when the joint
  table would be large (many distinct policy pairs with many probabilities), the games are
  played by `play_batch` and summed as the engine sums them, so the totals are the same bits.

`tests/unit/test_batch_totals.py` checks the totals against `play_batch` for every ordered pair
of built-in policies, with noise and geometric horizons, and against a hand count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pdbench.core.batch import N_STATES, SidedMachines, batch_arrays, play_batch
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.rng import (
    TWO_POW_53,
    Purpose,
    agent_seed_array,
    counter_bits_block,
    mix64_array,
)

_DRAW_BLOCK = 1 << 16  # draws per chunk of rounds x games (reused buffers)
MAX_TABLE = 1 << 22  # joint-table entries above which `play_batch` plays the games instead
_EXACT = float(1 << 53)  # a whole-number total below this is exact in float64


@dataclass(frozen=True, slots=True)
class GameTotals:
    """Per game, in input order: total payoff of A and of B, C moves of A and of B."""

    score_a: np.ndarray
    score_b: np.ndarray
    coop_a: np.ndarray
    coop_b: np.ndarray


def _whole_payoffs(matrix: PayoffMatrix, max_len: int) -> bool:
    """Every payoff is a whole number and no total can reach 2**53 (then sums are exact)."""
    cells = [v for cell in (matrix.cc, matrix.cd, matrix.dc, matrix.dd) for v in cell]
    return all(float(v).is_integer() for v in cells) and max(map(abs, cells)) * max_len < _EXACT


def _from_batch(
    machines: Sequence[SidedMachines],
    pids: np.ndarray,
    seeds: np.ndarray,
    lengths: np.ndarray,
    matrix: PayoffMatrix,
    noise: np.ndarray,
) -> GameTotals:
    """The totals as the engine computes them from `play_batch`'s rounds."""
    result = play_batch(machines, pids[0], pids[1], seeds, lengths, matrix, noise)
    score_a, score_b = result.totals()
    coop_a, coop_b = result.cooperations()
    return GameTotals(score_a, score_b, coop_a.astype(np.int64), coop_b.astype(np.int64))


def _policy_tables(
    machines: Sequence[SidedMachines],
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Per policy: its distinct probabilities in (0, 1) (`coins`), and per side and state the
    level that means C (`need[policy, side, state]`: 0 for P(C) = 1, 255 for 0, m - j + 1 for
    the j-th of m coins) and the next state (`nxt[policy, side, state, my_D, opp_D]`)."""
    n_pol = len(machines)
    need = np.full((n_pol, 2, N_STATES), 255, dtype=np.int64)
    nxt = np.zeros((n_pol, 2, N_STATES, 2, 2), dtype=np.int64)
    coins: list[np.ndarray] = []
    for i, sided in enumerate(machines):
        compiled = [machine.arrays() for machine in sided]
        probs = np.concatenate([compiled[0][0], compiled[1][0]])
        q = np.unique(probs[(probs > 0) & (probs < 1)])
        coins.append(q)
        for side, (p, table) in enumerate(compiled):
            inner = q.size - np.searchsorted(q, p)
            need[i, side] = np.where(p >= 1, 0, np.where(p <= 0, 255, inner))
            nxt[i, side] = table
    return coins, need, nxt


def _joint_table(pairs: np.ndarray, need: np.ndarray, nxt: np.ndarray, bits: int) -> np.ndarray:
    """The next joint key for every (pair, state A, state B, last outcome, x_A, x_B), flat.

    A key is `(((pair * S + state_a) * S + state_b) * 4 + outcome) << (2 * bits)`, the outcome
    being A played C + 2 * (B played C); the round's input `x_A << bits | x_B` is added to it.
    """
    s, w = N_STATES, 1 << bits
    pol_a = pairs[:, 0][:, None, None, None, None, None]
    pol_b = pairs[:, 1][:, None, None, None, None, None]
    state_a = np.arange(s)[None, :, None, None, None, None]
    state_b = np.arange(s)[None, None, :, None, None, None]
    x = np.arange(w)
    x_a = x[None, None, None, None, :, None]
    x_b = x[None, None, None, None, None, :]
    c_a = ((x_a >> 1) >= need[pol_a, 0, state_a]) ^ (x_a & 1).astype(bool)
    c_b = ((x_b >> 1) >= need[pol_b, 1, state_b]) ^ (x_b & 1).astype(bool)
    d_a, d_b = (~c_a).astype(np.int64), (~c_b).astype(np.int64)
    next_a = nxt[pol_a, 0, state_a, d_a, d_b]
    next_b = nxt[pol_b, 1, state_b, d_b, d_a]
    pair = np.arange(len(pairs))[:, None, None, None, None, None]
    key = ((pair * s + next_a) * s + next_b) * 4 + c_a + 2 * c_b.astype(np.int64)
    shape = (len(pairs), s, s, 4, w, w)  # the last outcome does not change the next key
    return np.ascontiguousarray(np.broadcast_to(key << (2 * bits), shape)).ravel()


def _levels(bits: np.ndarray, thresholds: np.ndarray, dtype: type) -> np.ndarray:
    """Per (round, game): #{j: u < q_j}, u from `bits`, thresholds[game, j] = ceil(q_j 2^53) 2^11
    (0 past a policy's coins: never above a draw)."""
    level = np.zeros(bits.shape, dtype=dtype)
    for j in range(thresholds.shape[1]):
        level += bits < thresholds[None, :, j]
    return level


def play_totals(
    machines: Sequence[SidedMachines],
    policy_a: np.ndarray,
    policy_b: np.ndarray,
    game_seeds: np.ndarray,
    lengths: np.ndarray,
    matrix: PayoffMatrix,
    noise: float | np.ndarray = 0.0,
) -> GameTotals:
    """The totals of the games `play_batch` would play with the same arguments (see the module
    docstring); games in input order."""
    pids, seeds, lengths, noise_arr = batch_arrays(policy_a, policy_b, game_seeds, lengths, noise)
    n = lengths.shape[0]
    max_len = int(lengths.max()) if n else 0
    coins, need, nxt = _policy_tables(machines)
    bits = max(1, int(2 * (max((c.size for c in coins), default=0) + 1) - 1).bit_length())
    pair_code = pids[0] * len(machines) + pids[1]
    codes, pair_of_game = np.unique(pair_code, return_inverse=True)
    size = len(codes) * N_STATES * N_STATES * 4 << (2 * bits)
    if not _whole_payoffs(matrix, max_len) or size > MAX_TABLE:
        return _from_batch(machines, pids, seeds, lengths, matrix, noise_arr)
    pairs = np.stack([codes // len(machines), codes % len(machines)], axis=1)
    table = _joint_table(pairs, need, nxt, bits)

    # Longest games first: the games still running at round t are then a prefix.
    order = np.argsort(-lengths, kind="stable")
    sorted_len = lengths[order]
    alive_at = np.searchsorted(-sorted_len, -np.arange(max_len), side="left")  # lengths > t
    pids = pids[:, order]
    mixed = [mix64_array(agent_seed_array(seeds[order], side)) for side in (0, 1)]
    threshold = np.ceil(noise_arr[order] * TWO_POW_53).astype(np.uint64)
    any_noise = bool(threshold.any())
    below = bool(n) and int(threshold.max()) < (1 << 53)  # else compare (bits >> 11)
    flip_below = threshold << np.uint64(11) if below else threshold
    width = max((c.size for c in coins), default=0)
    coin_bits = np.zeros((len(coins), max(width, 1)), dtype=np.uint64)
    for i, c in enumerate(coins):
        coin_bits[i, : c.size] = np.ceil(c * TWO_POW_53).astype(np.uint64) << np.uint64(11)
    random_rows = [np.flatnonzero(np.array([c.size > 0 for c in coins])[pids[s]]) for s in (0, 1)]

    key_type = np.uint16 if size <= 1 << 16 else np.int32  # keys are below `size`
    table = table.astype(key_type)
    key = (((pair_of_game[order] * N_STATES * N_STATES) * 4) << (2 * bits)).astype(key_type)
    history = np.zeros((max_len, n), dtype=key_type)  # each round's key: 0 (DD) past the end
    block = max(1, min(max_len, _DRAW_BLOCK // max(n, 1)))
    buffers = (np.empty((block, n), dtype=np.uint64), np.empty((block, n), dtype=np.uint64))
    in_type = np.uint8 if 2 * bits <= 8 else np.uint16
    inputs = np.zeros((block, n), dtype=in_type)  # per round and game: x_A << bits | x_B
    flips = np.zeros((block, n), dtype=bool)
    step = np.empty(n, dtype=np.int64)
    take = table.take
    for start in range(0, max_len, block):
        stop = min(max_len, start + block)
        k0 = int(alive_at[start])
        rows_in = inputs[: stop - start]
        rows_in[:, :k0] = 0
        for side in (0, 1):
            shift = bits * (1 - side)  # side A's x in the high bits; the flip bit lowest
            rows = random_rows[side][: np.searchsorted(random_rows[side], k0)]
            if rows.size:
                drawn = counter_bits_block(mixed[side][rows], start, stop, Purpose.POLICY, buffers)
                level = _levels(drawn, coin_bits[pids[side][rows]], in_type)
                rows_in[:, rows] += level << in_type(shift + 1)
            if any_noise:
                drawn = counter_bits_block(mixed[side][:k0], start, stop, Purpose.NOISE, buffers)
                if not below:
                    drawn >>= np.uint64(11)
                flip = flips[: stop - start, :k0]
                np.less(drawn, flip_below[None, :k0], out=flip)
                rows_in[:, :k0] |= flip.view(np.uint8).astype(in_type) << in_type(shift)
        for t in range(start, stop):
            k = int(alive_at[t])
            np.add(key[:k], rows_in[t - start, :k], out=step[:k])
            take(step[:k], out=history[t, :k], mode="clip")
            key = history[t]

    outcome = ((history >> key_type(2 * bits)) & key_type(3)).astype(np.uint8)
    counts = [
        (outcome & 1).sum(axis=0, dtype=np.int64),
        (outcome >> 1).sum(axis=0, dtype=np.int64),
        (outcome == 3).sum(axis=0, dtype=np.int64),
    ]
    coop_a, coop_b, both = (np.empty(n, dtype=np.int64) for _ in range(3))
    for out, value in zip((coop_a, coop_b, both), counts, strict=True):
        out[order] = value
    cells = {
        "cc": both,
        "cd": coop_a - both,
        "dc": coop_b - both,
        "dd": lengths - coop_a - coop_b + both,
    }
    scores = []
    for side in (0, 1):
        total = np.zeros(n, dtype=np.float64)
        for name, count in cells.items():
            total += count * float(getattr(matrix, name)[side])
        scores.append(total)
    return GameTotals(scores[0], scores[1], coop_a, coop_b)
