"""Counter-based random numbers: every draw is a pure function of (seed, round, purpose, draw).

A game's randomness never depends on how games are ordered, interleaved or batched, because no
generator state is carried between draws. The mixing function is SplitMix64's finalizer, written
twice: once for Python ints (the per-round engine) and once for NumPy uint64 arrays (the vectorized
engine); tests check that both give the same bits.
"""

from __future__ import annotations

import hashlib
from enum import IntEnum

import numpy as np

MASK64 = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
TWO_POW_53 = float(1 << 53)  # uniforms carry 53 random bits: (bits >> 11) / 2**53


class Purpose(IntEnum):
    """What a random draw is for; part of the draw's key so purposes never share numbers."""

    STOP = 1
    POLICY = 2
    NOISE = 3
    PROVIDER = 4
    PROMPT = 5  # the order a prompt lists the two options in
    MESSAGE = 6  # the seed of a message call (games with a message channel)


def mix64(x: int) -> int:
    """SplitMix64 step on a Python int: add the golden gamma, then scramble (bijective on 64 bits)."""
    z = (x + _GAMMA) & MASK64
    z = ((z ^ (z >> 30)) * _M1) & MASK64
    z = ((z ^ (z >> 27)) * _M2) & MASK64
    return z ^ (z >> 31)


def mix64_array(x: np.ndarray) -> np.ndarray:
    """SplitMix64 step on a uint64 array; identical bits to `mix64` element by element."""
    z = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = z + np.uint64(_GAMMA)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
    return z ^ (z >> np.uint64(31))


def _counter_word(round_index: int, purpose: int, draw: int) -> int:
    return ((round_index & 0xFFFFFFFF) << 32) | ((purpose & 0xFFFF) << 16) | (draw & 0xFFFF)


def counter_bits(seed: int, round_index: int, purpose: int, draw: int = 0) -> int:
    """64 random bits for (seed, round, purpose, draw)."""
    return mix64(mix64(seed & MASK64) ^ _counter_word(round_index, purpose, draw))


def counter_uniform(seed: int, round_index: int, purpose: int, draw: int = 0) -> float:
    """A uniform float in [0, 1) for (seed, round, purpose, draw), with 53 random bits."""
    return (counter_bits(seed, round_index, purpose, draw) >> 11) / TWO_POW_53


def counter_uniform_array(
    seeds: np.ndarray, round_index: int | np.ndarray, purpose: int, draw: int = 0
) -> np.ndarray:
    """Vectorized `counter_uniform` over an array of seeds (and optionally of rounds)."""
    seeds = np.asarray(seeds, dtype=np.uint64)
    rounds = np.asarray(round_index, dtype=np.uint64) & np.uint64(0xFFFFFFFF)
    word = (rounds << np.uint64(32)) | np.uint64(((purpose & 0xFFFF) << 16) | (draw & 0xFFFF))
    bits = mix64_array(mix64_array(seeds) ^ word)
    return (bits >> np.uint64(11)).astype(np.float64) / TWO_POW_53


def derive_seed(parent: int, *parts: str | int) -> int:
    """A 63-bit child seed from a parent seed and labels (e.g. condition name, replicate index).

    Uses SHA-256 of the labels' text so a child depends on the names, never on list positions.
    """
    text = "\x1f".join([str(int(parent))] + [f"{type(p).__name__}:{p}" for p in parts])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def agent_seed(game_seed: int, agent_index: int) -> int:
    """The seed of one agent's stream inside a game (agent 0 is A, 1 is B)."""
    return mix64((game_seed & MASK64) ^ mix64(0xA6E17 + agent_index)) >> 1


def agent_seed_array(game_seeds: np.ndarray, agent_index: int) -> np.ndarray:
    """Vectorized `agent_seed`."""
    salt = np.uint64(mix64(0xA6E17 + agent_index))
    return mix64_array(np.asarray(game_seeds, dtype=np.uint64) ^ salt) >> np.uint64(1)


def game_seed(run_seed: int, condition: str, replicate: int) -> int:
    """The seed of one (condition, replicate) game: depends on the condition's name, not position."""
    return derive_seed(run_seed, "game", condition, replicate)


def counter_bits_block(
    mixed_seeds: np.ndarray,
    start: int,
    stop: int,
    purpose: int,
    buffers: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """`counter_bits(seed, t, purpose)` for rounds start..stop-1 (rows) x seeds (columns).

    `mixed_seeds` is `mix64_array(seeds)`; the second SplitMix64 step runs in place (in
    `buffers`, two uint64 arrays at least that large, when given), which is what lets the
    vectorized engine draw millions of numbers without allocating; tests compare the result
    with `counter_uniform_array`.
    """
    shape = (stop - start, mixed_seeds.shape[0])
    if buffers is None:
        buffers = (np.empty(shape, dtype=np.uint64), np.empty(shape, dtype=np.uint64))
    z, tmp = buffers[0][: shape[0], : shape[1]], buffers[1][: shape[0], : shape[1]]
    rounds = np.arange(start, stop, dtype=np.uint64) & np.uint64(0xFFFFFFFF)
    word = (rounds << np.uint64(32)) | np.uint64((int(purpose) & 0xFFFF) << 16)
    np.bitwise_xor(mixed_seeds[None, :], word[:, None], out=z)
    with np.errstate(over="ignore"):
        z += np.uint64(_GAMMA)
        for shift, factor in ((30, _M1), (27, _M2)):
            np.right_shift(z, np.uint64(shift), out=tmp)
            z ^= tmp
            z *= np.uint64(factor)
        np.right_shift(z, np.uint64(31), out=tmp)
        z ^= tmp
    return z


def counter_uniform_block(seeds: np.ndarray, start: int, stop: int, purpose: int) -> np.ndarray:
    """`counter_uniform(seed, t, purpose)` as a (rounds, seeds) array (same bits as rng's)."""
    bits = counter_bits_block(mix64_array(np.asarray(seeds, dtype=np.uint64)), start, stop, purpose)
    return (bits >> np.uint64(11)).astype(np.float64) / TWO_POW_53
