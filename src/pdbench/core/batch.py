"""The vectorized engine: many games between scripted policies, one NumPy step per round.

Every batchable policy is compiled, per side of the game, into a small finite-state machine:
`coop_prob[state]` is the probability of choosing C in a state and `next_state[state, my, opp]`
the state after a round in which this side played `my` and its opponent `opp` (0 = C, 1 = D,
played moves, as the history shows them). Every game starts in state 0. A round is then, for all
games at once: draw u (counter stream, purpose POLICY), intend C when u < coop_prob[state]; flip
with the NOISE draw; look up payoffs; move to the next state. Because every draw is a pure
function of (agent seed, round, purpose), this gives exactly the moves of the per-round engine
(`pdbench.runners.game.play_game` with `PolicyAgent`s); `tests/unit/test_batch_engine.py` checks
it for every ordered pair of built-in policies, with noise and geometric horizons.

Policies with a history window too small for their rule (e.g. TF2T seeing one round), LLM agents
and Axelrod strategies are not batchable: see `is_batchable`; they use the per-round engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pdbench.core.payoff import PayoffMatrix
from pdbench.core.rng import Purpose, agent_seed_array, counter_uniform_array

# Batchable policy -> the smallest history window its rule needs (None, i.e. all, always works).
BATCH_POLICY_MEMORY: dict[str, int] = {
    "ALLC": 0,
    "ALLD": 0,
    "RANDOM": 0,
    "TFT": 1,
    "STFT": 1,
    "GTFT": 1,
    "WSLS": 1,
    "GRIM": 1,
    "ALTERNATOR": 1,
    "TF2T": 2,
}
N_STATES = 5  # the largest state machine (WSLS: start + the four last-round outcomes)
_DRAW_BLOCK = 1 << 21  # draws computed per chunk of rounds (bounds memory on big batches)


@dataclass(frozen=True, slots=True)
class PolicySpec:
    """A batchable policy: its registered name and the parameters it reads (see PolicyParams)."""

    name: str
    generous_prob: float | None = None
    win_threshold: float | None = None
    coop_prob: float = 0.5


def is_batchable(agent: Any) -> bool:
    """True when the vectorized engine can play this agent config exactly like the per-round one.

    Only `type: policy` configs of a batchable policy whose `history_window` is None or at least
    the memory its rule needs; LLM agents, Axelrod strategies and anything else return False.
    """
    if getattr(agent, "type", None) != "policy":
        return False
    memory = BATCH_POLICY_MEMORY.get(str(getattr(agent, "policy", "")).upper())
    if memory is None:
        return False
    window = getattr(agent, "history_window", None)
    return window is None or window >= memory


def policy_spec(agent: Any) -> PolicySpec:
    """The PolicySpec of a batchable `PolicyAgentConfig` (ValueError when it is not batchable)."""
    if not is_batchable(agent):
        raise ValueError(f"not a batchable policy config: {agent!r}")
    params = agent.params
    return PolicySpec(
        agent.policy.upper(), params.generous_prob, params.win_threshold, params.coop_prob
    )


def compile_policy(
    spec: PolicySpec, matrix: PayoffMatrix, side: int
) -> tuple[np.ndarray, np.ndarray]:
    """(coop_prob[N_STATES], next_state[N_STATES, 2, 2]) of a policy playing side 0 (A) or 1 (B).

    Unused states keep probability 0 and lead back to themselves. Parameters left None resolve
    exactly as the per-round policies do (GTFT: Nowak-Sigmund generosity; WSLS threshold: R).
    """
    name = spec.name.upper()
    prob = np.zeros(N_STATES, dtype=np.float64)
    nxt = np.zeros((N_STATES, 2, 2), dtype=np.int64)
    nxt[:] = np.arange(N_STATES)[:, None, None]
    copy_last = np.array([[1, 2], [1, 2]])  # state 1: opponent's last move C, 2: it was D
    if name in ("ALLC", "ALLD", "RANDOM"):
        prob[0] = {"ALLC": 1.0, "ALLD": 0.0}.get(name, spec.coop_prob)
    elif name in ("TFT", "STFT", "GTFT"):
        forgive = 0.0
        if name == "GTFT":
            forgive = spec.generous_prob
            if forgive is None:
                forgive = matrix.nowak_sigmund_generosity()
        prob[:3] = (0.0 if name == "STFT" else 1.0, 1.0, forgive)
        nxt[:3] = copy_last
    elif name == "GRIM":  # 0: calm, 1: triggered for good
        prob[:2] = (1.0, 0.0)
        nxt[0] = [[0, 1], [0, 1]]
        nxt[1] = 1
    elif name == "TF2T":  # state = the opponent's trailing run of D, capped at 2
        prob[:3] = (1.0, 1.0, 0.0)
        nxt[:3] = [[[0, 1], [0, 1]], [[0, 2], [0, 2]], [[0, 2], [0, 2]]]
    elif name == "ALTERNATOR":  # state 1: own last move C, 2: it was D
        prob[:3] = (1.0, 0.0, 1.0)
        nxt[:3] = [[[1, 1], [2, 2]]] * 3
    elif name == "WSLS":  # state 1 + 2*my_D + opp_D: the last round's outcome
        threshold = matrix.reward if spec.win_threshold is None else spec.win_threshold
        prob[0] = 1.0
        for my in (0, 1):
            for opp in (0, 1):
                cell = matrix.as_array()[my][opp] if side == 0 else matrix.as_array()[opp][my]
                stay = cell[side] >= threshold
                prob[1 + 2 * my + opp] = 1.0 if (my == 0) == stay else 0.0
        nxt[:] = np.array([[1, 2], [3, 4]])
    else:
        raise ValueError(f"policy {spec.name!r} is not batchable")
    return prob, nxt


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


def _uniform_block(
    seeds: np.ndarray, rows: np.ndarray | None, start: int, stop: int, purpose: int, n: int
) -> np.ndarray:
    """Draws (rounds start..stop-1) x (first n games); with `rows`, only those games, others 0.5."""
    rounds = np.arange(start, stop, dtype=np.uint64)[:, None]
    if rows is None:
        return counter_uniform_array(seeds[None, :n], rounds, purpose)
    out = np.full((stop - start, n), 0.5)
    if rows.size:
        out[:, rows] = counter_uniform_array(seeds[None, rows], rounds, purpose)
    return out


def play_batch(
    policies: Sequence[PolicySpec],
    policy_a: np.ndarray,
    policy_b: np.ndarray,
    game_seeds: np.ndarray,
    lengths: np.ndarray,
    matrix: PayoffMatrix,
    noise: float | np.ndarray = 0.0,
) -> BatchResult:
    """Play every game of a batch; see the module docstring.

    `policies` lists the distinct policies (with their parameters); `policy_a`/`policy_b` give,
    per game, the index into `policies` of side A and side B. `game_seeds` are the games' seeds
    (agent seeds derive from them with `agent_seed`), `lengths` their numbers of rounds (from the
    horizon), `noise` one probability or one per game.
    """
    pid_a = np.asarray(policy_a, dtype=np.int64)
    pid_b = np.asarray(policy_b, dtype=np.int64)
    seeds = np.asarray(game_seeds, dtype=np.uint64)
    lengths = np.asarray(lengths, dtype=np.int64)
    n = lengths.shape[0]
    if not (pid_a.shape == pid_b.shape == seeds.shape == (n,)):
        raise ValueError("policy_a, policy_b, game_seeds and lengths must have the same length")
    noise_arr = np.broadcast_to(np.asarray(noise, dtype=np.float64), (n,))
    tables = [[compile_policy(p, matrix, side) for p in policies] for side in (0, 1)]
    prob = [np.stack([t[0] for t in side]).ravel() if side else np.zeros(0) for side in tables]
    nxt = [np.stack([t[1] for t in side]).ravel() if side else np.zeros(0) for side in tables]
    stochastic = np.array([bool(((t[0] > 0) & (t[0] < 1)).any()) for t in tables[0]], dtype=bool)

    # Longest games first: the games still running at round t are then a prefix of the arrays.
    order = np.argsort(-lengths, kind="stable")
    sorted_len = lengths[order]
    max_len = int(sorted_len[0]) if n else 0
    alive_at = np.searchsorted(-sorted_len, -np.arange(max_len), side="left")  # lengths > t
    pids = (pid_a[order], pid_b[order])
    seeds_by_side = (agent_seed_array(seeds[order], 0), agent_seed_array(seeds[order], 1))
    noise_sorted = noise_arr[order]
    stoch_rows = [np.flatnonzero(stochastic[p]) if stochastic.size else p[:0] for p in pids]
    any_noise = bool((noise_sorted > 0).any())
    prob_base = [p * N_STATES for p in pids]
    next_base = [p * (N_STATES * 4) for p in pids]
    pcell = np.array([[matrix.cc, matrix.cd], [matrix.dc, matrix.dd]], dtype=np.float64)

    shape = (max_len, n)
    intended = [np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)]
    played = [np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)]
    state = [np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)]
    block = max(1, _DRAW_BLOCK // max(n, 1))
    for start in range(0, max_len, block):
        stop = min(max_len, start + block)
        k0 = int(alive_at[start])
        draws, flips = [], []
        for side in (0, 1):
            rows = stoch_rows[side]
            rows = rows[: np.searchsorted(rows, k0)]
            draws.append(_uniform_block(seeds_by_side[side], rows, start, stop, Purpose.POLICY, k0))
            if any_noise:
                u = _uniform_block(seeds_by_side[side], None, start, stop, Purpose.NOISE, k0)
                flips.append(u < noise_sorted[None, :k0])
        for t in range(start, stop):
            k = int(alive_at[t])
            col = t - start
            defect = []
            for side in (0, 1):
                st = state[side][:k]
                want_c = draws[side][col, :k] < prob[side][prob_base[side][:k] + st]
                intended[side][t, :k] = want_c
                is_c = want_c ^ flips[side][col, :k] if any_noise else want_c
                played[side][t, :k] = is_c
                defect.append(~is_c)
            d_a, d_b = defect
            idx_a = next_base[0][:k] + state[0][:k] * 4 + d_a * 2 + d_b
            idx_b = next_base[1][:k] + state[1][:k] * 4 + d_b * 2 + d_a
            state[0][:k] = nxt[0][idx_a]
            state[1][:k] = nxt[1][idx_b]

    def unsort(arr: np.ndarray) -> np.ndarray:
        out = np.empty((n, max_len), dtype=arr.dtype)
        out[order] = arr.T
        return out

    p_a, p_b = unsort(played[0]), unsort(played[1])
    valid = np.arange(max_len)[None, :] < lengths[:, None]
    cells = np.where(valid[..., None], pcell[(~p_a).view(np.int8), (~p_b).view(np.int8)], 0.0)
    return BatchResult(
        lengths=lengths.copy(),
        intended_a=unsort(intended[0]),
        intended_b=unsort(intended[1]),
        played_a=p_a,
        played_b=p_b,
        payoffs_a=np.ascontiguousarray(cells[..., 0]),
        payoffs_b=np.ascontiguousarray(cells[..., 1]),
    )
