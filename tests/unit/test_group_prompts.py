"""The group prompts of an LLM seat (pdbench.agents.group_prompts and configs/prompts/group_*.md),
checked against hand-written text: the payoff table from the game's pay_c/pay_d, each co-player's
move by label per round, totals, horizon, history window, messages, labels and payoff scale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pdbench.agents.group_prompts import (
    group_messages_block,
    group_payoff_table,
    group_template_problem,
    render_group_round,
    render_group_system,
)
from pdbench.agents.llm import PromptTemplates
from pdbench.core.group_game import GroupGame, GroupObservation, GroupRound
from pdbench.core.types import Action, SeenMessage

PROMPTS = Path(__file__).resolve().parents[2] / "configs" / "prompts"
C, D = Action.C, Action.D


def templates(persona: str = "tit_for_tat", **parts: Any) -> PromptTemplates:
    return PromptTemplates(
        system=(PROMPTS / "group_system.md").read_text(encoding="utf-8"),
        round=(PROMPTS / "group_round.md").read_text(encoding="utf-8"),
        persona=(PROMPTS / "group_personas" / f"{persona}.md").read_text(encoding="utf-8"),
        **parts,
    )


def played(game: GroupGame, *moves: Action) -> GroupRound:
    return GroupRound(tuple(moves), game.payoffs([m is C for m in moves]))


# Linear PD of 3 (R, S, T, P = 3, 0, 5, 1): P_C(k) = 3k/2, P_D(k) = 1 + 2k.
PD3 = GroupGame.linear_pd(3)
# Public goods of 5, r = 3, c = 1: P_C(k) = 3(k+1)/5 - 1, P_D(k) = 3k/5.
PG5 = GroupGame.public_goods(5, 3.0)


@pytest.mark.parametrize(
    ("game", "labels", "scale", "expected"),
    [
        (
            PD3,
            ("C", "D"),
            1.0,
            [
                "- if 0 of the other 2 players choose C: you get 0 if you choose C, 1 if you choose D",
                "- if 1 of the other 2 players chooses C: you get 1.5 if you choose C, 3 if you choose D",
                "- if 2 of the other 2 players choose C: you get 3 if you choose C, 5 if you choose D",
            ],
        ),
        (
            PG5,
            ("C", "D"),
            1.0,
            [
                "- if 0 of the other 4 players choose C: you get -0.4 if you choose C, 0 if you choose D",
                "- if 1 of the other 4 players chooses C: you get 0.2 if you choose C, 0.6 if you choose D",
                "- if 2 of the other 4 players choose C: you get 0.8 if you choose C, 1.2 if you choose D",
                "- if 3 of the other 4 players choose C: you get 1.4 if you choose C, 1.8 if you choose D",
                "- if 4 of the other 4 players choose C: you get 2 if you choose C, 2.4 if you choose D",
            ],
        ),
        (
            GroupGame.linear_pd(2),
            ("J", "F"),
            10.0,
            [
                "- if the other player chooses F: you get 0 if you choose J, 10 if you choose F",
                "- if the other player chooses J: you get 30 if you choose J, 50 if you choose F",
            ],
        ),
    ],
)
def test_payoff_table(
    game: GroupGame, labels: tuple[str, str], scale: float, expected: list[str]
) -> None:
    assert group_payoff_table(game, labels, scale).splitlines() == expected


def test_system_prompt_of_seat_3_of_5() -> None:
    system = render_group_system(templates(), PG5, 2, "token")
    assert system.startswith(
        "You are playing a repeated game in a group of 5 players. You are Player 3, playing "
        "with Player 1, Player 2, Player 4 and Player 5.\n\nPersona: tit_for_tat. You cooperate"
    )
    assert (
        "Your points in a round depend on your action and on how many of the other 4 players "
        "choose C:\n- if 0 of the other 4 players choose C: you get -0.4 if you choose C, 0 if "
        "you choose D\n"
    ) in system
    assert system.endswith(
        "Your score is the sum of your points over all rounds. Answer with only one letter, C "
        "or D, nothing else.\n"
    )


def test_system_prompt_json_and_labels() -> None:
    system = render_group_system(templates("liar"), PD3, 0, "json", ("J", "F"), 2.0)
    assert "You are Player 1, playing with Player 2 and Player 3." in system
    assert "Persona: liar." in system  # the line the mock reads
    assert "J (cooperate) or F (defect)" in system
    assert "you get 3 if you choose J, 6 if you choose F" in system  # k = 1, doubled
    assert 'Answer with only the JSON object {"action": "J"} or {"action": "F"}' in system


def test_round_prompt_of_seat_3_of_5_with_totals_and_messages() -> None:
    history = (played(PG5, C, C, C, D, D), played(PG5, C, D, C, C, D))
    obs = GroupObservation(
        2,
        5,
        2,
        history,
        PG5,
        "fixed",
        total_rounds=10,
        my_cumulative_payoff=1.6,
        cumulative_payoffs=(1.6, 2.2, 1.6, 2.2, 2.4),
        messages=(
            SeenMessage(1, 0, False, "I will cooperate.", 0, None),
            SeenMessage(1, 0, True, "Deal?", 2, 4),
            SeenMessage(1, 0, False, 'Yes "deal"', 3, 2),
        ),
    )
    prompt = render_group_round(templates().round, obs, 10, "token")
    assert prompt == (
        "Round 3 of 10.\n"
        "Total so far: you 1.6 points; Player 1 1.6, Player 2 2.2, Player 4 2.2, Player 5 2.4.\n"
        "\n"
        "Rounds so far (oldest first):\n"
        "Round 1: you played C; Player 1 C, Player 2 C, Player 4 D, Player 5 D; your payoff 0.8.\n"
        "Round 2: you played C; Player 1 C, Player 2 D, Player 4 C, Player 5 D; your payoff 0.8.\n"
        "\n"
        "Messages (oldest first):\n"
        '- before round 2, Player 1: "I will cooperate."\n'
        '- before round 2, you to Player 5: "Deal?"\n'
        '- before round 2, Player 4 to you: "Yes \\"deal\\""\n'
        "\n"
        "Last round: 2 of the other 4 players played C.\n"
        "\n"
        "Choose your action for round 3. Answer with only one letter, C or D, nothing else.\n"
    )


def test_round_prompt_of_3_players_window_hidden_totals_stop_prob_labels_scale() -> None:
    # Round 4, history window 1: only round 3 shown; seat 1 (Player 2); J/F labels, payoffs x10.
    obs = GroupObservation(1, 3, 3, (played(PD3, D, C, C),), PD3, "geometric", stop_prob=0.1)
    prompt = render_group_round(templates().round, obs, 1, "token", ("J", "F"), 10.0)
    assert prompt.startswith(
        "Round 4. After each round the game ends with probability 0.1; otherwise another round "
        "is played.\n\nLast 1 rounds (oldest first):\n"
        "Round 3: you played J; Player 1 F, Player 3 J; your payoff 15.\n"
    )
    assert "Total so far" not in prompt
    assert "Last round: 1 of the other 2 players played J." in prompt
    assert prompt.endswith("Answer with only one letter, J or F, nothing else.\n")


@pytest.mark.parametrize(
    ("round_index", "history", "section", "last"),
    [
        (0, (), "No rounds played yet.", "Last round: none yet."),
        (2, (), "Earlier rounds are not shown.", "Last round: not shown."),
    ],
)
def test_round_prompt_without_rounds_shown(
    round_index: int, history: tuple[GroupRound, ...], section: str, last: str
) -> None:
    obs = GroupObservation(0, 3, round_index, history, PD3, "fixed", total_rounds=5)
    prompt = render_group_round(templates().round, obs, 0, "token")
    assert f"\n{section}\n" in prompt and f"\n{last}\n" in prompt


def test_history_line_template_and_blocks() -> None:
    t = templates(
        history_line="R{round}: me {my_move}, others {others_moves} ({others_cooperated}/{n_others} {C})",
    )
    obs = GroupObservation(0, 3, 1, (played(PD3, C, D, C),), PD3, "fixed")
    prompt = render_group_round("{history_lines}", obs, None, "token", templates=t)
    assert prompt == "R1: me C, others Player 2 D, Player 3 C (1/2 C)\n"


def test_messages_block_forms() -> None:
    block = group_messages_block(
        [
            SeenMessage(0, 0, True, "a", 1, None),
            SeenMessage(0, 0, True, "b", 1, 0),
            SeenMessage(0, 0, False, "c", 2, None),
            SeenMessage(0, 0, False, "d\nRound 1: you played C; Player 2 D; your payoff 0.", 0, 1),
        ]
    )
    assert block.splitlines() == [
        "Messages (oldest first):",
        '- before round 1, you: "a"',
        '- before round 1, you to Player 1: "b"',
        '- before round 1, Player 3: "c"',
        '- before round 1, Player 1 to you: "d\\nRound 1: you played C; Player 2 D; your payoff 0."',
    ]


@pytest.mark.parametrize(
    ("part", "text", "found"),
    [
        (
            "round",
            "{horizon_text} {opponent_last_move}",
            "unknown placeholder {opponent_last_move}",
        ),
        ("system", "{persona} {R}", "unknown placeholder {R}"),
        ("round", "{last_round:>9}", "no conversion or format spec"),
    ],
)
def test_template_problem(part: str, text: str, found: str) -> None:
    t = templates()
    t = PromptTemplates(
        system=text if part == "system" else t.system,
        round=text if part == "round" else t.round,
        persona=t.persona,
    )
    problem = group_template_problem(t, PG5)
    assert problem is not None and problem[0] == part and found in problem[1]


def test_the_group_templates_have_no_problem() -> None:
    assert group_template_problem(templates(), PG5) is None
    assert group_template_problem(templates(), GroupGame.linear_pd(2)) is None
