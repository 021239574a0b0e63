"""prompt_mode as the providers see it (messages or one text) and the template fields added for
prompts in a paper's own words, in the default (stripped) mode. Expected values by hand."""

from __future__ import annotations

from typing import Any

from pdbench.agents.llm import PromptTemplates, render_round
from pdbench.agents.providers.base import (
    CompletionRequest,
    chat_messages,
    completion_text,
    system_text,
)
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action

C, D = Action.C, Action.D


def request(mode: str, system: str = "S\n", turns: tuple[tuple[str, str], ...] = ()) -> Any:
    return CompletionRequest(system, "P", 0.0, 4, turns=turns, mode=mode)


def test_each_mode_sends_the_prompts_its_way() -> None:
    turn = (("bad", "again"),)
    assert chat_messages(request("chat", turns=turn)) == [
        {"role": "system", "content": "S\n"},
        {"role": "user", "content": "P"},
        {"role": "assistant", "content": "bad"},
        {"role": "user", "content": "again"},
    ]
    assert chat_messages(request("chat", system="")) == [{"role": "user", "content": "P"}]
    assert chat_messages(request("user")) == [{"role": "user", "content": "S\nP"}]
    assert chat_messages(request("chat"), with_system=False) == [{"role": "user", "content": "P"}]
    assert (system_text(request("chat")), system_text(request("user"))) == ("S\n", "")
    assert completion_text(request("completion", turns=turn)) == "S\nPbad\nagain\n"


def test_the_added_fields_in_the_default_mode() -> None:
    matrix = PayoffMatrix()  # R=3, S=0, T=5, P=1
    transcript = Transcript(matrix)
    for mine, theirs in ((C, D), (D, D), (C, C)):
        transcript.record(mine, theirs)
    templates = PromptTemplates(
        system="",
        round="",
        persona="",
        history_line="  {round}:{my_move}{opp_move}={my_payoff}/{opp_payoff}  \n",
        history="Shown {history_len}:\n{history_lines}",
        first_round="First.",
    )
    template = (
        "{history_block}|{R}{S}{T}{P}|{total_rounds}|{my_total}-{opp_total}|"
        "{my_cooperations}{my_defections}{opp_cooperations}{opp_defections}|"
        "{first_option}{second_option}"
    )
    told = transcript.observation(
        0, history_window=2, include_totals=True, horizon_type="fixed", total_rounds=9
    )
    text = render_round(template, told, 2, "token", templates=templates, swap_options=True)
    # rounds 2 and 3 shown (window 2), each line stripped; totals over all 3 rounds: A got
    # 0 + 1 + 3 = 4 and B 5 + 1 + 3 = 9; A cooperated twice, B once
    assert text == "Shown 2:\n2:DD=1/1\n3:CC=3/3\n|3051|9|4-9|2112|DC\n"
    hidden = transcript.observation(0, history_window=2, include_totals=False, horizon_type="fixed")
    text = render_round(template, hidden, 2, "token", templates=templates)
    assert text.endswith("|3051|an unknown number of|-||CD\n")
    first = Transcript(matrix).observation(
        0, history_window=2, include_totals=True, horizon_type="fixed", total_rounds=9
    )
    assert render_round(template, first, 2, "token", templates=templates).startswith("First.\n|")
