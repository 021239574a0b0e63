"""The group record: a game of the vectorized engine encoded in one go equals its rounds encoded
one by one (the dict route), and two seats are the pairwise encoder's bytes."""

from __future__ import annotations

import numpy as np
import orjson
import pytest

from pdbench.core.group_game import GroupGame
from pdbench.core.horizon import FixedHorizon
from pdbench.core.payoff import PayoffMatrix
from pdbench.storage.record.group_fields import (
    group_key,
    round_values,
    seat_field,
    seats_of,
)
from pdbench.storage.record.group_jsonl import GroupRoundsEncoder
from pdbench.storage.record.jsonl import RoundsEncoder, game_key


def _game(n: int, t: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, GroupGame]:
    rng = np.random.default_rng(seed)
    game = GroupGame.public_goods(n, 2.7, 1.3) if n > 2 else GroupGame.from_matrix(PayoffMatrix())
    played = rng.random((n, t)) < 0.6
    intended = played ^ (rng.random((n, t)) < 0.1)
    payoffs = np.array([game.payoffs(list(played[:, r])) for r in range(t)]).T
    return played, intended, payoffs, game


@pytest.mark.parametrize(("n", "t"), [(3, 7), (5, 40), (10, 3), (4, 1)])
def test_whole_game_bytes_equal_round_by_round_records(n: int, t: int) -> None:
    played, intended, payoffs, _ = _game(n, t, n * 100 + t)
    key = group_key("run", "cond", 2, 123, [f"P{i}" for i in range(n)], "fixed", t, None)
    encoder = GroupRoundsEncoder()
    whole = encoder.game_bytes(key, played, intended, payoffs, "2026-11-28T00:00:00+00:00")
    totals = np.cumsum(payoffs, axis=1)
    one_by_one = b"".join(
        encoder.round_line(
            key,
            round_values(
                r,
                {
                    "action": ["C" if c else "D" for c in played[:, r]],
                    "intended_action": ["C" if c else "D" for c in intended[:, r]],
                    "payoff": payoffs[:, r].tolist(),
                    "cum_payoff": totals[:, r].tolist(),
                    "parse_failure": [False] * n,
                    "p_cooperate": [None] * n,
                },
                "2026-11-28T00:00:00+00:00",
            ),
        )
        for r in range(t)
    )
    assert whole == one_by_one
    first = orjson.loads(whole.splitlines()[0])
    assert seats_of(first) == n
    assert first[seat_field(n - 1, "payoff")] == pytest.approx(payoffs[n - 1, 0])


def test_two_seats_are_the_pairwise_encoders_bytes() -> None:
    played, intended, payoffs, _ = _game(2, 25, 7)
    pair = RoundsEncoder(PayoffMatrix()).game_bytes(
        game_key("r", "c", 0, 5, ("A", "B"), FixedHorizon(25)),
        {
            "played_a": played[0],
            "played_b": played[1],
            "intended_a": intended[0],
            "intended_b": intended[1],
            "payoffs_a": payoffs[0],
            "payoffs_b": payoffs[1],
        },
        "T",
    )
    group = GroupRoundsEncoder().game_bytes(
        group_key("r", "c", 0, 5, ("A", "B"), "fixed", 25, None), played, intended, payoffs, "T"
    )
    assert group == pair
