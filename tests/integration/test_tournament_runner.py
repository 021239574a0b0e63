"""Tournaments: exact scores without noise, artifacts, seeds, per-round players, the example.

Expected scores are the standard definitions worked out by hand for 200 turns with the default
payoffs (R=3, S=0, T=5, P=1):

- nice vs nice (ALLC, TFT, GRIM, WSLS among themselves): C every turn: 200 x 3 = 600 each.
- ALLC vs ALLD: ALLC 200 x 0 = 0, ALLD 200 x 5 = 1000.
- TFT vs ALLD: turn 1 CD, then DD: TFT 0 + 199 x 1 = 199, ALLD 5 + 199 x 1 = 204.
- GRIM vs ALLD: same moves as TFT: 199 / 204.
- WSLS vs ALLD: WSLS plays C, D, C, D, ... (after CD it got S < R: shift to D; after DD it got
  P < R: shift to C): 100 turns CD (0 / 5) and 100 turns DD (1 / 1): WSLS 100, ALLD 600.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
import yaml

from pdbench.errors import RunError
from pdbench.runners import matches as matches_module
from pdbench.runners.games_config import load_tournament
from pdbench.runners.tournament import (
    ARTIFACTS,
    format_leaderboard,
    play_tournament,
    run_tournament,
)

REPO = Path(__file__).resolve().parents[2]

HAND = {  # (A, B) -> (A's total, B's total) over 200 turns, see the module docstring
    ("ALLC", "ALLD"): (0, 1000),
    ("ALLC", "TFT"): (600, 600),
    ("ALLC", "GRIM"): (600, 600),
    ("ALLC", "WSLS"): (600, 600),
    ("ALLD", "TFT"): (204, 199),
    ("ALLD", "GRIM"): (204, 199),
    ("ALLD", "WSLS"): (600, 100),
    ("TFT", "GRIM"): (600, 600),
    ("TFT", "WSLS"): (600, 600),
    ("GRIM", "WSLS"): (600, 600),
}


def write_config(tmp_path: Path, players: list[Any], **tournament: Any) -> Path:
    shutil.copytree(REPO / "configs", tmp_path / "configs", dirs_exist_ok=True)
    noise = tournament.pop("noise", 0.0)
    horizon = tournament.pop("horizon", {"type": "fixed", "n_rounds": 200})
    data = {
        "run": {"run_id": "t", "seed": 5, "output_dir": str(tmp_path / "out")},
        "game": {"noise": noise},
        "horizon": horizon,
        "tournament": {"players": players, "repetitions": 2, **tournament},
    }
    path = tmp_path / "configs" / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_deterministic_scores_match_hand_calculation(tmp_path: Path) -> None:
    names = ["ALLC", "ALLD", "TFT", "GRIM", "WSLS"]
    result = play_tournament(load_tournament(write_config(tmp_path, names)))
    m = result.matches
    assert len(m["player_a"]) == 10 * 2
    for a, b, sa, sb, n in zip(
        m["player_a"], m["player_b"], m["score_a"], m["score_b"], m["rounds"], strict=True
    ):
        assert (sa, sb) == HAND[(a, b)] and n == 200
    board = {row["player"]: row for row in result.leaderboard}
    # Mean per-round score over the four opponents: ALLD (1000+204+204+600)/800 = 2.51,
    # TFT = GRIM (600+199+600+600)/800 = 2.49875, WSLS (600+100+600+600)/800 = 2.375,
    # ALLC (0+600+600+600)/800 = 2.25.
    expected = {"ALLD": 2.51, "TFT": 2.49875, "GRIM": 2.49875, "WSLS": 2.375, "ALLC": 2.25}
    for name, value in expected.items():
        assert board[name]["mean_score_per_round"] == pytest.approx(value)
    assert [r["player"] for r in result.leaderboard] == ["ALLD", "TFT", "GRIM", "WSLS", "ALLC"]
    assert [r["rank"] for r in result.leaderboard] == [1, 2, 3, 4, 5]
    assert (board["ALLD"]["wins"], board["ALLD"]["losses"]) == (8, 0)  # 4 opponents x 2 reps
    assert (board["TFT"]["wins"], board["TFT"]["draws"], board["TFT"]["losses"]) == (0, 6, 2)
    assert board["ALLD"]["cooperation_rate"] == 0.0
    # WSLS cooperates in 600 of its 800 turns: all 200 against each nice player, 100 vs ALLD.
    assert board["WSLS"]["cooperation_rate"] == pytest.approx(700 / 800)
    table = result.payoff_table()
    assert table[1, 4] == pytest.approx(3.0) and table[4, 1] == pytest.approx(0.5)
    text = format_leaderboard(result)
    assert text.splitlines()[2].split()[:2] == ["1", "ALLD"]


def test_artifacts_and_self_play(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        ["TFT", "GTFT", "RANDOM"],
        noise=0.05,
        self_play=True,
        log_rounds=True,
        horizon={"type": "geometric", "stop_prob": 0.05},
    )
    result = run_tournament(path)
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == sorted(ARTIFACTS)
    matches = pq.read_table(out / "matches.parquet").to_pydict()
    assert list(matches) == [
        "match",
        "player_a",
        "player_b",
        "repetition",
        "seed",
        "rounds",
        "score_a",
        "score_b",
        "coop_rate_a",
        "coop_rate_b",
    ]
    assert len(matches["match"]) == 6 * 2  # 3 pairs + 3 self-pairs, 2 repetitions
    rounds = pq.read_table(out / "rounds.parquet").to_pydict()
    assert len(rounds["match"]) == sum(matches["rounds"])
    first = [s for m, s in zip(rounds["match"], rounds["payoff_a"], strict=True) if m == 0]
    assert sum(first) == pytest.approx(matches["score_a"][0])
    board = pq.read_table(out / "leaderboard.parquet").to_pydict()
    assert board["rank"] == [1, 2, 3] and set(board["player"]) == {"TFT", "GTFT", "RANDOM"}
    pairwise = pq.read_table(out / "payoff_matrix.parquet").to_pydict()
    assert len(pairwise["player"]) == 9
    manifest = orjson.loads((out / "tournament_manifest.json").read_bytes())
    assert manifest["status"] == "completed" and manifest["totals"]["batched_matches"] == 12
    assert manifest["config_sha256"] == result.manifest["config_sha256"]
    with pytest.raises(RunError, match="not empty"):
        run_tournament(path)
    run_tournament(path, overwrite=True, log_rounds=False)
    assert not (out / "rounds.parquet").exists()


def test_adding_a_player_changes_no_other_match(tmp_path: Path) -> None:
    small = play_tournament(
        load_tournament(write_config(tmp_path, ["ALLC", "GTFT", "TFT"], noise=0.1))
    )
    big = play_tournament(
        load_tournament(
            write_config(tmp_path, ["WSLS", "ALLC", "GTFT", "RANDOM", "TFT"], noise=0.1)
        )
    )

    def rows(result: Any) -> dict:
        m = result.matches
        keys = zip(m["player_a"], m["player_b"], m["repetition"], strict=True)
        values = zip(m["seed"], m["score_a"], m["score_b"], m["rounds"], strict=True)
        return {tuple(k): tuple(v) for k, v in zip(keys, values, strict=True)}

    common = rows(small)
    assert all(rows(big)[key] == value for key, value in common.items())


def test_per_round_path_equals_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_config(
        tmp_path,
        ["GTFT", "WSLS", "TF2T", "ALTERNATOR", "RANDOM"],
        noise=0.1,
        horizon={"type": "geometric", "stop_prob": 0.1},
    )
    batched = play_tournament(load_tournament(path))
    real = matches_module.batch_policies

    def nothing_batchable(loaded: Any) -> Any:
        flags, specs = real(loaded)
        return flags & False, specs

    monkeypatch.setattr(matches_module, "batch_policies", nothing_batchable)
    slow = play_tournament(load_tournament(path), log_rounds=True)
    assert slow.manifest["totals"]["per_round_matches"] == len(slow.matches["rounds"])
    for key in ("score_a", "score_b", "coop_rate_a", "coop_rate_b"):
        assert list(slow.matches[key]) == list(batched.matches[key])


def test_llm_and_small_window_players_play_round_by_round(tmp_path: Path) -> None:
    llm = {
        "ref": "agents/llm_default.yaml",
        "overrides": {"persona": "tit_for_tat", "name": "mock-tft", "mock": {"invalid_rate": 0.0}},
    }
    tf2t_w1 = {"type": "policy", "policy": "TF2T", "name": "TF2T-w1", "history_window": 1}
    path = write_config(tmp_path, ["ALLD", llm, tf2t_w1], horizon={"type": "fixed", "n_rounds": 12})
    result = play_tournament(load_tournament(path))
    assert result.manifest["totals"]["per_round_matches"] == 3 * 2
    m = result.matches
    scores = {
        (a, b): (sa, sb)
        for a, b, sa, sb in zip(
            m["player_a"], m["player_b"], m["score_a"], m["score_b"], strict=True
        )
    }
    # With a one-round window TF2T never sees two Ds, so it never retaliates: ALLD gets 12 x 5.
    assert scores[("ALLD", "TF2T-w1")] == (60, 0)
    # The mock's tit_for_tat persona cooperates first, then copies: ALLD 5 + 11 x 1, it 0 + 11.
    assert scores[("ALLD", "mock-tft")] == (16, 11)
    assert scores[("mock-tft", "TF2T-w1")] == (36, 36)


def test_example_config_runs(tmp_path: Path) -> None:
    loaded = load_tournament(REPO / "configs" / "tournament.yaml")
    assert loaded.names == ["ALLC", "ALLD", "TFT", "GRIM", "GTFT", "WSLS"]
    assert loaded.config.horizon.n_rounds == 200 and loaded.config.game.noise == 0.05
    assert loaded.config.tournament.repetitions == 10
    result = run_tournament(loaded, output_dir=tmp_path / "example")
    assert result.manifest["totals"]["matches"] == 15 * 10
    assert len(result.leaderboard) == 6


def test_match_seeds_are_derive_seed() -> None:
    from pdbench.core.rng import derive_seed
    from pdbench.runners.tournament import match_schedule, match_seeds

    for a, b in (("TFT", "ALLD"), ("mock-persona-v1[cooperative]", "axelrod:Prober"), ("é", "x y")):
        assert match_seeds(77, a, b, 30) == [derive_seed(77, "match", a, b, r) for r in range(30)]
    player_a, player_b, rep, seeds = match_schedule(["A", "B", "C"], 9, 2, self_play=False)
    assert list(zip(player_a, player_b, rep, strict=True)) == [
        (0, 1, 0),
        (0, 1, 1),
        (0, 2, 0),
        (0, 2, 1),
        (1, 2, 0),
        (1, 2, 1),
    ]
    assert int(seeds[3]) == derive_seed(9, "match", "A", "C", 1)
