"""The vectorized engine: many games between scripted policies, one NumPy step per round.

A batchable policy is a small finite-state machine per side of the game (a `StateMachine`, which
the policy builds itself: see `pdbench.agents.policy`): `coop_prob[state]` is the probability of
choosing C in a state and `next_state[state][my][opp]` the state after a round in which this
side played `my` and its opponent `opp` (0 = C, 1 = D, played moves, as the history shows them).
Every game starts in state 0. A round is then, for all games at once: draw u (counter stream,
purpose POLICY), intend C when u < coop_prob[state]; flip with the NOISE draw; look up payoffs;
move to the next state. Because every draw is a pure function of (agent seed, round, purpose),
this gives exactly the moves of the round-by-round engine with the policies' own `choose`;
`tests/unit/test_batch_engine.py` checks it for every ordered pair of built-in policies, with
noise and geometric horizons.

This module knows no policy by name: it plays whatever machines it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pdbench.core.payoff import PayoffMatrix
from pdbench.core.rng import (
    TWO_POW_53,
    Purpose,
    agent_seed_array,
    counter_bits_block,
    mix64_array,
)

N_STATES = 5  # states a machine may use (WSLS needs five: start + the four last-round outcomes)
_DRAW_BLOCK = 1 << 16  # random draws computed per chunk of rounds x games (reused buffers)
_KEY = 512  # stride of state keys in the lookup tables (see _side_tables)

Transitions = tuple[tuple[int, int], tuple[int, int]]  # [my_defected][opp_defected] -> state


@dataclass(frozen=True, slots=True)
class StateMachine:
    """One side of a batchable policy: per state, P(C) and the next state after (my, opp).

    `coop_prob[s]` in [0, 1]; `next_state[s][my_D][opp_D]` with my_D/opp_D = 1 for a played D.
    At most N_STATES states; state 0 is the first round's.
    """

    coop_prob: tuple[float, ...]
    next_state: tuple[Transitions, ...]

    def __post_init__(self) -> None:
        n = len(self.coop_prob)
        if not 1 <= n <= N_STATES or len(self.next_state) != n:
            raise ValueError(f"a state machine has 1..{N_STATES} states, one row each")
        flat = [s for row in self.next_state for pair in row for s in pair]
        if any(not 0 <= s < n for s in flat):
            raise ValueError("next_state refers to a state the machine does not have")

    @classmethod
    def constant(cls, coop_prob: float) -> StateMachine:
        """One state: C with probability `coop_prob` every round."""
        return cls((float(coop_prob),), (((0, 0), (0, 0)),))

    @classmethod
    def reacting_to_opponent(cls, first: float, after_c: float, after_d: float) -> StateMachine:
        """P(C) is `first` in round 1, then `after_c` / `after_d` after the opponent's C / D."""
        to_last = ((1, 2), (1, 2))
        return cls((first, after_c, after_d), (to_last, to_last, to_last))

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(coop_prob[N_STATES], next_state[N_STATES, 2, 2]) padded with inert states."""
        prob = np.zeros(N_STATES, dtype=np.float64)
        nxt = np.zeros((N_STATES, 2, 2), dtype=np.int64)
        nxt[:] = np.arange(N_STATES)[:, None, None]
        n = len(self.coop_prob)
        prob[:n] = self.coop_prob
        nxt[:n] = np.array(self.next_state, dtype=np.int64)
        return prob, nxt


# A batchable policy as the engine sees it: its machine on side A and on side B.
SidedMachines = tuple[StateMachine, StateMachine]


@dataclass(slots=True)
class BatchResult:
    """Moves and payoffs of a batch, games in input order.

    Arrays are (n_games, max_len); moves are booleans with True for C; entries at or after a
    game's length are False (moves) and 0.0 (payoffs).
    """

    lengths: np.ndarray
    intended_a: np.ndarray
    intended_b: np.ndarray
    played_a: np.ndarray
    played_b: np.ndarray
    payoffs_a: np.ndarray
    payoffs_b: np.ndarray

    @property
    def n_games(self) -> int:
        """Number of games."""
        return int(self.lengths.shape[0])

    def totals(self) -> tuple[np.ndarray, np.ndarray]:
        """(total payoff of A, total payoff of B) per game."""
        return self.payoffs_a.sum(axis=1), self.payoffs_b.sum(axis=1)

    def cooperations(self) -> tuple[np.ndarray, np.ndarray]:
        """(played C count of A, of B) per game."""
        return self.played_a.sum(axis=1), self.played_b.sum(axis=1)

    def game(self, index: int) -> dict[str, np.ndarray]:
        """One game's arrays cut to its length (keys: the field names)."""
        n = int(self.lengths[index])
        return {
            key: getattr(self, key)[index, :n]
            for key in (
                "intended_a",
                "intended_b",
                "played_a",
                "played_b",
                "payoffs_a",
                "payoffs_b",
            )
        }


def _side_tables(
    machines: Sequence[SidedMachines],
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Flat lookup tables of both sides, and each policy's distinct probabilities in (0, 1).

    A game side's state is kept as `key = ((side * n_policies + policy) * N_STATES + state) * 512`.
    `nxt[key + outcome]` is the next key, where the round's outcome, the two moves as uint8
    (A played C, B played C) read as one little-endian uint16, is a_c + 256 * b_c for both sides.
    Random choices use levels: with q_1 < ... < q_m the policy's probabilities strictly between
    0 and 1, a round's level is #{j: u < q_j}, and `need[key]` is the level that means C: 0 for
    probability 1, 255 for 0, and m - j + 1 for q_j (u < q_j exactly when level >= m - j + 1).
    """
    n_pol = len(machines)
    size = 2 * n_pol * N_STATES * _KEY
    need = np.full(size, 255, dtype=np.uint8)
    nxt = np.zeros(size, dtype=np.int64)
    coins: list[np.ndarray] = []
    for i, sided in enumerate(machines):
        compiled = [machine.arrays() for machine in sided]
        probs = np.concatenate([compiled[0][0], compiled[1][0]])
        q = np.unique(probs[(probs > 0) & (probs < 1)])
        coins.append(q)
        for side, (p, table) in enumerate(compiled):  # table[state, my_D, opp_D]
            if side == 1:
                table = table.transpose(0, 2, 1)  # -> [state, A_D, B_D]
            base = (side * n_pol + i) * N_STATES
            keys = (base + np.arange(N_STATES)) * _KEY
            inner = q.size - np.searchsorted(q, p)
            need[keys] = np.where(p >= 1, 0, np.where(p <= 0, 255, inner))
            for c_a in (0, 1):
                for c_b in (0, 1):
                    nxt[keys + c_a + 256 * c_b] = (base + table[:, 1 - c_a, 1 - c_b]) * _KEY
    return need, nxt, coins


def _levels(bits: np.ndarray, coins: list[np.ndarray], pids: np.ndarray) -> np.ndarray:
    """Per (round, game): #{j: u < q_j} with u from `bits` and q the game's policy's coins."""
    # u = (bits >> 11) / 2^53 < q exactly when (bits >> 11) < ceil(q * 2^53) (q * 2^53 is exact),
    # that is when bits < ceil(q * 2^53) * 2^11 (below 2^64 for q < 1): compared as integers.
    # Padding 0: a policy with fewer coins is never below it.
    width = max(c.size for c in coins)
    table = np.zeros((len(coins), width), dtype=np.uint64)
    for i, c in enumerate(coins):
        table[i, : c.size] = np.ceil(c * TWO_POW_53).astype(np.uint64) << np.uint64(11)
    level = np.zeros(bits.shape, dtype=np.uint8)
    for j in range(width):
        level += bits < table[pids, j][None, :]
    return level


def batch_arrays(
    policy_a: Sequence[int] | np.ndarray,
    policy_b: Sequence[int] | np.ndarray,
    game_seeds: Sequence[int] | np.ndarray,
    lengths: Sequence[int] | np.ndarray,
    noise: float | np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A batch's arguments checked and as arrays: the (2, n) policy indices, the seeds, the
    lengths and one noise probability per game (ValueError on mismatched lengths or a
    negative length)."""
    pids = np.stack([np.asarray(policy_a, dtype=np.int64), np.asarray(policy_b, dtype=np.int64)])
    seeds = np.asarray(game_seeds, dtype=np.uint64)
    lengths = np.asarray(lengths, dtype=np.int64)
    n = lengths.shape[0]
    if pids.shape != (2, n) or seeds.shape != (n,):
        raise ValueError("policy_a, policy_b, game_seeds and lengths must have the same length")
    if n and int(lengths.min()) < 0:
        raise ValueError("lengths must be non-negative")
    noise_arr = np.broadcast_to(np.asarray(noise, dtype=np.float64), (n,))
    return pids, seeds, lengths, noise_arr


def play_batch(
    machines: Sequence[SidedMachines],
    policy_a: np.ndarray,
    policy_b: np.ndarray,
    game_seeds: np.ndarray,
    lengths: np.ndarray,
    matrix: PayoffMatrix,
    noise: float | np.ndarray = 0.0,
) -> BatchResult:
    """Play every game of a batch; see the module docstring.

    `machines` lists the distinct policies (each as its two sides' state machines);
    `policy_a`/`policy_b` give, per game, the index into `machines` of side A and side B. `game_seeds` are the games' seeds
    (agent seeds derive from them with `agent_seed`), `lengths` their numbers of rounds (from the
    horizon), `noise` one probability or one per game.
    """
    pids, seeds, lengths, noise_arr = batch_arrays(policy_a, policy_b, game_seeds, lengths, noise)
    n = lengths.shape[0]
    need, nxt, coins = _side_tables(machines)

    # Longest games first: the games still running at round t are then a prefix of the arrays.
    # Per-game arrays are (games, 2 sides), so a round's two moves of a game are adjacent bytes.
    order = np.argsort(-lengths, kind="stable")
    sorted_len = lengths[order]
    max_len = int(sorted_len[0]) if n else 0
    alive_at = np.searchsorted(-sorted_len, -np.arange(max_len), side="left")  # lengths > t
    pids = pids[:, order]
    mixed = [mix64_array(agent_seed_array(seeds[order], side)) for side in (0, 1)]
    # A flip happens when the NOISE draw u < noise, i.e. when (bits >> 11) < ceil(noise * 2^53).
    threshold = np.ceil(noise_arr[order] * TWO_POW_53).astype(np.uint64)
    any_noise = bool(threshold.any())
    # (bits >> 11) < threshold exactly when bits < threshold * 2^11 (one pass fewer), unless a
    # threshold is 2^53 (noise 1), whose product does not fit in 64 bits.
    below = bool(n) and int(threshold.max()) < (1 << 53)
    flip_below = threshold << np.uint64(11) if below else None
    random_policy = np.array([c.size > 0 for c in coins], dtype=bool)
    random_rows = [np.flatnonzero(random_policy[pids[side]]) for side in (0, 1)]
    key = np.stack([(side * len(machines) + pids[side]) * N_STATES * _KEY for side in (0, 1)], 1)

    intended = np.zeros((max_len, n, 2), dtype=bool)
    played = np.zeros((max_len, n, 2), dtype=bool) if any_noise else intended
    block = max(1, min(max_len, _DRAW_BLOCK // max(n, 1)))
    buffers = (np.empty((block, n), dtype=np.uint64), np.empty((block, n), dtype=np.uint64))
    levels = np.zeros((block, n, 2), dtype=np.uint8)
    flips = np.zeros((block, n, 2), dtype=bool)
    for start in range(0, max_len, block):
        stop = min(max_len, start + block)
        k0 = int(alive_at[start])
        for side in (0, 1):
            rows = random_rows[side][: np.searchsorted(random_rows[side], k0)]
            if rows.size:
                bits = counter_bits_block(mixed[side][rows], start, stop, Purpose.POLICY, buffers)
                levels[: stop - start, rows, side] = _levels(bits, coins, pids[side][rows])
            if any_noise:
                bits = counter_bits_block(mixed[side][:k0], start, stop, Purpose.NOISE, buffers)
                if flip_below is None:
                    bits >>= np.uint64(11)
                    np.less(bits, threshold[None, :k0], out=flips[: stop - start, :k0, side])
                else:
                    np.less(bits, flip_below[None, :k0], out=flips[: stop - start, :k0, side])
        for t in range(start, stop):
            k = int(alive_at[t])
            current = key[:k]
            move_c = intended[t, :k]
            np.greater_equal(levels[t - start, :k], need[current], out=move_c)
            if any_noise:
                move_c = played[t, :k]
                np.bitwise_xor(intended[t, :k], flips[t - start, :k], out=move_c)
            outcome = move_c.view("<u2")[:, 0]  # a_c + 256 * b_c, added to both sides' keys
            current[:, 0] += outcome
            current[:, 1] += outcome
            np.take(nxt, current, out=current)

    # Played moves as the outcome code of the two sides (a_c + 256 * b_c) read the payoffs from
    # a table, games back in input order; entries at or after a game's length are zeroed.
    code = played.view("<u2")[:, :, 0].T  # (games, rounds), sorted order
    cells = np.zeros((257 + 1, 2), dtype=np.float64)
    for c_a, c_b, cell in (
        (1, 1, matrix.cc),
        (1, 0, matrix.cd),
        (0, 1, matrix.dc),
        (0, 0, matrix.dd),
    ):
        cells[c_a + 256 * c_b] = cell
    same_order = bool(n == 0 or sorted_len[-1] == max_len)  # equal lengths: order is the identity
    beyond = None if same_order else np.arange(max_len)[None, :] >= lengths[:, None]

    def unsort(arr: np.ndarray) -> np.ndarray:
        if same_order:
            return np.ascontiguousarray(arr)
        out = np.empty((n, max_len), dtype=arr.dtype)
        out[order] = arr
        return out

    payoffs = []
    for side in (0, 1):
        pay = unsort(cells[:, side][code])
        if beyond is not None:
            pay[beyond] = 0.0
        payoffs.append(pay)
    return BatchResult(
        lengths=lengths.copy(),
        intended_a=unsort(intended[:, :, 0].T),
        intended_b=unsort(intended[:, :, 1].T),
        played_a=unsort(played[:, :, 0].T),
        played_b=unsort(played[:, :, 1].T),
        payoffs_a=payoffs[0],
        payoffs_b=payoffs[1],
    )
