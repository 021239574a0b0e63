"""The vectorised paths of the aggregate (issue 21) give the same floats, bit for bit, as the
straightforward computations they replaced: numpy's nanquantile column by column, the
bootstrap-t written as whole-array expressions, Python's mean of a list of probabilities, the
rates as means of booleans, and cooperation_rate_over_time through orjson. Each reference here
is that literal computation, run on random inputs (with NaN where a value can be unknown)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import orjson
import pytest

from pdbench.core.behaviour import behaviour_columns, behaviour_columns_of_games
from pdbench.core.bootstrap_t import _bootstrap_t, column_nanquantiles
from pdbench.core.metrics import (
    CollapseParams,
    GameOutcome,
    _json_list,
    _mean_ignoring_none,
    _series_json,
    condition_summary,
    cooperation_rate,
    cooperation_rate_over_time,
    decided_cooperation_rate,
    game_metrics,
    games_metrics,
    mean_probability,
    retaliation_and_forgiveness,
    series_values,
    time_to_collapse,
)
from pdbench.core.stats import resample_weights
from pdbench.core.talk_metrics import TALK_COLUMNS


def same(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal shapes and bits (NaN where NaN)."""
    got, want = np.asarray(got), np.asarray(want)
    return got.shape == want.shape and np.array_equal(got, want, equal_nan=True)


def random_matrix(rng: np.random.Generator, trial: int) -> np.ndarray:
    """Rows x columns of floats, some rounded (ties), some columns partly or wholly NaN."""
    rows, cols = int(rng.integers(1, 50)), int(rng.integers(1, 30))
    values = rng.standard_normal((rows, cols)) * 10 ** rng.uniform(-3, 3)
    if trial % 3 == 0:
        values = np.round(values)
    values[rng.random((rows, cols)) < rng.uniform(0.0, 0.9)] = np.nan
    values[:, int(rng.integers(0, cols))] = np.nan
    if trial % 5 == 0:
        values[:, 0] = 1.5  # a column with every value known
    return values


def test_column_nanquantiles_are_numpys_nanquantile_bit_for_bit() -> None:
    rng = np.random.default_rng(2101)
    for trial in range(150):
        values = random_matrix(rng, trial)
        q = [0.025, 0.975] if trial % 2 else sorted(rng.random(3).tolist())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
            want = np.nanquantile(values, q, axis=0)
        assert same(column_nanquantiles(values, q), want), trial


def test_a_column_with_no_value_has_nan_quantiles() -> None:
    values = np.array([[np.nan, 1.0], [np.nan, 3.0]])
    got = column_nanquantiles(values, [0.0, 0.5, 1.0])
    assert np.isnan(got[:, 0]).all()
    assert got[:, 1].tolist() == [1.0, 2.0, 3.0]  # by hand: min, midpoint, max


def reference_bootstrap_t(
    values: np.ndarray, defined: np.ndarray, weights: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """The bootstrap-t as first written (whole-array expressions, np.nanquantile)."""
    filled = np.where(defined, values, 0.0)
    mask = defined.astype(np.float64)
    k = mask.sum(axis=0)
    mean = filled.sum(axis=0) / k
    sd = np.sqrt(np.maximum(((filled - mean) ** 2 * mask).sum(axis=0) / (k - 1), 0.0))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        drawn = weights @ mask
        b_mean = (weights @ filled) / drawn
        b_var = ((weights @ (filled * filled)) / drawn - b_mean**2) * drawn / (drawn - 1)
        b_se = np.sqrt(np.maximum(b_var, 0.0) / drawn)
        scale = np.maximum(np.abs(mean), 1.0) * 1e-7
        valid = (b_se > scale) & (drawn >= 2)
        t_stats = np.where(valid, (b_mean - mean) / np.where(valid, b_se, 1.0), np.nan)
        alpha = (1.0 - level) / 2.0
        t_low, t_high = np.nanquantile(t_stats, [alpha, 1.0 - alpha], axis=0)
    se = sd / np.sqrt(k)
    enough = valid.mean(axis=0) >= 0.5
    return (
        np.where(enough, mean - t_high * se, np.nan),
        np.where(enough, mean - t_low * se, np.nan),
    )


@pytest.mark.parametrize("known", ["all", "some"])
def test_bootstrap_t_in_place_equals_the_whole_array_formulas(known: str) -> None:
    rng = np.random.default_rng(2102)
    for trial in range(60):
        games, cols = int(rng.integers(5, 40)), int(rng.integers(1, 25))
        values = rng.gamma(0.5, 3.0, (games, cols))
        if trial % 2:
            values = rng.integers(0, 3, (games, cols)) / 2.0  # like the per-round bands
        if known == "some":  # at least 5 games with a value, as the caller ensures
            values[5:][rng.random((games - 5, cols)) < 0.3] = np.nan
        weights = resample_weights(games, int(rng.integers(20, 300)), rng)
        if trial % 7 == 0:
            weights = weights * 0.75 + 0.1  # not whole counts: the general path
        defined = ~np.isnan(values)
        got = _bootstrap_t(values, defined, weights, 0.95)
        want = reference_bootstrap_t(values, defined, weights, 0.95)
        assert same(got[0], want[0]) and same(got[1], want[1]), trial


def reference_mean(values: list[object]) -> float | None:
    """The mean of probabilities as first written: a list, None and NaN left out, Python's sum."""
    kept = [
        float(v)  # type: ignore[arg-type]
        for v in values
        if v is not None and not (isinstance(v, float) and math.isnan(v))
    ]
    return sum(kept) / len(kept) if kept else None


def test_mean_of_probabilities_from_an_array_is_the_list_mean() -> None:
    rng = np.random.default_rng(2103)
    for trial in range(300):
        n = int(rng.integers(0, 2000))
        values = rng.random(n)
        values[rng.random(n) < rng.uniform(0.0, 1.0)] = np.nan
        as_list: list[object] = [None if math.isnan(v) else v for v in values.tolist()]
        want = reference_mean(as_list)
        assert mean_probability(values) == want, trial
        assert _mean_ignoring_none(as_list) == want, trial
        # float32 or object arrays still give a value (the generic path)
        assert mean_probability(np.array(as_list, dtype=object)) == want, trial
    assert mean_probability(np.full(3, np.nan)) is None
    assert mean_probability(None) is None
    # Python's sum is compensated since 3.12; numpy's pairwise sum would differ in the last bit
    values = np.array([0.1] * 10 + [1e-17] * 3)
    assert mean_probability(values) == reference_mean(values.tolist())


def test_cooperation_series_text_is_orjsons_and_reads_back_the_same_floats() -> None:
    rng = np.random.default_rng(2104)
    for n in [0, 1, 2, 3, 7, 100, 1000]:
        a, b = rng.random(n) < 0.5, rng.random(n) < 0.7
        text = _json_list(cooperation_rate_over_time(a, b))
        assert _series_json(a, b) == text
        assert same(series_values(text), np.asarray(orjson.loads(text), dtype=np.float64))
    # any other list of numbers is read by orjson, the same floats
    for text in ["[0.25,1.0]", "[1.5,2.0,9.5]", "[1,0]", "[0.1]", "[1e-05,0.5]", "[-0.5,0.0]"]:
        assert same(series_values(text), np.asarray(orjson.loads(text), dtype=np.float64))


def test_game_rates_are_the_means_of_the_moves() -> None:
    rng = np.random.default_rng(2105)
    for trial in range(200):
        n = int(rng.integers(0, 60))
        a, b = rng.random(n) < rng.random(), rng.random(n) < rng.random()
        fallback = rng.random(n) < (0.0 if trial % 3 == 0 else 0.3)
        row = game_metrics(a, b, np.zeros(n), np.zeros(n), a_fallback=fallback, b_fallback=None)
        assert row["agent_a_cooperation_rate"] == cooperation_rate(a)
        assert row["agent_b_cooperation_rate"] == cooperation_rate(b)
        both = np.concatenate([a, b])
        assert row["overall_cooperation_rate"] == (float(both.mean()) if n else None)
        assert row["agent_a_decided_cooperation_rate"] == decided_cooperation_rate(a, fallback)
        assert row["agent_b_decided_cooperation_rate"] == decided_cooperation_rate(b, None)
        assert row["cooperation_rate_over_time"] == _json_list(cooperation_rate_over_time(a, b))


def test_condition_series_mean_reads_the_stored_lists() -> None:
    # by hand: rounds reached by 2, 2 and 1 games -> (0.5 + 1) / 2, (0 + 1) / 2, 0.5 / 1
    rows = [
        {"cooperation_rate_over_time": "[0.5,0.0,0.5]"},
        {"cooperation_rate_over_time": "[1.0,1.0]"},
    ]
    got = condition_summary(rows)["cooperation_rate_over_time"]
    assert orjson.loads(got) == [0.75, 0.5, 0.5]


def reference_game_metrics(
    a: np.ndarray,
    b: np.ndarray,
    a_payoffs: np.ndarray,
    b_payoffs: np.ndarray,
    collapse: CollapseParams,
    a_fallback: np.ndarray | None,
    a_p_cooperate: np.ndarray | None,
) -> dict[str, object]:
    """One game's metrics from the per-game definitions, as game_metrics first assembled them."""
    total_a, total_b = float(np.sum(a_payoffs)), float(np.sum(b_payoffs))
    ret_a, forg_a = retaliation_and_forgiveness(a, b)
    ret_b, forg_b = retaliation_and_forgiveness(b, a)
    n = int(a.size)
    fails = 0 if a_fallback is None else int(a_fallback.sum())
    at = time_to_collapse(a, b, collapse.k, collapse.threshold)
    return {
        "n_rounds": n,
        "agent_a_cooperation_rate": cooperation_rate(a),
        "agent_b_cooperation_rate": cooperation_rate(b),
        "overall_cooperation_rate": float((a.sum() + b.sum()) / (2 * n)) if n else None,
        "cooperation_rate_over_time": _json_list(cooperation_rate_over_time(a, b)),
        "agent_a_retaliation_rate": ret_a,
        "agent_b_retaliation_rate": ret_b,
        "agent_a_forgiveness_rate": forg_a,
        "agent_b_forgiveness_rate": forg_b,
        "agent_a_total_payoff": total_a,
        "agent_b_total_payoff": total_b,
        "agent_a_payoff_per_round": total_a / n if n else None,
        "agent_b_payoff_per_round": total_b / n if n else None,
        "agent_a_exploitability_payoff_gap": total_b - total_a,
        "agent_b_exploitability_payoff_gap": total_a - total_b,
        "time_to_collapse": at,
        "agent_a_parse_failures": fails,
        "agent_b_parse_failures": 0,
        "agent_a_fallback_rate": fails / n if n else None,
        "agent_b_fallback_rate": 0 / n if n else None,
        "agent_a_decided_cooperation_rate": decided_cooperation_rate(a, a_fallback),
        "agent_b_decided_cooperation_rate": decided_cooperation_rate(b, None),
        "agent_a_mean_p_cooperate": mean_probability(a_p_cooperate),
        "agent_b_mean_p_cooperate": mean_probability(None),
        "collapsed_fraction": None if at is None and n == 0 else float(at is not None),
        **behaviour_columns("a", a, b),
        **behaviour_columns("b", b, a),
    }


def test_metrics_of_games_taken_together_are_each_games_own() -> None:
    rng = np.random.default_rng(2106)
    for trial in range(150):
        n = int(rng.integers(0, 25))
        collapse = CollapseParams(int(rng.integers(0, 8)), float(rng.choice([0.0, 0.2, 0.5])))
        games, wants = [], []
        for replicate in range(int(rng.integers(1, 6))):
            a, b = rng.random(n) < rng.random(), rng.random(n) < rng.random()
            pay_a = rng.choice([0.0, 1.0, 0.1, 3.3, 5.0], n)
            pay_b = rng.choice([0.0, 0.7, 3.0], n)
            fallback = rng.random(n) < 0.3 if trial % 2 else None
            p_c = rng.random(n) if trial % 3 == 0 else None
            if p_c is not None:
                p_c[rng.random(n) < 0.4] = np.nan
            fails = 0 if fallback is None else int(fallback.sum())
            games.append(
                GameOutcome(
                    "c", replicate, "A", "B", a, b, pay_a, pay_b, fails, 0, fallback, None, p_c
                )
            )
            wants.append(reference_game_metrics(a, b, pay_a, pay_b, collapse, fallback, p_c))
            got_one = game_metrics(
                a,
                b,
                pay_a,
                pay_b,
                collapse=collapse,
                a_parse_failures=fails,
                a_fallback=fallback,
                a_p_cooperate=p_c,
            )
            assert typed(got_one) == typed(wants[-1]), trial
        assert [typed(g) for g in games_metrics(games, collapse)] == [typed(w) for w in wants]


def typed(row: dict[str, object]) -> list[tuple[str, object, str]]:
    """A row's keys in order, values and their types (1 and 1.0 differ); the talk columns,
    newer than the reference code, must be None (these games have no messages) and are left
    out."""
    assert all(row[k] is None for k in TALK_COLUMNS if k in row)
    return [(k, v, type(v).__name__) for k, v in row.items() if k not in TALK_COLUMNS]


def test_behaviour_of_games_taken_together_is_each_games_own() -> None:
    rng = np.random.default_rng(2107)
    for trial in range(1500):
        games, n = int(rng.integers(1, 6)), int(rng.integers(0, 14))
        mine = rng.random((games, n)) < rng.random()
        theirs = rng.random((games, n)) < rng.random()
        got = behaviour_columns_of_games("b", mine, theirs)
        want = [behaviour_columns("b", mine[g], theirs[g]) for g in range(games)]
        assert [typed(r) for r in got] == [typed(r) for r in want], trial


def test_rows_do_not_depend_on_how_games_are_batched(monkeypatch: pytest.MonkeyPatch) -> None:
    import pdbench.core.metrics as metrics_module

    rng = np.random.default_rng(2108)
    games = []
    for replicate in range(9):
        n = int(rng.choice([3, 8, 8, 20]))
        a, b = rng.random(n) < 0.6, rng.random(n) < 0.4
        games.append(GameOutcome("c", replicate, "A", "B", a, b, a * 3.0, b * 1.5))
    whole = metrics_module.aggregate_rows("r", games, ["c"])
    monkeypatch.setattr(metrics_module, "BATCH_ROUNDS", 16)  # one to two games a batch
    assert metrics_module.aggregate_rows("r", games, ["c"]) == whole
    one_by_one = [game_metrics(g.a_coop, g.b_coop, g.a_payoffs, g.b_payoffs) for g in games]
    assert [{k: r[k] for k in one_by_one[0]} for r in whole[:-1]] == one_by_one
