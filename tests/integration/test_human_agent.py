"""The `human` agent type (a person's recorded moves) and live play (issue 13, Play tab).

A human game is an ordinary experiment: the human agent plays the moves in its config, the
opponent answers through the normal engine, and the run has the usual artifacts and metrics.
Live play (`runners.live.replay_game`, what the Play tab calls after every click) must show the
person exactly the opponent moves the saved run then records, also for a random policy and for
an LLM opponent whose replies come from the response cache.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.support.configs import RUN, llm, policy, write_config

from pdbench.agents.human import HumanAgent, HumanMovesExhausted
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.transcript import Transcript
from pdbench.errors import ConfigError
from pdbench.runners.config.loader import load_config
from pdbench.runners.lifecycle.session import RunOptions
from pdbench.runners.live import replay_game
from pdbench.runners.science.experiment import run_experiment


def human_game(
    opponent: Any,
    moves: Any = "CDDCC",
    n_rounds: int = 5,
    out: Path | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """An experiment: a human called Ana against `opponent`, one game of `n_rounds`."""
    human = {"type": "human", "name": "Ana", "moves": moves}
    return {
        "run": {**RUN, "output_dir": str(out or "unused")},
        "horizon": {"type": "fixed", "n_rounds": n_rounds},
        "experiment": {
            "replicates": 1,
            "conditions": [{"name": "human_vs_opp", "agent_a": human, "agent_b": opponent}],
        },
        **extra,
    }


def records(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "rounds.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def moves_of(rows: list[dict[str, Any]], side: str) -> str:
    return "".join(r[f"agent_{side}_action"] for r in rows)


def config_lines(data: dict[str, Any], tmp_path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(write_config(data, tmp_path / "cfg"))
    return caught.value.lines()


# --------------------------------------------------------------------------------------------
# The agent and its config


def test_human_agent_plays_its_moves_then_refuses_more() -> None:
    agent = HumanAgent(["c", "D"], "Ana")
    transcript = Transcript(PayoffMatrix())
    seen = []
    for _ in range(2):
        obs = transcript.observation(0, history_window=None, include_totals=True, horizon_type="f")
        seen.append(agent.act(obs))
        move = asyncio.run(agent.decide(obs)).action
        transcript.record(move, move)
    assert seen == ["C", "D"]
    obs = transcript.observation(0, history_window=None, include_totals=True, horizon_type="f")
    with pytest.raises(HumanMovesExhausted, match="no move for round 3"):
        asyncio.run(agent.decide(obs))


def test_a_human_game_is_an_ordinary_run_with_its_metrics(tmp_path: Path) -> None:
    out = tmp_path / "run"
    loaded = load_config(write_config(human_game(policy("TFT"), out=out), tmp_path / "cfg"))
    summary = run_experiment(loaded, RunOptions())
    rows = records(out)
    assert moves_of(rows, "a") == "CDDCC"
    assert moves_of(rows, "b") == "CCDDC"  # TFT copies Ana's previous move
    assert {r["agent_a_name"] for r in rows} == {"Ana"}
    assert [r["agent_a_payoff"] for r in rows] == [3, 5, 1, 0, 3]
    assert [r["agent_b_cum_payoff"] for r in rows] == [3, 3, 4, 9, 12]
    manifest = json.loads((out / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    agent_a = manifest["config"]["experiment"]["conditions"][0]["agent_a"]
    assert agent_a == {"type": "human", "name": "Ana", "moves": list("CDDCC")}
    frame = pd.read_parquet(out / "aggregates.parquet")
    game = frame[frame["scope"] == "replicate"].iloc[0]
    assert game["agent_a_name"] == "Ana" and game["n_rounds"] == 5
    assert game["agent_a_cooperation_rate"] == pytest.approx(0.6)
    assert game["agent_a_total_payoff"] == 12 and game["agent_b_total_payoff"] == 12
    # TFT punished both of Ana's defections; Ana forgave both of TFT's.
    assert game["agent_b_retaliation_rate"] == 1.0
    assert game["agent_a_forgiveness_rate"] == 1.0
    assert summary.n_rounds == 5


def test_moves_may_be_a_list_in_any_case(tmp_path: Path) -> None:
    loaded = load_config(write_config(human_game("ALLD", moves=["c", "D", "d"], n_rounds=3)))
    (spec,) = [s for s in loaded.agents.values() if s.name == "Ana"]
    assert spec.config.moves == ["C", "D", "D"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"moves": "CDXCC"},
            "experiment.conditions[0].agent_a.moves: each move must be C or D (got 'X' as move 3)",
        ),
        (
            {"moves": "CDCC"},
            "experiment.conditions[0].agent_a.moves: a human agent needs one move per round: "
            "4 moves for a game of 5 rounds",
        ),
        (  # `moves` may be empty in a resource game's seat (`amounts` instead), not here
            {"moves": ""},
            "experiment.conditions[0].agent_a.moves: a human agent needs one move per round: "
            "0 moves for a game of 5 rounds",
        ),
        ({"moves": [1, "C"]}, "experiment.conditions[0].agent_a.moves[0]: Input should be"),
        ({"mood": "happy"}, "experiment.conditions[0].agent_a.mood: unknown key"),
    ],
)
def test_an_invalid_human_agent_is_one_config_line(
    tmp_path: Path, change: dict[str, Any], expected: str
) -> None:
    data = human_game("TFT")
    data["experiment"]["conditions"][0]["agent_a"].update(change)
    lines = config_lines(data, tmp_path)
    assert len(lines) == 1, lines
    assert expected in lines[0], lines


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"replicates": 2}, "experiment.replicates must be 1 (got 2)"),
        ({"horizon": {"type": "geometric", "stop_prob": 0.1}}, "needs a fixed horizon"),
    ],
)
def test_a_human_agent_is_one_fixed_game(
    tmp_path: Path, change: dict[str, Any], expected: str
) -> None:
    data = human_game("TFT")
    if "replicates" in change:
        data["experiment"]["replicates"] = change["replicates"]
    else:
        data["experiment"]["conditions"][0]["horizon"] = change["horizon"]
    lines = config_lines(data, tmp_path)
    assert len(lines) == 1, lines
    assert "experiment.conditions[0].agent_a: a human agent" in lines[0] and expected in lines[0]


def test_a_human_agent_cannot_join_a_tournament(tmp_path: Path) -> None:
    data = {
        "run": RUN,
        "horizon": {"type": "fixed", "n_rounds": 3},
        "tournament": {"players": ["TFT", {"type": "human", "moves": "CCC"}]},
    }
    lines = config_lines(data, tmp_path)
    assert len(lines) == 1, lines
    assert lines[0].endswith(
        "tournament.players[1]: a human agent is one recorded game (its moves); use it in an "
        "experiment condition, not in a tournament or an evolution"
    ), lines


# --------------------------------------------------------------------------------------------
# Live play equals the saved run


def live_then_saved(
    tmp_path: Path, opponent: Any, moves: str, **extra: Any
) -> tuple[list[Any], list[dict[str, Any]]]:
    """Play `moves` one click at a time with `replay_game` (what the tab shows after each
    click), then save the game with all the moves and run it; returns (the live games, the
    saved records)."""
    cache = tmp_path / "cache"
    live_cfg = write_config(
        human_game(opponent, moves="C" * len(moves), n_rounds=len(moves), **extra),
        tmp_path / "live",
    )
    shown = [replay_game(live_cfg, moves[:k], cache_dir=cache) for k in range(len(moves) + 1)]
    out = tmp_path / "saved"
    saved_cfg = write_config(
        human_game(opponent, moves=moves, n_rounds=len(moves), out=out, **extra),
        tmp_path / "save",
    )
    run_experiment(load_config(saved_cfg), RunOptions(cache_dir=cache))
    return shown, records(out)


def test_live_play_shows_the_moves_the_saved_run_records_against_tft(tmp_path: Path) -> None:
    shown, saved = live_then_saved(tmp_path, policy("TFT"), "CDDCC")
    assert [len(g.records) for g in shown] == [0, 1, 2, 3, 4, 5]
    assert [g.finished for g in shown] == [False] * 5 + [True]
    # After click k the tab shows round k: the opponent's move then, by hand for TFT.
    assert [g.records[-1]["agent_b_action"] for g in shown[1:]] == list("CCDDC")
    assert moves_of(saved, "a") == "CDDCC" and moves_of(saved, "b") == "CCDDC"
    strip = ("timestamp_utc", "run_id")
    last = [{k: v for k, v in r.items() if k not in strip} for r in shown[-1].records]
    assert last == [{k: v for k, v in r.items() if k not in strip} for r in saved]
    assert shown[-1].system_prompt is None  # a policy has no prompt


def test_live_play_against_a_random_policy_matches_the_saved_run(tmp_path: Path) -> None:
    moves = "CCDCDDCCCD"
    shown, saved = live_then_saved(tmp_path, policy("RANDOM", params={"coop_prob": 0.5}), moves)
    seen = "".join(g.records[-1]["agent_b_action"] for g in shown[1:])
    assert seen == moves_of(saved, "b")
    assert set(seen) == {"C", "D"}  # a real random opponent, not a constant one
    # Earlier rounds never change as the game goes on.
    for k in range(1, len(moves)):
        assert moves_of(shown[k].records, "b") == seen[:k]


def test_live_play_against_an_llm_replays_from_the_cache(tmp_path: Path) -> None:
    moves = "CDCCD"
    shown, saved = live_then_saved(tmp_path, llm("tit_for_tat"), moves)
    assert [g.records[-1]["agent_b_action"] for g in shown[1:]] == list(moves_of(saved, "b"))
    # What the tab shows as the agent's next prompt is the prompt it was then asked.
    for k, game in enumerate(shown[:-1]):
        assert game.next_prompt == saved[k]["prompts"]["agent_b"]["round"]
        assert game.system_prompt == saved[k]["prompts"]["agent_b"]["system"]
    assert f"Round 1 of {len(moves)}" in shown[0].next_prompt
    assert shown[-1].next_prompt is None
    # The saved run asked the provider nothing: every reply came from the live game's cache.
    calls = [
        json.loads(x) for x in (tmp_path / "saved" / "llm_calls.jsonl").read_text().splitlines()
    ]
    assert len(calls) >= len(moves) and all(c["cached"] for c in calls)
