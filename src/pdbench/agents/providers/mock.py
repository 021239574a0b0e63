"""MockProvider: an offline stand-in for an LLM, deterministic for a given seed and prompt.

It reads the prompt the way a model would: the persona named in the system prompt sets its
temperament, and the history lines in the round prompt ("Round 3: you played C, the opponent
played D, ...") tell it what happened. It answers in the agent's action labels (J/F when the
agent shows those) and reads its history in them. Its random choices come from a hash of (seed, system,
prompt), so the same call always gets the same reply. With `invalid_rate` > 0 it sometimes answers
with chatter that is not a valid move, which exercises the agent's retry path. In prompt_mode
completion it continues the text: a bare answer comes with a leading space (" J").

In a group game (`pdbench.agents.group_prompts`: a system prompt saying "a group of N players.
You are Player k", or history lines "Round 3: you played C; Player 2 C, Player 3 D; your payoff
1.2") it reads each co-player's move per round and plays its persona for groups
(`mock_group_move`); with one co-player every persona plays exactly as in a pair.

In the resource games (a public goods game, a commons) it answers the games' own prompts
(`pdbench.agents.providers.mock_resource`, chosen by the call's purpose).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
from collections.abc import Callable

from pdbench.agents.providers.base import (
    Completion,
    CompletionRequest,
    ProviderBase,
    provider,
)
from pdbench.agents.providers.mock_resource import is_resource_call, resource_reply
from pdbench.core.config import LLMAgentConfig
from pdbench.core.parse import Labels, TokenLogprobs, parse_action
from pdbench.core.talk import read_intent
from pdbench.core.types import Action

_PERSONA_RE = re.compile(r"persona:\s*([a-z_]+)", re.IGNORECASE)
_JSON_RE = re.compile(r'\{"action"', re.IGNORECASE)

GARBAGE_REPLIES = (
    "I think cooperation is best here.",
    "Let me think about this... probably defect?",
    "Action: maybe",
    "CD",
    "",
)


def _unit(*parts: object) -> float:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def mock_move(persona: str | None, history: list[tuple[str, str]], u: float) -> str:
    """The mock's move ("C"/"D") for a persona, the visible history (mine, theirs) and a draw u."""
    last_opp = history[-1][1] if history else None
    if persona == "cooperative":
        return "C" if u < (0.9 if last_opp != "D" else 0.75) else "D"
    if persona == "exploitative":
        return "D" if u < 0.85 else "C"
    if persona == "liar":
        return "D"
    if persona == "tit_for_tat":
        return last_opp or "C"
    if persona == "grim_trigger":
        return "D" if any(theirs == "D" for _, theirs in history) else "C"
    if persona == "generous_tft":
        if last_opp == "D":
            return "C" if u < 1 / 3 else "D"
        return "C"
    if persona == "wsls":
        if not history:
            return "C"
        mine, theirs = history[-1]
        won = theirs == "C"  # CC pays R, DC pays T: both are wins under the default payoffs
        return mine if won else ("D" if mine == "C" else "C")
    return "C" if u < 0.6 else "D"


def _majority_c(others: tuple[str, ...]) -> bool:
    """More than half of the co-players played C."""
    return sum(o == "C" for o in others) * 2 > len(others)


def mock_group_move(
    persona: str | None, history: list[tuple[str, tuple[str, ...]]], u: float
) -> str:
    """The mock's move ("C"/"D") in a group game, from the visible history (my move, the
    co-players' moves) and a draw u. Each persona as in a pair, with "the opponent" read as the
    group: cooperative C with probability 0.9, 0.75 after a round where any co-player defected;
    exploitative D with probability 0.85; liar D; tit_for_tat C first, then C iff a majority
    (more than half) of the others cooperated last round; grim_trigger C until any other
    defected in a round shown; generous_tft as tit_for_tat but C with probability 1/3 where that
    says D; wsls C first, then stays after a round where a majority of the others cooperated (a
    win) and switches otherwise; no persona C with probability 0.6. One co-player: `mock_move`."""
    last = history[-1][1] if history else None
    if persona == "cooperative":
        return "C" if u < (0.9 if last is None or "D" not in last else 0.75) else "D"
    if persona == "exploitative":
        return "D" if u < 0.85 else "C"
    if persona == "liar":
        return "D"
    if persona == "tit_for_tat":
        return "C" if last is None or _majority_c(last) else "D"
    if persona == "grim_trigger":
        return "D" if any("D" in others for _, others in history) else "C"
    if persona == "generous_tft":
        if last is not None and not _majority_c(last):
            return "C" if u < 1 / 3 else "D"
        return "C"
    if persona == "wsls":
        if not history:
            return "C"
        mine, others = history[-1]
        return mine if _majority_c(others) else ("D" if mine == "C" else "C")
    return "C" if u < 0.6 else "D"


def mock_group_p_cooperate(
    persona: str | None, history: list[tuple[str, tuple[str, ...]]]
) -> float:
    """The probability that `mock_group_move` answers C."""
    last = history[-1][1] if history else None
    if persona == "cooperative":
        return 0.9 if last is None or "D" not in last else 0.75
    if persona == "exploitative":
        return 0.15
    if persona == "liar":
        return 0.0
    if persona == "generous_tft" and last is not None and not _majority_c(last):
        return 1 / 3
    if persona in ("tit_for_tat", "grim_trigger", "generous_tft", "wsls"):
        return 1.0 if mock_group_move(persona, history, 0.0) == "C" else 0.0
    return 0.6


def mock_p_cooperate(persona: str | None, history: list[tuple[str, str]]) -> float:
    """The probability that `mock_move` answers C (what its log-probabilities report)."""
    last_opp = history[-1][1] if history else None
    if persona == "cooperative":
        return 0.9 if last_opp != "D" else 0.75
    if persona == "exploitative":
        return 0.15
    if persona == "liar":
        return 0.0
    if persona == "generous_tft" and last_opp == "D":
        return 1 / 3
    if persona in ("tit_for_tat", "grim_trigger", "generous_tft", "wsls"):
        return 1.0 if mock_move(persona, history, 0.0) == "C" else 0.0
    return 0.6


# What each persona says before a move: (text, what it declares as its intention: "honest" the
# move it will make, "promise" C whatever it plays (the exploitative persona promises and
# defects, and declares the promise too), "lie" D while its text says C (the liar: its message
# and its private intention disagree), "none" nothing).
PERSONA_TALK: dict[str | None, tuple[str, str]] = {
    "cooperative": ("I will cooperate. Let's both keep cooperating.", "promise"),
    "exploitative": ("I will cooperate, you can trust me.", "promise"),
    "liar": ("I will cooperate.", "lie"),
    "tit_for_tat": ("I will play what you played last round.", "honest"),
    "grim_trigger": ("I cooperate until you defect; then I defect for good.", "honest"),
    "generous_tft": ("I reply in kind, and I often forgive.", "none"),
    "wsls": ("I keep a move that pays and change one that does not.", "honest"),
}


# The same talk in a group game, worded to the group (the same kinds as `PERSONA_TALK`).
PERSONA_GROUP_TALK: dict[str | None, tuple[str, str]] = {
    "cooperative": ("I will cooperate. Let's all keep cooperating.", "promise"),
    "exploitative": ("I will cooperate, you can all trust me.", "promise"),
    "liar": ("I will cooperate.", "lie"),
    "tit_for_tat": ("I will play what most of you played last round.", "honest"),
    "grim_trigger": ("I cooperate until any of you defects; then I defect for good.", "honest"),
    "generous_tft": ("I reply in kind, and I often forgive.", "none"),
    "wsls": ("I keep a move that pays and change one that does not.", "honest"),
}


def persona_message(persona: str | None) -> tuple[str, str]:
    """(text, kind) of what a persona says before each move (`PERSONA_TALK`; a persona not
    listed there says something noncommittal)."""
    return PERSONA_TALK.get(persona, ("Let's see how it goes.", "none"))


def message_text(system: str) -> str:
    """The text of the messages the mock writes under `system` (its persona's)."""
    return persona_message(_persona(system))[0]


def mock_message(
    persona: str | None, history: list[tuple[str, str]], u: float, labels: Labels = ("C", "D")
) -> str:
    """The mock's structured message reply: its persona's text (`PERSONA_TALK`) and as its
    intention the move `mock_move` makes (honest personas: the deterministic ones, and the
    cooperative one, which keeps its promise, see `MockProvider.reply`), C (the exploitative
    persona's promise, whatever it plays), D (the liar, whose text promises C), or none (the
    others)."""
    text, kind = persona_message(persona)
    return _structured(text, kind, lambda: mock_move(persona, history, u), labels)


def mock_group_message(
    persona: str | None,
    history: list[tuple[str, tuple[str, ...]]],
    u: float,
    labels: Labels = ("C", "D"),
) -> str:
    """`mock_message` in a group game: the persona's group talk (`PERSONA_GROUP_TALK`; a persona
    not listed there says what it says in a pair) and, honest, the move `mock_group_move`
    makes."""
    text, kind = PERSONA_GROUP_TALK.get(persona) or persona_message(persona)
    return _structured(text, kind, lambda: mock_group_move(persona, history, u), labels)


def _structured(text: str, kind: str, move: Callable[[], str], labels: Labels) -> str:
    """The structured message reply: `text` and the intention its kind declares (honest: the
    move it will make, lie: D, promise: C, none)."""
    if kind == "honest":
        intention = labels[0] if move() == "C" else labels[1]
    elif kind == "lie":
        intention = labels[1]
    else:
        intention = labels[0] if kind == "promise" else "none"
    return json.dumps({"message": text, "intention": intention})


_FLOOR = 1e-9  # log-probability floor for an answer the mock never gives
# A message line of a prompt (`pdbench.agents.llm_talk.messages_block`): the text is a JSON string.
_MESSAGE_LINE = re.compile(r'- before round (\d+), (you|the other player): ("(?:[^"\\]|\\.)*")')
# A message line of a group seat's prompt (`pdbench.agents.group_prompts.group_messages_block`).
_GROUP_MESSAGE_LINE = re.compile(
    r"- before round (\d+), (you(?: to Player \d+)?|(?:Player \d+|another player)(?: to you)?): "
    r'("(?:[^"\\]|\\.)*")'
)
# The group system prompt (configs/prompts/group_system.md): "... a group of 5 players. You are
# Player 3".
_GROUP_SYSTEM_RE = re.compile(r"\bgroup of \d+ players\b.*?\bYou are Player \d+", re.DOTALL)


def _persona(system: str) -> str | None:
    """The persona a system prompt names ("persona: cooperative"), lower case; None if none."""
    found = _PERSONA_RE.search(system)
    return found.group(1).lower() if found else None


def _promised_c(prompt: str, group: bool = False) -> bool:
    """Whether the agent's own message of the latest exchange shown in a prompt promises C
    (`group`: in a group seat's prompt, where its own messages are `you` or `you to Player k`)."""
    pattern = _GROUP_MESSAGE_LINE if group else _MESSAGE_LINE
    lines = [found.groups() for line in prompt.splitlines() if (found := pattern.fullmatch(line))]
    if not lines:
        return False
    latest = max(int(r) for r, _, _ in lines)
    return any(
        int(r) == latest
        and (who == "you" or (group and who.startswith("you ")))
        and read_intent(json.loads(text)) is Action.C
        for r, who, text in lines
    )


def history_pattern(labels: Labels) -> re.Pattern[str]:
    """The history lines of a round prompt ("Round 3: you played C, the opponent played D")."""
    word = "|".join(re.escape(x) for x in labels)
    return re.compile(
        rf"Round\s+\d+:\s*you played\s+({word}),\s*the opponent played\s+({word})",
        re.IGNORECASE,
    )


def read_history(prompt: str, labels: Labels = ("C", "D")) -> list[tuple[str, str]]:
    """The (mine, theirs) moves, as C and D, of the history lines written in `labels`. Like a
    model, it takes the messages shown (message lines, `_MESSAGE_LINE`) for what the players
    said, not for what happened, and reads lines as `str.splitlines` splits them (CR, U+2028,
    ... end a line too)."""
    move = {labels[0].upper(): "C", labels[1].upper(): "D"}
    pattern = history_pattern(labels)
    return [
        (move[m.upper()], move[t.upper()])
        for line in prompt.splitlines()
        if not _MESSAGE_LINE.fullmatch(line)
        for m, t in pattern.findall(line)
    ]


def group_history_pattern(labels: Labels) -> re.Pattern[str]:
    """The history lines of a group seat's round prompt ("Round 3: you played C; Player 2 C,
    Player 3 D; your payoff 1.2."): my move, then the co-players' part."""
    word = "|".join(re.escape(x) for x in labels)
    return re.compile(
        rf"Round\s+\d+:\s*you played\s+({word});\s*((?:Player\s+\d+\s+(?:{word})(?:,\s*)?)+);",
        re.IGNORECASE,
    )


def read_group_history(
    prompt: str, labels: Labels = ("C", "D")
) -> list[tuple[str, tuple[str, ...]]]:
    """(my move, the co-players' moves), as C and D, of the group history lines written in
    `labels`; message lines (either form) are what players said, not what happened."""
    move = {labels[0].upper(): "C", labels[1].upper(): "D"}
    word = "|".join(re.escape(x) for x in labels)
    each = re.compile(rf"Player\s+\d+\s+({word})\b", re.IGNORECASE)
    pattern = group_history_pattern(labels)
    return [
        (move[m.upper()], tuple(move[x.upper()] for x in each.findall(others)))
        for line in prompt.splitlines()
        if not (_MESSAGE_LINE.fullmatch(line) or _GROUP_MESSAGE_LINE.fullmatch(line))
        for m, others in pattern.findall(line)
    ]


def is_group_call(system: str, prompt: str, labels: Labels = ("C", "D")) -> bool:
    """Whether a call is a group seat's: its system prompt is the group one, or its prompt
    shows group history lines."""
    return bool(_GROUP_SYSTEM_RE.search(system)) or bool(read_group_history(prompt, labels))


def mock_tokens(
    text: str, p_c: float, output_format: str = "token", labels: Labels = ("C", "D")
) -> tuple[TokenLogprobs, ...]:
    """Per-token log-probabilities of a mock reply: each character a token, except the answer
    label, one token whose alternatives are the two labels with the mock's probabilities."""
    lp_c, lp_d = math.log(max(p_c, _FLOOR)), math.log(max(1.0 - p_c, _FLOOR))
    span = parse_action(text, output_format, None, labels).span  # type: ignore[arg-type]
    tokens = []
    i = 0
    while i < len(text):
        if span is not None and i == span[0]:
            word = text[span[0] : span[1]]
            c, d = labels
            top = ((c, lp_c), (d, lp_d)) if p_c >= 0.5 else ((d, lp_d), (c, lp_c))
            tokens.append(TokenLogprobs(word, lp_c if word.upper() == c.upper() else lp_d, top))
            i = span[1]
            continue
        tokens.append(TokenLogprobs(text[i], 0.0, ((text[i], 0.0),)))
        i += 1
    return tuple(tokens)


@provider("mock")
class MockProvider(ProviderBase):
    """Offline provider; see the module docstring. Needs no key and no network."""

    def __init__(self, cfg: LLMAgentConfig, api_key: str | None = None) -> None:
        super().__init__(cfg, api_key)
        self.invalid_rate = cfg.mock.invalid_rate
        self.latency_ms = cfg.mock.latency_ms
        self.calls = 0

    constrains_answers = True
    completes_text = True  # prompt_mode completion
    gives_logprobs = True

    async def served_models(self) -> list[str] | None:
        """The mock serves whatever model it is configured with."""
        return [self.model]

    def reply(
        self, *, system: str, prompt: str, seed: int | None = None, labels: Labels = ("C", "D")
    ) -> str:
        """The reply text for this call (pure function of the arguments and settings), in the
        call's action labels."""
        persona = _persona(system)
        group = is_group_call(system, prompt, labels)
        wants_json = bool(_JSON_RE.search(system) or _JSON_RE.search(prompt))
        if self.invalid_rate and _unit("invalid", seed, system, prompt) < self.invalid_rate:
            pick = int(_unit("garbage", seed, prompt) * len(GARBAGE_REPLIES))
            return GARBAGE_REPLIES[pick]
        u = _unit("move", seed, system, prompt)
        if group:
            move = mock_group_move(persona, read_group_history(prompt, labels), u)
        else:
            move = mock_move(persona, read_history(prompt, labels), u)
        if persona == "cooperative" and _promised_c(prompt, group):
            move = "C"  # it keeps its promise
        word = labels[0] if move == "C" else labels[1]
        return f'{{"action": "{word}"}}' if wants_json else word

    def _message(self, request: CompletionRequest) -> Completion:
        """A message call: the persona's talk (see `mock_message`), its draw keyed apart from
        the move calls'."""
        u = _unit("talk", request.seed, request.system, request.prompt)
        persona, labels = _persona(request.system), request.labels
        if is_group_call(request.system, request.prompt, labels):
            history = read_group_history(request.prompt, labels)
            return self._completion(request, mock_group_message(persona, history, u, labels))
        pair_history = read_history(request.prompt, labels)
        return self._completion(request, mock_message(persona, pair_history, u, labels))

    def _completion(
        self, request: CompletionRequest, text: str, tokens: tuple[TokenLogprobs, ...] | None = None
    ) -> Completion:
        """A reply with word-count usage, free, from the configured model."""
        return Completion(
            text=text,
            input_tokens=len(request.system.split()) + len(request.prompt.split()),
            output_tokens=max(1, len(text.split())),
            cost_usd=0.0,
            finish_reason="stop",
            served_model=self.model,
            tokens=tokens,
        )

    async def complete(self, request: CompletionRequest) -> Completion:
        """The reply with word-count usage; sleeps `latency_ms` to simulate a remote model."""
        if self.latency_ms:
            await asyncio.sleep(self.latency_ms / 1000.0)
        self.calls += 1
        labels = request.labels
        if is_resource_call(request.purpose, request.prompt):  # pgg and commons seats
            text = resource_reply(
                _persona(request.system),
                request.purpose,
                request.system,
                request.prompt,
                request.seed,
                self.invalid_rate,
            )
            return self._completion(request, text)
        if request.purpose == "message":
            return self._message(request)
        text = self.reply(
            system=request.system, prompt=request.prompt, seed=request.seed, labels=labels
        )
        forms = [f'{{"action": "{word}"}}' for word in labels]
        if request.output_format == "choice" and text not in forms:
            # A constrained server can only answer the form: garbage becomes a draw of C or D.
            text = forms[0] if _unit("choice", request.seed, request.prompt) < 0.5 else forms[1]
        if request.mode == "completion" and not text.startswith("{"):
            text = " " + text  # a continuation of the text, as after "A: Option"
        tokens = None
        if request.logprobs:
            persona = _persona(request.system)
            if is_group_call(request.system, request.prompt, labels):
                p_c = mock_group_p_cooperate(persona, read_group_history(request.prompt, labels))
            else:
                p_c = mock_p_cooperate(persona, read_history(request.prompt, labels))
            tokens = mock_tokens(text, p_c, request.output_format, labels)
        return self._completion(request, text, tokens)
