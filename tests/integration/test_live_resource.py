"""A person's seat in a resource game (the Play tab's public goods game and commons): a config
file may not seat a person, the mapping loader may with `human_seats` (one replicate, no talk,
one amount per round; a commons may stop early), and live play
(`runners.live_resource.replay_resource_game`, after every answer) shows exactly the rounds the
saved pgg or commons run then records.

The public goods game, by hand (PGG-Bench's rules for N = 4: balances of 20 carried, the pot
multiplied by 1.6, floored, shared in whole tokens, the remainder carried; a punishment token
costs 1 and takes 3, one target a round, acts in seat order, a target losing at most half its
balance). Seats: A the person, B FREE_RIDER, C CONDITIONAL_COOPERATOR (first E // 2 = 10, then
the last round's mean rounded half up), D PUNISHER (its limit; 2 tokens on the first seat in
seat order that gave 0 while someone gave).

  round 1: A 5, B 0, C 10, D 20: pot 35, floor(56) // 4 = 14 each, carry 0.
           after the fund A 29, B 34, C 24, D 14.  A spends 2 on B (6 <= floor(34 / 2)),
           then D 2 on B (6 <= floor(28 / 2)): A 27, B 22, C 24, D 12.
  round 2: A 0, B 0, C int(35 / 4 + 0.5) = 9, D 12: pot 21, floor(33.6) = 33, 33 // 4 = 8,
           carry 1. after the fund A 35, B 30, C 23, D 8. A punishes no one; D spends 2 on A
           (the first who gave 0): A 29, B 30, C 23, D 6.

The commons, by hand (GovSim's lake of 100 doubling, collapse below 5, five seats; the
sustainable share (S // 2) // 5; MODERATE asks share + max(1, share // 5)). Seats: A the person,
B, C, E SUSTAINABLE, D MODERATE. A asks 20, 30, 20:

  season 1: stock 100, share 10: 20 + 10 + 10 + 12 + 10 = 62, left 38, next 76.
  season 2: stock 76, share 7: 30 + 7 + 7 + 8 + 7 = 59, left 17, next 34.
  season 3: stock 34, share 3: 20 + 3 + 3 + 4 + 3 = 33, left 1 < 5: collapsed, game over.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.support.configs import REPO, RUN, write_config

from pdbench.agents.resource_human import HumanAnswersExhausted, HumanSeat
from pdbench.errors import ConfigError
from pdbench.runners.config.loader import load_config, load_mapping
from pdbench.runners.live_resource import replay_resource_game
from pdbench.storage.record.resource_record import read_lines
from pdbench.ui import play_resource_launcher as launcher

CONFIGS = REPO / "configs"
PGG_SEATS = ["FREE_RIDER", "CONDITIONAL_COOPERATOR", "PUNISHER"]
COMMONS_SEATS = ["SUSTAINABLE", "SUSTAINABLE", "MODERATE", "SUSTAINABLE"]


def resource_game(kind: str, human: dict[str, Any], n_rounds: int, **section: Any) -> dict:
    """A pgg or commons config with Ana in seat A."""
    seats = PGG_SEATS if kind == "pgg" else COMMONS_SEATS
    body: dict[str, Any] = {
        "replicates": 1,
        "conditions": [{"name": "ana", "seats": [{"type": "human", "name": "Ana", **human},
                                                 *seats]}],
    }  # fmt: skip
    if kind == "pgg":
        body["game"] = {"preset": "pgg_bench"}
    body.update(section)
    return {"run": dict(RUN), "horizon": {"type": "fixed", "n_rounds": n_rounds}, kind: body}


def load(config: dict, kind: str) -> Any:
    return load_mapping(config, "t", CONFIGS, kind=kind, human_seats=True)


def test_a_config_file_may_not_seat_a_person(tmp_path: Path) -> None:
    path = write_config(resource_game("pgg", {"amounts": [5, 0]}, 2), tmp_path)
    with pytest.raises(ConfigError, match="a person cannot sit in a pgg game"):
        load_config(path)


@pytest.mark.parametrize(
    ("kind", "human", "n", "section", "message"),
    [
        ("pgg", {"amounts": [5]}, 2, {}, "1 amounts for a game of 2 rounds"),
        ("pgg", {"amounts": [5, 0]}, 2, {"replicates": 2}, "pgg.replicates must be 1"),
        ("pgg", {"amounts": [5, 0]}, 2, {"talk": True}, "without talk"),
        ("pgg", {"amounts": [5, 0], "moves": "CD"}, 2, {}, "amounts, not moves"),
        ("commons", {"amounts": [5, 5, 5]}, 2, {}, "3 amounts for a game of 2 seasons"),
        ("commons", {"amounts": [5], "punishments": [[[1, 2]]]}, 2, {}, "punishment is off"),
    ],
)
def test_a_human_seat_is_one_recorded_game(
    kind: str, human: dict, n: int, section: dict, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load(resource_game(kind, human, n, **section), kind)


def test_a_commons_may_hold_fewer_amounts_than_seasons() -> None:
    """The lake may collapse before the last season: the person answered fewer seasons."""
    loaded = load(resource_game("commons", {"amounts": [20, 30, 20]}, 5), "commons")
    assert len(loaded.agents) == 5


def test_the_human_seat_answers_its_recorded_values_and_nothing_more() -> None:
    seat = HumanSeat("Ana", [5, 0], [[[1, 2]]])
    assert seat.amounts == (5, 0) and seat.punishments == ({1: 2},)
    with pytest.raises(HumanAnswersExhausted, match="no answer for round 3"):
        seat._amount(2)
    assert asyncio.run(seat.message(None)) is None  # type: ignore[arg-type]


def test_pgg_live_rounds_are_the_hand_worked_ones() -> None:
    loaded = load(resource_game("pgg", {"amounts": [0, 0]}, 2), "pgg")
    one = replay_resource_game(loaded, [5], [[[1, 2]]])
    assert [r["contributions"] for r in one.records] == [[5, 0, 10, 20]]
    assert one.records[0]["balances"] == [27.0, 22.0, 24.0, 12.0]
    assert one.records[0]["punish_tokens"] == [[0, 1, 2], [3, 1, 2]]
    assert not one.finished
    two = replay_resource_game(loaded, [5, 0], [[[1, 2]]])
    assert two.records[0] == {**one.records[0], "timestamp_utc": two.records[0]["timestamp_utc"]}
    second = two.records[1]
    assert second["contributions"] == [0, 0, 9, 12]
    assert (second["pot"], second["share"], second["carry_out"]) == (21.0, 8.0, 1.0)
    assert second["post_fund"] == [35.0, 30.0, 23.0, 8.0]
    assert second["punish_tokens"] == [[3, 0, 2]]
    assert second["balances"] == [29.0, 30.0, 23.0, 6.0]
    assert two.finished and second["last"]


def test_commons_live_seasons_are_the_hand_worked_ones() -> None:
    loaded = load(resource_game("commons", {"amounts": [0] * 5}, 5), "commons")
    live = replay_resource_game(loaded, [20, 30, 20])
    got = [(r["stock"], r["requested"], r["left"], r["next_stock"]) for r in live.records]
    assert got == [
        (100, [20, 10, 10, 12, 10], 38, 76),
        (76, [30, 7, 7, 8, 7], 17, 34),
        (34, [20, 3, 3, 4, 3], 1, 2),
    ]
    assert [r["collapsed"] for r in live.records] == [False, False, True]
    assert live.finished and live.collapsed and live.n_rounds == 5


def _untimed(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("timestamp_utc", "run_id")} for r in records]


@pytest.mark.parametrize(
    ("kind", "seats", "amounts", "punishments"),
    [
        ("pgg", ["policy:FREE_RIDER", "policy:CONDITIONAL_COOPERATOR", "policy:PUNISHER"],
         [5, 0], [[[1, 2]]]),
        ("commons", ["policy:SUSTAINABLE", "policy:SUSTAINABLE", "policy:MODERATE",
                     "policy:SUSTAINABLE"], [20, 30, 20], []),
        ("pgg", ["persona:cooperative", "persona:liar", "policy:PUNISHER"], [7, 3], [[], [[1, 1]]]),
    ],
)  # fmt: skip
def test_the_saved_run_records_the_rounds_played_live(
    tmp_path: Path, kind: str, seats: list[str], amounts: list[int], punishments: list
) -> None:
    """The Play tab's path: replay after each answer, then save as a run: the same rounds."""
    options = {o.key: o for o in launcher.co_player_options(kind, CONFIGS)}
    n_rounds = 2 if kind == "pgg" else 5
    request = launcher.ResourcePlayRequest(
        kind, tuple(options[s] for s in seats), "Ana", n_rounds, 11
    )
    live = launcher.replay_resource_play(request, CONFIGS, amounts, punishments)
    assert live.finished
    root = tmp_path / "runs"
    root.mkdir()
    finished = launcher.save_resource_play(request, CONFIGS, root, amounts, punishments)
    import orjson

    saved = [orjson.loads(line) for line in read_lines(finished.run_dir)]
    assert _untimed(saved) == _untimed(live.records)
    assert (finished.run_dir / f"{kind}_manifest.json").is_file()
    assert (finished.run_dir / "resource_seats.parquet").is_file()


def test_a_person_of_a_pairwise_or_group_game_has_moves_not_amounts() -> None:
    from tests.integration.test_live_group import group_game

    config = group_game()
    config["groups"]["conditions"][0]["seats"][0]["amounts"] = [1, 2, 3]
    with pytest.raises(ConfigError, match="amounts and punishments are a resource game's"):
        load_mapping(config, "t", CONFIGS, kind="groups", human_seats=True)
