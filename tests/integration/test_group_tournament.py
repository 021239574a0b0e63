"""Group tournaments: leaderboards checked by hand and by an independent simulation, ties,
intervals against Student-t by hand, seeds that depend on a group's members only, and the same
artifacts for the same seed."""

from __future__ import annotations

import math
import statistics
from itertools import combinations_with_replacement
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from pdbench.runners.config.loader import load_config
from pdbench.runners.lifecycle.session import RunOptions
from pdbench.runners.science.group_tournament import (
    member_groups,
    plan_group_games,
    run_group_tournament,
)


def config(tmp_path: Path, players: list[Any], name: str = "cfg", **section: Any) -> Path:
    data = {
        "run": {"run_id": name, "seed": section.pop("seed", 5), "output_dir": "out"},
        "game": {"noise": section.pop("noise", 0.0)},
        "horizon": section.pop("horizon", {"type": "fixed", "n_rounds": 10}),
        "group_game": section.pop("group_game", {"kind": "linear_pd"}),
        "group_tournament": {"players": players, **section},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run(tmp_path: Path, path: Path, out: str = "run") -> tuple[list[dict], list[dict]]:
    loaded = load_config(path, "tournament")
    run_group_tournament(loaded, RunOptions(output_dir=tmp_path / out))
    board = pq.read_table(tmp_path / out / "leaderboard.parquet").to_pylist()
    games = pq.read_table(tmp_path / out / "groups.parquet").to_pylist()
    return board, games


def by_player(board: list[dict]) -> dict[str, dict]:
    return {row["player"]: row for row in board}


def test_three_players_in_one_group_of_three_by_hand(tmp_path: Path) -> None:
    # Linear PD of 3 (R,S,T,P = 3,0,5,1): a cooperator with k cooperating co-players gets
    # 1.5 k, a defector 1 + 2 k. Round 1: ALLC and TFT cooperate, ALLD defects: ALLC 1.5,
    # TFT 1.5, ALLD 5. From round 2 TFT defects (not every other player cooperated):
    # ALLC 0, ALLD 3, TFT 3. Over 10 rounds: ALLC 1.5/10, ALLD (5 + 27)/10, TFT (1.5 + 27)/10.
    board, games = run(
        tmp_path, config(tmp_path, ["ALLC", "ALLD", "TFT"], group_size=3, repetitions=2)
    )
    rows = by_player(board)
    assert rows["ALLC"]["mean_payoff_per_round"] == pytest.approx(0.15)
    assert rows["ALLD"]["mean_payoff_per_round"] == pytest.approx(3.2)
    assert rows["TFT"]["mean_payoff_per_round"] == pytest.approx(2.85)
    assert [r["player"] for r in board] == ["ALLD", "TFT", "ALLC"]
    assert [r["rank"] for r in board] == [1, 2, 3]
    assert rows["TFT"]["cooperation_rate"] == pytest.approx(0.1)
    assert rows["ALLC"]["cooperation_rate"] == 1.0 and rows["ALLD"]["cooperation_rate"] == 0.0
    for row in board:  # deterministic by construction: every game the same, the mean exact
        assert row["exact"] and row["games"] == 2 and row["groups"] == 1
        assert row["ci_low"] == row["ci_high"] == row["mean_payoff_per_round"]
    assert len(games) == 2
    assert games[0]["members"] == ["ALLC", "ALLD", "TFT"]
    assert games[0]["payoff_per_round"] == pytest.approx([0.15, 3.2, 2.85])
    assert games[0]["group_cooperation"] == pytest.approx((10 + 0 + 1) / 30)


def naive_game(members: tuple[str, ...], rounds: int) -> list[float]:
    """Each seat's payoff per round, played by hand: ALLC, ALLD, group TFT in the linear PD
    of N (a cooperator: 3 k/(N-1), a defector: 1 + 4 k/(N-1), k cooperating co-players)."""
    n = len(members)
    last: list[bool] | None = None
    totals = [0.0] * n
    for _ in range(rounds):
        moves = []
        for seat, who in enumerate(members):
            if who == "ALLC":
                moves.append(True)
            elif who == "ALLD":
                moves.append(False)
            else:
                moves.append(last is None or all(last[j] for j in range(n) if j != seat))
        for seat in range(n):
            k = sum(moves[j] for j in range(n) if j != seat)
            totals[seat] += 3 * k / (n - 1) if moves[seat] else 1 + 4 * k / (n - 1)
        last = moves
    return [t / rounds for t in totals]


def test_with_replacement_every_multiset_against_a_naive_simulation(tmp_path: Path) -> None:
    field = ["ALLC", "ALLD", "TFT"]
    path = config(tmp_path, field, group_size=3, repetitions=1, with_replacement=True)
    board, games = run(tmp_path, path)
    assert len(games) == 10  # multisets of 3 from 3: C(5, 3)
    expected: dict[str, list[float]] = {name: [] for name in field}
    for group in combinations_with_replacement(field, 3):
        pays = naive_game(group, 10)
        for name in set(group):
            seats = [p for who, p in zip(group, pays, strict=True) if who == name]
            expected[name].append(sum(seats) / len(seats))
    rows = by_player(board)
    for name in field:
        assert rows[name]["games"] == len(expected[name]) == 6
        assert rows[name]["mean_payoff_per_round"] == pytest.approx(statistics.mean(expected[name]))


def test_ties_share_the_better_rank(tmp_path: Path) -> None:
    # Pairs of the 2x2 PD: ALLC and its copy earn (3 + 0) / 2 each, ALLD 5.
    players = ["ALLC", {"type": "policy", "policy": "ALLC", "name": "ALLC2"}, "ALLD"]
    board, _ = run(tmp_path, config(tmp_path, players, group_size=2, repetitions=1))
    assert [(r["player"], r["rank"]) for r in board] == [("ALLD", 1), ("ALLC", 2), ("ALLC2", 2)]
    assert by_player(board)["ALLC"]["mean_payoff_per_round"] == pytest.approx(1.5)


def test_interval_is_student_t_over_a_players_three_games(tmp_path: Path) -> None:
    # 4 players in groups of 3: each player is in 3 groups; with noise the games differ, and
    # with fewer than 5 games the interval is Student-t (df 2: 4.302653), clipped to the game's
    # payoff range [0, 5].
    path = config(
        tmp_path, ["ALLC", "TFT", "WSLS", "RANDOM"], group_size=3, repetitions=1, noise=0.2
    )
    board, games = run(tmp_path, path)
    for row in board:
        values = [
            g["payoff_per_round"][g["members"].index(row["player"])]
            for g in games
            if row["player"] in g["members"]
        ]
        assert len(values) == 3 and not row["exact"]
        mean = statistics.mean(values)
        half = 4.302652729911275 * statistics.stdev(values) / math.sqrt(3)
        assert row["mean_payoff_per_round"] == pytest.approx(mean)
        assert row["ci_low"] == pytest.approx(max(0.0, mean - half))
        assert row["ci_high"] == pytest.approx(min(5.0, mean + half))


def test_a_new_player_changes_no_other_groups_games(tmp_path: Path) -> None:
    common = {"group_size": 3, "repetitions": 2, "noise": 0.1}
    _, before = run(tmp_path, config(tmp_path, ["TFT", "RANDOM", "WSLS"], "a", **common), "a")
    _, after = run(
        tmp_path, config(tmp_path, ["TFT", "RANDOM", "ALLD", "WSLS"], "b", **common), "b"
    )
    kept = [g for g in after if g["group"] == "TFT_vs_RANDOM_vs_WSLS"]
    assert len(kept) == 2 and len(after) == 8
    for old, new in zip(before, kept, strict=True):
        assert old["seed"] == new["seed"]
        assert old["payoff_per_round"] == new["payoff_per_round"]
        assert old["cooperation_rate"] == new["cooperation_rate"]


def test_same_seed_same_artifacts(tmp_path: Path) -> None:
    path = config(tmp_path, ["TFT", "RANDOM", "WSLS", "CC"], group_size=3, repetitions=3, noise=0.1)
    first = run(tmp_path, path, "one")
    assert run(tmp_path, path, "two") == first
    assert len({g["seed"] for g in first[1]}) == len(first[1])  # every game its own seed


def test_groups_of_distinct_players_and_multisets() -> None:
    assert member_groups(4, 2, False) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert len(member_groups(5, 3, True)) == math.comb(7, 3)
    assert member_groups(2, 2, True) == [(0, 0), (0, 1), (1, 1)]


def test_plan_puts_seats_in_config_order(tmp_path: Path) -> None:
    loaded = load_config(config(tmp_path, ["WSLS", "ALLD", "TFT"], group_size=2), "tournament")
    plans = plan_group_games(loaded)
    assert [p.condition for p in plans[::5]] == ["WSLS_vs_ALLD", "WSLS_vs_TFT", "ALLD_vs_TFT"]
    assert all(p.n_players == 2 and not p.logged for p in plans)
