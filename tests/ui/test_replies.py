"""The LLM agents' replies in the animated replay's data (`ui.replies`, `data.load_game_replies`,
`animation.replay_page`), without a browser: for mock-LLM runs whose invalid replies force
retries and fallbacks, each round's replies in the page equal that round's raw_responses in
rounds.jsonl (read here with json, attempt by attempt); replies are cut at 600 characters,
missing ones stay null, HTML in a reply cannot reach the page as markup, and a 10,000-round
game's page stays small."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.ui.sample import _llm, _policy, make_run
from tests.ui.test_app import REPLAY, assert_clean, component_data, make_app, show_tab

from pdbench.ui import animation, data, replies, tables

LLM_VS_POLICY = [
    {"name": "LLM_vs_TFT", "agent_a": _llm("cooperative", 0.5), "agent_b": _policy("TFT")}
]


@pytest.fixture(scope="module")
def llm_vs_policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mock LLM (half its replies invalid, so retries and fallbacks) against TFT: 30 rounds,
    2 replicates."""
    return make_run(tmp_path_factory.mktemp("replies"), LLM_VS_POLICY, run_id="llm_vs_tft")


def _records(run_dir: Path, condition: str, replicate: int) -> dict[int, dict[str, Any]]:
    """round_index -> record, read straight from rounds.jsonl."""
    out = {}
    for line in (run_dir / "rounds.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["condition"] == condition and record["replicate"] == replicate:
            out[record["round_index"]] = record
    return out


def _page_data(page: str) -> dict[str, Any]:
    match = re.search(r"var DATA = (.*?);\n", page)
    assert match
    return json.loads(match.group(1))


def _page(run_dir: Path, condition: str, replicate: int, llm: tuple[bool, bool]) -> dict[str, Any]:
    """The replay page's data of one game, made as the Animated Replay tab makes it."""
    game = tables.game_rounds(
        data.load_game_rounds(run_dir, condition, replicate), condition, replicate
    )
    encoded = replies.encode(data.load_game_replies(run_dir, game, condition, replicate), llm)
    return _page_data(animation.replay_page(game, ["A", "B"], 200, encoded))


def _shown(page: dict[str, Any], side: str, round_no: int) -> list[tuple[str | None, bool]]:
    """(raw, valid) of each attempt the page holds for a side in a round (1-based)."""
    texts = page["replies"]["texts"]
    return [(texts[i][0], texts[i][1] == 1) for i in page["replies"][side][round_no - 1]]


@pytest.mark.parametrize("replicate", [0, 1])
def test_each_rounds_replies_are_its_raw_responses(sample_run: Path, replicate: int) -> None:
    condition = "LLMcoop_vs_LLMexploit"
    page = _page(sample_run, condition, replicate, (True, True))
    records = _records(sample_run, condition, replicate)
    assert page["n"] == len(records) == 30
    retried = fallbacks = 0
    for side in ("a", "b"):
        for k in range(1, 31):
            attempts = records[k - 1]["raw_responses"][f"agent_{side}"]
            assert _shown(page, side, k) == [(a["raw"], a["valid"]) for a in attempts], (side, k)
            failed = records[k - 1][f"agent_{side}_parse_failure"]
            retried += len(attempts) > 1 and not failed
            fallbacks += failed
            assert page[f"x{side}"][k - 1] == ("1" if failed else "0")
    assert retried > 0 and fallbacks > 0  # the game exercises both paths


def test_the_replay_tab_sends_replies_for_llm_games_only(sample_run: Path) -> None:
    at = show_tab(make_app(sample_run).run(), REPLAY)
    assert_clean(at)
    (game,) = component_data(at)
    assert "replies" not in game  # TFT vs ALLD: two policies
    at.selectbox(key="rp_condition").select("LLMcoop_vs_LLMexploit").run()
    at.selectbox(key="rp_replicate").select(1).run()
    assert_clean(at)
    (game,) = component_data(at)
    records = _records(sample_run, "LLMcoop_vs_LLMexploit", 1)
    for side in ("a", "b"):
        for k in range(1, 31):
            attempts = records[k - 1]["raw_responses"][f"agent_{side}"]
            assert _shown(game, side, k) == [(a["raw"], a["valid"]) for a in attempts]


def test_a_policy_has_no_replies(llm_vs_policy: Path) -> None:
    page = _page(llm_vs_policy, "LLM_vs_TFT", 1, (True, False))
    records = _records(llm_vs_policy, "LLM_vs_TFT", 1)
    assert page["replies"]["b"] is None
    assert "agent_b" not in records[0]["raw_responses"]
    retries = [
        k
        for k in range(1, 31)
        if len(records[k - 1]["raw_responses"]["agent_a"]) > 1
        and not records[k - 1]["agent_a_parse_failure"]
    ]
    assert retries
    k = retries[0]
    attempts = records[k - 1]["raw_responses"]["agent_a"]
    assert _shown(page, "a", k) == [(a["raw"], a["valid"]) for a in attempts]
    assert _shown(page, "a", k)[-1][1] and not _shown(page, "a", k)[0][1]


def test_replies_are_found_when_the_games_lines_are_mixed(
    llm_vs_policy: Path, tmp_path: Path
) -> None:
    """The two games' lines alternate (not as pdbench writes them, so the probes' blocks do not
    hold the games): the replies are still found, by a scan of every line."""
    run = tmp_path / "run"
    run.mkdir()
    for name in ("rounds.jsonl", "run_manifest.json", "aggregates.parquet"):
        (run / name).write_bytes((llm_vs_policy / name).read_bytes())
    game = tables.game_rounds(data.load_game_rounds(run, "LLM_vs_TFT", 0), "LLM_vs_TFT", 0)
    lines = (run / "rounds.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    mixed = sorted(lines, key=lambda line: (json.loads(line)["round_index"], line))
    assert mixed != lines
    (run / "rounds.jsonl").write_text("".join(mixed), encoding="utf-8")
    found = data.load_game_replies(run, game, "LLM_vs_TFT", 0)
    records = _records(llm_vs_policy, "LLM_vs_TFT", 0)
    assert len(found) == len(records) == 30
    for k, got in enumerate(found):
        want = records[k]["raw_responses"]["agent_a"]
        assert got is not None and [a[0] for a in got["agent_a"]] == [a["raw"] for a in want]


def test_long_replies_are_cut_and_missing_ones_stay_null() -> None:
    long = "x" * 4_999 + "y"
    rounds = [
        replies.slim(
            {
                "agent_a": [
                    {"attempt": 1, "raw": "C", "valid": True, "error": None},
                    {"attempt": 0, "raw": long, "valid": False, "error": "no C or D (got 'xx')"},
                ]
            }
        ),
        replies.slim({"agent_a": [{"attempt": 0, "raw": None, "valid": True, "error": None}]}),
        None,  # a round whose record was not found
    ]
    encoded = replies.encode(rounds, (True, False))
    assert encoded is not None and encoded["b"] is None
    texts = encoded["texts"]
    first = [texts[i] for i in encoded["a"][0]]
    assert first[0] == ["x" * 600 + "… [5,000 characters in all]", 0, "no C or D"]
    assert first[1] == ["C", 1, None]  # attempts in their order, whatever the file's order
    assert [texts[i] for i in encoded["a"][1]] == [[None, 1, None]]
    assert encoded["a"][2] == []
    assert replies.encode([{}, None], (False, False)) is None  # two policies: no replies at all


def test_html_in_a_reply_is_never_markup(llm_vs_policy: Path) -> None:
    evil = '</script><img src=x onerror="alert(1)"><!-- & "C"'
    game = tables.game_rounds(
        data.load_game_rounds(llm_vs_policy, "LLM_vs_TFT", 0), "LLM_vs_TFT", 0
    )
    rounds: list[Any] = [
        replies.slim({"agent_a": [{"attempt": 0, "raw": evil, "valid": False}]})
    ] + [None] * (len(game) - 1)
    page = animation.replay_page(game, ["A <b>", "B"], 200, replies.encode(rounds, (True, False)))
    script = page.split("<script>", 1)[1]
    assert script.count("</script>") == 1  # only the page's own end of script
    assert "<img" not in page and "<!--" not in page and "<b>" not in page
    decoded = _page_data(page)
    assert decoded["replies"]["texts"][0][0] == evil and decoded["labels"][0] == "A <b>"
    for asset in ("player.js", "replies.js"):  # replies are set as text, never as HTML
        assert "innerHTML" not in (animation.ASSETS / asset).read_text(encoding="utf-8")


def _game_frame(n: int) -> pd.DataFrame:
    """A game of n rounds: D every third round, a fallback every 100th."""
    moves = ["C" if k % 3 else "D" for k in range(n)]
    frame = {"condition": "g", "replicate": 0, "round_index": range(n)}
    for side in ("a", "b"):
        frame |= {
            f"agent_{side}_action": moves,
            f"agent_{side}_intended_action": moves,
            f"agent_{side}_parse_failure": [k % 100 == 0 for k in range(n)],
            f"agent_{side}_payoff": [1.0] * n,
        }
    return pd.DataFrame(frame)


def test_a_10000_round_llm_game_page_stays_small() -> None:
    """Mock-like replies (C or D, one round in 20 retried after chatter, one in 100 a fallback
    after three invalid replies): the replies add well under 100 kB to the page."""
    n = 10_000
    game = tables.game_rounds(_game_frame(n), "g", 0)
    rounds = []
    for k in range(n):
        move = "CD"[k % 3 == 0]
        attempts = [{"attempt": 0, "raw": move, "valid": True}]
        if k % 20 == 0:
            attempts = [{"attempt": 0, "raw": "Let me think... defect?", "valid": False}]
            attempts.append({"attempt": 1, "raw": move, "valid": True})
        if k % 100 == 0:
            attempts = [{"attempt": i, "raw": "", "valid": False} for i in range(3)]
        rounds.append(replies.slim({"agent_a": attempts, "agent_b": attempts}))
    plain = animation.replay_page(game, ["A", "B"], 20)
    full = animation.replay_page(game, ["A", "B"], 20, replies.encode(rounds))
    assert len(full.encode()) - len(plain.encode()) < 100_000
