"""Reading a groups run for the app (`ui.group_data`): the manifest's conditions and plan, one
game's rounds as per-seat arrays with its messages, found without reading the other games.

The run is written by hand (`tests.support.group_run`): a public goods game of five (r = 3,
c = 1), where a round with k cooperators pays each cooperator 0.6 k - 1 and each defector 0.6 k;
the expected values below are worked out from the moves spelled out there.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from tests.support.group_run import FIVE_NAMES, TEN_NAMES, write_group_run, write_group_tables

from pdbench.ui import data, game_lines, group_data


@pytest.fixture(scope="module")
def group_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_group_run(tmp_path_factory.mktemp("groups"))


@pytest.fixture
def manifest(group_run: Path) -> dict:
    return group_data.load_manifest(group_run)


def test_conditions_and_plan_come_from_the_manifest(manifest: dict) -> None:
    five, ten = group_data.conditions(manifest)
    assert (five.name, five.seats, five.n_players, five.talks) == (
        "five_talking",
        FIVE_NAMES,
        5,
        True,
    )
    assert five.games == ((0, 6), (1, 6)) and five.replicates == [0, 1]
    assert five.game_label == "public_goods N=5 r=3 c=1" and five.noise == 0.05
    assert (ten.n_players, ten.talks, ten.replicates) == (10, True, [0])
    assert group_data.plan(manifest) == (
        ("five_talking", 0, 6),
        ("five_talking", 1, 6),
        ("ten_seats", 0, 4),
    )
    assert group_data.describe(five) == (
        "5 seats · public_goods N=5 r=3 c=1 · 6 rounds · noise 0.05 · talks before each move"
    )


# (round, seat) -> (move, payoff, running total), by hand from the moves:
# round 1: A-D cooperate, E defects (k = 4): C 1.4, D 2.4;
# round 2: A, B, D cooperate (k = 3): C 0.8, D 1.8;
# round 3: A and D cooperate (k = 2): C 0.2, D 1.2.
ROUND_3 = [
    (0, "C", 0.2, 1.4 + 0.8 + 0.2),
    (1, "D", 1.2, 1.4 + 0.8 + 1.2),
    (2, "D", 1.2, 1.4 + 1.8 + 1.2),
    (3, "C", 0.2, 1.4 + 0.8 + 0.2),
    (4, "D", 1.2, 2.4 + 1.8 + 1.2),
]


@pytest.mark.parametrize(("seat", "move", "payoff", "total"), ROUND_3)
def test_round_three_of_the_five_seat_game(
    group_run: Path, manifest: dict, seat: int, move: str, payoff: float, total: float
) -> None:
    game = group_data.load_game(group_run, manifest, "five_talking", 0)
    assert game.moves[seat, 2] == move
    assert game.payoffs[seat, 2] == pytest.approx(payoff)
    assert game.totals[seat, 2] == pytest.approx(total)


def test_a_game_as_per_seat_arrays(group_run: Path, manifest: dict) -> None:
    game = group_data.load_game(group_run, manifest, "five_talking", 0)
    assert (game.n_seats, game.n_rounds, game.names) == (5, 6, FIVE_NAMES)
    assert game.round_index.tolist() == [0, 1, 2, 3, 4, 5]
    assert ["".join(row) for row in game.moves] == [
        "CCCCCC",
        "CCDCCC",
        "CDDDDD",
        "CCCDDC",
        "DDDDDD",
    ]
    assert game.cooperators.tolist() == [4, 3, 2, 2, 2, 3]
    # Seat D meant C in round 4 (noise flipped it); its round 6 was a fallback.
    assert np.argwhere(game.intended != game.moves).tolist() == [[3, 3]]
    assert np.argwhere(game.fallbacks).tolist() == [[3, 5]]
    # E, the free rider, ends with 2.4 + 1.8 + 1.2 + 1.2 + 1.2 + 1.8.
    assert game.totals[4, -1] == pytest.approx(9.6)


def test_messages_per_round_with_writer_and_addressee(group_run: Path, manifest: dict) -> None:
    game = group_data.load_game(group_run, manifest, "five_talking", 0)
    assert [len(said) for said in game.messages] == [2, 0, 2, 0, 0, 0]
    first, second = game.messages[2]
    assert (first.writer, first.to, first.text, first.intent) == (2, 3, "Defect with me, D.", "D")
    assert (second.writer, second.to, second.intent) == (0, None, None)
    assert [(m.writer, m.intent) for m in game.messages[0]] == [(0, "C"), (4, "C")]
    assert game.talks


def test_the_other_games_are_their_own(group_run: Path, manifest: dict) -> None:
    rep1 = group_data.load_game(group_run, manifest, "five_talking", 1)
    assert "".join(rep1.moves[4]) == "DCDCDC" and rep1.replicate == 1
    assert [m.text for m in rep1.messages[0]] == ["Trust me this time."]
    ten = group_data.load_game(group_run, manifest, "ten_seats", 0)
    assert (ten.n_seats, ten.n_rounds, ten.names) == (10, 4, TEN_NAMES)
    assert [len(said) for said in ten.messages] == [2, 0, 0, 0]
    # k = 6 of 10 cooperate in round 1 of the public goods game of ten: D gets 3 * 6 / 10.
    assert ten.payoffs[0, 0] == pytest.approx(1.8) and ten.moves[0, 0] == "D"


def test_a_game_is_found_by_probes_without_scanning_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write_group_run(tmp_path)
    manifest = group_data.load_manifest(run)

    def no_scan(path: Path) -> None:
        raise AssertionError("the whole file was scanned")

    monkeypatch.setattr(game_lines, "scan_lines", no_scan)
    for condition, replicate, rounds in group_data.plan(manifest):
        game = group_data.load_game(run, manifest, condition, replicate)
        assert (game.condition, game.replicate, game.n_rounds) == (condition, replicate, rounds)


def test_a_file_out_of_plan_order_is_scanned(tmp_path: Path) -> None:
    run = write_group_run(tmp_path)
    path = run / "rounds.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[12:] + lines[6:12] + lines[:6]))  # games reversed
    manifest = group_data.load_manifest(run)
    game = group_data.load_game(run, manifest, "five_talking", 0)
    assert game.cooperators.tolist() == [4, 3, 2, 2, 2, 3]


def test_problems_are_one_line_errors(tmp_path: Path) -> None:
    run = write_group_run(tmp_path)
    manifest = group_data.load_manifest(run)
    with pytest.raises(data.RoundsFileError, match="no rounds of nope replicate 0"):
        group_data.load_game(run, manifest, "nope", 0)
    (run / "rounds.jsonl").unlink()
    with pytest.raises(data.RoundsFileError, match="rounds file not found"):
        group_data.load_game(run, manifest, "five_talking", 0)
    with pytest.raises(data.NotARun, match="not a pdbench groups run"):
        group_data.load_manifest(tmp_path)


def test_a_running_run_is_not_shown(tmp_path: Path) -> None:
    run = write_group_run(tmp_path)
    path = run / "groups_manifest.json"
    path.write_text(path.read_text().replace('"completed"', '"running"'))
    with pytest.raises(data.RunInProgress, match="groups run groups_fixture is still in progress"):
        group_data.load_manifest(run)


def test_tables_are_read_when_present(tmp_path: Path) -> None:
    run = write_group_run(tmp_path)
    assert group_data.load_table(run, "seats.parquet") is None
    write_group_tables(run)
    seats = group_data.load_table(run, "seats.parquet")
    assert seats is not None and list(seats["name"]) == list(FIVE_NAMES)
    with pytest.raises(ValueError, match="not a groups table"):
        group_data.load_table(run, "leaderboard.parquet")
    (run / "aggregates.parquet").write_bytes(b"not parquet")
    with pytest.raises(data.ArtifactError, match="unreadable"):
        group_data.load_table(run, "aggregates.parquet")
    shutil.rmtree(run)
