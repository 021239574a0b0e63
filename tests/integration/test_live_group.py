"""A person's seat in a group game (the Play tab's group game): a config file may not seat a
person, the mapping loader may with `human_seats` (one recorded game: a fixed group, one
replicate, a fixed horizon of as many rounds as moves, no talk), and live play
(`runners.live_group.replay_group_game`, after every click) shows exactly the co-players' moves
the saved groups run then records, also for a co-player that draws at random and for a mock LLM
co-player whose replies come from the response cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.support.configs import REPO, RUN, write_config

from pdbench.errors import ConfigError, RunError
from pdbench.runners.config.loader import load_config, load_mapping
from pdbench.runners.live_group import replay_group_game
from pdbench.storage.record.group_fields import seat_field
from pdbench.ui import play_group_launcher as launcher

CONFIGS = REPO / "configs"


def group_game(moves: str = "CDC", **changes: Any) -> dict[str, Any]:
    """A groups config: Ana in seat A of a public goods group of three with TFT and CC."""
    condition = {
        "name": "ana_in_group",
        "seats": [
            {"type": "human", "name": "Ana", "moves": moves},
            {"type": "policy", "policy": "TFT"},
            {"type": "policy", "policy": "CC"},
        ],
    }
    condition.update(changes.pop("condition", {}))
    config = {
        "run": dict(RUN),
        "horizon": {"type": "fixed", "n_rounds": len(moves)},
        "group_game": {"kind": "public_goods", "r": 2.4, "c": 1.0},
        "groups": {"replicates": 1, "conditions": [condition]},
    }
    config.update(changes)
    return config


def test_a_config_file_may_not_seat_a_person(tmp_path: Path) -> None:
    path = write_config(group_game(), tmp_path)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert raised.value.lines() == [
        f"{path}: groups.conditions[0].seats[0]: a person plays a group in the app's Play "
        "tab, not from a config (got human)"
    ]
    with pytest.raises(ConfigError, match="not from a config"):  # the mapping, without the flag
        load_mapping(group_game(), "play", tmp_path, kind="groups")
    loaded = load_mapping(group_game(), "play", tmp_path, kind="groups", human_seats=True)
    assert [spec.name for spec in loaded.players] == ["Ana", "TFT", "CC"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"groups": {"replicates": 2, "conditions": group_game()["groups"]["conditions"]}},
            "groups.conditions[0].seats[0]: a human seat is one recorded game, so "
            "groups.replicates must be 1 (got 2)",
        ),
        (
            {"horizon": {"type": "fixed", "n_rounds": 5}},
            "groups.conditions[0].seats[0].moves: a human seat needs one move per round: 3 moves "
            "for a game of 5 rounds",
        ),
        (
            {"horizon": {"type": "geometric", "stop_prob": 0.1}},
            "groups.conditions[0].seats[0]: a human seat needs a fixed horizon (its moves are "
            "one game's)",
        ),
        (
            {"communication": {"mode": "every_round"}},
            "groups.conditions[0].seats[0]: a person plays a group without talk (valid mode: none)",
        ),
    ],
)
def test_a_human_seat_is_one_recorded_game(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_mapping(group_game(**changes), "play", tmp_path, kind="groups", human_seats=True)
    assert raised.value.lines() == [f"play: {message}"]


def test_a_pool_may_not_seat_a_person(tmp_path: Path) -> None:
    seats = group_game()["groups"]["conditions"][0]["seats"]
    pool = {"seats": None, "pool": seats, "size": 3}
    with pytest.raises(ConfigError) as raised:
        load_mapping(group_game(condition=pool), "play", tmp_path, kind="groups", human_seats=True)
    assert (
        "groups.conditions[0].pool[0]: a person sits in a fixed group (seats), not in a pool"
        in ("\n".join(raised.value.lines()))
    )


def test_the_game_so_far_is_replayed_round_by_round(tmp_path: Path) -> None:
    """By hand (see tests/ui/test_play_group.py): TFT answers CDC with CCD, CC with CCC."""
    loaded = load_mapping(group_game(), "play", tmp_path, kind="groups", human_seats=True)
    for k in range(4):
        live = replay_group_game(loaded, "CDC"[:k])
        moves = ["".join(r[seat_field(s, "action")] for r in live.records) for s in range(3)]
        assert moves == ["CDC"[:k], "CCD"[:k], "CCC"[:k]]
        assert (live.n_rounds, live.human_seat, live.finished) == (3, 0, k == 3)
    with pytest.raises(RunError, match="4 moves for a game of 3 rounds"):
        replay_group_game(loaded, "CDCC")
    with pytest.raises(RunError, match="a move is C or D"):
        replay_group_game(loaded, "CX")


def test_live_play_shows_the_moves_the_saved_run_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group of four with a co-player that draws (RANDOM) and a mock LLM: after every move
    the live game's rounds are the saved run's first rounds, every seat's move and payoff, and
    the saved run's LLM replies all come from the cache the live game filled."""
    monkeypatch.chdir(tmp_path)  # the response cache: .pdbench_cache in the working directory
    options = {o.key: o for o in launcher.co_player_options(CONFIGS)}
    request = launcher.GroupPlayRequest(
        co_players=(
            options["policy:RANDOM"],
            options["persona:tit_for_tat"],
            options["policy:GRIM"],
        ),
        name="Ana",
        n_rounds=5,
        seed=11,
        game="linear_pd",
    )
    moves = "CDDCC"
    shown = [launcher.replay_group_play(request, CONFIGS, moves[:k]) for k in range(6)]
    finished = launcher.save_group_play(request, CONFIGS, tmp_path / "runs", moves)
    rows = [json.loads(x) for x in (finished.run_dir / "rounds.jsonl").read_text().splitlines()]
    fields = [seat_field(s, what) for s in range(4) for what in ("action", "payoff")]
    for k, live in enumerate(shown):
        assert [[r[f] for f in fields] for r in live.records] == [
            [r[f] for f in fields] for r in rows[:k]
        ]
    assert "".join(r[seat_field(0, "action")] for r in rows) == moves
    # GRIM (seat D): C in a round exactly when no co-player has defected in any round before
    others = [[r[seat_field(s, "action")] for s in range(3)] for r in rows]
    grim = ["D" if any("D" in seen for seen in others[:t]) else "C" for t in range(5)]
    assert [r[seat_field(3, "action")] for r in rows] == grim
    assert "D" in grim  # Ana defected in round 2
    calls = [json.loads(x) for x in (finished.run_dir / "llm_calls.jsonl").read_text().split("\n")
             if x.strip()]  # fmt: skip
    assert len(calls) == 5 and all(c["cached"] for c in calls)
    manifest = json.loads((finished.run_dir / "groups_manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert (finished.run_dir / "config" / "agents" / "llm_group.yaml").is_file()
