"""Strategy inference (`pdbench profile`).

- Recovery (the issue's validation): games played by each built-in policy with 5% execution
  noise, 100 rounds, against RANDOM(0.5) (an opponent whose moves do not depend on the agent's,
  so every state of every strategy gets visited); fitting each game alone, the top-ranked
  strategy is the generating one in at least 90% of the games, and GTFT's fitted forgiveness is
  within 0.1 of its true value (1/3 with these payoffs).
- The likelihood and tremble of a tiny game, by hand; soft labels from P(C); fallbacks left out.
- SFEM: a known mixture of TFT and ALLD players is recovered within its intervals.
- The command: strategy_fit.parquet columns, ranks, one-line errors.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from tests.support.cli import run_in_process
from tests.support.configs import experiment, policy, write_config

from pdbench.agents.strategy_library import builtin_candidates
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.strategy_fit import Candidate, fit_each, game_stats, sfem, share_intervals
from pdbench.runners.loader import load_config
from pdbench.runners.profile import profile_run
from pdbench.runners.run_experiment import RunOptions, run_experiment
from pdbench.storage.aggregate import outcomes_from_table, read_rounds_table

GENERATORS = ("TFT", "GRIM", "WSLS", "ALLC", "ALLD", "TF2T", "STFT", "GTFT", "ALTERNATOR")
GAMES_EACH = 20


def play(tmp_path: Path, conditions: list, replicates: int, rounds: int, noise: float) -> Path:
    data = experiment(
        conditions,
        replicates=replicates,
        noise=noise,
        horizon={"type": "fixed", "n_rounds": rounds},
    )
    data["run"]["output_dir"] = str(tmp_path / "run")
    run_experiment(load_config(write_config(data, tmp_path)), RunOptions())
    return tmp_path / "run"


def side_a(outcome) -> tuple:  # noqa: ANN001 - a GameOutcome
    return (outcome.a_coop, outcome.b_coop, None, None)


def test_the_generating_strategy_is_recovered_from_noisy_games(tmp_path: Path) -> None:
    run_dir = play(
        tmp_path,
        [(f"{key}_vs_RANDOM", policy(key), policy("RANDOM")) for key in GENERATORS],
        GAMES_EACH,
        100,
        0.05,
    )
    outcomes = outcomes_from_table(read_rounds_table(run_dir / "rounds.jsonl"))
    candidates = builtin_candidates(PayoffMatrix(), 0)
    recovered: dict[str, int] = dict.fromkeys(GENERATORS, 0)
    for outcome in outcomes:
        truth = outcome.condition.split("_vs_")[0]
        fits = fit_each(game_stats([side_a(outcome)], candidates), candidates)
        best = min(fits, key=lambda f: f.rank)
        recovered[truth] += best.strategy == truth
    rates = {k: v / GAMES_EACH for k, v in recovered.items()}
    overall = sum(recovered.values()) / (GAMES_EACH * len(GENERATORS))
    print(f"recovery per strategy: {rates}; overall {overall:.3f}")
    assert overall >= 0.90

    # GTFT's forgiveness, fitted on its 20 games together (its true value: 1/3 here).
    gtft_games = [side_a(o) for o in outcomes if o.condition == "GTFT_vs_RANDOM"]
    fits = fit_each(game_stats(gtft_games, candidates), candidates)
    gtft = next(f for f in fits if f.strategy == "GTFT")
    gtft_candidate = next(c for c in candidates if c.name == "GTFT")
    forgiveness = gtft_candidate.parameters(gtft.free_probabilities)["after_opponent_d"]
    print(f"GTFT forgiveness fitted {forgiveness:.3f} (true 1/3)")
    assert abs(forgiveness - 1 / 3) <= 0.1
    assert gtft.rank == 1


def test_likelihood_and_tremble_of_a_tiny_game_by_hand() -> None:
    tft = next(c for c in builtin_candidates(PayoffMatrix(), 0) if c.name == "TFT")
    own = np.array([True, False, False, True])  # C D D C
    opp = np.array([False, True, True, True])  # D C C C -> TFT prescribes C D C C
    fit = fit_each(game_stats([(own, opp, None, None)], [tft]), [tft])[0]
    # One mismatch in 4 prescribing rounds (round 3: D where TFT says C).
    assert fit.tremble == pytest.approx(0.25)
    expected = math.log(0.25) + 3 * math.log(0.75)
    assert fit.log_likelihood == pytest.approx(expected)
    assert fit.bic == pytest.approx(-2 * expected + 1 * math.log(4))
    assert fit.n_params == 1

    # Soft labels: P(C) replaces the move where known: y = 0.9, 0.2, 0 (D), 0.6 against
    # prescriptions 1, 0, 1, 1: expected mismatches 0.1 + 0.2 + 1 + 0.4 = 1.7.
    p_coop = np.array([0.9, 0.2, np.nan, 0.6])
    fit = fit_each(game_stats([(own, opp, None, p_coop)], [tft]), [tft])[0]
    assert fit.tremble == pytest.approx(1.7 / 4)
    assert fit.log_likelihood == pytest.approx(1.7 * math.log(0.425) + 2.3 * math.log(0.575))

    # A fallback round (round 3) is not the agent's decision: left out, nothing mismatches.
    decided = np.array([True, True, False, True])
    stats = game_stats([(own, opp, decided, None)], [tft])
    assert stats.moves[0] == 3 and stats.mismatches[0, 0] == 0


def test_a_known_mixture_is_recovered_within_its_intervals(tmp_path: Path) -> None:
    data = experiment(
        [("tft", policy("TFT"), policy("RANDOM")), ("alld", policy("ALLD"), policy("RANDOM"))],
        replicates=20,
        noise=0.05,
        horizon={"type": "fixed", "n_rounds": 50},
    )
    data["run"]["output_dir"] = str(tmp_path / "run")
    run_experiment(load_config(write_config(data, tmp_path)), RunOptions())
    outcomes = outcomes_from_table(read_rounds_table(tmp_path / "run" / "rounds.jsonl"))
    # 15 TFT games and 5 ALLD games pooled as one population: true shares 0.75 / 0.25.
    games = [side_a(o) for o in outcomes if o.condition == "tft"][:15]
    games += [side_a(o) for o in outcomes if o.condition == "alld"][:5]
    candidates = [c for c in builtin_candidates(PayoffMatrix(), 0) if c.in_mixture]
    stats = game_stats(games, candidates)
    mixture = sfem(stats, candidates)
    names = [c.name for c in candidates]
    shares = dict(zip(names, mixture.shares, strict=True))
    assert shares["TFT"] == pytest.approx(0.75, abs=0.06)
    assert shares["ALLD"] == pytest.approx(0.25, abs=0.06)
    assert 0.02 <= mixture.tremble <= 0.09
    low, high = share_intervals(stats, candidates, np.random.default_rng(1), 200)
    for name, truth in (("TFT", 0.75), ("ALLD", 0.25)):
        j = names.index(name)
        assert low[j] <= truth <= high[j]
        assert high[j] - low[j] < 0.6


def test_profile_writes_ranked_rows_with_intervals(tmp_path: Path) -> None:
    run_dir = play(tmp_path, [("wsls", policy("WSLS"), policy("RANDOM"))], 6, 60, 0.05)
    result = profile_run(run_dir)
    table = pq.read_table(run_dir / "strategy_fit.parquet").to_pylist()
    assert table == result.rows
    for column in (
        "condition",
        "agent",
        "strategy",
        "log_likelihood",
        "tremble",
        "share",
        "share_ci_low",
        "share_ci_high",
        "rank",
    ):
        assert column in table[0]
    a_rows = [r for r in table if r["agent"] == "a"]
    assert sorted(r["rank"] for r in a_rows) == list(range(1, len(a_rows) + 1))
    best = next(r for r in a_rows if r["rank"] == 1)
    assert best["strategy"] == "WSLS"
    assert best["share_ci_low"] <= best["share"] <= best["share_ci_high"]
    memory_one = next(r for r in a_rows if r["strategy"] == "MEMORY_ONE")
    assert memory_one["share"] is None
    assert set(json.loads(memory_one["parameters"])) <= {"first", "cc", "cd", "dc", "dd"}


def test_profile_of_a_bad_directory_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_in_process(["profile", str(tmp_path / "nowhere")], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "nowhere" in err


def test_candidates_given_as_prescribed_moves() -> None:
    """A prescribed-moves candidate (how Axelrod strategies enter) scores like the machine."""
    own = np.array([True, True, False, True, False])
    opp = np.array([True, False, True, False, True])
    tft_moves = np.concatenate(([1.0], opp[:-1].astype(float)))
    machine = next(c for c in builtin_candidates(PayoffMatrix(), 0) if c.name == "TFT")
    as_moves = Candidate("tft-moves", prescribed=[tft_moves])
    fits = fit_each(game_stats([(own, opp, None, None)], [machine, as_moves]), [machine, as_moves])
    assert fits[0].log_likelihood == pytest.approx(fits[1].log_likelihood)
    assert fits[0].tremble == pytest.approx(fits[1].tremble)
