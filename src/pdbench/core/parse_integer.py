"""Reading an integer reply (a harvest, a contribution, a punishment) the way each author's code does.

Every reader returns an `IntegerReading` (value, problem): `problem` is None when the reply was
read as the authors' code reads a good reply, and a one-line description otherwise, so parse
failures are counted; `value` is then the fallback stated in the problem (GovSim's default 0), or
None when there is no value to use and the caller's fallback applies. Nothing is clamped here
silently: `clamp_reading` brings a value into range and says so in the problem.

- GovSim (giorgiopiatti/GovSim 1d11adf, `persona_v3/cognition/act_prompts.py`): the model reasons
  until "Answer:", "So, the answer is:" or "**Answer**:" (`stop_regex`), then the first `\\d+`
  in the text after it, up to "tons", is the catch; none gives the default "0". The sign is not
  read ("-5" is 5) and "12.5" is 12, as their regex does; the catch is not clamped by them. A
  reply with no marker would have been continued by their framework; from a finished reply the
  first integer of the whole reply is read and the missing marker reported.
- PGG-Bench (lechmazur/pgg_bench 4be972b): the prompts ask for `<contribution>N</contribution>`
  and `<punish>NO</punish>` or `<punish>P2=50</punish>`. The reading code is not published and the
  logs hold no raw replies (every logged contribution is between 0 and the balance), so its rule
  is unknown. Ours: the last such tag counts (a model may quote the prompt's example before
  answering), leaving out tags that quote the prompt: an empty tag, or one introduced as an
  example ("e.g.", "for example", "in the form", "such as", "just write" right before
  it, quotes and backticks aside), which a small model echoes before or after its answer; a
  reply whose only tags quote the prompt is a problem. The content must be an integer (or NO /
  seat=amount); dollar signs, "dollars" and markdown emphasis around the integer are dropped;
  anything else is a problem with value None. Measured on the labelled replies in
  `data/integer_replies.jsonl` (`storage.integer_replies`). The reward stage (ours, not
  PGG-Bench's) is read the same way: `<reward>NO</reward>` or `<reward>P2=1</reward>`, several
  seats separated by commas (`read_pgg_reward`), the amounts being tokens.
Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import NamedTuple

GOVSIM_MARKER = re.compile(r"Answer:|So, the answer is:|\*\*Answer\*\*:")
_DIGITS = re.compile(r"\d+")
_CONTRIBUTION = re.compile(r"<contribution>(.*?)</contribution>", re.IGNORECASE | re.DOTALL)
_PUNISH = re.compile(r"<punish>(.*?)</punish>", re.IGNORECASE | re.DOTALL)
_PUNISH_ACT = re.compile(r"(P\d+)\s*=\s*\$?\s*(\d+)", re.IGNORECASE)
# Words that introduce a quoted example right before a tag (quotes, backticks, spaces aside).
_EXAMPLE_CUE = re.compile(
    r"(?:e\.g\.,?|for example,?|example:?|in the form|such as|just write)[\s`'\"\u201c(]*$",
    re.IGNORECASE,
)
_DRESSED_INTEGER = re.compile(r"[*_`\s]*\$?\s*([+-]?\d+)\s*(?:dollars?|\$)?[*_`\s]*", re.IGNORECASE)
_REWARD = re.compile(r"<reward>(.*?)</reward>", re.IGNORECASE | re.DOTALL)


class IntegerReading(NamedTuple):
    """An integer read from a reply, and what went wrong (None when nothing did)."""

    value: int | None
    problem: str | None


class PunishmentReading(NamedTuple):
    """A punishment read from a reply: target seat (None: no one), amount spent, problem."""

    target: str | None
    amount: int | None
    problem: str | None


def _shown(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 3] + "...")


def read_govsim_integer(reply: str) -> IntegerReading:
    """GovSim's reading of a harvest: the first integer after the answer marker, up to "tons"."""
    marker = GOVSIM_MARKER.search(reply)
    if marker is None:
        found = _DIGITS.search(reply)
        if found is None:
            return IntegerReading(0, f"no answer marker and no integer in {_shown(reply)}; 0 used")
        return IntegerReading(
            int(found.group()),
            f"no answer marker in {_shown(reply)}; the first integer of the reply used",
        )
    after = reply[marker.end() :]
    end = after.find("tons")
    answer = after if end < 0 else after[:end]
    found = _DIGITS.search(answer)
    if found is None:
        return IntegerReading(0, f"no integer after the answer marker in {_shown(after)}; 0 used")
    return IntegerReading(int(found.group()), None)


def _answer_tags(pattern: re.Pattern[str], reply: str) -> tuple[list[str], bool]:
    """The contents of the reply's tags that are not quotes of the prompt (an empty tag, or one
    introduced as an example), and whether the reply had any tag at all."""
    found = list(pattern.finditer(reply))
    kept = [
        m.group(1)
        for m in found
        if m.group(1).strip()
        and _EXAMPLE_CUE.search(reply[max(0, m.start() - 40) : m.start()]) is None
    ]
    return kept, bool(found)


def read_pgg_contribution(reply: str) -> IntegerReading:
    """A contribution from the last `<contribution>N</contribution>` tag of the reply that is
    not a quote of the prompt's example (module docstring)."""
    tags, any_tag = _answer_tags(_CONTRIBUTION, reply)
    if not any_tag:
        return IntegerReading(None, f"no <contribution> tag in {_shown(reply)}")
    if not tags:
        return IntegerReading(
            None, f"only the prompt's example or an empty tag in {_shown(reply)}, no answer"
        )
    content = tags[-1].strip()
    dressed = _DRESSED_INTEGER.fullmatch(content)
    if dressed is None:
        return IntegerReading(None, f"<contribution> holds {_shown(content)}, not an integer")
    return IntegerReading(int(dressed.group(1)), None)


def read_pgg_punishment(reply: str, seats: tuple[str, ...]) -> PunishmentReading:
    """A punishment from the last `<punish>` tag that is not a quote of the prompt's example:
    NO, or seat=amount with a seat in `seats`."""
    tags, any_tag = _answer_tags(_PUNISH, reply)
    if not any_tag:
        return PunishmentReading(None, None, f"no <punish> tag in {_shown(reply)}")
    if not tags:
        return PunishmentReading(
            None, None, f"only the prompt's example or an empty tag in {_shown(reply)}, no answer"
        )
    content = tags[-1].strip()
    if content.upper() == "NO":
        return PunishmentReading(None, 0, None)
    act = _PUNISH_ACT.fullmatch(content)
    if act is None:
        return PunishmentReading(
            None, None, f"<punish> holds {_shown(content)}; expected NO or a seat=amount like P2=5"
        )
    seat = act.group(1).upper()
    if seat not in seats:
        return PunishmentReading(
            None, None, f"<punish> names seat {seat}; valid seats: {', '.join(seats)}"
        )
    return PunishmentReading(seat, int(act.group(2)), None)


class RewardReading(NamedTuple):
    """Rewards read from a reply: tokens by seat name ({} for NO, None when unreadable), problem."""

    tokens: dict[str, int] | None
    problem: str | None


def read_pgg_reward(reply: str, seats: tuple[str, ...]) -> RewardReading:
    """Rewards from the last `<reward>` tag that is not a quote of the prompt's example: NO, or
    seat=tokens items separated by commas (or semicolons), each seat in `seats` and named once."""
    tags, any_tag = _answer_tags(_REWARD, reply)
    if not any_tag:
        return RewardReading(None, f"no <reward> tag in {_shown(reply)}")
    if not tags:
        return RewardReading(
            None, f"only the prompt's example or an empty tag in {_shown(reply)}, no answer"
        )
    content = tags[-1].strip()
    if content.upper() == "NO":
        return RewardReading({}, None)
    out: dict[str, int] = {}
    for item in re.split(r"[,;]", content):
        act = _PUNISH_ACT.fullmatch(item.strip())
        if act is None:
            return RewardReading(
                None, f"<reward> holds {_shown(content)}; expected NO or seat=tokens like P2=1"
            )
        seat = act.group(1).upper()
        if seat not in seats:
            return RewardReading(
                None, f"<reward> names seat {seat}; valid seats: {', '.join(seats)}"
            )
        if seat in out:
            return RewardReading(None, f"<reward> names seat {seat} twice")
        out[seat] = int(act.group(2))
    return RewardReading(out, None)


def clamp_reading(
    reading: IntegerReading, low: int, high: int, what: str = "value"
) -> IntegerReading:
    """Bring a reading's value into [low, high], stating the clamp as a problem (a fallback).

    A reading without a value is returned as it is; an earlier problem is kept in front."""
    if low > high:
        raise ValueError(f"low must not exceed high (got {low} > {high})")
    value = reading.value
    if value is None or low <= value <= high:
        return reading
    clamped = min(max(value, low), high)
    side = "above the most" if value > high else "below the least"
    note = f"{what} {value} {side} {high if value > high else low}; clamped to {clamped}"
    problem = note if reading.problem is None else f"{reading.problem}; {note}"
    return IntegerReading(clamped, problem)
