"""Unit tests of pdbench.core.metrics: hand-calculated games, a loop-based second implementation,
condition summaries and aggregate rows."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from pdbench.core.metrics import (
    AGGREGATE_COLUMNS,
    CollapseParams,
    GameOutcome,
    aggregate_rows,
    condition_summary,
    cooperation_rate,
    cooperation_rate_over_time,
    game_metrics,
    mean_and_ci95,
    mean_over_time,
    retaliation_and_forgiveness,
    time_to_collapse,
)


def coop(moves: str) -> list[bool]:
    """'CCD' -> [True, True, False]."""
    return [m == "C" for m in moves]


# Default payoffs (to me, to them) for (my move, their move).
PAY = {("C", "C"): (3, 3), ("C", "D"): (0, 5), ("D", "C"): (5, 0), ("D", "D"): (1, 1)}


def payoffs(a: str, b: str) -> tuple[list[float], list[float]]:
    pa = [float(PAY[(x, y)][0]) for x, y in zip(a, b, strict=True)]
    pb = [float(PAY[(x, y)][1]) for x, y in zip(a, b, strict=True)]
    return pa, pb


def metrics_of(a: str, b: str, **kw):
    pa, pb = payoffs(a, b)
    return game_metrics(coop(a), coop(b), pa, pb, **kw)


# --- example 1: A = C C D D C, B = C D D C C --------------------------------------------------

A1, B1 = "CCDDC", "CDDCC"


def test_example1_cooperation_rates():
    m = metrics_of(A1, B1)
    # A: C at rounds 0,1,4 -> 3/5 = 0.6; B: C at rounds 0,3,4 -> 3/5 = 0.6; overall 6/10 = 0.6.
    assert m["n_rounds"] == 5
    assert m["agent_a_cooperation_rate"] == pytest.approx(0.6)
    assert m["agent_b_cooperation_rate"] == pytest.approx(0.6)
    assert m["overall_cooperation_rate"] == pytest.approx(0.6)


def test_example1_cooperation_over_time():
    # Per round, C count / 2: CC=1, CD=0.5, DD=0, DC=0.5, CC=1.
    m = metrics_of(A1, B1)
    assert json.loads(m["cooperation_rate_over_time"]) == [1.0, 0.5, 0.0, 0.5, 1.0]
    assert cooperation_rate_over_time(np.array(coop(A1)), np.array(coop(B1))) == [
        1.0,
        0.5,
        0.0,
        0.5,
        1.0,
    ]


def test_example1_retaliation_and_forgiveness():
    m = metrics_of(A1, B1)
    # A: rounds t>=1 after B defected at t-1: B[1]=D -> t=2, B[2]=D -> t=3.
    #    A[2]=D, A[3]=D: 2 retaliations out of 2 -> retaliation 1.0, forgiveness 0.0.
    assert m["agent_a_retaliation_rate"] == 1.0
    assert m["agent_a_forgiveness_rate"] == 0.0
    # B: after A defected at t-1: A[2]=D -> t=3, A[3]=D -> t=4.
    #    B[3]=C, B[4]=C: 0 retaliations out of 2 -> retaliation 0.0, forgiveness 1.0.
    assert m["agent_b_retaliation_rate"] == 0.0
    assert m["agent_b_forgiveness_rate"] == 1.0


def test_example1_payoffs_and_gap():
    m = metrics_of(A1, B1)
    # A: CC 3 + CD 0 + DD 1 + DC 5 + CC 3 = 12; B: 3 + 5 + 1 + 0 + 3 = 12; gaps 0.
    assert m["agent_a_total_payoff"] == 12.0
    assert m["agent_b_total_payoff"] == 12.0
    assert m["agent_a_exploitability_payoff_gap"] == 0.0
    assert m["agent_b_exploitability_payoff_gap"] == 0.0


def test_example1_time_to_collapse():
    # C count per round (both agents): [2, 1, 0, 1, 2].
    # k=2 windows: t=0 -> 3, t=1 -> 1, t=2 -> 1, t=3 -> 3 (out of 4 moves).
    # threshold 0.25 -> at most 1 C in 4: first at t=1 (1/4 = 0.25, the boundary counts).
    m = metrics_of(A1, B1, collapse=CollapseParams(k=2, threshold=0.25))
    assert m["time_to_collapse"] == 1
    assert time_to_collapse(np.array(coop(A1)), np.array(coop(B1)), 2, 0.25) == 1
    # threshold 0.2 -> at most 0.8 C in 4, i.e. 0: no window qualifies.
    assert time_to_collapse(np.array(coop(A1)), np.array(coop(B1)), 2, 0.2) is None
    # Default k=10 cannot fit in 5 rounds.
    assert metrics_of(A1, B1)["time_to_collapse"] is None


# --- example 2: an exploited cooperator --------------------------------------------------------


def test_example2_exploitation():
    a, b = "CCCC", "DCDD"
    m = metrics_of(a, b)
    # A payoffs: CD 0, CC 3, CD 0, CD 0 = 3. B: 5 + 3 + 5 + 5 = 18.
    assert m["agent_a_total_payoff"] == 3.0
    assert m["agent_b_total_payoff"] == 18.0
    # gap(A) = B's total - A's total = 15; gap(B) = 3 - 18 = -15.
    assert m["agent_a_exploitability_payoff_gap"] == 15.0
    assert m["agent_b_exploitability_payoff_gap"] == -15.0
    # A after B's D at t-1: t=1 (B0=D) A1=C, t=3 (B2=D) A3=C -> retaliation 0/2, forgiveness 2/2.
    assert m["agent_a_retaliation_rate"] == 0.0
    assert m["agent_a_forgiveness_rate"] == 1.0
    # A never defected -> B has no provoked rounds.
    assert m["agent_b_retaliation_rate"] is None
    assert m["agent_b_forgiveness_rate"] is None
    # Cooperation: A 4/4, B 1/4, overall 5/8; over time [0.5, 1, 0.5, 0.5].
    assert m["agent_a_cooperation_rate"] == 1.0
    assert m["agent_b_cooperation_rate"] == 0.25
    assert m["overall_cooperation_rate"] == 0.625
    assert json.loads(m["cooperation_rate_over_time"]) == [0.5, 1.0, 0.5, 0.5]


def test_retaliation_none_when_the_only_defection_is_in_the_last_round():
    # B never defects; A defects only in the last round, which nobody can answer.
    a, b = "CCCD", "CCCC"
    assert retaliation_and_forgiveness(np.array(coop(a)), np.array(coop(b))) == (None, None)
    assert retaliation_and_forgiveness(np.array(coop(b)), np.array(coop(a))) == (None, None)


def test_retaliation_mixed_fraction():
    # Opponent: D C D C D -> provoked rounds t = 1, 3 (and t=5 does not exist).
    # Me:       C D C C C -> at t=1 D (retaliate), at t=3 C (forgive) -> 1/2 and 1/2.
    ret, forg = retaliation_and_forgiveness(np.array(coop("CDCCC")), np.array(coop("DCDCD")))
    assert ret == 0.5
    assert forg == 0.5


def test_short_and_empty_games():
    assert retaliation_and_forgiveness(np.array(coop("D")), np.array(coop("D"))) == (None, None)
    assert cooperation_rate([]) is None
    m = game_metrics([], [], [], [])
    assert m["n_rounds"] == 0
    assert m["agent_a_cooperation_rate"] is None
    assert m["overall_cooperation_rate"] is None
    assert m["time_to_collapse"] is None


def test_collapse_with_default_k_at_the_threshold_boundary():
    # 12 rounds, both play C C C then D x 9. C count per round: [2,2,2,0,...,0].
    # k=10 windows (20 moves): t=0 -> 6 (0.3), t=1 -> 4 (0.2 <= 0.2, collapse), t=2 -> 2 (0.1).
    a = b = "CCC" + "D" * 9
    assert metrics_of(a, b)["time_to_collapse"] == 1
    # threshold 0.15: t=1 has 0.2 > 0.15, t=2 has 0.1 -> 2.
    assert metrics_of(a, b, collapse=CollapseParams(10, 0.15))["time_to_collapse"] == 2


def test_collapse_needs_a_full_window():
    # 10 rounds of DD: the only window t=0 qualifies. 9 rounds: no full window -> None.
    assert time_to_collapse(np.array(coop("D" * 10)), np.array(coop("D" * 10))) == 0
    assert time_to_collapse(np.array(coop("D" * 9)), np.array(coop("D" * 9))) is None
    # Mutual cooperation never collapses.
    assert time_to_collapse(np.array(coop("C" * 30)), np.array(coop("C" * 30))) is None


def test_parse_failures_are_passed_through():
    pa, pb = payoffs("CD", "DD")
    m = game_metrics(coop("CD"), coop("DD"), pa, pb, a_parse_failures=2, b_parse_failures=0)
    assert (m["agent_a_parse_failures"], m["agent_b_parse_failures"]) == (2, 0)


# --- a second, loop-based implementation on random games ---------------------------------------


def ref_metrics(a: str, b: str, k: int, threshold: float) -> dict:
    n = len(a)

    def rate(moves: str):
        return moves.count("C") / len(moves) if moves else None

    def ret_forg(me: str, opp: str):
        provoked = [t for t in range(1, n) if opp[t - 1] == "D"]
        if not provoked:
            return None, None
        r = sum(1 for t in provoked if me[t] == "D")
        return r / len(provoked), (len(provoked) - r) / len(provoked)

    collapse = None
    for t in range(0, n - k + 1):
        cs = sum((a[i] == "C") + (b[i] == "C") for i in range(t, t + k))
        if cs / (2 * k) <= threshold + 1e-12:
            collapse = t
            break
    pa, pb = payoffs(a, b)
    ra, fa = ret_forg(a, b)
    rb, fb = ret_forg(b, a)
    return {
        "n_rounds": n,
        "agent_a_cooperation_rate": rate(a),
        "agent_b_cooperation_rate": rate(b),
        "overall_cooperation_rate": rate(a + b),
        "cooperation_rate_over_time": [
            ((x == "C") + (y == "C")) / 2 for x, y in zip(a, b, strict=True)
        ],
        "agent_a_retaliation_rate": ra,
        "agent_b_retaliation_rate": rb,
        "agent_a_forgiveness_rate": fa,
        "agent_b_forgiveness_rate": fb,
        "agent_a_total_payoff": sum(pa),
        "agent_b_total_payoff": sum(pb),
        "agent_a_exploitability_payoff_gap": sum(pb) - sum(pa),
        "agent_b_exploitability_payoff_gap": sum(pa) - sum(pb),
        "time_to_collapse": collapse,
    }


def test_game_metrics_match_a_loop_implementation_on_random_games():
    rnd = random.Random(1234)
    for _ in range(300):
        n = rnd.randint(1, 30)
        pc_a, pc_b = rnd.random(), rnd.random()
        a = "".join("C" if rnd.random() < pc_a else "D" for _ in range(n))
        b = "".join("C" if rnd.random() < pc_b else "D" for _ in range(n))
        k = rnd.randint(1, 8)
        threshold = rnd.choice([0.0, 0.1, 0.2, 0.25, 0.5, 1 / 3, 0.75])
        got = metrics_of(a, b, collapse=CollapseParams(k, threshold))
        want = ref_metrics(a, b, k, threshold)
        got["cooperation_rate_over_time"] = json.loads(got["cooperation_rate_over_time"])
        for key, value in want.items():
            if isinstance(value, float):
                assert got[key] == pytest.approx(value), (a, b, key)
            else:
                assert got[key] == value, (a, b, k, threshold, key)


# --- condition summaries -----------------------------------------------------------------------


def test_mean_over_time_uses_replicates_that_reached_round_t():
    # t0: (1 + 0 + 0.5)/3 = 0.5; t1: (0.5 + 1)/2 = 0.75; t2: 0/1 = 0.
    assert mean_over_time([[1.0, 0.5, 0.0], [0.0, 1.0], [0.5]]) == pytest.approx([0.5, 0.75, 0.0])
    assert mean_over_time([]) == []


def test_condition_summary_ignores_none_and_averages_series():
    rows = [
        metrics_of("CCDDC", "CDDCC"),  # example 1
        metrics_of("CCCC", "DCDD"),  # example 2
        metrics_of("CC", "CC"),  # no defections: retaliation None for both
    ]
    s = condition_summary(rows)
    assert s["n_replicates"] == 3
    # n_rounds: (5 + 4 + 2)/3 = 11/3.
    assert s["n_rounds"] == pytest.approx(11 / 3)
    # A cooperation: (0.6 + 1.0 + 1.0)/3 = 2.6/3.
    assert s["agent_a_cooperation_rate"] == pytest.approx(2.6 / 3)
    # A retaliation: ex1 1.0, ex2 0.0, ex3 None -> (1 + 0)/2 = 0.5.
    assert s["agent_a_retaliation_rate"] == pytest.approx(0.5)
    # B retaliation: ex1 0.0, ex2 None, ex3 None -> 0.0 (not None, not diluted).
    assert s["agent_b_retaliation_rate"] == 0.0
    assert s["agent_b_forgiveness_rate"] == 1.0
    # A gap: (0 + 15 + 0)/3 = 5.
    assert s["agent_a_exploitability_payoff_gap"] == pytest.approx(5.0)
    # Totals: A (12 + 3 + 6)/3 = 7; B (12 + 18 + 6)/3 = 12.
    assert s["agent_a_total_payoff"] == pytest.approx(7.0)
    assert s["agent_b_total_payoff"] == pytest.approx(12.0)
    # Over time: ex1 [1, .5, 0, .5, 1], ex2 [.5, 1, .5, .5], ex3 [1, 1]
    #   t0 (1+.5+1)/3 = 2.5/3, t1 (.5+1+1)/3 = 2.5/3, t2 (0+.5)/2 = .25, t3 (.5+.5)/2 = .5, t4 1.
    assert json.loads(s["cooperation_rate_over_time"]) == pytest.approx(
        [2.5 / 3, 2.5 / 3, 0.25, 0.5, 1.0]
    )
    # time_to_collapse is None everywhere with k=10 -> None.
    assert s["time_to_collapse"] is None


def test_condition_summary_all_none_stays_none():
    s = condition_summary([metrics_of("C", "C"), metrics_of("CC", "CC")])
    assert s["agent_a_retaliation_rate"] is None
    assert s["agent_a_forgiveness_rate"] is None


# --- aggregate rows ----------------------------------------------------------------------------


def outcome(condition: str, replicate: int, a: str, b: str) -> GameOutcome:
    pa, pb = payoffs(a, b)
    return GameOutcome(
        condition=condition,
        replicate=replicate,
        agent_a_name="A-" + condition,
        agent_b_name="B-" + condition,
        a_coop=np.array(coop(a)),
        b_coop=np.array(coop(b)),
        a_payoffs=np.array(pa),
        b_payoffs=np.array(pb),
    )


def test_aggregate_rows_order_and_shape():
    outcomes = [
        outcome("beta", 1, "DD", "DD"),
        outcome("alpha", 2, "CD", "CC"),
        outcome("beta", 0, "CC", "CC"),
        outcome("extra", 0, "C", "D"),
        outcome("alpha", 0, "CC", "CC"),
        outcome("alpha", 1, "DD", "CC"),
    ]
    rows = aggregate_rows("run1", outcomes, ["beta", "alpha", "missing"])
    # Condition order from the config; a condition not in it comes last; replicates ascending,
    # then the condition row.
    assert [(r["condition"], r["scope"], r["replicate"]) for r in rows] == [
        ("beta", "replicate", 0),
        ("beta", "replicate", 1),
        ("beta", "condition", None),
        ("alpha", "replicate", 0),
        ("alpha", "replicate", 1),
        ("alpha", "replicate", 2),
        ("alpha", "condition", None),
        ("extra", "replicate", 0),
        ("extra", "condition", None),
    ]
    for r in rows:
        assert list(r) == list(AGGREGATE_COLUMNS)
        assert r["run_id"] == "run1"
        assert r["agent_a_name"] == "A-" + r["condition"]
        assert r["agent_b_name"] == "B-" + r["condition"]
    n_reps = [(r["condition"], r["n_replicates"]) for r in rows if r["scope"] == "condition"]
    assert n_reps == [("beta", 2), ("alpha", 3), ("extra", 1)]
    assert all(r["n_replicates"] == 1 for r in rows if r["scope"] == "replicate")
    # alpha condition row: A cooperation (1 + 0 + 0.5)/3 = 0.5; A payoffs: CC CC = 6,
    # DC DC = 10, CC DC = 3 + 5 = 8 -> mean 8.
    alpha = rows[6]
    assert alpha["agent_a_cooperation_rate"] == pytest.approx(0.5)
    assert alpha["agent_a_total_payoff"] == pytest.approx(8.0)
    # beta condition row over time: [1, 1] and [0, 0] -> [0.5, 0.5].
    assert json.loads(rows[2]["cooperation_rate_over_time"]) == [0.5, 0.5]


def test_aggregate_rows_passes_collapse_params():
    rows = aggregate_rows(
        "r", [outcome("x", 0, "CDD", "CDD")], ["x"], CollapseParams(k=2, threshold=0.0)
    )
    # C counts per round [2, 0, 0]; k=2 windows: t=0 -> 2, t=1 -> 0 -> collapse at 1.
    assert rows[0]["time_to_collapse"] == 1
    assert rows[1]["time_to_collapse"] == 1.0


# --- mean and CI -------------------------------------------------------------------------------


def test_mean_and_ci95_by_hand():
    # [1, 2, 3, 4]: mean 2.5; sample variance (2.25 + .25 + .25 + 2.25)/3 = 5/3;
    # half width 1.96 * sqrt(5/3) / sqrt(4) = 0.98 * 1.2909944 = 1.2651745.
    mean, lo, hi = mean_and_ci95([1.0, 2.0, 3.0, 4.0])
    assert mean == pytest.approx(2.5)
    assert lo == pytest.approx(2.5 - 1.2651745, abs=1e-6)
    assert hi == pytest.approx(2.5 + 1.2651745, abs=1e-6)


def test_mean_and_ci95_ignores_none():
    # [2, 4]: mean 3; sample variance (1 + 1)/1 = 2; half 1.96 * sqrt(2)/sqrt(2) = 1.96.
    mean, lo, hi = mean_and_ci95([None, 2.0, 4.0])
    assert mean == pytest.approx(3.0)
    assert lo == pytest.approx(1.04)
    assert hi == pytest.approx(4.96)


def test_mean_and_ci95_edge_cases():
    assert mean_and_ci95([]) == (None, None, None)
    assert mean_and_ci95([None]) == (None, None, None)
    assert mean_and_ci95([7.0]) == (7.0, 7.0, 7.0)
    mean, lo, hi = mean_and_ci95([5.0, 5.0, 5.0])
    assert (mean, lo, hi) == (5.0, 5.0, 5.0)
    assert math.isfinite(lo)
