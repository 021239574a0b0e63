"""Problems found by an adversarial pass over the one-engine redesign, each pinned by a test:
the cache and self-play, zero-valued overrides, mutation bringing back an LLM member, payoffs
from side B's seat, unusable cache or output directories, game labels that could collide,
where a duplicate ref'd player is reported, resume with the run's own cache, and more."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.support.cli import run_in_process
from tests.support.configs import (
    REPO,
    execute,
    experiment,
    llm,
    load,
    play_round_by_round,
    play_vectorized,
    write_config,
)

from pdbench.agents.factory import make_agent
from pdbench.core.payoff import PayoffMatrix
from pdbench.errors import ConfigError
from pdbench.runners.config.loader import load_config
from pdbench.runners.science.experiment import plan_games
from pdbench.storage.schema import SCHEMA_VERSION


def rounds(run_dir: Path) -> list[dict[str, Any]]:
    out = []
    for line in (run_dir / "rounds.jsonl").read_bytes().splitlines():
        record = orjson.loads(line)
        record.pop("timestamp_utc")
        out.append(record)
    return out


def test_self_play_gives_the_same_rounds_with_and_without_the_cache(tmp_path: Path) -> None:
    """Both sides see the same prompts (round 1, mirrored histories); the cache must not serve
    side B side A's reply. Cold cache, warm cache and no cache give the same rounds."""
    coop = llm("cooperative", mock={"invalid_rate": 0.0, "latency_ms": 0})
    data = experiment([("coop_vs_coop", coop, coop)], replicates=3)
    cfg = write_config(data, tmp_path / "cfg")
    execute(cfg, output_dir=tmp_path / "none", use_cache=False)
    execute(cfg, output_dir=tmp_path / "cold", cache_dir=tmp_path / "c")
    execute(cfg, output_dir=tmp_path / "warm", cache_dir=tmp_path / "c", concurrency=1)
    reference = rounds(tmp_path / "none")
    assert rounds(tmp_path / "cold") == reference == rounds(tmp_path / "warm")
    # The two sides really differ somewhere (else the test could not catch a mix-up).
    assert any(r["agent_a_action"] != r["agent_b_action"] for r in reference)
    calls = [
        orjson.loads(x) for x in (tmp_path / "warm" / "llm_calls.jsonl").read_bytes().splitlines()
    ]
    assert calls and all(c["cached"] for c in calls)


def test_zero_valued_overrides_are_applied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(REPO / "configs", tmp_path / "configs")
    code, out, _ = run_in_process(
        ["tournament", str(tmp_path / "configs" / "tournament.yaml"), "--noise", "0", "--dry-run"],
        capsys,
    )
    assert code == 0 and "fixed 200 rounds, noise 0\n" in out  # the example's 0.05, overridden
    code, out, _ = run_in_process(
        [
            "evolve",
            str(tmp_path / "configs" / "evolution.yaml"),
            "--generations",
            "0",
            "--seed",
            "0",
            "-o",
            str(tmp_path / "evo"),
        ],
        capsys,
    )
    assert code == 0 and "0 generations" in out
    manifest = orjson.loads((tmp_path / "evo" / "evolution_manifest.json").read_bytes())
    assert manifest["seed"] == 0 and manifest["generations_run"] == 0
    assert manifest["overrides"] == {"evolution.generations": 0, "run.seed": 0}


def test_mutation_can_bring_back_an_llm_member_that_starts_absent(tmp_path: Path) -> None:
    data = {
        "run": {"run_id": "m", "seed": 3, "output_dir": "unused"},
        "horizon": {"type": "fixed", "n_rounds": 4},
        "evolution": {
            "process": "eliminate_clone",
            "eliminate": 2,
            "mutation_rate": 0.3,
            "generations": 6,
            "repetitions": 2,
            "population": [
                {"player": "ALLC", "count": 4},
                {"player": "ALLD", "count": 4},
                {"player": llm("tit_for_tat", name="mock-tft"), "count": 0},
            ],
        },
    }
    result = execute(write_config(data, tmp_path / "cfg"), output_dir=tmp_path / "out")
    counts = {r["strategy"] for r in result.rows if r["count"] and r["strategy"] == "mock-tft"}
    assert result.payoff is not None  # the pool was played, mock-tft included
    assert result.manifest["status"] == "completed"
    assert counts == {"mock-tft"}  # mutation brought it in, and its fitness came from the pool


ASYMMETRIC = {"C": {"C": [3, 4], "D": [0, 9]}, "D": {"C": [5, 0], "D": [1, 2]}}


def test_side_b_sees_its_own_payoffs() -> None:
    """In an asymmetric game an LLM on side B is told B's payoffs, in the system prompt as in
    its history lines, and a policy on side B decides from them too (both engine speeds)."""
    matrix = PayoffMatrix.from_nested(ASYMMETRIC)
    seat_b = matrix.seen_by(1)
    assert (seat_b.reward, seat_b.sucker, seat_b.temptation, seat_b.punishment) == (4, 0, 9, 2)
    assert seat_b.seen_by(1) == matrix and matrix.seen_by(0) is matrix
    loaded = load(
        experiment([("tft_vs_llm", "TFT", llm("cooperative"))], **{"payoff_matrix": ASYMMETRIC})
    )
    spec = loaded.agents[("experiment", "conditions", 0, "agent_b")]
    agent = make_agent(spec, side=1, matrix=matrix, noise=0.0, provider_for=lambda cfg: None)
    assert "you play D, they play C: you get 9, they get 0" in agent.system_prompt
    assert "you play C, they play D: you get 0, they get 5" in agent.system_prompt
    # WSLS's default win threshold is its own R: on side B a (C, C) round pays 4 >= R_B = 4.
    names = ["WSLS", "GTFT", "TFT", "RANDOM"]
    data = experiment(
        [(f"{a}_vs_{b}", a, b) for a in names for b in names],
        noise=0.1,
        replicates=2,
        horizon={"type": "fixed", "n_rounds": 30},
        payoff_matrix=ASYMMETRIC,
    )
    loaded = load(data)
    plans = plan_games(loaded)
    slow = play_round_by_round(loaded, plans)
    fast = play_vectorized(loaded, plans)
    for i, result in enumerate(slow):
        assert fast.game(i)["played_b"].tolist() == result.outcome.b_coop.tolist(), i
        assert fast.game(i)["payoffs_b"].tolist() == result.outcome.b_payoffs.tolist(), i


def test_an_unusable_cache_or_output_dir_is_one_line_and_creates_no_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(experiment([("llm", llm(), "TFT")]), tmp_path / "cfg")
    (tmp_path / "notadir").write_text("x")
    out = tmp_path / "out"
    code, _, err = run_in_process(
        ["run", str(cfg), "-o", str(out), "--cache-dir", str(tmp_path / "notadir")], capsys
    )
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "cannot open the response cache" in err and "Traceback" not in err
    assert not out.exists()  # found before the run dir is made (issue 20, V04)
    code, _, err = run_in_process(["run", str(cfg), "-o", str(tmp_path / "notadir" / "x")], capsys)
    assert code == 2 and "cannot create the output directory" in err


def test_player_names_may_not_hold_the_game_label_separator(tmp_path: Path) -> None:
    data = {
        "run": {"run_id": "t", "seed": 1, "output_dir": "unused"},
        "horizon": {"type": "fixed", "n_rounds": 3},
        "tournament": {"players": ["ALLC", {"type": "policy", "policy": "TFT", "name": "Y_vs_Z"}]},
    }
    with pytest.raises(ConfigError) as info:
        load(data)
    (line,) = info.value.lines()
    assert "tournament.players[1]: a player name may not contain '_vs_'" in line


def test_a_duplicate_refd_player_is_reported_where_it_is_written(tmp_path: Path) -> None:
    data = {
        "run": {"run_id": "t", "seed": 1, "output_dir": "unused"},
        "horizon": {"type": "fixed", "n_rounds": 3},
        "tournament": {"players": [{"ref": "agents/llm_default.yaml"}] * 2},
    }
    path = write_config(data, tmp_path / "cfg", name="dup.yaml")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    (line,) = info.value.lines()
    assert line.split(": ")[1] == "tournament.players[1]"
    assert line.split(": ")[0].endswith("dup.yaml") and "duplicate player name" in line


def test_resume_uses_the_cache_the_run_started_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = experiment([("llm", llm(), "TFT")], replicates=2)
    data["run"]["budget"] = {"max_calls": 25}
    cfg = write_config(data, tmp_path / "cfg")
    out, cache = tmp_path / "out", tmp_path / "cache"
    code, _, err = run_in_process(
        ["run", str(cfg), "-o", str(out), "--cache-dir", str(cache)], capsys
    )
    assert code == 2 and "max_calls=25" in err
    cfg.write_text(cfg.read_text().replace("max_calls: 25", "max_calls: null"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, _, err = run_in_process(["resume", str(out)], capsys)
    assert code == 0, err
    assert not (tmp_path / "default-cache").exists()  # not the default cache: the run's own
    calls = [orjson.loads(x) for x in (out / "llm_calls.jsonl").read_bytes().splitlines()]
    resumed = [c for c in calls if c["session"] == 1]
    assert any(c["cached"] for c in resumed)  # the interrupted game's calls came from the cache
    assert all(c["schema_version"] == SCHEMA_VERSION for c in calls)


def test_a_missing_api_key_stops_the_run_before_any_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PDBENCH_TEST_UNSET_KEY", raising=False)
    keyed = llm(api_key_env="PDBENCH_TEST_UNSET_KEY")
    data = experiment([("policies", "TFT", "ALLD"), ("keyed", "TFT", keyed)])
    out = tmp_path / "out"
    code, _, err = run_in_process(
        ["run", str(write_config(data, tmp_path / "cfg")), "-o", str(out)], capsys
    )
    assert code == 2 and err.strip().splitlines() == [
        "mock-persona-v1[tit_for_tat]: environment variable PDBENCH_TEST_UNSET_KEY is not set "
        "(set it, or put it in .env; see .env.example)"
    ]
    assert not out.exists()  # checked before anything was created: nothing played or spent


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ({"seed": True}, "run.seed: Input should be a valid integer (got True)"),
        ({"seed": 1.5}, "run.seed: Input should be a valid integer (got 1.5)"),
    ],
)
def test_the_seed_is_an_integer(tmp_path: Path, run: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(experiment([("c", "TFT", "ALLD")], run=run))
    assert any(line.endswith(expected) for line in info.value.lines()), info.value.lines()


def test_the_default_eliminate_on_a_small_population_names_the_population(tmp_path: Path) -> None:
    data = {
        "run": {"run_id": "e", "seed": 1, "output_dir": "unused"},
        "horizon": {"type": "fixed", "n_rounds": 3},
        "evolution": {
            "population": [{"player": "TFT", "count": 3}, {"player": "ALLD", "count": 3}]
        },
    }
    with pytest.raises(ConfigError) as info:
        load(data)
    (line,) = info.value.lines()
    assert (
        "evolution.population: eliminate_clone replaces 5 individuals a generation by default"
        in line
    )


def test_without_raw_replies_no_excerpt_of_a_reply_is_stored(tmp_path: Path) -> None:
    noisy = llm(mock={"invalid_rate": 0.5})
    data = experiment([("c", noisy, "TFT")], run={"store_raw_responses": False})
    execute(write_config(data, tmp_path / "cfg"), output_dir=tmp_path / "out", use_cache=False)
    attempts = [a for r in rounds(tmp_path / "out") for a in r["raw_responses"]["agent_a"]]
    errors = [a["error"] for a in attempts if a["error"]]
    assert errors and all(a["raw"] is None for a in attempts)
    assert not any("(got" in e for e in errors), errors
