"""The texts of ours that the resource games' LLM seats are shown (issue 31), beside the authors'.

PGG-Bench publishes its prompt templates but not the text that fills `{{CONTRIBUTIONS_HISTORY}}`
(`pdbench.agents.pgg_prompts`): `pgg_history_text` writes it, round by round, oldest first:
the public messages (only those of the last 5 rounds before this one, and this round's, as the
template's heading says), then, as the rules let a seat see them, the contributions (each seat's
under visibility "each", the total only under "total"), what each seat got from the fund, every
punishment (VISIBILITY_LINES: punishments are shown), and the balances after the round (every
seat's under "each", the seat's own under "total"). In the punishment stage the round being
played is shown too: its messages, its contributions and the seat's balance after the fund.

The reward stage (`PGGRules.reward`) is ours, PGG-Bench has none: with it on, every prompt's
rules gain a reward phase line (REWARD_RULE, after the punishment phase's), the history shows
every reward after the punishments, and the reward prompt (`pgg_reward_prompt`) is PGG-Bench's
punishment template with the worked punishment example left out and its closing instructions
rewritten for rewards (`<reward>NO</reward>`, or `<reward>P2=1</reward>`; several seats
separated by commas). Nothing changes in any prompt with the stage off.

GovSim's harvest prompt lists a persona's memories (`pdbench.agents.commons_prompts`): the
caller gives the earlier ones; here they are what the seat heard in the discussions (each message,
dated by the month it was said in) and its own reflections (dated by their month). The discussion
message prompt and the reflection prompt are ours (GovSim's own conversation and reflection
prompts are long multi-step chains that are not reproduced): each is GovSim's system text and
memory block, then this month's harvest and a short task. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from pdbench.agents.commons_prompts import (
    GOVSIM_START,
    OUTSIDER_GOALS,
    govsim_system_text,
    month_memories,
)
from pdbench.agents.pgg_prompts import (
    PUNISHMENT_NO_MESSAGES,
    PUNISHMENT_WITH_MESSAGES,
    _fields,
    fill_template,
    number_text,
)
from pdbench.agents.resource_policy import CommonsContext, Message, PGGContext
from pdbench.core.pgg import PGGRules

MESSAGE_WINDOW = 5  # PGG-Bench: "only messages from the last 5 rounds are displayed"


def money(x: float) -> str:
    """An amount as the history shows it: at most two decimals, integral without a point."""
    return number_text(round(float(x), 2))


def _messages_line(names: Sequence[str], messages: Sequence[Message], r: int) -> str | None:
    said = [m for m in messages if m.round_index == r and m.text]
    if not said:
        return None
    return "  Messages: " + " | ".join(f'{names[m.seat]}: "{m.text}"' for m in said)


def pgg_history_text(ctx: PGGContext, *, this_round: bool = False) -> str:
    """The `{{CONTRIBUTIONS_HISTORY}}` text for seat `ctx.seat` (module docstring); `this_round`
    (the punishment stage) adds the round being played with its contributions."""
    rules, names, me = ctx.rules, ctx.names, ctx.seat
    each = rules.visibility == "each"
    first_shown = ctx.round_index - MESSAGE_WINDOW
    lines: list[str] = []
    for k, res in enumerate(ctx.history):
        lines.append(f"Round {k + 1}:")
        said = _messages_line(names, ctx.messages, k) if k >= first_shown else None
        if said:
            lines.append(said)
        if each:
            shown = ", ".join(f"{n}={c}" for n, c in zip(names, res.contributions, strict=True))
            lines.append(f"  Contributions: {shown} (total {res.total})")
        else:
            lines.append(
                f"  Total contributed: {res.total} (you contributed {res.contributions[me]})"
            )
        carried = f" ({money(res.carry_out)} stays in the fund)" if res.carry_out else ""
        lines.append(f"  Each player received {money(res.share)} from the fund{carried}")
        if rules.punishment:
            acts = [
                f"{names[i]} spent {money(res.punish_spent[i])} punishing "
                + ", ".join(
                    f"{names[j]} ({names[j]} lost {money(res.damage[i][j])})"
                    for j in range(len(names))
                    if res.punish_tokens[i][j]
                )
                for i in range(len(names))
                if any(res.punish_tokens[i])
            ]
            lines.append("  Punishments: " + ("; ".join(acts) if acts else "none"))
        if rules.reward and res.reward_tokens:
            gave = [
                f"{names[i]} gave "
                + ", ".join(
                    f"{names[j]} {res.reward_tokens[i][j]} token(s) ({names[j]} got"
                    f" {money(res.reward_tokens[i][j] * rules.reward_effect)})"
                    for j in range(len(names))
                    if res.reward_tokens[i][j]
                )
                for i in range(len(names))
                if any(res.reward_tokens[i])
            ]
            lines.append("  Rewards: " + ("; ".join(gave) if gave else "none"))
        if each:
            shown = ", ".join(f"{n}={money(b)}" for n, b in zip(names, res.balances, strict=True))
            lines.append(f"  Balances after the round: {shown}")
        else:
            lines.append(f"  Your balance after the round: {money(res.balances[me])}")
    r = ctx.round_index
    now = _messages_line(names, ctx.messages, r)
    if this_round or now:
        lines.append(f"Round {r + 1} (this round):")
        if now:
            lines.append(now)
        if this_round and ctx.contributions is not None:
            cs = ctx.contributions
            if each:
                shown = ", ".join(f"{n}={c}" for n, c in zip(names, cs, strict=True))
                lines.append(f"  Contributions: {shown} (total {sum(cs)})")
            else:
                lines.append(f"  Total contributed: {sum(cs)} (you contributed {cs[me]})")
            if ctx.post_fund is not None:
                lines.append(f"  Your balance after the fund: {money(ctx.post_fund)}")
    return "\n".join(lines) if lines else "No rounds played yet."


# ---------------------------------------------------------------------------------------------
# The reward stage (ours)

_PUNISH_END = "players do not see other players' punishment decisions until the round concludes."
REWARD_RULE = (
    "Reward Phase: At the same time as the punishment phase, each player may give reward tokens"
    " to other players. Each token costs the giver ${cost} and gives the receiver ${effect}."
    " Maximum reward tokens per player per round: {most}{targets}. Rewards arrive after the"
    " punishments and cannot be taken away by them. Players do not see other players' reward"
    " decisions until the round concludes."
)
REWARD_VISIBILITY = (
    "After each round, every reward (who rewarded whom, and how much) is shown to all players."
)


def reward_rule(rules: PGGRules) -> str:
    """The reward phase line of the rules (REWARD_RULE filled in)."""
    targets = (
        f", to at most {rules.reward_max_targets} other player(s)"
        if rules.reward_max_targets is not None
        else ""
    )
    return REWARD_RULE.format(
        cost=number_text(rules.reward_cost),
        effect=number_text(rules.reward_effect),
        most=rules.reward_max_tokens,
        targets=targets,
    )


def with_reward_rules(prompt: str, rules: PGGRules) -> str:
    """A PGG-Bench prompt with the reward phase added to its rules (after the punishment phase)
    and the rewards' visibility line; the prompt unchanged when the reward stage is off."""
    if not rules.reward or _PUNISH_END not in prompt:
        return prompt
    prompt = prompt.replace(_PUNISH_END, f"{_PUNISH_END}\n{reward_rule(rules)}", 1)
    shown = "After each round, every punishment"
    at = prompt.find(shown)
    if at >= 0:
        end = prompt.find("\n", at)
        prompt = f"{prompt[:end]}\n{REWARD_VISIBILITY}{prompt[end:]}"
    return prompt


def pgg_reward_prompt(
    rules: PGGRules,
    player: str,
    players: Sequence[str],
    round_number: int,
    total_rounds: int,
    amount: int,
    history: str,
    *,
    messages: bool = True,
) -> str:
    """Ours: the reward prompt for `player` with balance `amount` after the fund (module
    docstring)."""
    if not rules.reward:
        raise ValueError("pgg_reward_prompt needs rules with reward=True")
    template = PUNISHMENT_WITH_MESSAGES if messages else PUNISHMENT_NO_MESSAGES
    head, _, _ = template.partition("\nExample:\n")
    _, _, tail = template.partition("{{VISIBILITY_CONTRIBUTIONS}}")
    tail, _, _ = tail.partition("At this moment,")
    fields = _fields(rules, player, players, round_number, total_rounds, amount, history, None)
    body = fill_template(head + "\n{{VISIBILITY_CONTRIBUTIONS}}" + tail, fields)
    most = rules.reward_max_tokens
    ask = (
        "At this moment, you may give reward tokens to other players, or reward no one.\n"
        "If you do NOT want to reward anyone, just write `<reward>NO</reward>`.\n"
        "Otherwise, write one line in the form `<reward>P2=1</reward>`, meaning you give 1 reward"
        " token to seat “P2”; to reward several players separate them with commas, e.g."
        " `<reward>P2=1, P3=2</reward>`.\n"
        f"Your current balance is ${amount}.\n"
        f"The maximum number of reward tokens you can give this round is {most}"
        f" (each costs you ${number_text(rules.reward_cost)}).\n"
        "No extra text, just your reward decision in the required `<reward>...</reward>` tag.\n"
    )
    return with_reward_rules(body, rules) + ask


# ---------------------------------------------------------------------------------------------
# Commons


def month_date(season: int) -> date:
    """The date of season `season` (0-based): GovSim's months from 2024-01-01."""
    months = GOVSIM_START.month - 1 + season
    return date(GOVSIM_START.year + months // 12, months % 12 + 1, 1)


def heard_memories(ctx: CommonsContext, joined: int, before: int) -> list[tuple[date, str]]:
    """What the seat heard in the discussions of seasons `joined`..`before - 1`, dated."""
    return [
        (month_date(m.round_index), f'{ctx.names[m.seat]} said: "{m.text}"')
        for m in ctx.messages
        if joined <= m.round_index < before and m.text
    ]


def goals_of(ctx: CommonsContext) -> str:
    """The persona goals appended to GovSim's system text (the outsider's, else none)."""
    return OUTSIDER_GOALS if ctx.outsider else ""


def _memory_block(ctx: CommonsContext, memories: Sequence[tuple[date, str]]) -> str:
    day = month_date(ctx.season)
    name = ctx.names[ctx.seat]
    listed = sorted(
        [*memories, *month_memories(ctx.rules, ctx.stock, day, ctx.universalization)],
        key=lambda m: m[0],
    )
    lines = "".join(f"- {d.strftime('%Y-%m-%d')}: {text}\n" for d, text in listed)
    return (
        f"{govsim_system_text(name, ctx.system_prompt, goals_of(ctx))}\n"
        f"Location: lake\nDate: {day.strftime('%Y-%m-%d')}\n\n"
        f"Key memories of {name} (format: YYYY-MM-DD: memory):\n{lines}\n"
    )


def harvest_report(ctx: CommonsContext) -> str:
    """This month's harvest as the seats learn it at the end of the month (GovSim's system text:
    "the number of fish caught by each fisherman will be revealed")."""
    season = ctx.history[-1]
    caught = ", ".join(
        f"{n} caught {c} tons" for n, c in zip(ctx.names, season.caught, strict=True)
    )
    return (
        f"This month's harvest: {caught}. {season.left} tons of fish were left in the lake"
        " before reproduction."
    )


def commons_message_prompt(
    ctx: CommonsContext, memories: Sequence[tuple[date, str]], max_chars: int
) -> str:
    """Ours: the discussion after the month's harvest (`memories` are the earlier ones)."""
    today = [m for m in ctx.messages if m.round_index == ctx.season and m.text]
    said = (
        "\n".join(f'- {ctx.names[m.seat]}: "{m.text}"' for m in today)
        if today
        else "Nobody has spoken yet."
    )
    return (
        _memory_block(ctx, memories)
        + f"{harvest_report(ctx)}\n\nThe fishermen's discussion this month so far:\n{said}\n\n"
        "Task: Write your message to the other fishermen for this month's discussion, in one or"
        f" two short sentences (at most {max_chars} characters). Write only the message."
    )


def commons_reflection_prompt(ctx: CommonsContext, memories: Sequence[tuple[date, str]]) -> str:
    """Ours: a short reflection at the end of the month (`memories` include this month's
    discussion)."""
    return (
        _memory_block(ctx, memories) + f"{harvest_report(ctx)}\n\n"
        "Task: In one or two sentences, write what you conclude from this month for your fishing"
        " next month. Write only the sentences."
    )
