"""Unit tests of pdbench.core.rng: SplitMix64 bits, counter-based uniforms, seed derivation."""

from __future__ import annotations

import math

import numpy as np

from pdbench.core.rng import (
    Purpose,
    agent_seed,
    agent_seed_array,
    counter_uniform,
    counter_uniform_array,
    game_seed,
    mix64,
    mix64_array,
)

M64 = (1 << 64) - 1


class ReferenceSplitMix64:
    """Vigna's reference splitmix64.c, transcribed: state += gamma; return finalizer(state)."""

    def __init__(self, state: int) -> None:
        self.state = state & M64

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)


# Published first outputs of SplitMix64 seeded with 0 (e.g. used to seed xoshiro in tests).
SPLITMIX64_SEED0 = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F, 0xF88BB8A8724C81EC]


def test_reference_splitmix64_reproduces_published_outputs():
    gen = ReferenceSplitMix64(0)
    assert [gen.next() for _ in range(4)] == SPLITMIX64_SEED0


def test_mix64_of_zero_is_first_splitmix64_output():
    assert mix64(0) == 0xE220A8397B1DCDAF


def test_mix64_is_one_splitmix64_step_from_any_state():
    # mix64(x) == the first output of a generator whose state is x; and the k-th output of the
    # state-0 generator is mix64(k * gamma) because the state advances by gamma each call.
    states = [0, 1, 2, 0xDEADBEEF, M64, 1 << 63, 0x0123456789ABCDEF, 0x9E3779B97F4A7C15]
    for x in states:
        assert mix64(x) == ReferenceSplitMix64(x).next()
    gen = ReferenceSplitMix64(0)
    for k in range(10):
        assert mix64((k * 0x9E3779B97F4A7C15) & M64) == gen.next()


def test_mix64_array_matches_mix64():
    rng = np.random.default_rng(7)
    xs = np.concatenate(
        [
            np.array([0, 1, M64, 1 << 63], dtype=np.uint64),
            rng.integers(0, np.iinfo(np.uint64).max, size=500, dtype=np.uint64, endpoint=True),
        ]
    )
    got = mix64_array(xs)
    assert got.dtype == np.uint64
    assert [int(v) for v in got] == [mix64(int(x)) for x in xs]


def _sample_seeds() -> list[int]:
    # Small seeds, seeds near the 63/64-bit edges, and game seeds as the runner makes them.
    seeds = [0, 1, 2, 3, 42, 2**32 - 1, 2**32, 2**62, 2**63 - 1, 2**63, 2**64 - 1]
    seeds += [game_seed(12345, f"cond{i % 7}", i) for i in range(60)]
    return seeds


def test_counter_uniform_array_equals_scalar_for_many_keys():
    seeds = _sample_seeds()
    arr = np.array(seeds, dtype=np.uint64)
    for purpose in (Purpose.STOP, Purpose.POLICY, Purpose.NOISE, Purpose.PROVIDER):
        for round_index in (0, 1, 2, 9, 255, 1000, 2**31, 2**32 - 1):
            for draw in (0, 1, 7):
                got = counter_uniform_array(arr, round_index, purpose, draw)
                want = [counter_uniform(s, round_index, purpose, draw) for s in seeds]
                assert got.tolist() == want  # bit-identical floats


def test_counter_uniform_array_with_round_array_equals_scalar():
    seeds = _sample_seeds()[:20]
    rounds = np.arange(0, 50, dtype=np.uint64)
    got = counter_uniform_array(
        np.array(seeds, dtype=np.uint64)[:, None], rounds[None, :], Purpose.STOP
    )
    assert got.shape == (20, 50)
    for i, s in enumerate(seeds):
        for r in range(50):
            assert got[i, r] == counter_uniform(s, r, Purpose.STOP)


def test_uniforms_lie_in_unit_interval():
    seeds = np.arange(5000, dtype=np.uint64)
    for purpose in Purpose:
        u = counter_uniform_array(seeds, 3, purpose)
        assert float(u.min()) >= 0.0
        assert float(u.max()) < 1.0
    for s in _sample_seeds():
        for r in range(20):
            assert 0.0 <= counter_uniform(s, r, Purpose.POLICY) < 1.0


def test_different_keys_give_different_values():
    seed = 987654321
    base = counter_uniform(seed, 5, Purpose.POLICY, 0)
    assert counter_uniform(seed, 5, Purpose.POLICY, 0) == base  # pure function
    assert counter_uniform(seed, 6, Purpose.POLICY, 0) != base  # another round
    assert counter_uniform(seed, 5, Purpose.STOP, 0) != base  # another purpose
    assert counter_uniform(seed, 5, Purpose.POLICY, 1) != base  # another draw
    assert counter_uniform(seed + 1, 5, Purpose.POLICY, 0) != base  # another seed
    # Over a grid of keys no two draws collide (53-bit values: a collision would be a bug).
    values = {counter_uniform(seed, r, p, d) for r in range(40) for p in Purpose for d in range(3)}
    assert len(values) == 40 * len(Purpose) * 3


def test_uniform_mean_is_about_one_half():
    # U(0,1) has variance 1/12, so the mean of n=20000 draws has standard error
    # sqrt(1/12 / 20000) = 0.00204; 0.01 is ~4.9 standard errors, so a correct generator fails
    # this bound with probability ~1e-6 (and the draws are fixed, so the test is deterministic).
    u = counter_uniform_array(np.arange(20000, dtype=np.uint64), 0, Purpose.STOP)
    assert abs(float(u.mean()) - 0.5) < 0.01
    # Same check along the round axis of one seed.
    v = [counter_uniform(2024, r, Purpose.POLICY) for r in range(20000)]
    assert abs(sum(v) / len(v) - 0.5) < 0.01
    # And each quarter of [0,1) holds about 5000 draws: binomial sd = sqrt(20000*.25*.75) = 61.2,
    # 5 sd = 306.
    counts = np.histogram(u, bins=4, range=(0.0, 1.0))[0]
    assert all(abs(int(c) - 5000) < 306 for c in counts)


def test_game_seed_is_a_pure_function_of_run_seed_condition_and_replicate():
    assert game_seed(7, "tft_vs_alld", 3) == game_seed(7, "tft_vs_alld", 3)
    base = game_seed(7, "tft_vs_alld", 3)
    assert game_seed(7, "tft_vs_alld", 4) != base
    assert game_seed(7, "tft_vs_allc", 3) != base
    assert game_seed(8, "tft_vs_alld", 3) != base


def test_game_seed_does_not_depend_on_other_conditions():
    run_seed = 20240601
    names = ["alpha", "beta", "gamma"]
    before = {(n, r): game_seed(run_seed, n, r) for n in names for r in range(4)}
    # Add a condition in front and shuffle the list: existing games keep their seeds.
    names2 = ["zeta", "gamma", "alpha", "beta"]
    after = {(n, r): game_seed(run_seed, n, r) for n in names2 for r in range(4)}
    for key, value in before.items():
        assert after[key] == value
    # All seeds distinct and within the 63-bit range the config accepts.
    assert len(set(after.values())) == len(after)
    assert all(0 <= s < 2**63 for s in after.values())


def test_game_seed_replicate_is_not_confused_with_its_text():
    # The replicate index 1 and a condition suffix must not alias: "a", 11 vs "a1", 1.
    assert game_seed(1, "a", 11) != game_seed(1, "a1", 1)


def test_agent_seed_array_equals_agent_seed():
    seeds = _sample_seeds()
    arr = np.array(seeds, dtype=np.uint64)
    for agent_index in (0, 1):
        got = agent_seed_array(arr, agent_index)
        assert [int(v) for v in got] == [agent_seed(s, agent_index) for s in seeds]


def test_agent_seeds_differ_between_agents_and_fit_63_bits():
    for s in _sample_seeds():
        a, b = agent_seed(s, 0), agent_seed(s, 1)
        assert a != b
        assert 0 <= a < 2**63 and 0 <= b < 2**63


def test_uniform_has_53_bit_resolution():
    # (bits >> 11) / 2**53: every value is an integer multiple of 2**-53.
    for s in range(200):
        u = counter_uniform(s, 0, Purpose.NOISE)
        assert math.ldexp(u, 53) == int(math.ldexp(u, 53))
