"""The optional reward stage of the public goods game (issue 31; Sefton, Shupp & Walker 2007):
rounds worked by hand (rewards alone, rewards with punishment, a punished seat's rewards), the
rules' checks, the record (old lines without reward fields still read), the metrics, REWARDER,
the reading of `<reward>` replies, the LLM seat's reward prompt and reading, the mock."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import numpy as np
import pytest
from tests.unit.test_resource_llm import seat

from pdbench.agents.pgg_policy import make_pgg_policy, play_policies
from pdbench.agents.pgg_prompts import contribution_prompt
from pdbench.agents.providers.mock_resource import mock_reward, resource_reply
from pdbench.agents.resource_policy import PGGContext
from pdbench.agents.resource_texts import (
    REWARD_VISIBILITY,
    pgg_history_text,
    reward_rule,
    with_reward_rules,
)
from pdbench.core.parse_integer import read_pgg_reward
from pdbench.core.pgg import PGGRules, play_round
from pdbench.core.pgg_conditions import (
    PGG_CONDITION_COLUMNS,
    PGG_REWARD_COLUMNS,
    pgg_condition_columns,
    pgg_condition_summary,
)
from pdbench.core.pgg_metrics import pgg_game_metrics
from pdbench.core.stats import IntervalSettings
from pdbench.runners.engine.resource_engine import fit_reward
from pdbench.storage.record.resource_record import pgg_record, round_result

# 3 seats, E = 10 a round, r = 1.5; a reward token costs 1 and gives 2 (effect != cost, so a
# swap of the two would show)
REWARD = PGGRules(n_players=3, endowment=10, multiplier=1.5, reward=True, reward_effect=2.0)
BOTH = replace(REWARD, punishment=True)  # punishment 1:3, capped at half the post-fund balance
REWARD_KEYS = ("reward_tokens", "reward_given", "reward_received")


def test_a_round_with_rewards_by_hand() -> None:
    # contributions 10, 10, 0: pot 20 x 1.5 / 3 = 10 each; after the fund 10, 10, 20
    # P1 gives P2 2 tokens (pays 2, P2 gets 4); P2 gives P1 1 token (pays 1, P1 gets 2)
    rr = play_round(REWARD, (0, 0, 0), (10, 10, 0), rewards={0: {1: 2}, 1: {0: 1}})
    assert rr.post_fund == (10, 10, 20)
    assert rr.reward_tokens == ((0, 2, 0), (1, 0, 0), (0, 0, 0))
    assert rr.reward_given == (2, 1, 0) and rr.reward_received == (2, 4, 0)
    assert rr.balances == (10, 13, 20)  # 10 - 2 + 2, 10 - 1 + 4, 20
    assert rr.income == (10, 13, 20)  # the "round" budget starts every balance at 0


def test_a_round_with_rewards_and_punishments_by_hand() -> None:
    # after the fund 10, 10, 20. Punishment: P1 spends 2 on P3 (P3 loses 6, under the cap of
    # 20 / 2 = 10); P3 spends 1 on P1 (P1 loses 3, under 10 / 2 = 5). Rewards: P2 gives P1 3
    # tokens (pays 3, P1 gets 6); P1 gives P2 1 (pays 1, P2 gets 2).
    # P1: 10 - 2 - 1 - 3 + 6 = 10; P2: 10 - 3 + 2 = 9; P3: 20 - 1 - 6 = 13
    rr = play_round(
        BOTH, (0, 0, 0), (10, 10, 0), {0: {2: 2}, 2: {0: 1}}, rewards={1: {0: 3}, 0: {1: 1}}
    )
    assert rr.punish_spent == (2, 0, 1) and rr.punish_received == (3, 0, 6)
    assert rr.reward_given == (1, 3, 0) and rr.reward_received == (6, 2, 0)
    assert rr.balances == (10, 9, 13)


def test_punishment_cannot_take_the_rewards_away() -> None:
    # no contributions: 10 each after the fund; the cap is the whole balance. P1 spends 4 on P3:
    # 12 capped at 10, so P1 pays 10 / 3; P2 gives P3 2 tokens (1:1). P3 loses its 10, then
    # receives 2.
    rules = replace(BOTH, reward_effect=1.0, punish_cap_fraction=1.0)
    rr = play_round(rules, (0, 0, 0), (0, 0, 0), {0: {2: 4}}, rewards={1: {2: 2}})
    assert rr.balances == pytest.approx((10 - 10 / 3, 8, 2))


@pytest.mark.parametrize(
    ("rules", "punish", "rewards", "message"),
    [
        (PGGRules(n_players=3, endowment=10), None, {0: {1: 1}}, "no reward stage"),
        (REWARD, None, {0: {0: 1}}, "rewards itself"),
        (REWARD, None, {0: {1: 6, 2: 5}}, "11 reward tokens: at most 10"),
        (replace(REWARD, reward_max_targets=1), None, {0: {1: 1, 2: 1}}, "at most 1 a round"),
        # P1 holds 10 after the fund: 6 on punishment and 5 on rewards is 11
        (BOTH, {0: {1: 6}}, {0: {2: 5}}, "commits 11 to rewards and punishment"),
        (REWARD, None, {0: {5: 1}}, "reward target 5 is not a seat"),
    ],
)
def test_bad_rewards_are_one_line(rules, punish, rewards, message) -> None:
    with pytest.raises(ValueError, match=message) as info:
        play_round(rules, (0, 0, 0), (0, 0, 0), punish, rewards=rewards)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "over",
    [
        {"reward_cost": 0.0},
        {"reward_effect": -1.0},
        {"reward_max_tokens": -1},
        {"reward_max_targets": 0},
    ],
)
def test_bad_reward_rules(over) -> None:
    with pytest.raises(ValueError, match="reward"):
        PGGRules(n_players=3, reward=True, **over)


def test_without_the_stage_a_round_and_its_record_are_as_before() -> None:
    rules = PGGRules(n_players=3, endowment=10, multiplier=1.5, punishment=True)
    rr = play_round(rules, (0, 0, 0), (10, 10, 0), {0: {2: 1}})
    assert rr.reward_tokens == () and rr.reward_given == () and rr.reward_received == ()
    record = pgg_record(rr)
    assert not set(REWARD_KEYS) & set(record)
    assert "reward" not in rules.as_dict() and rules.as_dict()["punishment"] is True
    assert round_result({"seats": ["a", "b", "c"], **record}) == rr


def test_the_record_round_trips_rewards_and_an_old_line_still_reads() -> None:
    rr = play_round(BOTH, (0, 0, 0), (10, 10, 0), {0: {2: 2}}, rewards={1: {0: 3}})
    record = {"seats": ["a", "b", "c"], **pgg_record(rr)}
    assert record["reward_tokens"] == [[1, 0, 3]]
    assert round_result(record) == rr
    old = {k: v for k, v in record.items() if k not in REWARD_KEYS}  # written before the stage
    back = round_result(old)
    assert back.reward_tokens == () and back.balances == rr.balances
    assert pgg_game_metrics(BOTH, [back]).reward_given == (0.0, 0.0, 0.0)


def test_rewarders_and_a_free_rider_worked_by_hand() -> None:
    # 4 seats, E = 10, r = 2, rewards 1:1. Each round: 10, 10, 10, 0 -> 30 x 2 / 4 = 15 each;
    # mean 7.5, so each REWARDER gives 1 token to each of the 2 other REWARDERs (pays 2, gets 2)
    # and none to the free rider: round income 15, 15, 15, 25. After 3 rounds 45, 45, 45, 75.
    rules = PGGRules(n_players=4, endowment=10, multiplier=2.0, reward=True)
    seats = [make_pgg_policy("REWARDER")] * 3 + [make_pgg_policy("FREE_RIDER")]
    rounds = play_policies(rules, seats, 3)
    assert [rr.reward_given for rr in rounds] == [(2, 2, 2, 0)] * 3
    assert rounds[0].reward_tokens[0] == (0, 1, 1, 0)
    assert rounds[-1].balances == (45, 45, 45, 75)
    m = pgg_game_metrics(rules, rounds)
    assert m.reward_given == (6, 6, 6, 0) and m.reward_received == (6, 6, 6, 0)
    # post-fund balances (the balance so far + E - c + 15) summed: 15 x 3 + 25 = 70 in round 1,
    # 30 x 3 + 50 = 140 in round 2, 45 x 3 + 75 = 210 in round 3: 420; the group paid 18
    assert m.reward_given_fraction == pytest.approx(18 / 420)
    assert m.efficiency == pytest.approx(210 / 240)  # full cooperation: 3 x 4 x 10 x 2
    row = pgg_condition_summary(
        rules,
        [m, m],
        IntervalSettings(resamples=200),
        np.random.default_rng(0),
        exact=True,
    )
    assert tuple(row) == pgg_condition_columns(rules)
    assert row["reward_given"] == row["reward_given_ci_low"] == 18
    assert row["reward_given_fraction"] == pytest.approx(18 / 420)
    assert pgg_condition_columns(replace(rules, reward=False)) == PGG_CONDITION_COLUMNS
    assert set(PGG_REWARD_COLUMNS) <= set(row)


def test_fit_reward_cuts_what_cannot_be_given() -> None:
    rules = replace(REWARD, reward_max_tokens=3, reward_max_targets=1)
    assert fit_reward(rules, 0, {0: 2, 1: 5, 2: 1}, 10.0, 0.0) == {1: 3}  # self, cap, one target
    assert fit_reward(rules, 0, {1: 3}, 10.0, 8.5) == {1: 1}  # 1.5 left after punishment
    assert fit_reward(PGGRules(n_players=3), 0, {1: 3}, 10.0, 0.0) == {}


@pytest.mark.parametrize(
    ("reply", "tokens"),
    [
        ("<reward>NO</reward>", {}),
        ("<reward>P2=1</reward>", {"P2": 1}),
        ("<reward>p2 = $1, P3=2</reward>", {"P2": 1, "P3": 2}),
        ("e.g. `<reward>P2=1</reward>`. Mine: <reward>P3=1; P1=1</reward>", {"P3": 1, "P1": 1}),
    ],
)
def test_reward_replies_read(reply, tokens) -> None:
    assert read_pgg_reward(reply, ("P1", "P2", "P3")) == (tokens, None)


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("I reward P2", "no <reward> tag"),
        ("<reward>P9=1</reward>", "valid seats: P1, P2, P3"),
        ("<reward>P2=1, P2=2</reward>", "P2 twice"),
        ("<reward>P2=-1</reward>", "expected NO or seat=tokens"),
        ("<reward>yes</reward>", "expected NO or seat=tokens"),
    ],
)
def test_unreadable_reward_replies(reply, problem) -> None:
    got = read_pgg_reward(reply, ("P1", "P2", "P3"))
    assert got.tokens is None and problem in (got.problem or "")


def _ctx(rules: PGGRules) -> PGGContext:
    # round 1 of 4 for P2, contributions 10, 10, 0 revealed, P2 holds 10 after the fund
    return PGGContext(rules, 1, ("a", "b", "c"), 0, 4, (), (), 0.0, 10, (10, 10, 0), 10.0)


def test_the_llm_seat_reads_rewards_with_retries_and_falls_back_to_none() -> None:
    ctx = _ctx(BOTH)
    s = seat(["I would like to reward P1.", "<reward>P1=1, P3=2</reward>"])
    prompt = s.reward_prompt(ctx)
    assert "Each token costs the giver $1 and gives the receiver $2." in prompt
    assert prompt.rstrip().endswith("required `<reward>...</reward>` tag.")
    assert "Your current balance is $10." in prompt
    assert "  Contributions: P1=10, P2=10, P3=0 (total 20)" in prompt
    choice = asyncio.run(s.reward(ctx))
    assert choice.tokens == {0: 1, 2: 2} and choice.parse_failures == 1 and not choice.fallback
    assert [c["stage"] for c in choice.calls] == ["reward", "reward"]
    bad = asyncio.run(seat(["?", "<reward>P7=1</reward>", "no"]).reward(ctx))
    assert bad.tokens == {} and bad.fallback and bad.parse_failures == 3


def test_the_reward_rule_is_added_only_with_the_stage() -> None:
    plain = PGGRules(n_players=3, endowment=10, punishment=True)
    base = contribution_prompt(plain, "P1", ("P1", "P2", "P3"), 1, 4, 10, "No rounds played yet.")
    assert with_reward_rules(base, plain) == base
    added = with_reward_rules(base, replace(plain, reward=True))
    assert "Reward Phase:" in added and "every reward (who rewarded whom" in added
    rewarded = replace(plain, reward=True)
    back = added.replace("\n" + reward_rule(rewarded), "", 1).replace(
        "\n" + REWARD_VISIBILITY, "", 1
    )
    assert back == base  # the two lines are all that is added


def test_the_mock_cooperator_rewards_high_contributors() -> None:
    ctx = _ctx(BOTH)
    prompt = seat([]).reward_prompt(replace(ctx, seat=0))
    assert mock_reward("cooperative", prompt) == "<reward>P2=1</reward>"  # P2 gave 10 like P1
    assert mock_reward("exploitative", prompt) == "<reward>NO</reward>"
    assert resource_reply("cooperative", "reward", "", prompt, 1) == "<reward>P2=1</reward>"
    history = pgg_history_text(replace(ctx, names=("P1", "P2", "P3")), this_round=True)
    assert "Rewards:" not in history  # no past round yet
