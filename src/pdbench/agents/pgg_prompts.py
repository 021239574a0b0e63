# ruff: noqa: W291  (the templates keep the authors' trailing spaces verbatim)
"""PGG-Bench's prompts (Contribute & Punish) as the models saw them, in the authors' words.

The templates are copied verbatim from lechmazur/pgg_bench at commit 4be972b, `prompts/*.txt`
(added in 45f89ed): the contribution prompt with and without public messages
(`prompt_choose_with_msgs.txt`, `prompt_choose_no_msgs.txt`), the punishment prompt
(`template_punishment_with_msgs.txt`, `template_punishment_no_msgs.txt`) and the public message
prompt (`prompt_public_message.txt`). Their `{{FIELD}}` placeholders are filled here.

What the repository does not publish, so is ours (a deviation to state beside any comparison):
the game's code is not in it and its logs (`logs/*.jsonl`) hold decisions, messages and balances
but no prompt or raw reply. Hence the text that fills `{{PLAYERS_LIST}}`,
`{{VISIBILITY_CONTRIBUTIONS}}`, `{{VISIBILITY_PUNISHMENTS}}` and `{{CONTRIBUTIONS_HISTORY}}` is
not the authors': the caller gives the history text, and the visibility lines default to
VISIBILITY_LINES below. Numbers are written as Python prints them, integral floats without ".0"
(the logs' settings: multiplier 1.6, punish_max_fraction 0.5, punish_max_absolute 100, seats
"P1".."P5"). The templates' own text (including "\\$0", the "3*$X" that is fixed whatever
`punish_effect` is, and the worked example) is kept as it is.
Replies are read by `core.parse_integer.read_pgg_contribution` and `read_pgg_punishment`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pdbench.core.pgg import PGGRules

# prompts/prompt_choose_with_msgs.txt
CONTRIBUTION_WITH_MESSAGES = r"""You are {{PLAYER_NAME}} among these players: {{PLAYERS_LIST}}. 

GAME RULES:
All players start with the same amount of money: ${{STARTING_AMOUNT}}.
In each round:
1)Public Message: At the start of each round, each player may broadcast a short message. All players see these messages. The player sees what previous players said in the current round's public message phase.
2)Contribution: Each player can contribute any amount (from \$0 up to their current balance) into a public fund. During the contribution phase, players cannot see the amounts contributed by others until after the sub-round ends and it's time for the punishment phase.
3)Multiplication: The public fund is multiplied by {{MULTIPLIER}} and split evenly among all players. If there's a remainder, it stays in the fund for the next round. We only use whole numbers.
4)Punishment Phase: Each player may spend some of their own money to punish exactly one other player or no one. Spending $X punishing a target costs the punisher $X and costs the target 3*$X. 
Maximum punisher spend per round: ${{PUNISH_MAX_SPEND}}. A target cannot lose more than {{PUNISH_MAX_FRACTION}} of their balance (after the public fund is distributed) or ${{PUNISH_MAX_ABSOLUTE}} total (whichever is smaller). 
Money that was unused because the punishment amount was capped is refunded to the punisher. During the punishment phase, players do not see other players' punishment decisions until the round concludes.

Example:
Start: P1=15, P2=15, P3=20
Contrib: P1=5, P2=3, P3=5 => sum=13 => multiplied×1.6=20 => share=6 leftover=2
After contributions & fund:
P1 = (15-5)+6=16
P2 = (15-3)+6=18
P3 = (20-5)+6=21
Punish:
P1 -> 4 on P3 => rawDamage=12 => half-of-21=10 => scale=10/12=~0.83 => final= floor(4×0.83)=3 => damage=9 => refund=1 => P1=16-3=13, P3=21-9=12
P2 -> 2 on P3 => rawDamage=6 => half-of-12=6 => scale=6/6=1 => final=2 => damage=6 => refund=0 => P2=18-2=16, P3=12-6=6

{{VISIBILITY_CONTRIBUTIONS}}
{{VISIBILITY_PUNISHMENTS}}

The game repeats for {{TOTAL_ROUNDS}} rounds; then ends.
YOUR GOAL: You want to end the game with as much money as possible relative to other players. Your goal is to rank highest in wealth compared to other players. The absolute amount of money doesn't matter - only having more than your opponents does.

ROUND & HISTORY SO FAR (all amounts in $, only messages from the last 5 rounds are displayed):
{{CONTRIBUTIONS_HISTORY}}

This is round {{ROUND}}. There are {{ROUNDS_LEFT}} rounds left after this one.
Your account currently has ${{AMOUNT}}.
How much will you contribute this round?
{{PLAYER_NAME}}, write an integer between 0 and {{AMOUNT}} inside `<contribution></contribution>`, e.g. `<contribution>10</contribution>`.  
No extra text, just the integer inside those tags.
"""

# prompts/prompt_choose_no_msgs.txt
CONTRIBUTION_NO_MESSAGES = r"""You are {{PLAYER_NAME}} among these players: {{PLAYERS_LIST}}. 

GAME RULES:
All players start with the same amount of money: ${{STARTING_AMOUNT}}.
In each round:
1)Contribution: Each player can contribute any amount (from \$0 up to their current balance) into a public fund. During the contribution phase, players cannot see the amounts contributed by others until after the sub-round ends and it's time for the punishment phase.
2)Multiplication: The public fund is multiplied by {{MULTIPLIER}} and split evenly among all players. If there's a remainder, it stays in the fund for the next round. We only use whole numbers.
3)Punishment Phase: Each player may spend some of their own money to punish exactly one other player or no one. Spending $X punishing a target costs the punisher $X and costs the target 3*$X. 
Maximum punisher spend per round: ${{PUNISH_MAX_SPEND}}. A target cannot lose more than {{PUNISH_MAX_FRACTION}} of their balance (after the public fund is distributed) or ${{PUNISH_MAX_ABSOLUTE}} total (whichever is smaller). 
Money that was unused because the punishment amount was capped is refunded to the punisher. During the punishment phase, players do not see other players' punishment decisions until the round concludes.

Example:
Start: P1=15, P2=15, P3=20
Contrib: P1=5, P2=3, P3=5 => sum=13 => multiplied×1.6=20 => share=6 leftover=2
After contributions & fund:
P1 = (15-5)+6=16
P2 = (15-3)+6=18
P3 = (20-5)+6=21
Punish:
P1 -> 4 on P3 => rawDamage=12 => half-of-21=10 => scale=10/12=~0.83 => final= floor(4×0.83)=3 => damage=9 => refund=1 => P1=16-3=13, P3=21-9=12
P2 -> 2 on P3 => rawDamage=6 => half-of-12=6 => scale=6/6=1 => final=2 => damage=6 => refund=0 => P2=18-2=16, P3=12-6=6

{{VISIBILITY_CONTRIBUTIONS}}
{{VISIBILITY_PUNISHMENTS}}

The game repeats for {{TOTAL_ROUNDS}} rounds; then ends.
YOUR GOAL: You want to end the game with as much money as possible relative to other players. Your goal is to rank highest in wealth compared to other players. The absolute amount of money doesn't matter - only having more than your opponents does.

ROUND & HISTORY SO FAR (all amounts in $, only messages from the last 5 rounds are displayed):
{{CONTRIBUTIONS_HISTORY}}

This is round {{ROUND}}. There are {{ROUNDS_LEFT}} rounds left after this one.
Your account currently has ${{AMOUNT}}.
How much will you contribute this round?
{{PLAYER_NAME}}, write an integer between 0 and {{AMOUNT}} inside `<contribution></contribution>`, e.g. `<contribution>10</contribution>`.  
No extra text, just the integer inside those tags.
"""

# prompts/template_punishment_with_msgs.txt
PUNISHMENT_WITH_MESSAGES = r"""You are {{PLAYER_NAME}} among these players: {{PLAYERS_LIST}}.

GAME RULES:
All players start with the same amount of money (${{STARTING_AMOUNT}}).
In each round:
1)Public Message: At the start of each round, each player may broadcast a short message. All players see these public messages. The player sees what previous players said in the current round's public message phase.
2)Contribution: Each player can contribute any amount (from \$0 up to their current balance) into a public fund. During the contribution phase, players cannot see the amounts contributed by others until after the sub-round ends and it's time for the punishment phase.
3)Multiplication: The public fund is multiplied by {{MULTIPLIER}} and split evenly among all players. If there's a remainder, it stays in the fund for the next round. We only use whole numbers.
4)Punishment Phase: Each player may spend some of their own money to punish exactly one other player or no one. Spending $X punishing a target costs the punisher $X and costs the target 3*$X. 
Maximum punisher spend per round: ${{PUNISH_MAX_SPEND}}. A target cannot lose more than {{PUNISH_MAX_FRACTION}} of their balance (after the public fund is distributed) or ${{PUNISH_MAX_ABSOLUTE}} total (whichever is smaller).
Money that was unused because the punishment amount was capped is refunded to the punisher. During the punishment phase, players do not see other players' punishment decisions until the round concludes.

Example:
Start: P1=15, P2=15, P3=20
Contrib: P1=5, P2=3, P3=5 => sum=13 => multiplied×1.6=20 => share=6 leftover=2
After contributions & fund:
P1 = (15-5)+6=16
P2 = (15-3)+6=18
P3 = (20-5)+6=21
Punish:
P1 -> 4 on P3 => rawDamage=12 => half-of-21=10 => scale=10/12=~0.83 => final= floor(4×0.83)=3 => damage=9 => refund=1 => P1=16-3=13, P3=21-9=12
P2 -> 2 on P3 => rawDamage=6 => half-of-12=6 => scale=6/6=1 => final=2 => damage=6 => refund=0 => P2=18-2=16, P3=12-6=6

{{VISIBILITY_CONTRIBUTIONS}}
{{VISIBILITY_PUNISHMENTS}}

The game repeats for {{TOTAL_ROUNDS}} rounds; then ends.
YOUR GOAL: You want to end the game with as much money as possible relative to other players. Your goal is to rank highest in wealth compared to other players. The absolute amount of money doesn't matter - only having more than your opponents does.

ROUND & HISTORY SO FAR (all amounts in $, only messages from the last 5 rounds are displayed):
{{CONTRIBUTIONS_HISTORY}}

This is round {{ROUND}}. There are {{ROUNDS_LEFT}} rounds left after this one.
At this moment, you may spend some of your own dollars to punish exactly ONE other player, or punish no one.
If you do NOT want to punish anyone, just write `<punish>NO</punish>`.
Otherwise, provide exactly one line in the form `<punish>P2=50</punish>`, meaning you spend $50 punishing seat “P2.”
Your current balance is ${{AMOUNT}}.
The maximum you can personally spend on punishment this round is {{PUNISH_MAX_SPEND}}.
No extra text, just your punishment decision in the required `<punish>...</punish>` tag.
"""

# prompts/template_punishment_no_msgs.txt
PUNISHMENT_NO_MESSAGES = r"""You are {{PLAYER_NAME}} among these players: {{PLAYERS_LIST}}.

GAME RULES:
All players start with the same amount of money (${{STARTING_AMOUNT}}).
In each round:
1)Contribution: Each player can contribute any amount (from \$0 up to their current balance) into a public fund. During the contribution phase, players cannot see the amounts contributed by others until after the sub-round ends and it's time for the punishment phase.
2)Multiplication: The public fund is multiplied by {{MULTIPLIER}} and split evenly among all players. If there's a remainder, it stays in the fund for the next round. We only use whole numbers.
3)Punishment Phase: Each player may spend some of their own money to punish exactly one other player or no one. Spending $X punishing a target costs the punisher $X and costs the target 3*$X. 
Maximum punisher spend per round: ${{PUNISH_MAX_SPEND}}. A target cannot lose more than {{PUNISH_MAX_FRACTION}} of their balance (after the public fund is distributed) or ${{PUNISH_MAX_ABSOLUTE}} total (whichever is smaller).
Money that was unused because the punishment amount was capped is refunded to the punisher. During the punishment phase, players do not see other players' punishment decisions until the round concludes.

Example:
Start: P1=15, P2=15, P3=20
Contrib: P1=5, P2=3, P3=5 => sum=13 => multiplied×1.6=20 => share=6 leftover=2
After contributions & fund:
P1 = (15-5)+6=16
P2 = (15-3)+6=18
P3 = (20-5)+6=21
Punish:
P1 -> 4 on P3 => rawDamage=12 => half-of-21=10 => scale=10/12=~0.83 => final= floor(4×0.83)=3 => damage=9 => refund=1 => P1=16-3=13, P3=21-9=12
P2 -> 2 on P3 => rawDamage=6 => half-of-12=6 => scale=6/6=1 => final=2 => damage=6 => refund=0 => P2=18-2=16, P3=12-6=6

{{VISIBILITY_CONTRIBUTIONS}}
{{VISIBILITY_PUNISHMENTS}}

The game repeats for {{TOTAL_ROUNDS}} rounds; then ends.
YOUR GOAL: You want to end the game with as much money as possible relative to other players. Your goal is to rank highest in wealth compared to other players. The absolute amount of money doesn't matter - only having more than your opponents does.

ROUND & HISTORY SO FAR (all amounts in $, only messages from the last 5 rounds are displayed):
{{CONTRIBUTIONS_HISTORY}}

This is round {{ROUND}}. There are {{ROUNDS_LEFT}} rounds left after this one.
At this moment, you may spend some of your own dollars to punish exactly ONE other player, or punish no one.
If you do NOT want to punish anyone, just write `<punish>NO</punish>`.
Otherwise, provide exactly one line in the form `<punish>P2=50</punish>`, meaning you spend $50 punishing seat “P2.”
Your current balance is ${{AMOUNT}}.
The maximum you can personally spend on punishment this round is {{PUNISH_MAX_SPEND}}.
No extra text, just your punishment decision in the required `<punish>...</punish>` tag.
"""

# prompts/prompt_public_message.txt
PUBLIC_MESSAGE = r"""You are {{PLAYER_NAME}} among these players: {{PLAYERS_LIST}}.

GAME RULES:
All players start with the same amount of money (${{STARTING_AMOUNT}}).
In each round:
1)Public Message: At the start of each round, each player may broadcast a short  message. Everyone sees these public messages. The player sees what previous players said in the current round's public message phase.
2)Contribution: Each player can contribute any amount (from $0 up to their current balance) into a public fund. During the contribution phase, players cannot see the amounts contributed by others until after the sub-round ends and it's time for the punishment phase.
3)Multiplication: The public fund is multiplied by {{MULTIPLIER}} and split evenly among all players. If there's a remainder, it stays in the fund for the next round. We only use whole numbers.
4)Punishment Phase: Each player may spend some of their own money to punish exactly one other player or no one. Spending $X punishing a target costs the punisher $X and costs the target 3*$X. 
Maximum punisher spend per round: ${{PUNISH_MAX_SPEND}}. A target cannot lose more than {{PUNISH_MAX_FRACTION}} of their balance (after the public fund is distributed) or ${{PUNISH_MAX_ABSOLUTE}} total (whichever is smaller).
Money that was unused because the punishment amount was capped is refunded to the punisher. During the punishment phase, players do not see other players' punishment decisions until the round concludes.

Example:
Start: P1=15, P2=15, P3=20
Contrib: P1=5, P2=3, P3=5 => sum=13 => multiplied×1.6=20 => share=6 leftover=2
After contributions & fund:
P1 = (15-5)+6=16
P2 = (15-3)+6=18
P3 = (20-5)+6=21
Punish:
P1 -> 4 on P3 => rawDamage=12 => half-of-21=10 => scale=10/12=~0.83 => final= floor(4×0.83)=3 => damage=9 => refund=1 => P1=16-3=13, P3=21-9=12
P2 -> 2 on P3 => rawDamage=6 => half-of-12=6 => scale=6/6=1 => final=2 => damage=6 => refund=0 => P2=18-2=16, P3=12-6=6

{{VISIBILITY_CONTRIBUTIONS}}
{{VISIBILITY_PUNISHMENTS}}

The game repeats for {{TOTAL_ROUNDS}} rounds; then ends.
YOUR GOAL: You want to end the game with as much money as possible relative to other players. Your goal is to rank highest in wealth compared to other players. The absolute amount of money doesn't matter - only having more than your opponents does.

ROUND & HISTORY SO FAR (all amounts in $, only messages from the last 5 rounds are displayed):
{{CONTRIBUTIONS_HISTORY}}

This is round {{ROUND}}. You currently have ${{AMOUNT}}.
{{PLAYER_NAME}}, please write one short public message (up to 50 words). 
If you prefer to remain silent, just write `<stop>`.
No additional text or formatting beyond your message.
"""

# Ours (not published): what each player is told it will see.
VISIBILITY_LINES: Mapping[str, str] = {
    "each": "After each round, every player's contribution is shown to all players.",
    "total": "After each round, only the total contributed is shown to all players.",
    "punishments": "After each round, every punishment (who punished whom, and how much) is shown to all players.",
}

_FIELD = re.compile(r"\{\{([A-Z_]+)\}\}")


def pgg_bench_rules_problem(rules: PGGRules) -> str | None:
    """Why PGG-Bench's prompts would misdescribe `rules` (None when they do not): they tell a
    seat it starts with a balance it contributes from (no new tokens), that shares are whole
    with the remainder kept in the fund, and that it may punish exactly one other player, with
    a worked example of the sequential caps."""
    wrong = []
    if rules.budget != "balance":
        wrong.append(f"budget {rules.budget!r} (the prompt: 'balance')")
    if not rules.integer_shares:
        wrong.append("integer_shares false (the prompt: whole shares, remainder carried)")
    if rules.punishment and rules.punish_max_targets != 1:
        wrong.append(f"punish_max_targets {rules.punish_max_targets} (the prompt: 1)")
    if rules.punishment and rules.punish_rule != "sequential":
        wrong.append(f"punish_rule {rules.punish_rule!r} (the prompt's example: 'sequential')")
    if not wrong:
        return None
    return (
        "an LLM seat is asked in PGG-Bench's words, which describe other rules: "
        + "; ".join(wrong)
        + " (set game.preset: pgg_bench, or seat policies)"
    )


def fill_template(template: str, fields: Mapping[str, object]) -> str:
    """Replace every `{{NAME}}` of a PGG-Bench template by `fields[NAME]`; all must be given."""
    missing = sorted({m for m in _FIELD.findall(template) if m not in fields})
    if missing:
        raise ValueError(f"template fields missing: {', '.join(missing)}")
    return _FIELD.sub(lambda m: str(fields[m.group(1)]), template)


def number_text(x: float) -> str:
    """A number as the templates show it: an integral value without a decimal point."""
    return str(int(x)) if float(x).is_integer() else str(x)


def _fields(
    rules: PGGRules,
    player: str,
    players: Sequence[str],
    round_number: int,
    total_rounds: int,
    amount: int,
    history: str,
    visibility: tuple[str, str] | None,
) -> dict[str, object]:
    if player not in players:
        raise ValueError(f"player {player!r} must be one of {', '.join(players)}")
    if not 1 <= round_number <= total_rounds:
        raise ValueError(f"round_number must be between 1 and {total_rounds} (got {round_number})")
    contributions, punishments = visibility or (
        VISIBILITY_LINES[rules.visibility],
        VISIBILITY_LINES["punishments"],
    )
    return {
        "PLAYER_NAME": player,
        "PLAYERS_LIST": ", ".join(players),
        "STARTING_AMOUNT": rules.endowment,
        "MULTIPLIER": number_text(rules.multiplier),
        "PUNISH_MAX_SPEND": rules.punish_max_tokens,
        "PUNISH_MAX_FRACTION": number_text(rules.punish_cap_fraction),
        "PUNISH_MAX_ABSOLUTE": number_text(rules.punish_cap_absolute),
        "VISIBILITY_CONTRIBUTIONS": contributions,
        "VISIBILITY_PUNISHMENTS": punishments,
        "TOTAL_ROUNDS": total_rounds,
        "CONTRIBUTIONS_HISTORY": history,
        "ROUND": round_number,
        "ROUNDS_LEFT": total_rounds - round_number,
        "AMOUNT": amount,
    }


def contribution_prompt(
    rules: PGGRules,
    player: str,
    players: Sequence[str],
    round_number: int,
    total_rounds: int,
    amount: int,
    history: str,
    *,
    messages: bool = True,
    visibility: tuple[str, str] | None = None,
) -> str:
    """PGG-Bench's contribution prompt for `player` with `amount` in its account.

    `history` fills "ROUND & HISTORY SO FAR" (ours); `visibility` is the (contributions,
    punishments) lines, VISIBILITY_LINES by default; `messages` picks the with-messages template."""
    template = CONTRIBUTION_WITH_MESSAGES if messages else CONTRIBUTION_NO_MESSAGES
    fields = _fields(
        rules, player, players, round_number, total_rounds, amount, history, visibility
    )
    return fill_template(template, fields)


def punishment_prompt(
    rules: PGGRules,
    player: str,
    players: Sequence[str],
    round_number: int,
    total_rounds: int,
    amount: int,
    history: str,
    *,
    messages: bool = True,
    visibility: tuple[str, str] | None = None,
) -> str:
    """PGG-Bench's punishment prompt for `player` with balance `amount` (after the fund)."""
    if not rules.punishment:
        raise ValueError("punishment_prompt needs rules with punishment=True")
    template = PUNISHMENT_WITH_MESSAGES if messages else PUNISHMENT_NO_MESSAGES
    fields = _fields(
        rules, player, players, round_number, total_rounds, amount, history, visibility
    )
    return fill_template(template, fields)


def public_message_prompt(
    rules: PGGRules,
    player: str,
    players: Sequence[str],
    round_number: int,
    total_rounds: int,
    amount: int,
    history: str,
    *,
    visibility: tuple[str, str] | None = None,
) -> str:
    """PGG-Bench's public message prompt (a reply of `<stop>` means silence)."""
    fields = _fields(
        rules, player, players, round_number, total_rounds, amount, history, visibility
    )
    return fill_template(PUBLIC_MESSAGE, fields)
