"""rounds.jsonl lines for a batch of games from the vectorized engine, fast.

The lines are byte for byte what the per-round engine (`pdbench.runners.game.play_game` with
policy agents) writes through orjson: the same keys in the same order and the same spellings of
every value, except `timestamp_utc`, which is one string per game here (one per round there).

A line is assembled from three or four pieces: the game's prefix (its constant keys, written by
orjson itself, up to `"round_index":`), a piece for (round index, four moves, two payoffs), a piece
for the two cumulative payoffs, and the game's suffix (parse flags and timestamp; folded into the
previous piece when every game has the same timestamp). Each distinct piece is spelled once with
orjson's number formatting, pieces are picked with integer ids computed by NumPy, and the whole
batch is joined with one `bytes.join` (about a million records per second).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np
import orjson

from pdbench.core.batch import BatchResult
from pdbench.core.horizon import Horizon

_CUM_B_KEY = b',"agent_b_cum_payoff":'
_MOVES = (
    b'"agent_a_action":"%s","agent_b_action":"%s","agent_a_intended_action":"%s",'
    b'"agent_b_intended_action":"%s","agent_a_payoff":%s,"agent_b_payoff":%s,"agent_a_cum_payoff":'
)
_FLAGS = b',"agent_a_parse_failure":false,"agent_b_parse_failure":false,"timestamp_utc":'


def _dense_ids(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys ascending, each key's index among them) for non-negative int64 keys."""
    if keys.size == 0:
        return keys[:0], keys[:0]
    top = int(keys.max()) + 1
    if top <= 4 * keys.size + 65536:
        uniq = np.flatnonzero(np.bincount(keys, minlength=top))
        lookup = np.zeros(top, dtype=np.int64)
        lookup[uniq] = np.arange(uniq.size)
        return uniq, lookup[keys]
    uniq, inverse = np.unique(keys, return_inverse=True)
    return uniq, inverse.ravel()


def _float_ids(values: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    """orjson spellings of the distinct floats (bit patterns) in `values`, and each one's index."""
    integral = (
        values.size > 0
        and bool(np.all(np.abs(values) < 2.0**52))
        and bool(np.all(values == np.round(values)))
        and not bool(np.any(np.signbit(values) & (values == 0)))
    )
    if integral:
        low = int(values.min())
        uniq, ids = _dense_ids(values.astype(np.int64) - low)
        return [orjson.dumps(float(k + low)) for k in uniq.tolist()], ids
    uniq, ids = _dense_ids_bits(values)
    return [orjson.dumps(v) for v in uniq.view(np.float64).tolist()], ids


def _dense_ids_bits(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, inverse = np.unique(np.ascontiguousarray(values).view(np.int64), return_inverse=True)
    return uniq, inverse.ravel()


def _cumulative(payoffs: np.ndarray) -> np.ndarray:
    """Running totals exactly as the per-round engine adds them (starting from 0.0)."""
    padded = np.zeros((payoffs.shape[0], payoffs.shape[1] + 1))
    padded[:, 1:] = payoffs
    return np.cumsum(padded, axis=1)[:, 1:]


def _record_pieces(
    result: BatchResult,
    chosen: np.ndarray,
    base: dict,
    replicates: Sequence[int],
    seeds: Sequence[int],
    timestamps: Sequence[str],
) -> tuple[list[bytes], int]:
    """All pieces of all records of the chosen games, in order, and the pieces per record."""
    lengths = result.lengths[chosen]
    total = int(lengths.sum())
    valid = np.arange(result.played_a.shape[1])[None, :] < lengths[:, None]

    def cut(arr: np.ndarray) -> np.ndarray:
        return arr[chosen][valid]

    moves = np.zeros(total, dtype=np.int64)
    for bit, arr in ((8, result.played_a), (4, result.played_b)):
        moves += cut(arr) * bit
    for bit, arr in ((2, result.intended_a), (1, result.intended_b)):
        moves += cut(arr) * bit
    pay_a, ia = _float_ids(cut(result.payoffs_a))
    pay_b, ib = _float_ids(cut(result.payoffs_b))
    rounds = np.broadcast_to(np.arange(valid.shape[1]), valid.shape)[valid]
    key = ((rounds * 16 + moves) * len(pay_a) + ia) * len(pay_b) + ib
    uniq, round_ids = _dense_ids(key)
    round_pieces = []
    for value in uniq.tolist():
        rest, jb = divmod(value, len(pay_b))
        rest, ja = divmod(rest, len(pay_a))
        t, code = divmod(rest, 16)
        letters = [b"C" if code & bit else b"D" for bit in (8, 4, 2, 1)]
        round_pieces.append(b"%d," % t + _MOVES % (*letters, pay_a[ja], pay_b[jb]))

    cum_a, ca = _float_ids(_cumulative(result.payoffs_a[chosen])[valid])
    cum_b, cb = _float_ids(_cumulative(result.payoffs_b[chosen])[valid])
    suffixes = [_FLAGS + orjson.dumps(timestamps[g]) + b"}\n" for g in chosen.tolist()]
    shared_suffix = suffixes[0] if len(set(suffixes)) == 1 else b""
    uniq, cum_ids = _dense_ids(ca * len(cum_b) + cb)
    cum_pieces = [
        cum_a[k // len(cum_b)] + _CUM_B_KEY + cum_b[k % len(cum_b)] + shared_suffix
        for k in uniq.tolist()
    ]

    prefixes = []
    for g in chosen.tolist():
        record = dict(base, replicate=int(replicates[g]), seed=int(seeds[g]))
        prefixes.append(orjson.dumps(record)[:-1] + b',"round_index":')
    counts = lengths.tolist()
    width = 3 if shared_suffix else 4
    pieces: list[bytes] = [b""] * (width * total)
    pieces[0::width] = list(
        chain.from_iterable([p] * n for p, n in zip(prefixes, counts, strict=True))
    )
    pieces[1::width] = list(map(round_pieces.__getitem__, round_ids.tolist()))
    pieces[2::width] = list(map(cum_pieces.__getitem__, cum_ids.tolist()))
    if not shared_suffix:
        pieces[3::width] = list(
            chain.from_iterable([s] * n for s, n in zip(suffixes, counts, strict=True))
        )
    return pieces, width


def _prepare(
    result: BatchResult,
    run_id: str,
    condition: str,
    replicates: Sequence[int],
    seeds: Sequence[int],
    agent_a_name: str,
    agent_b_name: str,
    horizon: Horizon,
    timestamps: str | Sequence[str],
    games: Sequence[int] | None,
) -> tuple[list[bytes], int, list[int]]:
    chosen = np.arange(result.n_games) if games is None else np.asarray(games, dtype=np.int64)
    stamps = [timestamps] * result.n_games if isinstance(timestamps, str) else list(timestamps)
    base = {
        "run_id": run_id,
        "condition": condition,
        "replicate": 0,
        "seed": 0,
        "agent_a_name": agent_a_name,
        "agent_b_name": agent_b_name,
        "horizon_type": horizon.type,
        "fixed_n": getattr(horizon, "n_rounds", None),
        "stop_prob": getattr(horizon, "stop_prob", None),
    }
    if chosen.size == 0 or int(result.lengths[chosen].sum()) == 0:
        return [], 1, [0] * int(chosen.size)
    pieces, width = _record_pieces(result, chosen, base, replicates, seeds, stamps)
    return pieces, width, result.lengths[chosen].tolist()


def batch_to_jsonl(
    result: BatchResult,
    *,
    run_id: str,
    condition: str,
    replicates: Sequence[int],
    seeds: Sequence[int],
    agent_a_name: str,
    agent_b_name: str,
    horizon: Horizon,
    timestamps: str | Sequence[str],
    games: Sequence[int] | None = None,
) -> bytes:
    """rounds.jsonl lines (newline-terminated) of the chosen games of a one-condition batch.

    `replicates`, `seeds` and `timestamps` (or one timestamp string for all) are indexed by game
    of the batch; `games` selects and orders the games written (default: all, in batch order).
    """
    pieces, _, _ = _prepare(
        result,
        run_id,
        condition,
        replicates,
        seeds,
        agent_a_name,
        agent_b_name,
        horizon,
        timestamps,
        games,
    )
    return b"".join(pieces)


def batch_to_jsonl_games(
    result: BatchResult,
    *,
    run_id: str,
    condition: str,
    replicates: Sequence[int],
    seeds: Sequence[int],
    agent_a_name: str,
    agent_b_name: str,
    horizon: Horizon,
    timestamps: str | Sequence[str],
    games: Sequence[int] | None = None,
) -> list[bytes]:
    """Like `batch_to_jsonl`, but one blob per chosen game (e.g. for `GameResult.blob`)."""
    pieces, width, counts = _prepare(
        result,
        run_id,
        condition,
        replicates,
        seeds,
        agent_a_name,
        agent_b_name,
        horizon,
        timestamps,
        games,
    )
    blobs, start = [], 0
    for n in counts:
        blobs.append(b"".join(pieces[start : start + width * n]))
        start += width * n
    return blobs
