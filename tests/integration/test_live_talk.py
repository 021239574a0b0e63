"""Live play with a message channel (issue 22, the Play tab): the person types a message before
each move. `runners.live.replay_game` shows them the opponent's messages they may read at that
moment (none of this exchange with simultaneous order until they have sent theirs; with
`alternate`, the opponent's message first in the exchanges it opens), and the saved run, made
from the config with every typed message, records exactly the messages seen live."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.integration.test_human_agent import human_game, moves_of, records
from tests.support.configs import llm, policy, write_config

from pdbench.runners.config.loader import load_config
from pdbench.runners.lifecycle.session import RunOptions
from pdbench.runners.live import LiveGame, replay_game
from pdbench.runners.science.experiment import run_experiment
from pdbench.storage.record.fields import MESSAGES

MOVES = "CDDCC"
TYPED = ["Hello, I will cooperate.", "", "I'll defect now.", "Let's cooperate again.", "ok"]
HONEST_TFT = {
    **policy("TFT"),
    "talk": "honest",
}  # announces the move it plays: TFT copies the person's previous move


def talk_game(
    opponent: Any, order: str, moves: str = MOVES, typed: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    data = human_game(opponent, moves=moves, n_rounds=len(moves), **extra)
    data["communication"] = {"mode": "every_round", "order": order}
    data["experiment"]["conditions"][0]["agent_a"]["messages"] = list(typed or [])
    return data


def play_live(tmp_path: Path, opponent: Any, order: str) -> list[tuple[LiveGame, LiveGame]]:
    """Each round as the tab plays it: before the person writes, then after they sent their
    message (before they move); then the last move. Returns the rounds' pairs."""
    cfg = write_config(talk_game(opponent, order, moves="C" * len(MOVES)), tmp_path / "live")
    cache = tmp_path / "cache"
    out = []
    for r in range(len(MOVES)):
        before = replay_game(cfg, MOVES[:r], cache_dir=cache, messages=TYPED[:r])
        after = replay_game(cfg, MOVES[:r], cache_dir=cache, messages=TYPED[: r + 1])
        out.append((before, after))
    last = replay_game(cfg, MOVES, cache_dir=cache, messages=TYPED)
    assert last.finished and not last.awaiting_message and last.pending == []
    assert [r[MESSAGES] for r in last.records] == [after.pending for _, after in out]
    return out


def save(tmp_path: Path, opponent: Any, order: str) -> list[dict[str, Any]]:
    out = tmp_path / "saved"
    cfg = write_config(talk_game(opponent, order, typed=TYPED, out=out), tmp_path / "save")
    run_experiment(load_config(cfg), RunOptions(cache_dir=tmp_path / "cache"))
    return records(out)


def texts(entries: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["from"], e["text"]) for e in entries]


def test_simultaneous_the_opponent_message_shows_only_after_the_person_sent_theirs(
    tmp_path: Path,
) -> None:
    live = play_live(tmp_path, HONEST_TFT, "simultaneous")
    saved = save(tmp_path, HONEST_TFT, "simultaneous")
    tft = "CCDDC"  # by hand: TFT copies the person's previous move (CDDCC)
    assert moves_of(saved, "b") == tft
    for r, (before, after) in enumerate(live):
        assert before.talks and before.awaiting_message and before.pending == []
        assert not after.awaiting_message
        word = "cooperate" if tft[r] == "C" else "defect"
        mine = [("agent_a", TYPED[r])] if TYPED[r] else []  # an empty message is silence
        assert texts(after.pending) == [*mine, ("agent_b", f"I will {word}.")]
        # The saved run records the messages the person saw, entry for entry.
        assert after.pending == saved[r][MESSAGES]
    # The person's intentions are read from their words (the phrase table of core/talk.py).
    intents = [e["intent"] for r in saved for e in r[MESSAGES] if e["from"] == "agent_a"]
    assert intents == ["C", "D", "C", None]


@pytest.mark.parametrize(
    ("order", "first"),
    [("a_first", "AAAAA"), ("alternate", "ABABA")],
)
def test_the_opponent_message_shows_first_in_the_exchanges_it_opens(
    tmp_path: Path, order: str, first: str
) -> None:
    live = play_live(tmp_path, HONEST_TFT, order)
    saved = save(tmp_path, HONEST_TFT, order)
    for r, (before, after) in enumerate(live):
        if first[r] == "B":  # the opponent writes first: the person reads it before writing
            assert texts(before.pending) == texts(saved[r][MESSAGES])[:1]
            assert before.pending[0]["from"] == "agent_b"
        else:
            assert before.pending == []
        assert after.pending == saved[r][MESSAGES]


def test_a_mock_llm_talks_live_and_the_saved_run_replays_it_from_the_cache(
    tmp_path: Path,
) -> None:
    opponent = llm("exploitative")
    live = play_live(tmp_path, opponent, "a_first")
    saved = save(tmp_path, opponent, "a_first")
    for r, (before, after) in enumerate(live):
        assert before.next_prompt is None  # its move prompt waits for the person's message
        assert after.next_prompt == saved[r]["prompts"]["agent_b"]["round"]
        assert after.pending == saved[r][MESSAGES]
        said = [e for e in after.pending if e["from"] == "agent_b"]
        assert len(said) == 1 and said[0]["text"] and "prompt" in said[0]
        if TYPED[r]:  # it wrote after reading the person's message
            assert TYPED[r] in said[0]["prompt"]
    calls = [
        json.loads(x) for x in (tmp_path / "saved" / "llm_calls.jsonl").read_text().splitlines()
    ]
    assert {c.get("purpose") for c in calls} >= {"message"}
    assert calls and all(c["cached"] for c in calls)
