"""The texts of ours that the resource games' LLM seats are shown (issue 31), beside the authors'.

PGG-Bench publishes its prompt templates but not the text that fills `{{CONTRIBUTIONS_HISTORY}}`
(`pdbench.agents.pgg_prompts`): `pgg_history_text` writes it, round by round, oldest first:
the public messages (only those of the last 5 rounds before this one, and this round's, as the
template's heading says), then, as the rules let a seat see them, the contributions (each seat's
under visibility "each", the total only under "total"), what each seat got from the fund, every
punishment (VISIBILITY_LINES: punishments are shown), and the balances after the round (every
seat's under "each", the seat's own under "total"). In the punishment stage the round being
played is shown too: its messages, its contributions and the seat's balance after the fund.

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
from pdbench.agents.pgg_prompts import number_text
from pdbench.agents.resource_policy import CommonsContext, Message, PGGContext

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
