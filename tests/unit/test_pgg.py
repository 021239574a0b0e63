"""The public goods game with punishment: payoffs by hand, against egttools and against a round of
PGG-Bench's logs; punishment caps and refunds by hand; retaliation and antisocial punishment on a
hand-written history; the scripted policies against hand-played games."""

from __future__ import annotations

import pytest

from pdbench.agents.pgg_policy import make_pgg_policy, pgg_policy_names, play_policies
from pdbench.core.pgg import PGGRules, play_round
from pdbench.core.pgg_metrics import pgg_game_metrics

LAB = PGGRules(n_players=5, endowment=20, multiplier=1.6)  # "round" budget, exact shares
BENCH = PGGRules.pgg_bench()


# ----------------------------------------------------------------------------------------------
# Payoffs


@pytest.mark.parametrize(
    ("contributions", "income"),
    [
        # pot 100 * 1.6 / 5 = 32 each; 20 - 20 + 32
        ((20, 20, 20, 20, 20), (32, 32, 32, 32, 32)),
        # one free rider: pot 80 * 1.6 / 5 = 25.6; it keeps its 20
        ((0, 20, 20, 20, 20), (45.6, 25.6, 25.6, 25.6, 25.6)),
        ((0, 0, 0, 0, 0), (20, 20, 20, 20, 20)),
        # pot 50 -> 80 -> 16 each
        ((0, 5, 10, 15, 20), (36, 31, 26, 21, 16)),
    ],
)
def test_round_payoffs_by_hand(contributions: tuple[int, ...], income: tuple[float, ...]) -> None:
    rr = play_round(LAB, (0,) * 5, contributions)
    assert rr.income == pytest.approx(income, abs=1e-12)
    assert rr.punish_spent == (0,) * 5 and rr.punish_received == (0,) * 5


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("r", [1.6, 2.5])
def test_all_or_nothing_equals_egttools_pgg(n: int, r: float) -> None:
    from egttools.behaviors.pgg_behaviors import PGGOneShotStrategy
    from egttools.games import PGG

    e = 20
    game = PGG(n, float(e), r, [PGGOneShotStrategy(1), PGGOneShotStrategy(0)])
    rules = PGGRules(n_players=n, endowment=e, multiplier=r)
    for k in range(n + 1):  # k contributors of E, seats 0..k-1
        rr = play_round(rules, (0,) * n, [e] * k + [0] * (n - k))
        composition = [k, n - k]
        for seat, gain in enumerate(rr.income):
            strategy = 0 if seat < k else 1
            assert gain - e == pytest.approx(game.payoff(strategy, composition), abs=1e-9)


def test_integer_shares_carry_the_remainder() -> None:
    # pot 48 * 1.6 = 76.8 -> 76 = 5 * 15 + 1; next round (1 + 50) * 1.6 = 81.6 -> 81 = 5 * 16 + 1
    rr = play_round(BENCH, (20,) * 5, (8, 10, 10, 10, 10))
    assert (rr.share, rr.carry_out) == (15, 1)
    assert rr.balances == (27, 25, 25, 25, 25)
    rr2 = play_round(BENCH, rr.balances, (10,) * 5, carry_in=rr.carry_out)
    assert (rr2.share, rr2.carry_out) == (16, 1)


def test_a_round_of_pgg_bench_logs() -> None:
    # lechmazur/pgg_bench logs/game_1741220882524912_20250305_192802.jsonl, round 5: carry-in 4,
    # contributions 9, 10, 10, 10, 10 -> pot_after_mult 84, share 16, leftover 4; P5 spends 2 on
    # P1 (damage 6), P1 spends 3 on P5 (damage 9); round_end balances 7, 28, 27, 45, 14.
    rr = play_round(
        BENCH, (9, 22, 21, 39, 19), (9, 10, 10, 10, 10), {4: {0: 2}, 0: {4: 3}}, carry_in=4
    )
    assert (rr.share, rr.carry_out) == (16, 4)
    assert rr.balances == (7, 28, 27, 45, 14)
    assert rr.punish_spent == (3, 0, 0, 0, 2) and rr.punish_received == (6, 0, 0, 0, 9)


# ----------------------------------------------------------------------------------------------
# Punishment caps and refunds


def test_cap_at_half_the_post_fund_balance_refunds_the_rest() -> None:
    # PGG-Bench's rule (whole tokens): seat 1 holds 10, so 10 tokens (raw 30) are capped at
    # floor(10 / 2) = 5: floor(10 x 5/30) = 1 token is spent (damage 3), 9 refunded
    rr = play_round(BENCH, (20, 10, 20, 20, 20), (0,) * 5, {0: {1: 10}})
    assert rr.damage[0][1] == 3 and rr.punish_spent[0] == 1
    assert rr.balances[0] == 19 and rr.balances[1] == 7
    # the simultaneous rule in exact fractions: damage 5, paid 5/3
    exact = PGGRules(n_players=5, budget="balance", punishment=True, punish_max_targets=1)
    rr = play_round(exact, (20, 10, 20, 20, 20), (0,) * 5, {0: {1: 10}})
    assert rr.damage[0][1] == 5
    assert rr.punish_spent[0] == pytest.approx(5 / 3)
    assert rr.balances[0] == pytest.approx(20 - 5 / 3) and rr.balances[1] == 5


def test_the_worked_example_of_pgg_benchs_prompt_templates() -> None:
    # prompts/template_punishment_*.txt (lechmazur/pgg_bench): start 15, 15, 20; contributions
    # 5, 3, 5: sum 13 x 1.6 = 20, share 6, leftover 2; after the fund 16, 18, 21. P1 spends 4 on
    # P3: raw 12, half of 21 = 10, floor(4 x 10/12) = 3, damage 9, refund 1 -> P1 13, P3 12;
    # P2 spends 2 on P3: raw 6, half of 12 = 6, damage 6 -> P2 16, P3 6.
    rules = PGGRules(
        n_players=3,
        endowment=20,
        budget="balance",
        integer_shares=True,
        punishment=True,
        punish_max_targets=1,
        punish_rule="sequential",
    )
    rr = play_round(rules, (15, 15, 20), (5, 3, 5), {0: {2: 4}, 1: {2: 2}})
    assert (rr.share, rr.carry_out) == (6, 2)
    assert rr.post_fund == (16, 18, 21)
    assert rr.damage[0][2] == 9 and rr.damage[1][2] == 6
    assert rr.punish_spent[:2] == (3, 2)
    assert rr.balances == (13, 16, 6)


def test_absolute_cap() -> None:
    rules = PGGRules(n_players=2, endowment=20, budget="balance", punishment=True, punish_effect=20)
    # 10 tokens x 20 = 200, capped at min(0.5 x 1000, 100) = 100; paid 100 / 20 = 5
    rr = play_round(rules, (20, 1000), (0, 0), {0: {1: 10}})
    assert rr.damage[0][1] == 100 and rr.punish_spent[0] == 5
    assert rr.balances == (15, 900)


def test_many_punishers_stop_at_zero() -> None:
    rules = PGGRules(n_players=4, endowment=20, budget="balance", punishment=True)
    # seat 3 holds 10; each act is capped at 5, three acts remove 15 but only 10 is there
    rr = play_round(rules, (20, 20, 20, 10), (0,) * 4, {0: {3: 4}, 1: {3: 4}, 2: {3: 4}})
    assert rr.balances[3] == 0 and rr.punish_received[3] == 10
    assert rr.punish_spent[:3] == pytest.approx((5 / 3,) * 3)


@pytest.mark.parametrize(
    ("rules", "balances", "contributions", "punishments", "message"),
    [
        (LAB, (0,) * 5, (21, 0, 0, 0, 0), None, "integer 0..20"),
        (LAB, (0,) * 5, (-1, 0, 0, 0, 0), None, "integer 0..20"),
        (BENCH, (5, 20, 20, 20, 20), (6, 0, 0, 0, 0), None, "integer 0..5 \\(the balance\\)"),
        (BENCH, (20,) * 5, (0,) * 5, {0: {0: 1}}, "punishes itself"),
        (BENCH, (20,) * 5, (0,) * 5, {0: {1: 11}}, "at most 10"),
        (BENCH, (20,) * 5, (0,) * 5, {0: {1: 1, 2: 1}}, "at most 1 a round"),
        (BENCH, (3, 20, 20, 20, 20), (0,) * 5, {0: {1: 4}}, "holds 3 after the fund"),
        (LAB, (0,) * 5, (0,) * 5, {0: {1: 1}}, "no punishment stage"),
        (BENCH, (20,) * 5, (0,) * 5, {0: {7: 1}}, "not a seat"),
    ],
)
def test_bad_input_is_one_line(rules, balances, contributions, punishments, message) -> None:
    with pytest.raises(ValueError, match=message) as info:
        play_round(rules, balances, contributions, punishments)
    assert "\n" not in str(info.value)


# ----------------------------------------------------------------------------------------------
# Metrics on a hand-written history


def test_metrics_of_a_three_round_history() -> None:
    rules = PGGRules(n_players=3, endowment=10, multiplier=1.5, punishment=True)
    rounds = []
    balances = rules.initial_balances()
    for cs, pun in [
        ((10, 0, 5), {0: {1: 2}}),  # 0 punishes the free rider 1
        ((10, 5, 0), {1: {0: 1}, 0: {2: 1}}),  # 1 retaliates on 0 (antisocial: 10 >= 5)
        ((10, 10, 10), {0: {1: 1}, 1: {2: 1}}),  # 0 retaliates on 1; 1 -> 2 is no retaliation
    ]:
        rr = play_round(rules, balances, cs, pun)
        rounds.append(rr)
        balances = rr.balances
    m = pgg_game_metrics(rules, rounds)
    # opportunities: (1 punished by 0 in r1), (0 by 1 in r2), (2 by 0 in r2); taken: first two
    assert (m.retaliation_opportunities, m.retaliations) == (3, 2)
    assert m.retaliation_rate == pytest.approx(2 / 3)
    # acts: 0->1 (0 < 10), 1->0 (10 >= 5), 0->2 (0 < 10), 0->1 (10 >= 10), 1->2 (10 >= 10)
    assert (m.punishment_acts, m.antisocial_acts) == (5, 3)
    assert m.free_riding_count == 2 and m.free_riding_rate == pytest.approx(2 / 9)
    assert m.contribution_rate_by_round == pytest.approx((0.5, 0.5, 1.0))
    assert m.contribution_rate == pytest.approx(2 / 3)
    assert m.contribution_rate_by_seat == pytest.approx((1.0, 0.5, 0.5))
    assert m.punish_spent == (4, 2, 0) and m.punish_received == (3, 9, 6)
    # gain per round: 30 + 0.5 x total - spent - received = 29.5, 29.5, 37; full: 3 x 30 x 1.5
    assert m.efficiency == pytest.approx(96 / 135)


# ----------------------------------------------------------------------------------------------
# Policies


def _play(rules: PGGRules, names: list[str], rounds: int, **params: float):
    return play_policies(rules, [make_pgg_policy(n, **params) for n in names], rounds)


def test_registry_names() -> None:
    assert pgg_policy_names() == [
        "ANTISOCIAL_PUNISHER",
        "CONDITIONAL_COOPERATOR",
        "FREE_RIDER",
        "FULL_COOPERATOR",
        "PUNISHER",
        "REWARDER",
    ]
    with pytest.raises(ValueError, match="choose one of"):
        make_pgg_policy("nobody")


P3 = PGGRules(n_players=3, endowment=10, multiplier=1.5, punishment=True)


@pytest.mark.parametrize(
    ("rules", "names", "rounds", "contributions", "balances"),
    [
        # pot 100 -> 32 each round
        (LAB, ["FULL_COOPERATOR"] * 5, 3, [(20,) * 5] * 3, (96,) * 5),
        (LAB, ["FREE_RIDER"] * 5, 2, [(0,) * 5] * 2, (40,) * 5),
        # pot 20 -> 10 each; posts 10, 10, 20; two punishers x 2 tokens x 3 remove 12 at 2 each
        (P3, ["PUNISHER", "PUNISHER", "FREE_RIDER"], 1, [(10, 10, 0)], (8, 8, 8)),
        # posts 20, 10, 10: 2 tokens (6) capped at 5 on each cooperator, paid 5/3 each
        (P3, ["ANTISOCIAL_PUNISHER", "FULL_COOPERATOR", "FULL_COOPERATOR"], 1, [(0, 10, 10)],
         (20 - 10 / 3, 5, 5)),
        # visibility total: the punisher cannot tell who free-rode
        (PGGRules(n_players=3, endowment=10, multiplier=1.5, punishment=True, visibility="total"),
         ["PUNISHER", "PUNISHER", "FREE_RIDER"], 1, [(10, 10, 0)], (10, 10, 20)),
    ],
)  # fmt: skip
def test_policies_play_as_by_hand(rules, names, rounds, contributions, balances) -> None:
    played = _play(rules, names, rounds)
    assert [rr.contributions for rr in played] == contributions
    assert played[-1].balances == pytest.approx(balances)


def test_conditional_cooperators_follow_the_mean_down() -> None:
    # 4 conditional cooperators start at 10 beside a free rider: means 40/5 = 8, 32/5 = 6.4 -> 6,
    # 24/5 = 4.8 -> 5, 20/5 = 4
    played = _play(LAB, ["CONDITIONAL_COOPERATOR"] * 4 + ["FREE_RIDER"], 5)
    assert [rr.contributions[0] for rr in played] == [10, 8, 6, 5, 4]
    first = _play(LAB, ["CONDITIONAL_COOPERATOR"] * 5, 1, first=15)
    assert first[0].contributions == (15,) * 5


def test_pgg_bench_punisher_hits_one_seat() -> None:
    # two free riders; one target a round: the lower seat gets the 2 tokens
    played = _play(BENCH, ["PUNISHER"] * 3 + ["FREE_RIDER"] * 2, 1)
    assert played[0].punish_tokens[0] == (0, 0, 0, 2, 0)
    m = pgg_game_metrics(BENCH, played)
    assert m.punishment_acts == 3 and m.antisocial_acts == 0


def test_full_cooperation_is_fully_efficient_and_equal() -> None:
    m = pgg_game_metrics(LAB, _play(LAB, ["FULL_COOPERATOR"] * 5, 4))
    assert m.efficiency == pytest.approx(1.0) and m.gini_final == 0.0
    # all free riders keep E: 20 / 32 of full cooperation
    m = pgg_game_metrics(LAB, _play(LAB, ["FREE_RIDER"] * 5, 4))
    assert m.efficiency == pytest.approx(20 / 32) and m.free_riding_count == 0
