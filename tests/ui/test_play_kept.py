"""A Play game kept on disk across a browser Refresh (play_launcher.save_game / load_game): read
back as written, and nothing read for an id the app cannot have made or a damaged file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.ui.browser import REPO

from pdbench.core.payoff import PayoffMatrix
from pdbench.ui import launcher, play_launcher

CONFIG_DIR = REPO / "configs"


def _request() -> play_launcher.PlayRequest:
    options = {o.key: o for o in launcher.agent_options(CONFIG_DIR)}
    matrix = PayoffMatrix.from_nested(
        {"C": {"C": [4, 4], "D": [0, 6]}, "D": {"C": [6, 0], "D": [1, 1]}}
    )
    return play_launcher.PlayRequest(
        options["policy:GRIM"], "Ana", 7, 42, matrix, talk=True, order="a_first", rule="honest"
    )


def test_a_kept_game_reads_back_as_written(tmp_path: Path) -> None:
    game_id = play_launcher.new_game_id()
    request = _request()
    play_launcher.save_game(tmp_path, game_id, request, ["C", "D"], ["hi", ""])
    kept = play_launcher.load_game(tmp_path, game_id, CONFIG_DIR)
    assert kept == play_launcher.KeptGame(request, ["C", "D"], ["hi", ""], None)
    play_launcher.save_game(tmp_path, game_id, request, list("CDCCCCC"), [], "/runs/ui_1")
    kept = play_launcher.load_game(tmp_path, game_id, CONFIG_DIR)
    assert kept is not None and kept.saved == "/runs/ui_1" and kept.moves == list("CDCCCCC")
    play_launcher.forget_game(tmp_path, game_id)
    assert play_launcher.load_game(tmp_path, game_id, CONFIG_DIR) is None
    assert not (tmp_path / "play" / f"{game_id}.json").exists()


@pytest.mark.parametrize("game_id", ["../../etc/passwd", "ABCDEF123456", "abc", "a" * 13, ""])
def test_an_id_the_app_cannot_have_made_names_no_file(tmp_path: Path, game_id: str) -> None:
    assert play_launcher.game_file(tmp_path, game_id) is None
    assert play_launcher.load_game(tmp_path, game_id, CONFIG_DIR) is None
    with pytest.raises(ValueError):
        play_launcher.save_game(tmp_path, game_id, _request(), [], [])


@pytest.mark.parametrize(
    "damage",
    [
        lambda kept: "{not json",
        lambda kept: json.dumps({**kept, "opponent": "policy:NOPE"}),
        lambda kept: json.dumps({**kept, "moves": ["C", "X"]}),
        lambda kept: json.dumps({**kept, "moves": ["C"] * 8}),  # more moves than rounds
        lambda kept: json.dumps({k: v for k, v in kept.items() if k != "seed"}),
    ],
)
def test_a_damaged_file_is_no_game(tmp_path: Path, damage) -> None:  # noqa: ANN001
    game_id = play_launcher.new_game_id()
    play_launcher.save_game(tmp_path, game_id, _request(), ["C"], [])
    path = tmp_path / "play" / f"{game_id}.json"
    path.write_text(damage(json.loads(path.read_text())))
    assert play_launcher.load_game(tmp_path, game_id, CONFIG_DIR) is None
