"""The view in the URL (`pdbench.ui.url_state`): parsing with validation (a bad value is left
out, with a one-line note naming it), writing, and the parameters of others kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdbench.ui.url_state import (
    NAMES,
    Place,
    View,
    decode_path,
    encode,
    encode_path,
    merged,
    ours,
    parse,
    place_in_game,
)

TABS = ("view", "replay", "run", "tournament", "evolution", "play")
CWD = Path("/srv/bench")


@pytest.mark.parametrize(
    ("params", "view"),
    [
        ({}, View()),
        ({"tab": "replay"}, View(tab="replay")),
        ({"run": "data/runs/x"}, View(run="/srv/bench/data/runs/x")),
        ({"run": "/elsewhere/r1"}, View(run="/elsewhere/r1")),
        ({"run": "data/runs/../runs/x"}, View(run="/srv/bench/data/runs/x")),
        ({"cond": "TFT_vs_ALLD", "rep": "0"}, View(condition="TFT_vs_ALLD", replicate=0)),
        ({"rep": "12"}, View(replicate=12)),
        ({"round": "1"}, View(round=1)),
        ({"round": "250000"}, View(round=250000)),
        ({"zoom": "11-60"}, View(zoom=(11, 60))),
        ({"zoom": "7-7"}, View(zoom=(7, 7))),
        ({"tournament": "data/tournaments/t"}, View(tournament="/srv/bench/data/tournaments/t")),
        ({"evolution": "/e/v"}, View(evolution="/e/v")),
        ({"round": ["3", "9"]}, View(round=9)),  # repeated: the last one, as st.query_params
        ({"rep": " 2 "}, View(replicate=2)),
        ({"tab": "", "run": "", "round": ""}, View()),  # empty values: not given, no note
        ({"game": "abc123", "utm": "x"}, View()),  # not ours: ignored here
    ],
)
def test_good_values_are_read(params: dict[str, str], view: View) -> None:
    assert parse(params, TABS, CWD) == (view, [])


@pytest.mark.parametrize(
    ("params", "view", "in_note"),
    [
        ({"tab": "results"}, View(), "tab='results' is not a tab"),
        ({"tab": "Replay"}, View(), "tab='Replay'"),  # names are exact
        ({"rep": "x"}, View(), "rep='x' is not a replicate number"),
        ({"rep": "-1"}, View(), "rep='-1'"),
        ({"rep": "1.0"}, View(), "rep='1.0'"),
        ({"round": "0"}, View(), "round='0' is not a round number (from 1)"),
        ({"round": "1e3"}, View(), "round='1e3'"),
        ({"round": "ten", "rep": "1"}, View(replicate=1), "round='ten'"),
        ({"zoom": "60-11"}, View(), "zoom='60-11' is not a window of rounds"),
        ({"zoom": "5"}, View(), "zoom='5'"),
        ({"zoom": "0-10"}, View(), "zoom='0-10'"),
        ({"zoom": "a-b"}, View(), "zoom='a-b'"),
        ({"zoom": "1-10-20"}, View(), "zoom='1-10-20'"),
    ],
)
def test_a_bad_value_is_left_out_with_one_note(
    params: dict[str, str], view: View, in_note: str
) -> None:
    parsed, notes = parse(params, TABS, CWD)
    assert parsed == view
    assert len(notes) == 1
    assert in_note in notes[0]
    assert "showing" in notes[0] and "\n" not in notes[0]


def test_each_bad_value_has_its_note() -> None:
    _, notes = parse({"tab": "x", "rep": "y", "round": "z", "zoom": "w"}, TABS, CWD)
    assert [n.split("=")[0] for n in notes] == [
        "The link's tab",
        "The link's rep",
        "The link's round",
        "The link's zoom",
    ]


def test_a_view_is_written_and_read_back() -> None:
    view = View(
        tab="replay",
        run="/srv/bench/data/runs/exp 1",
        condition="TFT_vs_ALLD",
        replicate=1,
        round=10,
        zoom=(5, 44),
        tournament="/other/place/t",
        evolution="/srv/bench/data/evolutions/e",
    )
    written = encode(view, CWD)
    assert written == {
        "tab": "replay",
        "run": "data/runs/exp 1",  # relative to the working directory: short and portable
        "cond": "TFT_vs_ALLD",
        "rep": "1",
        "round": "10",
        "zoom": "5-44",
        "tournament": "/other/place/t",  # outside it: absolute
        "evolution": "data/evolutions/e",
    }
    assert parse(written, TABS, CWD) == (view, [])


def test_fields_not_set_are_not_written() -> None:
    assert encode(View(tab="tournament"), CWD) == {"tab": "tournament"}
    assert encode(View(), CWD) == {}


def test_paths() -> None:
    assert encode_path("/srv/bench/data/runs/x", CWD) == "data/runs/x"
    assert encode_path("/srv/benchmark/x", CWD) == "/srv/benchmark/x"  # a prefix is not a parent
    assert decode_path("data/runs/x", CWD) == "/srv/bench/data/runs/x"
    assert decode_path("/tmp/r", CWD) == "/tmp/r"


UNREADABLE_PATHS = {
    "NUL byte": "\x00",
    "NUL inside": "data/runs/a\x00b",
    "unknown home": "~no_such_user_pdbench/runs/x",
    "symlink loop": "loop1",  # made by the test under its working directory
    "loop inside": "loop1/x",
}


@pytest.mark.parametrize("field", ["run", "tournament", "evolution"])
@pytest.mark.parametrize("value", UNREADABLE_PATHS.values(), ids=UNREADABLE_PATHS.keys())
def test_a_path_that_cannot_be_resolved_is_a_bad_value(
    field: str, value: str, tmp_path: Path
) -> None:
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    params = {field: value, "tab": "view", "round": "4"}
    parsed, notes = parse(params, TABS, tmp_path)
    assert parsed == View(tab="view", round=4)  # the other values are still read
    assert len(notes) == 1 and "\n" not in notes[0]
    assert notes[0].startswith(f"The link's {field}=")
    assert "is not a path that can be read: showing" in notes[0]


def test_a_bad_run_path_takes_its_game_along(tmp_path: Path) -> None:
    """The condition and replicate belong to the run the link could not name: not read, and
    no further note on them (as for a run that no longer exists)."""
    parsed, notes = parse({"run": "\x00", "cond": "TFT", "rep": "x", "zoom": "1-5"}, TABS, CWD)
    assert parsed == View(zoom=(1, 5))
    assert notes == [
        "The link's run='\\x00' is not a path that can be read: showing the first run listed."
    ]


def test_a_long_value_is_cut_in_its_note() -> None:
    value = "9" * 6000
    _, notes = parse({"rep": "x" + value}, TABS, CWD)
    assert len(notes) == 1
    assert len(notes[0]) < 200 and "…" in notes[0]
    assert notes[0].startswith("The link's rep='x999")


def test_the_parameters_of_others_are_kept() -> None:
    current = {
        "tab": ["view"],
        "run": ["data/runs/a"],
        "round": ["10"],
        "game": ["g-123"],  # the Play tab's game in progress
        "multi": ["x", "y"],
    }
    written = {"tab": "replay", "run": "data/runs/b"}
    assert merged(current, written) == {
        "game": ["g-123"],
        "multi": ["x", "y"],
        "tab": "replay",
        "run": "data/runs/b",  # round went: not in the new view
    }
    assert ours(current) == {"tab": "view", "run": "data/runs/a", "round": "10"}


def test_the_names_are_unique() -> None:
    assert len(set(NAMES.values())) == len(NAMES)


GAME = ("/r", "c", 0)


@pytest.mark.parametrize(
    ("place", "n", "expected", "noted"),
    [
        (None, 30, None, False),
        (Place(("/r", "c", 1), 10, (1, 20)), 30, None, False),  # another game's place
        (Place(GAME, 10, (1, 20)), 30, Place(GAME, 10, (1, 20)), False),
        (Place(GAME, 30, (11, 30)), 30, Place(GAME, 30, (11, 30)), False),
        (Place(GAME, 31, (1, 20)), 30, Place(GAME, None, (1, 20)), True),  # round past the end
        (Place(GAME, 5, (21, 40)), 30, Place(GAME, 5, (21, 30)), False),  # window clipped
        (Place(GAME, 5, (31, 40)), 30, Place(GAME, 5, None), True),  # window past the end
    ],
)
def test_the_replay_place_fits_its_game(
    place: Place | None, n: int, expected: Place | None, noted: bool
) -> None:
    got, note = place_in_game(place, GAME, n)
    assert got == expected
    assert (note is not None) == noted
