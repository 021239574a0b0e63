"""The prompts of GovSim and PGG-Bench against the authors' texts, and the reading of integer replies.

The references in tests/fixtures/authors/ are the authors' own: GovSim's prompts rendered by running
its functions (utils.py, env.py, the user block of act_prompts.py at 1d11adf), PGG-Bench's templates
copied verbatim from prompts/*.txt at 4be972b; each file's first line cites its source."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from pdbench.agents import commons_prompts as cp
from pdbench.agents import pgg_prompts as pp
from pdbench.core.commons import CommonsRules
from pdbench.core.parse_integer import (
    IntegerReading,
    PunishmentReading,
    clamp_reading,
    read_govsim_integer,
    read_pgg_contribution,
    read_pgg_punishment,
)
from pdbench.core.pgg import PGGRules

AUTHORS = Path(__file__).resolve().parents[1] / "fixtures" / "authors"


def reference(name: str) -> str:
    """A fixture's text without its citing header line."""
    header, _, body = (AUTHORS / name).read_text(encoding="utf-8").partition("\n")
    assert header.startswith("# ") and "commit" in header
    return body


@pytest.mark.parametrize(
    ("fixture", "kwargs"),
    [
        ("govsim_harvest_v3_month1.txt", dict(name="John", stock=100, day=date(2024, 1, 1))),
        (
            "govsim_harvest_v1_month1.txt",
            dict(name="John", stock=100, day=date(2024, 1, 1), version="v1"),
        ),
        (
            "govsim_harvest_v3_universalization.txt",
            dict(name="Kate", stock=60, day=date(2024, 3, 1), universalization=True),
        ),
    ],
)
def test_govsim_harvest_prompt_is_the_authors(fixture, kwargs):
    assert cp.harvest_prompt(CommonsRules(), **kwargs) == reference(fixture)


def test_govsim_universalization_threshold_is_half_the_stock_shared():
    text = cp.harvest_prompt(CommonsRules(), "Emma", 100, universalization=True)
    assert "if everyone fishes more than 10 tons," in text  # (100 // 2) // 5
    assert "four other fishermen (John, Kate, Jack, Luke)." in text


def test_govsim_earlier_memories_come_first_by_date():
    earlier = [(date(2024, 1, 15), "Kate caught 10 tons.")]
    text = cp.harvest_prompt(CommonsRules(), "John", 80, date(2024, 2, 1), earlier_memories=earlier)
    lines = [line for line in text.splitlines() if line.startswith("- 2024")]
    assert lines == [
        "- 2024-01-15: Kate caught 10 tons.",
        "- 2024-02-01: Before everyone fishes, there are 80 tons of fish in the lake.",
    ]
    assert "range set between 0-80," in text


def test_govsim_outsider_goals_follow_the_system_text_without_a_space():
    text = cp.govsim_system_text("Luke", goals=cp.OUTSIDER_GOALS)
    assert "100 tons after reproduction.You are a newcomer" in text


@pytest.mark.parametrize(
    "rules",
    [CommonsRules(capacity=200), CommonsRules(n_agents=4), CommonsRules(max_catch=20)],
)
def test_govsim_prompt_refuses_rules_its_text_does_not_describe(rules):
    with pytest.raises(ValueError, match="GovSim's prompt describes 5 fishermen"):
        cp.harvest_prompt(rules, "John", 50)


SEATS = ("P1", "P2", "P3", "P4", "P5")
HISTORY = "Round 1: P1=10, P2=5, P3=0, P4=20, P5=10"


def expected_pgg(fixture: str, **fields: object) -> str:
    """The verbatim template with its fields replaced by plain str.replace."""
    text = reference(fixture)
    for key, value in fields.items():
        text = text.replace("{{" + key + "}}", str(value))
    assert "{{" not in text
    return text


COMMON = dict(
    PLAYERS_LIST="P1, P2, P3, P4, P5",
    STARTING_AMOUNT=20,
    MULTIPLIER="1.6",
    PUNISH_MAX_SPEND=10,
    PUNISH_MAX_FRACTION="0.5",
    PUNISH_MAX_ABSOLUTE=100,
    VISIBILITY_CONTRIBUTIONS="V-C",
    VISIBILITY_PUNISHMENTS="V-P",
    TOTAL_ROUNDS=10,
    CONTRIBUTIONS_HISTORY=HISTORY,
    ROUND=2,
    ROUNDS_LEFT=8,
)


@pytest.mark.parametrize(
    ("render", "fixture", "amount"),
    [
        (pp.contribution_prompt, "pgg_bench_prompt_choose_with_msgs.txt", 17),
        (pp.punishment_prompt, "pgg_bench_template_punishment_with_msgs.txt", 23),
        (pp.public_message_prompt, "pgg_bench_prompt_public_message.txt", 17),
    ],
)
def test_pgg_bench_prompts_are_the_authors_templates(render, fixture, amount):
    got = render(
        PGGRules.pgg_bench(), "P3", SEATS, 2, 10, amount, HISTORY, visibility=("V-C", "V-P")
    )
    assert got == expected_pgg(fixture, PLAYER_NAME="P3", AMOUNT=amount, **COMMON)


def test_pgg_bench_prompts_keep_the_authors_odd_characters():
    text = pp.contribution_prompt(PGGRules.pgg_bench(), "P1", SEATS, 1, 10, 20, "")
    assert "(from \\$0 up to their current balance)" in text
    assert "e.g. `<contribution>10</contribution>`.  \n" in text
    assert "There are 9 rounds left after this one." in text
    assert "write an integer between 0 and 20 inside" in text


def test_pgg_no_messages_template_drops_the_message_phase():
    text = pp.contribution_prompt(PGGRules.pgg_bench(), "P1", SEATS, 1, 10, 20, "", messages=False)
    assert "Public Message" not in text and "1)Contribution:" in text


def test_pgg_template_with_a_missing_field_is_refused():
    with pytest.raises(ValueError, match="template fields missing: AMOUNT"):
        pp.fill_template("You have ${{AMOUNT}}.", {})


# GovSim replies: reasoning, then the marker, then the catch (shapes of GovSim's chain output).
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Let's think. 100 tons now, 5 of us.\nAnswer: 10 tons.", IntegerReading(10, None)),
        ("We should share 50. So, the answer is: 8 tons", IntegerReading(8, None)),
        ("Sustainable is 10.\n**Answer**: 12 tons", IntegerReading(12, None)),
        ("Answer: I will catch 15 tons, maybe 20 tons.", IntegerReading(15, None)),
        ("Answer: 12.5 tons", IntegerReading(12, None)),  # \d+ reads 12
        ("Answer: -5 tons", IntegerReading(5, None)),  # the sign is not read
        ("Answer: 10-15 tons", IntegerReading(10, None)),
        ("Answer: 30", IntegerReading(30, None)),
    ],
)
def test_govsim_reading_of_good_replies(reply, expected):
    assert read_govsim_integer(reply) == expected


@pytest.mark.parametrize(
    ("reply", "value", "problem_start"),
    [
        ("Answer: N tons.", 0, "no integer after the answer marker"),
        ("Answer: a few tons, 10 tons at most", 0, "no integer after the answer marker"),
        ("I would catch 20 tons this month.", 20, "no answer marker"),
        ("I would rather not fish.", 0, "no answer marker and no integer"),
    ],
)
def test_govsim_reading_counts_failures_with_its_default(reply, value, problem_start):
    got = read_govsim_integer(reply)
    assert got.value == value and got.problem is not None
    assert got.problem.startswith(problem_start)


@pytest.mark.parametrize(
    ("reply", "value", "failed"),
    [
        ("<contribution>10</contribution>", 10, False),
        ("<contribution> 0 </contribution>", 0, False),
        ("e.g. `<contribution>10</contribution>` -> <contribution>4</contribution>", 4, False),
        ("<CONTRIBUTION>7</CONTRIBUTION>", 7, False),
        ("<contribution>-3</contribution>", -3, False),  # read; the range is the clamp's job
        ("<contribution>$10</contribution>", 10, False),  # the dollar sign dropped, as in <punish>
        ("<contribution>ten</contribution>", None, True),
        ("I contribute 10.", None, True),
    ],
)
def test_pgg_contribution_reading(reply, value, failed):
    got = read_pgg_contribution(reply)
    assert got.value == value and (got.problem is not None) == failed


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("<punish>NO</punish>", PunishmentReading(None, 0, None)),
        ("<punish>no</punish>", PunishmentReading(None, 0, None)),
        ("<punish>P2=5</punish>", PunishmentReading("P2", 5, None)),
        ("<punish>p4 = $10</punish>", PunishmentReading("P4", 10, None)),
    ],
)
def test_pgg_punishment_reading(reply, expected):
    assert read_pgg_punishment(reply, SEATS) == expected


@pytest.mark.parametrize(
    "reply",
    ["<punish>P9=5</punish>", "<punish>P2</punish>", "I punish P2 by 5", "<punish>P2=x</punish>"],
)
def test_pgg_punishment_failures_are_problems(reply):
    got = read_pgg_punishment(reply, SEATS)
    assert got.target is None and got.amount is None and got.problem


@pytest.mark.parametrize(
    ("reading", "expected"),
    [
        (IntegerReading(5, None), IntegerReading(5, None)),
        (
            IntegerReading(25, None),
            IntegerReading(20, "contribution 25 above the most 20; clamped to 20"),
        ),
        (
            IntegerReading(-3, None),
            IntegerReading(0, "contribution -3 below the least 0; clamped to 0"),
        ),
        (IntegerReading(None, "no tag"), IntegerReading(None, "no tag")),
        (
            IntegerReading(30, "no answer marker"),
            IntegerReading(
                20, "no answer marker; contribution 30 above the most 20; clamped to 20"
            ),
        ),
    ],
)
def test_clamping_is_stated(reading, expected):
    assert clamp_reading(reading, 0, 20, "contribution") == expected
