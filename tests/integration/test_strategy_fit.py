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
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from tests.support.cli import run_in_process
from tests.support.configs import experiment, policy, write_config

from pdbench.agents.strategy_library import builtin_candidates
from pdbench.core.metrics import GameOutcome
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.strategy_fit import Candidate, fit_each, game_stats, sfem, share_intervals
from pdbench.core.strategy_gof import GOF_ALPHA, gof_test, round_design
from pdbench.runners.config.loader import load_config
from pdbench.runners.science import profile as profile_module
from pdbench.runners.science.experiment import RunOptions, run_experiment
from pdbench.runners.science.profile import profile_rows, profile_run, strategy_table
from pdbench.storage.record.table import outcomes_from_table, read_rounds_table
from pdbench.storage.strategy_fit import read_strategy_fit_settings

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

    # Goodness of fit, each generator's 20 games pooled: the generating strategy is the best
    # named one and fits (under the null its p-value is uniform: 9 x 5% = 0.45 rejections
    # expected, so at most one is allowed). The memory-one model must be rejected for TF2T
    # (it looks two rounds back) and GRIM (its trigger outlives one round: after a noisy C
    # it still defects, where memory one would cooperate again).
    adequate, memory_one_p = 0, {}
    memory_one = next(j for j, c in enumerate(candidates) if c.name == "MEMORY_ONE")
    for truth in GENERATORS:
        games = [side_a(o) for o in outcomes if o.condition == f"{truth}_vs_RANDOM"]
        fits = fit_each(game_stats(games, candidates), candidates)
        best = min((f.rank, j) for j, f in enumerate(fits) if candidates[j].in_mixture)[1]
        assert candidates[best].name == truth
        rng = np.random.default_rng(7)
        adequate += gof_test(round_design(games, candidates[best]), rng).p_value >= GOF_ALPHA
        memory_one_p[truth] = gof_test(round_design(games, candidates[memory_one]), rng).p_value
    print(f"adequate {adequate}/9; memory-one p-values {memory_one_p}")
    assert adequate >= len(GENERATORS) - 1
    assert memory_one_p["TF2T"] < GOF_ALPHA and memory_one_p["GRIM"] < GOF_ALPHA


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
    # WSLS at 5% noise is in the library: the card is adequate on every row; the best strategy
    # and the memory-one model carry p-values, the rest none.
    assert all(r["adequate"] for r in a_rows)
    tested = sorted(r["strategy"] for r in a_rows if r["gof_p_value"] is not None)
    assert tested == ["MEMORY_ONE", "WSLS"]
    assert best["moves_explained"] > 0.85  # 1 - 5% noise, give or take
    settings = read_strategy_fit_settings(run_dir / "strategy_fit.parquet")
    assert settings is not None and settings["library"] == "builtin"
    assert "memory-three" in settings["gof_method"] and settings["gof_alpha"] == GOF_ALPHA


def test_a_rule_outside_the_library_gets_no_share_interval() -> None:
    """Copying the opponent's move of two rounds ago (memory two, not in the library), 20 games
    x 100 rounds against RANDOM(0.5): every row of its card says not adequate, no share
    interval is written or printed, and the table says so in words."""
    rng = np.random.default_rng(23)
    outcomes = []
    for replicate in range(20):
        opp = rng.random(100) < 0.5
        own = np.concatenate(([True, True], opp[:-2]))
        zeros = np.zeros(100)
        outcomes.append(GameOutcome("lag2", replicate, "lag2", "RANDOM", own, opp, zeros, zeros))
    manifest = {"seed": 1, "conditions": [{"name": "lag2"}]}
    rows = profile_rows(manifest, outcomes, resamples=50)
    a_rows = [r for r in rows if r["agent"] == "a"]
    assert {r["adequate"] for r in a_rows} == {False}
    assert all(r["share_ci_low"] is None and r["share_ci_high"] is None for r in a_rows)
    # The opponent (RANDOM(0.5)) is in the library: its card keeps its intervals.
    b_rows = [r for r in rows if r["agent"] == "b"]
    assert {r["adequate"] for r in b_rows} == {True}
    assert any(r["share_ci_low"] is not None for r in b_rows)
    text = strategy_table(rows)
    best = next(r for r in a_rows if r["gof_p_value"] is not None and r["strategy"] != "MEMORY_ONE")
    # The closest built-in is TF2T (D only after two D's): when the opponent's move two rounds
    # back was C both play C; when it was D, TF2T also plays D only if the last move was D
    # (probability 1/2). So it predicts 1 - 1/2 x 1/2 = 75% of moves.
    assert best["strategy"] == "TF2T"
    assert best["moves_explained"] == pytest.approx(0.75, abs=0.03)
    words = (
        f"no strategy in the library fits; closest: {best['strategy']}, which explains "
        f"{100 * best['moves_explained']:.0f}% of moves"
    )
    assert words in text
    a_lines = [line for line in text.splitlines() if " a: " in line and "lag2" in line]
    assert a_lines and not any("[" in line for line in a_lines)


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


def test_a_share_from_identical_games_is_never_zero_width() -> None:
    """3 identical games of TFT against ALLD: ALLD's card gives ALLD the whole share, and every
    bootstrap resample agrees, yet 3 games cannot pin a share down: the interval is at least
    the Wilson interval of 3 of 3 games, [3 / (3 + 1.96^2), 1] = [0.4385, 1]."""
    a = np.array([True] + [False] * 19)
    b = np.zeros(20, dtype=bool)
    pays = np.zeros(20)
    outcomes = [GameOutcome("x", r, "TFT", "ALLD", a, b, pays, pays) for r in range(3)]
    rows = profile_rows({"seed": 1, "conditions": [{"name": "x"}]}, outcomes, resamples=50)
    alld = next(r for r in rows if r["agent"] == "b" and r["strategy"] == "ALLD")
    assert alld["share"] == pytest.approx(1.0)
    assert alld["share_ci_low"] == pytest.approx(3 / (3 + 1.959964**2), abs=1e-4)
    assert alld["share_ci_high"] == pytest.approx(1.0)
    for row in rows:
        if row["share_ci_low"] is not None:
            assert row["share_ci_high"] > row["share_ci_low"]


def test_fits_finish_in_any_order_and_the_rows_are_those_of_one_fit_after_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the first condition's agent A is still being fitted, the other conditions are
    read and fitted (its fit waits until the last condition's are done); the rows are still
    in the configuration's order and equal those of fitting every agent in turn."""
    pairs = [
        ("GRIM", "RANDOM"),
        ("TFT", "ALLD"),
        ("WSLS", "WSLS"),
        ("GTFT", "TF2T"),
        ("ALLC", "STFT"),
    ]
    conditions = [(f"c{i}_{a}_{b}", policy(a), policy(b)) for i, (a, b) in enumerate(pairs)]
    run_dir = play(tmp_path, conditions, 4, 40, 0.05)
    last_done, waited = threading.Event(), []
    real = profile_module._side_rows

    def side_rows(job):  # noqa: ANN001, ANN202 - a _Side
        if job.condition == conditions[0][0] and job.side == "a":
            waited.append(last_done.wait(timeout=20))
        rows = real(job)
        if job.condition == conditions[-1][0]:
            last_done.set()  # either agent of the last condition
        return rows

    monkeypatch.setattr(profile_module, "_side_rows", side_rows)
    result = profile_run(run_dir)
    assert waited == [True]  # the last condition was fitted while the first one's waited
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    outcomes = outcomes_from_table(read_rounds_table(run_dir / "rounds.jsonl"))
    monkeypatch.setattr(profile_module, "_side_rows", real)
    assert result.rows == profile_rows(manifest, outcomes)
    assert list(dict.fromkeys(r["condition"] for r in result.rows)) == [c[0] for c in conditions]


def test_a_failing_fit_stops_profile_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = play(tmp_path, [(f"c{i}", policy("TFT"), policy("ALLD")) for i in range(4)], 2, 20, 0)
    real = profile_module._side_rows

    def side_rows(job):  # noqa: ANN001, ANN202 - a _Side
        if job.condition == "c1":
            raise RuntimeError("fit failed")
        return real(job)

    monkeypatch.setattr(profile_module, "_side_rows", side_rows)
    with pytest.raises(RuntimeError, match="fit failed"):
        profile_run(run_dir)
    assert not (run_dir / "strategy_fit.parquet").exists()


def test_profile_and_report_do_not_import_pandas(tmp_path: Path) -> None:
    """`pdbench profile` and `pdbench report` write Parquet and read it without pandas (which
    pyarrow.array and pyarrow.dataset import, half a second each)."""
    run_dir = play(tmp_path, [("tft", policy("TFT"), policy("RANDOM"))], 3, 20, 0.05)
    code = (
        "import sys\n"
        "from pdbench import cli\n"
        "sys.argv = ['pdbench', *sys.argv[1:]]\n"
        "try:\n"
        "    cli.main()\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print('PANDAS', 'pandas' in sys.modules)\n"
    )
    for command in ("profile", "report"):
        out = subprocess.run(
            [sys.executable, "-c", code, command, str(run_dir)],
            capture_output=True,
            text=True,
            check=True,
        )
        assert "PANDAS False" in out.stdout, command
    assert (run_dir / "strategy_fit.parquet").is_file() and (run_dir / "report.html").is_file()
