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
from tests.support.configs import execute, play_round_by_round

from pdbench.errors import RunError
from pdbench.runners.config.loader import load_config
from pdbench.runners.plan import leaderboard_table
from pdbench.runners.science.tournament import plan_matches, play_tournament, tournament_tables
from pdbench.storage.schema import ROUND_FIELDS


def load_tournament(path: Path) -> Any:
    return load_config(path, "tournament")


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
    assert [r["rank"] for r in result.leaderboard] == [1, 2, 2, 4, 5]  # TFT and GRIM tie
    assert (board["ALLD"]["wins"], board["ALLD"]["losses"]) == (8, 0)  # 4 opponents x 2 reps
    assert (board["TFT"]["wins"], board["TFT"]["draws"], board["TFT"]["losses"]) == (0, 6, 2)
    assert board["ALLD"]["cooperation_rate"] == 0.0
    # WSLS cooperates in 600 of its 800 turns: all 200 against each nice player, 100 vs ALLD.
    assert board["WSLS"]["cooperation_rate"] == pytest.approx(700 / 800)
    table = result.payoff_table()
    assert table[1, 4] == pytest.approx(3.0) and table[4, 1] == pytest.approx(0.5)
    text = leaderboard_table(result.leaderboard)
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
    result = execute(path)
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            "leaderboard.parquet",
            "matches.parquet",
            "payoff_matrix.parquet",
            "rounds",
            "rounds.jsonl",
            "tournament_manifest.json",
        ]
    )
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
    # Logged rounds have the experiment's record fields: condition "<A>_vs_<B>", replicate =
    # the repetition.
    rounds = [orjson.loads(line) for line in (out / "rounds.jsonl").read_bytes().splitlines()]
    assert len(rounds) == sum(matches["rounds"])
    assert all(tuple(r) == ROUND_FIELDS for r in rounds)
    first = [r for r in rounds if (r["condition"], r["replicate"]) == ("TFT_vs_TFT", 0)]
    assert [r["round_index"] for r in first] == list(range(matches["rounds"][0]))
    assert sum(r["agent_a_payoff"] for r in first) == pytest.approx(matches["score_a"][0])
    assert first[-1]["agent_a_cum_payoff"] == pytest.approx(matches["score_a"][0])
    board = pq.read_table(out / "leaderboard.parquet").to_pydict()
    assert board["rank"] == [1, 2, 3] and set(board["player"]) == {"TFT", "GTFT", "RANDOM"}
    pairwise = pq.read_table(out / "payoff_matrix.parquet").to_pydict()
    assert len(pairwise["player"]) == 9
    manifest = orjson.loads((out / "tournament_manifest.json").read_bytes())
    assert manifest["status"] == "completed" and manifest["totals"]["batched_matches"] == 12
    assert manifest["config_sha256"] == result.manifest["config_sha256"]
    with pytest.raises(RunError, match="not empty"):
        execute(path)
    yaml_data = yaml.safe_load(path.read_text())
    yaml_data["tournament"]["log_rounds"] = False
    path.write_text(yaml.safe_dump(yaml_data))
    execute(path, overwrite=True)
    assert not (out / "rounds.jsonl").exists()  # policy matches are logged only on request


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


def test_per_round_path_equals_batch(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        ["GTFT", "WSLS", "TF2T", "ALTERNATOR", "RANDOM"],
        noise=0.1,
        horizon={"type": "geometric", "stop_prob": 0.1},
    )
    loaded = load_tournament(path)
    batched = play_tournament(loaded)
    assert batched.manifest["totals"]["batched_matches"] == len(batched.matches["rounds"])
    plans = plan_matches(loaded)
    outcomes = {r.plan.index: r.outcome for r in play_round_by_round(loaded, plans)}
    slow = tournament_tables(loaded, plans, outcomes)
    for key in ("rounds", "score_a", "score_b", "coop_rate_a", "coop_rate_b"):
        assert list(slow.matches[key]) == list(batched.matches[key])
    assert slow.leaderboard == batched.leaderboard


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
    from pdbench.runners.lifecycle.session import RunOptions
    from pdbench.runners.science.tournament import run_tournament

    result = run_tournament(loaded, RunOptions(output_dir=tmp_path / "example"))
    assert result.manifest["totals"]["matches"] == 15 * 10
    assert len(result.leaderboard) == 6


def test_match_seeds_are_derive_seed(tmp_path: Path) -> None:
    from pdbench.core.rng import derive_seed
    from pdbench.runners.science.tournament import match_seeds

    for a, b in (("TFT", "ALLD"), ("mock-persona-v1[cooperative]", "axelrod:Prober"), ("é", "x y")):
        assert match_seeds(77, a, b, 30) == [derive_seed(77, "match", a, b, r) for r in range(30)]
    plans = plan_matches(load_tournament(write_config(tmp_path, ["TFT", "ALLD", "GRIM"])))
    assert [(p.condition, p.replicate) for p in plans] == [
        ("TFT_vs_ALLD", 0),
        ("TFT_vs_ALLD", 1),
        ("TFT_vs_GRIM", 0),
        ("TFT_vs_GRIM", 1),
        ("ALLD_vs_GRIM", 0),
        ("ALLD_vs_GRIM", 1),
    ]
    assert plans[3].seed == derive_seed(5, "match", "TFT", "GRIM", 1)


def test_fast_and_engine_matches_together_equal_the_engine(tmp_path: Path) -> None:
    """Policy matches are played for their totals (`play_fast`), the others by the engine; the
    tables and written artifacts equal those of every match played by the engine, and the
    progress counts every game and round."""
    from pdbench.runners.lifecycle.session import RunOptions, play_in_memory
    from pdbench.runners.science.tournament import run_tournament

    tf2t_w1 = {"type": "policy", "policy": "TF2T", "name": "TF2T-w1", "history_window": 1}
    path = write_config(
        tmp_path,
        ["GTFT", "WSLS", tf2t_w1, "ALLD"],
        noise=0.1,
        horizon={"type": "geometric", "stop_prob": 0.05},
        self_play=True,
        repetitions=5,
    )
    loaded = load_tournament(path)
    plans = plan_matches(loaded)
    engine = tournament_tables(loaded, plans, play_in_memory(loaded, plans))
    ticks: list[tuple[int, int]] = []
    result = run_tournament(loaded, RunOptions(progress=lambda d, t: ticks.append((d, t))))
    totals = result.manifest["totals"]
    assert 0 < totals["per_round_matches"] < totals["matches"] == len(plans) == 10 * 5
    for key, values in engine.matches.items():
        assert list(result.matches[key]) == list(values), key
    assert result.leaderboard == engine.leaderboard and result.pairwise == engine.pairwise
    written = pq.read_table(tmp_path / "out" / "matches.parquet").to_pydict()
    assert written["score_a"] == list(engine.matches["score_a"])
    assert ticks[-1] == (totals["rounds"], totals["rounds"])
