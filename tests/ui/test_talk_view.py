"""A game's messages in the app: `data.load_game_rounds` carries them (from the columnar parts
and from rounds.jsonl alike, and from a part written before messages existed), `ui.talk` reads
each agent's stated intention and its broken promises as the talk metrics do, and the replay
page carries them beside the moves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from tests.ui.sample import TALK_CONDITIONS, make_run

from pdbench.storage.record.fields import MESSAGES
from pdbench.ui import animation, data, tables, talk

N_ROUNDS = 8


@pytest.fixture(scope="module")
def talk_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A liar against an honest TFT, two mock personas that talk, and a silent game."""
    base = tmp_path_factory.mktemp("talk")
    return make_run(base, TALK_CONDITIONS, n_rounds=N_ROUNDS, replicates=1, run_id="talk")


def _records(run_dir: Path, condition: str) -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in (run_dir / "rounds.jsonl").read_text().splitlines()]
    return sorted((r for r in rows if r["condition"] == condition), key=lambda r: r["round_index"])


def _jsonl_only(run_dir: Path, target: Path) -> Path:
    """A copy of the run without its columnar parts (the app then reads rounds.jsonl)."""
    shutil.copytree(run_dir, target)
    shutil.rmtree(target / "rounds")
    return target


@pytest.mark.parametrize("condition", ["liar_vs_TFT", "LLMcoop_vs_LLMexploit_talk"])
def test_load_game_rounds_carries_the_messages_from_parts_and_from_jsonl(
    talk_run: Path, tmp_path: Path, condition: str
) -> None:
    want = [r[MESSAGES] for r in _records(talk_run, condition)]
    assert len(want) == N_ROUNDS and all(want)
    from_parts = data.load_game_rounds(talk_run, condition, 0)
    from_jsonl = data.load_game_rounds(_jsonl_only(talk_run, tmp_path / "copy"), condition, 0)
    assert from_parts[MESSAGES].tolist() == want
    assert from_jsonl[MESSAGES].tolist() == want


def test_a_game_without_messages_has_no_messages_column(talk_run: Path) -> None:
    game = data.load_game_rounds(talk_run, "TFT_vs_ALLD_silent", 0)
    assert list(game.columns) == list(data.ROUND_COLUMNS)


def test_a_part_written_before_messages_existed_is_read(talk_run: Path, tmp_path: Path) -> None:
    """Parts written by an older pdbench have no `messages` column: the game still loads."""
    run = tmp_path / "old"
    shutil.copytree(talk_run, run)
    for part in (run / "rounds").glob("*.parquet"):
        table = pq.read_table(part)
        old = table.drop_columns([MESSAGES]).replace_schema_metadata(table.schema.metadata)
        pq.write_table(old, part)
    game = data.load_game_rounds(run, "liar_vs_TFT", 0)
    assert MESSAGES not in game.columns
    assert "".join(game["agent_a_action"]) == "D" * N_ROUNDS


SAYS = {"C": "I will cooperate.", "D": "I will defect.", None: "…"}


def _entry(side: str, turn: int, intent: str | None, **extra: Any) -> dict[str, Any]:
    """A message entry whose text says `intent` (the stated intention is what was said)."""
    entry = {"from": side, "turn": turn, "text": SAYS[intent], "intent": intent, "source": "x"}
    return {**entry, **extra}


def test_stated_intention_is_the_last_message_that_states_one() -> None:
    """By hand: round 1, A promises C then says something stating nothing: C; round 2, A
    promises C then announces D: D; round 3, A's only message is a fallback (ignored): none;
    round 4, nothing. B states C in rounds 1 and 4. A chose D, D, D, C and B chose D, C, C, C:
    A broke a promise in round 1 only (round 2 it announced D), B in round 1."""
    rounds = [
        [_entry("agent_a", 0, "C"), _entry("agent_b", 0, "C"), _entry("agent_a", 1, None)],
        [_entry("agent_a", 0, "C"), _entry("agent_a", 1, "D")],
        [_entry("agent_a", 0, "C", fallback=True)],
        [_entry("agent_b", 0, "C")],
    ]
    sa, sb = talk.stated_intentions(rounds, "DDDC", "DCCC")
    assert (sa, sb) == ("CD--", "C--C")
    assert talk.broken_promises(sa, "DDDC") == [1]
    assert talk.broken_promises(sb, "DCCC") == [1]


def test_encode_puts_each_message_beside_the_move_that_followed_it() -> None:
    rounds = [
        [_entry("agent_b", 0, "C"), _entry("agent_a", 0, None, text="<b>hi</b>")],
        None,
        [_entry("agent_a", 0, "D", source="declared")],
    ]
    out = talk.encode(rounds, "CCD", "CCC")
    assert out is not None
    texts = out["texts"]
    assert [texts[i][0] for i in out["b"][0]] == ["I will cooperate."]
    assert [texts[i][:2] for i in out["a"][0]] == [["<b>hi</b>", ""]]  # kept as text
    assert out["a"][1] == [] and out["b"][1] == [] and out["b"][2] == []
    assert texts[out["a"][2][0]] == ["I will defect.", "D", "declared", 0]
    assert (out["sa"], out["sb"]) == ("--D", "C--")


def test_the_stated_intention_is_what_the_text_said_not_the_declared_intention() -> None:
    """A's message says "I will defect." and declares C (the issue's example): the partner
    read D, so the replay states D and marks no broken promise when A then defects."""
    rounds = [[{**_entry("agent_a", 0, "D", source="declared"), "intent": "C"}]]
    sa, _ = talk.stated_intentions(rounds, "D", "C")
    assert sa == "D" and talk.broken_promises(sa, "D") == []
    assert talk.encode([None, []], "CC", "CC") is None


def test_the_liar_breaks_every_promise_and_honest_tft_none(talk_run: Path) -> None:
    """ALLD with always_promise promises C before every move and plays D: N_ROUNDS broken
    promises; TFT with honest announces the move it plays: none."""
    game = tables.game_rounds(data.load_game_rounds(talk_run, "liar_vs_TFT", 0), "liar_vs_TFT", 0)
    page = animation.game_data(game, ("A", "B"))
    said = page["talk"]
    assert said["sa"] == "C" * N_ROUNDS
    assert said["sb"] == page["fb"] == "C" + "D" * (N_ROUNDS - 1)  # TFT against ALLD
    assert talk.broken_promises(said["sa"], page["fa"]) == list(range(1, N_ROUNDS + 1))
    assert talk.broken_promises(said["sb"], page["fb"]) == []
    assert [said["texts"][i][:2] for i in said["a"][0]] == [["I will cooperate.", "C"]]
    assert [said["texts"][i][:2] for i in said["b"][1]] == [["I will defect.", "D"]]


def test_the_replay_page_carries_the_messages_and_the_broken_promise_colour(
    talk_run: Path,
) -> None:
    game = tables.game_rounds(data.load_game_rounds(talk_run, "liar_vs_TFT", 0), "liar_vs_TFT", 0)
    assert animation.has_talk(game)
    page = animation.replay_page(game, ("A", "B"))
    assert '"talk":{' in page and "I will cooperate." in page
    assert animation.COLORS["broken"] in page
    silent = data.load_game_rounds(talk_run, "TFT_vs_ALLD_silent", 0)
    assert not animation.has_talk(silent)
    assert '"talk"' not in animation.replay_page(silent, ("A", "B"))
