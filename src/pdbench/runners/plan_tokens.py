"""How many characters of prompt an LLM agent sends in one game: what the plan's token estimate
(`pdbench.runners.plan.estimate_per_model`) counts, at `CHARS_PER_TOKEN` characters a token.

Every call sends the system prompt and a prompt: the round prompt for a move, the message
prompt for a message (games with talk, one call per turn of each exchange). A prompt grows with
what it shows: k history lines (k = min(rounds played, history_window); all when null) and, with
talk, v messages (`pdbench.runners.engine.chat`: the last `communication.history` messages of
the earlier exchanges and those of the current exchange written before the call), one line
each. Its length is taken as

    base + per_line * k + (overhead + per_message * v if v > 0 else 0)

with the sizes measured on the agent's own templates (rendered with no history line, one and K
of them, K up to `SLOPE_LINES`; with no message and one), and summed over the game's calls in
closed form. A message's length is that of the text its writer says: a policy's by its message
rule, the mock's by its persona, a person's the mean of the messages typed, and any other LLM's
`LLM_MESSAGE_CHARS` characters (at most max_chars); every message line shown counts as the mean
line of an exchange (exact when the lines are alike or whole exchanges are shown). Parse retries
are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pdbench.agents.llm import render_round, render_system
from pdbench.agents.llm_talk import DEFAULT_MESSAGE_TEMPLATE, message_values, messages_block
from pdbench.core.config import HumanAgentConfig, LLMAgentConfig, PolicyAgentConfig
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.talk import CommunicationConfig, clip_text, rule_message, speaking_groups
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action, SeenMessage

if TYPE_CHECKING:
    from pdbench.agents.factory import AgentSpec

CHARS_PER_TOKEN = 4
LLM_MESSAGE_CHARS = 280  # a real model's message (it is asked for one sentence), when not cut
SLOPE_LINES = 200  # the most history lines rendered to measure a history line's length


def sum_min(n: int, slope: int, cap: int | None) -> int:
    """sum over r = 0 .. n-1 of min(cap, slope * r) (no cap when `cap` is None)."""
    if n <= 0 or slope <= 0:
        return 0
    below = n if cap is None else min(n, -(-cap // slope))  # rounds before the cap is reached
    return slope * below * (below - 1) // 2 + (n - below) * (cap or 0)


@dataclass(frozen=True, slots=True)
class PromptSizes:
    """A prompt's length in characters (see the module docstring): `first` in round 1 (no
    history), `base` with one history line, then `per_line` for each further line; with
    messages `overhead` plus `per_message` each."""

    first: int
    base: int
    per_line: float
    overhead: int = 0
    per_message: float = 0.0

    def history_chars(self, n_rounds: int, window: int | None) -> float:
        """The sum over rounds 0 .. n_rounds-1 of the prompt without messages."""
        if n_rounds <= 0:
            return 0.0
        lines = sum_min(n_rounds, 1, window)  # history lines shown, summed over the rounds
        return self.first + (n_rounds - 1) * (self.base - self.per_line) + self.per_line * lines

    def talk_chars(self, with_messages: int, messages: int) -> float:
        """What `messages` message lines, shown over `with_messages` calls, add."""
        return with_messages * self.overhead + messages * self.per_message


def spoken_text(spec: AgentSpec, system: str | None, max_chars: int) -> tuple[str, bool] | None:
    """(a typical message of the agent, whether it writes in every turn or only the first);
    None when it is silent. `system`: an LLM agent's rendered system prompt."""
    config = spec.config
    if isinstance(config, LLMAgentConfig):
        if config.provider == "mock":
            from pdbench.agents.providers.mock import message_text

            return clip_text(message_text(system or ""), max_chars), True
        return "x" * min(max_chars, LLM_MESSAGE_CHARS), True
    if isinstance(config, PolicyAgentConfig):
        said = rule_message(config.talk, Action.C, config.talk_text)
        text = clip_text(said[0], max_chars) if said is not None else ""
        return (text, True) if text else None
    if isinstance(config, HumanAgentConfig):
        typed = [clip_text(m, max_chars) for m in config.messages if m.strip()]
        return ("x" * round(sum(map(len, typed)) / len(typed)), False) if typed else None
    return None  # an Axelrod strategy says nothing


def calls_in_game(n_rounds: int, channel: CommunicationConfig | None) -> int:
    """Provider calls an LLM agent makes in a game without retries: one a move, and one a
    message per turn of each exchange when the game has a message channel."""
    if channel is None or not channel.enabled:
        return n_rounds
    exchanges = n_rounds if channel.mode == "every_round" else min(1, n_rounds)
    return n_rounds + exchanges * channel.turns


def game_prompt_chars(
    specs: tuple[AgentSpec, AgentSpec],
    seat: int,
    matrix: PayoffMatrix,
    n_rounds: int,
    channel: CommunicationConfig | None,
) -> int:
    """Characters of system and prompt the LLM agent at `seat` sends in a game of `n_rounds`
    rounds (without parse retries); see the module docstring."""
    spec = specs[seat]
    agent = spec.config
    assert isinstance(agent, LLMAgentConfig) and spec.templates is not None
    systems = [_system(s, matrix) for s in specs]
    n = n_rounds
    window = agent.history_window
    move = _sizes(spec, matrix, n, spec.templates.round, None)
    chars = calls_in_game(n, channel) * len(systems[seat]) + move.history_chars(n, window)
    if channel is None or not channel.enabled or n <= 0:
        return round(chars)
    turns = channel.turns
    message = _sizes(spec, matrix, n, spec.templates.message or DEFAULT_MESSAGE_TEMPLATE, channel)
    said = [
        spoken_text(s, system, channel.max_chars) for s, system in zip(specs, systems, strict=True)
    ]
    every = channel.mode == "every_round"
    chars += turns * (message.history_chars(n, window) if every else message.first)
    # Messages per exchange, and per call of this agent those written before it in the exchange
    # (by parity of the exchange: `alternate` swaps who writes first).
    per_exchange, counts, before = _exchange_shape(channel, said, seat)
    line = _message_line(said, counts, seat, n)
    move = replace(move, **_talk_sizes(spec, matrix, n, spec.templates.round, None, said, line))
    template = spec.templates.message or DEFAULT_MESSAGE_TEMPLATE
    message = replace(message, **_talk_sizes(spec, matrix, n, template, channel, said, line))
    keep = channel.history
    if every:
        earlier = sum_min(n, per_exchange, keep)  # earlier exchanges' messages shown, summed
        with_messages = n if per_exchange else 0
        chars += move.talk_chars(with_messages, earlier + n * per_exchange)
        evens, odds = (n + 1) // 2, n // 2
        shown = turns * earlier + evens * sum(before[0]) + odds * sum(before[1])
        empty = [sum(1 for b in before[p] if b == 0) for p in (0, 1)]
        silent = evens * empty[0] + odds * empty[1] if keep == 0 or not per_exchange else empty[0]
        chars += message.talk_chars(n * turns - silent, shown)
    else:  # pregame: the exchange before round 1 stays in every later move prompt
        later = min(keep, per_exchange)
        with_messages = int(per_exchange > 0) + (n - 1) * int(later > 0)
        chars += move.talk_chars(with_messages, per_exchange + (n - 1) * later)
        empty = sum(1 for b in before[0] if b == 0)
        chars += message.talk_chars(turns - empty, sum(before[0]))
    return round(chars)


def _system(spec: AgentSpec, matrix: PayoffMatrix) -> str | None:
    """An LLM agent's system prompt as it sends it (None for another kind of agent)."""
    agent = spec.config
    if not isinstance(agent, LLMAgentConfig) or spec.templates is None:
        return None
    shown = matrix.scaled(agent.payoff_scale) if agent.payoff_scale != 1.0 else matrix
    return render_system(spec.templates, shown, agent.output_format, agent.labels())


def _render(
    spec: AgentSpec,
    matrix: PayoffMatrix,
    n: int,
    template: str,
    channel: CommunicationConfig | None,
    lines: int,
    messages: tuple[SeenMessage, ...] = (),
) -> int:
    """The length of `template` rendered for the agent with `lines` rounds played (C, D each),
    showing `messages`; a message prompt when `channel` is given."""
    agent = spec.config
    assert isinstance(agent, LLMAgentConfig)
    transcript = Transcript(matrix)
    for _ in range(lines):
        transcript.record(Action.C, Action.D)
    obs = transcript.observation(
        0,
        history_window=agent.history_window,
        include_totals=agent.include_totals,
        horizon_type="fixed",
        total_rounds=n,
    )
    obs = replace(obs, messages=messages)
    labels = agent.labels()
    extra = message_values(obs, labels, channel.max_chars) if channel is not None else None
    prompt = render_round(
        template,
        obs,
        agent.history_window,
        agent.output_format,
        labels,
        agent.payoff_scale,
        spec.templates,
        False,
        extra,
    )
    return len(prompt)


def _sizes(
    spec: AgentSpec,
    matrix: PayoffMatrix,
    n: int,
    template: str,
    channel: CommunicationConfig | None,
) -> PromptSizes:
    """A template's sizes without messages: rendered with no, one and K history lines."""
    agent = spec.config
    assert isinstance(agent, LLMAgentConfig)
    window = agent.history_window
    first = _render(spec, matrix, n, template, channel, 0)
    base = _render(spec, matrix, n, template, channel, 1) if n > 1 else first
    most = min(n - 1, SLOPE_LINES, window if window is not None else n)
    per_line = 0.0
    if most >= 2:
        per_line = (_render(spec, matrix, n, template, channel, most) - base) / (most - 1)
    return PromptSizes(first, base, per_line)


def _message_line(
    said: list[tuple[str, bool] | None], counts: list[int], seat: int, n: int
) -> float:
    """The mean length of a message line of an exchange in this agent's prompt (the newline
    before it included), its writers weighted by their messages per exchange."""
    total = 0
    for writer, spoken in enumerate(said):
        if spoken is not None and counts[writer]:
            one = SeenMessage(n // 2, 0, writer == seat, spoken[0])
            line = len(messages_block((one, one))) - len(messages_block((one,)))
            total += line * counts[writer]
    return total / sum(counts) if sum(counts) else 0.0


def _talk_sizes(
    spec: AgentSpec,
    matrix: PayoffMatrix,
    n: int,
    template: str,
    channel: CommunicationConfig | None,
    said: list[tuple[str, bool] | None],
    per_message: float,
) -> dict[str, float]:
    """`overhead` and `per_message` of a template: rendered with one message and without."""
    spoken = next((s for s in said if s is not None), None)
    if spoken is None:
        return {"overhead": 0, "per_message": 0.0}
    rounds = 1 if n > 1 else 0  # as `PromptSizes.base`
    one = SeenMessage(n // 2, 0, False, spoken[0])
    with_one = _render(spec, matrix, n, template, channel, rounds, (one,))
    without = _render(spec, matrix, n, template, channel, rounds)
    line = len(messages_block((one, one))) - len(messages_block((one,)))
    return {"overhead": with_one - without - line, "per_message": per_message}


def _exchange_shape(
    channel: CommunicationConfig, said: list[tuple[str, bool] | None], seat: int
) -> tuple[int, list[int], tuple[list[int], list[int]]]:
    """(messages per exchange, per writer its messages per exchange, and per parity of the
    exchange, for each call of the agent at `seat`, the messages written before it in it)."""
    simultaneous = channel.order == "simultaneous"

    def writes(writer: int, turn: int) -> int:
        spoken = said[writer]
        return int(spoken is not None and (spoken[1] or turn == 0))

    counts = [sum(writes(w, t) for t in range(channel.turns)) for w in (0, 1)]
    before: tuple[list[int], list[int]] = ([], [])
    for parity in (0, 1):
        written = 0
        for g, group in enumerate(speaking_groups(channel.order, parity, channel.turns)):
            turn = g if simultaneous else g // 2
            if seat in group:
                before[parity].append(written)
            written += sum(writes(w, turn) for w in group)
    return sum(counts), counts, before
