"""The vectorized engine of group games: many N-player games of policies, one NumPy step per round.

A batchable group policy is a small finite-state machine per seat (a `GroupMachine`, built by the
policy itself: see `pdbench.agents.group_policy`): `coop_prob[state]` is the probability of
choosing C in a state and `next_state[state][my_D][k]` the state after a round in which this seat
played `my_D` (1 = D, played move) and k of its co-players cooperated (played moves). Every game
starts with every seat in state 0. The game is symmetric, so one machine serves every seat.

A round, for all games at once, draws exactly as `pdbench.core.batch` does for a pair: seat i's
stream is `agent_seed(game_seed, i)`; the POLICY uniform of (stream, round) makes it intend C when
u < coop_prob[state]; the NOISE uniform flips the move when u < noise. So a two-player game with a
pairwise machine translated by `from_pairwise` plays bit for bit like `play_batch`, and a round-by-
round loop of the policies' own `choose` plays the same moves (both checked in the tests).

Memory: moves are stored as one byte per player-round (intended and, with noise, played), rounds
first; `GroupBatchResult` gives them as (games, seats, rounds) views, and computes payoffs from the
played moves only when asked (`totals()` in chunks, never the whole float array).
This module knows no policy by name: it plays whatever machines it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from pdbench.core.batch import _DRAW_BLOCK, N_STATES, StateMachine, _levels
from pdbench.core.group_game import MAX_PLAYERS, GroupGame
from pdbench.core.rng import (
    TWO_POW_53,
    Purpose,
    agent_seed_array,
    counter_bits_block,
    mix64_array,
)

# Stride of state keys in the lookup tables: a round's outcome for a seat, my_c + 2 * (number of
# cooperators in the game, the seat included), is below 2 * MAX_PLAYERS + 2 <= _KEY.
_KEY = 64
_PAYOFF_CHUNK = 1 << 18  # player-rounds per chunk when payoffs are computed from moves

GroupTransitions = tuple[tuple[int, ...], tuple[int, ...]]  # [my_D][k cooperating others] -> state


@dataclass(frozen=True, slots=True)
class GroupMachine:
    """One seat's batchable group policy: per state, P(C) and the next state after (my, k).

    `coop_prob[s]` in [0, 1]; `next_state[s][my_D][k]` with my_D = 1 for a played D and k the
    number of co-players who played C (0..n-1, so each row has n entries for a group of n).
    At most N_STATES states; state 0 is the first round's.
    """

    coop_prob: tuple[float, ...]
    next_state: tuple[GroupTransitions, ...]

    def __post_init__(self) -> None:
        n = len(self.coop_prob)
        if not 1 <= n <= N_STATES or len(self.next_state) != n:
            raise ValueError(f"a group machine has 1..{N_STATES} states, one row each (got {n})")
        if any(not 0.0 <= p <= 1.0 for p in self.coop_prob):
            raise ValueError(f"coop_prob must be in [0, 1] (got {self.coop_prob})")
        widths = {len(part) for row in self.next_state for part in row}
        if any(len(row) != 2 for row in self.next_state) or len(widths) != 1:
            raise ValueError("each next_state row is two tuples (after C, after D) of one width")
        width = widths.pop()
        if not 2 <= width <= MAX_PLAYERS:
            raise ValueError(
                f"next_state rows have one entry per k = 0..n-1, n in 2..{MAX_PLAYERS}"
            )
        if any(not 0 <= s < n for row in self.next_state for part in row for s in part):
            raise ValueError(f"next_state refers to a state the machine does not have (0..{n - 1})")

    @property
    def n_players(self) -> int:
        """The group size the machine is built for (its rows' width)."""
        return len(self.next_state[0][0])

    @classmethod
    def constant(cls, coop_prob: float, n: int) -> GroupMachine:
        """One state: C with probability `coop_prob` every round, in a group of n."""
        return cls((float(coop_prob),), (((0,) * n, (0,) * n),))

    @classmethod
    def reacting(cls, n: int, cooperate_after: Callable[[bool, int], bool]) -> GroupMachine:
        """C in round 1, then C exactly when `cooperate_after(my_cooperated, k)` held for the last
        round (state 0: C next, state 1: D next), in a group of n."""
        after_c = tuple(0 if cooperate_after(True, k) else 1 for k in range(n))
        after_d = tuple(0 if cooperate_after(False, k) else 1 for k in range(n))
        return cls((1.0, 0.0), ((after_c, after_d), (after_c, after_d)))

    def arrays(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(coop_prob[N_STATES], next_state[N_STATES, 2, n]) padded with inert states; the machine
        must be built for a group of n (ValueError otherwise)."""
        if n != self.n_players:
            raise ValueError(f"machine built for {self.n_players} players, not {n}")
        prob = np.zeros(N_STATES, dtype=np.float64)
        nxt = np.zeros((N_STATES, 2, n), dtype=np.int64)
        nxt[:] = np.arange(N_STATES)[:, None, None]
        count = len(self.coop_prob)
        prob[:count] = self.coop_prob
        nxt[:count] = np.array(self.next_state, dtype=np.int64)
        return prob, nxt


def from_pairwise(machine: StateMachine) -> GroupMachine:
    """A pairwise `StateMachine` as the group machine of N = 2 (k = 1 - opp_D)."""
    return GroupMachine(
        tuple(float(p) for p in machine.coop_prob),
        tuple(
            (
                (row[0][1], row[0][0]),  # my C: k = 0 is opp D, k = 1 is opp C
                (row[1][1], row[1][0]),
            )
            for row in machine.next_state
        ),
    )


class GroupBatchResult:
    """Moves and payoffs of a batch of group games, games in input order.

    `intended`, `played` (bool, True for C) and `payoffs` (float64) are (n_games, n_players,
    max_len); entries at or after a game's length are False / 0.0. Moves are kept one byte per
    player-round, rounds first: the properties are views when the games were already in
    non-increasing length order (copies, made once, otherwise), and `payoffs` is computed from
    the played moves on first use; `totals()` and `game(i)` never build the whole float array.
    """

    def __init__(
        self,
        lengths: np.ndarray,
        order: np.ndarray,
        intended_rounds: np.ndarray,
        played_rounds: np.ndarray,
        game: GroupGame,
    ) -> None:
        self.lengths = lengths
        self._order = order  # input index of each game in the internal (length-sorted) order
        self._position = np.empty_like(order)  # internal position of each input game
        self._position[order] = np.arange(order.shape[0])
        self._identity = bool(np.array_equal(order, np.arange(order.shape[0])))
        self._intended = intended_rounds  # (max_len, n_games, n_players), sorted order
        self._played = played_rounds
        self._sorted_len = lengths[order]
        self.group_game = game
        self._cache: dict[str, np.ndarray] = {}
        n = game.n_players
        # Payoff by outcome code my_c + 2 * cooperators (the seat included); _beyond: 0.0.
        table = np.zeros(2 * n + 3, dtype=np.float64)
        for total in range(n + 1):
            if total >= 1:
                table[1 + 2 * total] = game.pay_c[total - 1]
            if total <= n - 1:
                table[2 * total] = game.pay_d[total]
        self._pay_table = table
        self._beyond = 2 * n + 2

    @property
    def n_games(self) -> int:
        """Number of games."""
        return int(self.lengths.shape[0])

    @property
    def n_players(self) -> int:
        """Seats per game."""
        return self.group_game.n_players

    @property
    def max_len(self) -> int:
        """The longest game's number of rounds (the arrays' last axis)."""
        return int(self._intended.shape[0])

    def _input_order(self, name: str, rounds_first: np.ndarray) -> np.ndarray:
        view = rounds_first.transpose(1, 2, 0)  # (games, seats, rounds), sorted order
        if self._identity:
            return view
        if name not in self._cache:
            out = np.empty(view.shape, dtype=view.dtype)
            out[self._order] = view
            self._cache[name] = out
        return self._cache[name]

    @property
    def intended(self) -> np.ndarray:
        """Intended moves (True for C), (n_games, n_players, max_len)."""
        return self._input_order("intended", self._intended)

    @property
    def played(self) -> np.ndarray:
        """Played moves after noise (True for C), (n_games, n_players, max_len)."""
        return self._input_order("played", self._played)

    def _payoff_chunks(self) -> Iterator[tuple[slice, np.ndarray]]:
        """(sorted games, their payoffs (games, seats, rounds)) per chunk of games; the chunks
        share one buffer, so each is valid until the next is made."""
        per_chunk = max(1, _PAYOFF_CHUNK // max(1, self.max_len * self.n_players))
        buffer = np.empty((per_chunk, self.n_players, self.max_len), dtype=np.float64)
        for g0 in range(0, self.n_games, per_chunk):
            games = slice(g0, min(self.n_games, g0 + per_chunk))
            yield games, self._payoffs_of(games, buffer[: games.stop - games.start])

    def _payoffs_of(self, games: slice, out: np.ndarray | None = None) -> np.ndarray:
        """Payoffs of the sorted games `games`, (games, seats, rounds), C-contiguous."""
        # code = my_c + 2 * cooperators, or _beyond at and after a game's length
        code = np.ascontiguousarray(self._played[:, games].view(np.uint8).transpose(1, 2, 0))
        total = code[:, 0] + code[:, 1]  # (games, rounds)
        for seat in range(2, self.n_players):
            total += code[:, seat]
        total += total
        beyond = np.arange(self.max_len)[None, :] >= self._sorted_len[games][:, None]
        total[beyond] = self._beyond  # moves are False there: the code is _beyond
        code += total[:, None, :]
        return np.take(self._pay_table, code, out=out)

    @property
    def payoffs(self) -> np.ndarray:
        """Payoffs (float64), (n_games, n_players, max_len), computed once from played moves."""
        if "payoffs" not in self._cache:
            out = np.zeros((self.n_games, self.n_players, self.max_len), dtype=np.float64)
            for games, pay in self._payoff_chunks():
                out[self._order[games]] = pay
            self._cache["payoffs"] = out
        return self._cache["payoffs"]

    def totals(self) -> np.ndarray:
        """Each seat's total payoff per game, (n_games, n_players): equal to
        `payoffs.sum(axis=2)`, computed in chunks without the whole payoff array."""
        if "payoffs" in self._cache:
            return self._cache["payoffs"].sum(axis=2)
        out = np.zeros((self.n_games, self.n_players), dtype=np.float64)
        for games, pay in self._payoff_chunks():
            out[self._order[games]] = pay.sum(axis=2)
        return out

    def cooperations(self) -> np.ndarray:
        """Each seat's number of played C per game, (n_games, n_players)."""
        out = np.zeros((self.n_games, self.n_players), dtype=np.int64)
        out[self._order] = self._played.sum(axis=0, dtype=np.int64)
        return out

    def game(self, index: int) -> dict[str, np.ndarray]:
        """One game's arrays cut to its length, each (n_players, length): keys `intended`,
        `played`, `payoffs`."""
        position = int(self._position[index])
        n = int(self.lengths[index])
        return {
            "intended": self._intended[:n, position].T,
            "played": self._played[:n, position].T,
            "payoffs": self._payoffs_of(slice(position, position + 1))[0, :, :n],
        }


def _tables(
    machines: Sequence[GroupMachine], n: int
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Flat lookup tables of every machine, and each machine's distinct probabilities in (0, 1).

    A seat's state is kept as `key = (machine * N_STATES + state) * _KEY`. `nxt[key + outcome]`
    is the next key, where the round's outcome for the seat is my_c + 2 * (cooperators in the
    game, the seat included). `need[key]` is the level that means C, as in `core.batch`: with
    q_1 < ... < q_m the machine's probabilities strictly between 0 and 1, a round's level is
    #{j: u < q_j}; need is 0 for probability 1, 255 for 0 and m - j + 1 for q_j.
    """
    size = len(machines) * N_STATES * _KEY
    need = np.full(size, 255, dtype=np.uint8)
    nxt = np.zeros(size, dtype=np.int64)
    coins: list[np.ndarray] = []
    for i, machine in enumerate(machines):
        prob, table = machine.arrays(n)  # table[state, my_D, k]
        q = np.unique(prob[(prob > 0) & (prob < 1)])
        coins.append(q)
        base = i * N_STATES
        keys = (base + np.arange(N_STATES)) * _KEY
        inner = q.size - np.searchsorted(q, prob)
        need[keys] = np.where(prob >= 1, 0, np.where(prob <= 0, 255, inner))
        for my_c in (0, 1):
            for k in range(n):
                nxt[keys + my_c + 2 * (k + my_c)] = (base + table[:, 1 - my_c, k]) * _KEY
    return need, nxt, coins


def play_group_batch(
    machines: Sequence[GroupMachine],
    ids: Sequence[Sequence[int]] | np.ndarray,
    seeds: Sequence[int] | np.ndarray,
    lengths: Sequence[int] | np.ndarray,
    game: GroupGame,
    noise: float | np.ndarray = 0.0,
) -> GroupBatchResult:
    """Play every game of a batch of group games; see the module docstring.

    `machines` lists the distinct policies' machines (each built for `game.n_players`); `ids`
    (n_games, n_players) gives per game and seat the index into `machines`. `seeds` are the games'
    seeds (seat i's stream is `agent_seed(seed, i)`), `lengths` their numbers of rounds, `noise`
    one probability or one per game.
    """
    n_seats = game.n_players
    pids = np.asarray(ids, dtype=np.int64)
    seeds_arr = np.asarray(seeds, dtype=np.uint64)
    lengths_arr = np.asarray(lengths, dtype=np.int64)
    n = lengths_arr.shape[0]
    if pids.shape != (n, n_seats) or seeds_arr.shape != (n,):
        raise ValueError(
            f"ids must be (n_games, {n_seats}) and seeds (n_games,) for {n} lengths"
            f" (got {pids.shape} and {seeds_arr.shape})"
        )
    if n and (int(lengths_arr.min()) < 0):
        raise ValueError("lengths must be non-negative")
    if n and not (0 <= int(pids.min()) and int(pids.max()) < len(machines)):
        raise ValueError(f"ids must index the {len(machines)} machines (0..{len(machines) - 1})")
    noise_arr = np.broadcast_to(np.asarray(noise, dtype=np.float64), (n,))
    need, nxt, coins = _tables(machines, n_seats)

    # Longest games first: the games still running at round t are then a prefix. Per-round
    # arrays are (games, seats) flattened game-major, so a game's seats are adjacent.
    order = np.argsort(-lengths_arr, kind="stable")
    sorted_len = lengths_arr[order]
    max_len = int(sorted_len[0]) if n else 0
    alive_at = np.searchsorted(-sorted_len, -np.arange(max_len), side="left")  # lengths > t
    pid_flat = pids[order].reshape(-1)
    sorted_seeds = seeds_arr[order]
    mixed = np.empty((n, n_seats), dtype=np.uint64)  # mix64 of seat s's stream seed, per game
    for seat in range(n_seats):
        mixed[:, seat] = mix64_array(agent_seed_array(sorted_seeds, seat))
    mixed = mixed.reshape(-1)
    # A flip happens when the NOISE draw u < noise, i.e. when (bits >> 11) < ceil(noise * 2^53),
    # compared as bits < threshold * 2^11 unless a threshold is 2^53 (noise 1, no room).
    threshold = np.ceil(noise_arr[order] * TWO_POW_53).astype(np.uint64)[None, :, None]
    any_noise = bool(threshold.any())
    below = bool(n) and int(threshold.max()) < (1 << 53)
    flip_below = threshold << np.uint64(11) if below else None
    random_policy = np.array([c.size > 0 for c in coins], dtype=bool)
    random_rows = np.flatnonzero(random_policy[pid_flat]) if n else np.zeros(0, np.int64)
    key = (pid_flat * N_STATES * _KEY).reshape(n, n_seats)

    intended = np.zeros((max_len, n, n_seats), dtype=bool)
    played = np.zeros((max_len, n, n_seats), dtype=bool) if any_noise else intended
    width = n * n_seats
    block = max(1, min(max_len, _DRAW_BLOCK // max(width, 1)))
    buffers = (np.empty((block, width), dtype=np.uint64), np.empty((block, width), dtype=np.uint64))
    levels = np.zeros((block, n, n_seats), dtype=np.uint8)
    flips = np.zeros((block, n, n_seats), dtype=bool)
    levels_flat = levels.reshape(block, width)
    need_now = np.empty((n, n_seats), dtype=np.uint8)
    cooperators = np.empty(n, dtype=np.uint8)
    for start in range(0, max_len, block):
        stop = min(max_len, start + block)
        k0 = int(alive_at[start])
        rows = random_rows[: np.searchsorted(random_rows, k0 * n_seats)]
        if rows.size:
            bits = counter_bits_block(mixed[rows], start, stop, Purpose.POLICY, buffers)
            levels_flat[: stop - start, rows] = _levels(bits, coins, pid_flat[rows])
        if any_noise:
            bits = counter_bits_block(mixed[: k0 * n_seats], start, stop, Purpose.NOISE, buffers)
            bits = bits.reshape(stop - start, k0, n_seats)
            flip_out = flips[: stop - start, :k0]
            if flip_below is None:
                bits >>= np.uint64(11)
                np.less(bits, threshold[:, :k0], out=flip_out)
            else:
                np.less(bits, flip_below[:, :k0], out=flip_out)
        # (The takes index in range by construction; mode "clip" skips the buffered checks.)
        for t in range(start, stop):
            k = int(alive_at[t])
            current = key[:k]
            move_c = intended[t, :k]
            np.take(need, current, out=need_now[:k], mode="clip")
            np.greater_equal(levels[t - start, :k], need_now[:k], out=move_c)
            if any_noise:
                move_c = played[t, :k]
                np.bitwise_xor(intended[t, :k], flips[t - start, :k], out=move_c)
            moves = move_c.view(np.uint8)
            total = cooperators[:k]
            np.add(moves[:, 0], moves[:, 1], out=total)
            for seat in range(2, n_seats):
                np.add(total, moves[:, seat], out=total)
            np.add(total, total, out=total)  # 2 * cooperators (at most 2 * MAX_PLAYERS)
            np.add(current, moves, out=current)
            np.add(current, total[:, None], out=current)
            np.take(nxt, current, out=current, mode="clip")
    return GroupBatchResult(lengths_arr.copy(), order, intended, played, game)
