"""The MockProvider's answers in the resource games (issue 31), read from the prompts as a model
would read them.

Public goods (PGG-Bench's prompts, `pdbench.agents.pgg_prompts`, with our history text,
`pdbench.agents.resource_texts`): it reads its name ("You are P2 among these players"), the most
it may contribute ("write an integer between 0 and N"), and the contributions of past rounds
("Contributions: P1=5, P2=3 (total 8)", or "Total contributed: 8 (you contributed 3)"). Its
persona (from the system prompt, `persona: NAME`) sets what it does:

- cooperative: contributes its whole balance (7 draws in 10), else 4/5 of it (rounded down);
  in the punishment stage it spends min(3, the most it may) on the lowest contributor of the
  round among those who gave less than half of what it gave (a free rider), else `NO`;
- exploitative: contributes 0, says nothing (`<stop>`);
- liar: promises in its messages to contribute everything, contributes 0;
- tit_for_tat, generous_tft, grim_trigger, wsls (conditional cooperators): the whole balance in
  the first round, then the others' mean contribution of the last round (rounded, at most the
  limit);
- no persona: a uniform draw between 0 and the limit.
Only the cooperative persona punishes, and only it rewards (the reward stage, ours): one token to
each other seat that contributed at least as much as it did this round (and more than 0), at
most the tokens it may give, else `<reward>NO</reward>`. Replies: `<contribution>N</contribution>`,
`<punish>P3=2</punish>` / `<punish>NO</punish>`, a message or `<stop>`.

Commons (GovSim's harvest prompt, `pdbench.agents.commons_prompts`, and our discussion and
reflection prompts): it reads the lake ("fishing range set between 0-N", or the month's memory
"there are N tons of fish in the lake"), the fishermen named in the system text, and the
sustainable share (stock // 2) // fishermen. Cooperative: the share (7 draws in 10), else one
ton less; exploitative and liar (and, without a persona, the outsider whose goals say it "just
want[s] to make money"): half the lake; conditional: the others' mean catch of last month as
its own reflection recorded it ("The others caught N tons each on average"), else the share; no
persona: the share plus a draw up to the share. Replies end "Answer: N tons."; reflections
state the others' mean catch.

Every draw is a hash of (seed, system, prompt), so a call always gets the same reply. With
`invalid_rate` > 0 a decision reply is sometimes unreadable (no tag, no integer).
"""

from __future__ import annotations

import hashlib
import math
import re

RESOURCE_PURPOSES = ("contribution", "punishment", "reward", "harvest", "reflection")
CONDITIONAL = ("tit_for_tat", "generous_tft", "grim_trigger", "wsls", "conditional")
UNREADABLE = (
    "I am not sure yet.",
    "Let me think about what the others will do first.",
    "",
)

_ME_PGG = re.compile(r"You are (P\d+) among these players: ([^\n]*?)\s*\.\s*$", re.MULTILINE)
_LIMIT = re.compile(r"write an integer between 0 and (\d+)")
_MAX_SPEND = re.compile(r"maximum you can personally spend on punishment this round is (\d+)")
_MAX_REWARD = re.compile(r"maximum number of reward tokens you can give this round is (\d+)")
_BALANCE = re.compile(r"Your current balance is \$(\d+)")
_ROUND = re.compile(r"^Round (\d+)( \(this round\))?:$")
_EACH = re.compile(r"^\s+Contributions: (.*) \(total (\d+)\)$")
_TOTAL = re.compile(r"^\s+Total contributed: (\d+) \(you contributed (\d+)\)$")
_PAIR = re.compile(r"(P\d+)=(\d+)")
_RANGE = re.compile(r"fishing range set between 0-(\d+)")
_LAKE = re.compile(r"there are (\d+) tons of fish in the lake")
_ME_FISHER = re.compile(r"You are (\w+), a fisherman.*?other fishermen \(([^)]*)\)")
_LEFT = re.compile(r"(\d+) tons of fish were left in the lake")
_REPORT = re.compile(r"This month's harvest: ([^\n]*?)\. \d+ tons of fish were left")
_CAUGHT = re.compile(r"(\w+) caught (\d+) tons")
_MEAN = re.compile(r"The others caught (\d+) tons each on average")
_OUTSIDER = "you just want to make money"


def unit(*parts: object) -> float:
    """A uniform draw in [0, 1) keyed by `parts` (the mock's recipe)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def is_resource_call(purpose: str, prompt: str) -> bool:
    """Whether a call is a resource seat's (its purpose, or a message call on a game's prompt)."""
    if purpose in RESOURCE_PURPOSES:
        return True
    return purpose == "message" and (
        _ME_PGG.search(prompt) is not None or _ME_FISHER.search(prompt) is not None
    )


# ---------------------------------------------------------------------------------------------
# Public goods


def pgg_rounds(prompt: str) -> list[tuple[bool, dict[str, int] | None, int, int | None]]:
    """The rounds of the history text: (this round?, contributions by seat or None, total,
    mine when only the total is shown)."""
    out: list[tuple[bool, dict[str, int] | None, int, int | None]] = []
    current = False
    for line in prompt.splitlines():
        if found := _ROUND.match(line):
            current = found.group(2) is not None
        elif found := _EACH.match(line):
            pairs = {seat: int(c) for seat, c in _PAIR.findall(found.group(1))}
            out.append((current, pairs, int(found.group(2)), None))
        elif found := _TOTAL.match(line):
            out.append((current, None, int(found.group(1)), int(found.group(2))))
    return out


def _others_mean(me: str, n: int, row: tuple) -> float:
    _, each, total, mine = row
    if each is not None:
        others = [c for seat, c in each.items() if seat != me]
        return sum(others) / max(1, len(others))
    return (total - (mine or 0)) / max(1, n - 1)


def mock_contribution(persona: str | None, prompt: str, u: float) -> int:
    """The mock's contribution on a PGG-Bench contribution prompt (module docstring)."""
    limit = int(_LIMIT.search(prompt).group(1))  # type: ignore[union-attr]
    me = _ME_PGG.search(prompt)
    name, n = (me.group(1), len(me.group(2).split(","))) if me else ("", 2)
    past = [row for row in pgg_rounds(prompt) if not row[0]]
    if persona == "cooperative":
        return limit if u < 0.7 else (limit * 4) // 5
    if persona in ("exploitative", "liar"):
        return 0
    if persona in CONDITIONAL:
        if not past:
            return limit
        return min(limit, round(_others_mean(name, n, past[-1])))
    return min(limit, math.floor(u * (limit + 1)))


def mock_punishment(persona: str | None, prompt: str) -> str:
    """The mock's `<punish>` reply on a PGG-Bench punishment prompt (module docstring)."""
    me = _ME_PGG.search(prompt)
    now = [row for row in pgg_rounds(prompt) if row[0]]
    if persona != "cooperative" or me is None or not now or now[-1][1] is None:
        return "<punish>NO</punish>"
    each = now[-1][1]
    mine = each.get(me.group(1), 0)
    riders = [(c, seat) for seat, c in each.items() if seat != me.group(1) and 2 * c < mine]
    spend_at_most = _MAX_SPEND.search(prompt)
    balance = _BALANCE.search(prompt)
    spend = min(
        3,
        int(spend_at_most.group(1)) if spend_at_most else 3,
        int(balance.group(1)) if balance else 3,
    )
    if not riders or spend <= 0:
        return "<punish>NO</punish>"
    target = min(riders, key=lambda x: (x[0], int(x[1][1:])))[1]
    return f"<punish>{target}={spend}</punish>"


def mock_reward(persona: str | None, prompt: str) -> str:
    """The mock's `<reward>` reply on our reward prompt (module docstring)."""
    me = _ME_PGG.search(prompt)
    now = [row for row in pgg_rounds(prompt) if row[0]]
    if persona != "cooperative" or me is None or not now or now[-1][1] is None:
        return "<reward>NO</reward>"
    each = now[-1][1]
    mine = each.get(me.group(1), 0)
    most = _MAX_REWARD.search(prompt)
    balance = _BALANCE.search(prompt)
    left = min(
        int(most.group(1)) if most else 1,
        int(balance.group(1)) if balance else 1,
    )
    high = [seat for seat, c in each.items() if seat != me.group(1) and c >= mine and c > 0]
    high = high[: max(0, left)]
    if not high:
        return "<reward>NO</reward>"
    return "<reward>" + ", ".join(f"{seat}=1" for seat in high) + "</reward>"


def mock_pgg_message(persona: str | None) -> str:
    """What the mock says before it contributes (`<stop>`: nothing)."""
    return {
        "cooperative": "Let's all contribute our whole balance; I will, and I punish free riders.",
        "liar": "I promise to contribute everything this round. Let's all do the same.",
        "tit_for_tat": "I will contribute what the group contributed on average last round.",
        "generous_tft": "I will contribute what the group contributed on average last round.",
    }.get(persona or "", "<stop>")


# ---------------------------------------------------------------------------------------------
# Commons


def _fishers(prompt: str) -> tuple[str, int]:
    found = _ME_FISHER.search(prompt)
    if found is None:
        return "", 5
    return found.group(1), len(found.group(2).split(",")) + 1


def _stock(prompt: str) -> int:
    found = _RANGE.search(prompt)
    if found is not None:
        return int(found.group(1))
    lakes = _LAKE.findall(prompt)
    return int(lakes[-1]) if lakes else 0


def _greedy(persona: str | None, prompt: str) -> bool:
    return persona in ("exploitative", "liar") or (persona is None and _OUTSIDER in prompt)


def mock_harvest(persona: str | None, prompt: str, u: float) -> int:
    """The mock's harvest on GovSim's harvest prompt (module docstring)."""
    stock = _stock(prompt)
    _, n = _fishers(prompt)
    share = (stock // 2) // n
    if persona == "cooperative":
        return share if u < 0.7 else max(0, share - 1)
    if _greedy(persona, prompt):
        return stock // 2
    if persona in CONDITIONAL:
        means = _MEAN.findall(prompt)
        return min(stock, int(means[-1])) if means else share
    return share + math.floor(u * (share + 1))


def mock_commons_message(persona: str | None, prompt: str) -> str:
    """What the mock says in the discussion after a harvest."""
    _, n = _fishers(prompt)
    left = _LEFT.search(prompt)
    next_stock = min(100, 2 * int(left.group(1))) if left else _stock(prompt)
    share = (next_stock // 2) // n
    if persona == "cooperative":
        return f"Let's each catch at most {share} tons next month so the lake stays full."
    if persona == "liar":
        return f"I agree, I will catch only {share} tons next month."
    if _greedy(persona, prompt):
        return "I will fish as much as I need."
    if persona in CONDITIONAL:
        return "I will catch what the rest of you catch on average."
    return "Let's keep the lake healthy."


def mock_reflection(prompt: str) -> str:
    """The mock's reflection: the others' mean catch this month and what was left."""
    me, _ = _fishers(prompt)
    report = _REPORT.search(prompt)
    shown = report.group(1) if report else ""
    caught = [int(c) for name, c in _CAUGHT.findall(shown) if name != me]
    mean = round(sum(caught) / len(caught)) if caught else 0
    left = _LEFT.search(prompt)
    rest = f" {left.group(1)} tons were left." if left else ""
    return f"The others caught {mean} tons each on average this month.{rest}"


def resource_reply(
    persona: str | None,
    purpose: str,
    system: str,
    prompt: str,
    seed: int | None,
    invalid_rate: float = 0.0,
) -> str:
    """The mock's reply to a resource seat's call (module docstring)."""
    decision = purpose in ("contribution", "punishment", "reward", "harvest")
    if decision and invalid_rate and unit("invalid", seed, system, prompt) < invalid_rate:
        return UNREADABLE[int(unit("garbage", seed, prompt) * len(UNREADABLE))]
    u = unit("resource", purpose, seed, system, prompt)
    if purpose == "contribution":
        return f"<contribution>{mock_contribution(persona, prompt, u)}</contribution>"
    if purpose == "punishment":
        return mock_punishment(persona, prompt)
    if purpose == "reward":
        return mock_reward(persona, prompt)
    if purpose == "harvest":
        stock = _stock(prompt)
        value = mock_harvest(persona, prompt, u)
        return f"The lake has {stock} tons. Let's think step-by-step. Answer: {value} tons."
    if purpose == "reflection":
        return mock_reflection(prompt)
    if _ME_PGG.search(prompt):
        return mock_pgg_message(persona)
    return mock_commons_message(persona, prompt)
