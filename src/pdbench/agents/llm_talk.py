"""An LLM agent's messages: the message prompt, the structured reply and how it is read.

The message prompt is the agent's round prompt for the coming move (so it has the game, the
history and the totals) rendered from the message template, `prompts.message` (default:
`DEFAULT_MESSAGE_TEMPLATE`), which also gets `{messages}` (the messages the agent can see,
oldest first), `{max_chars}` and `{message_instruction}`. The reply asked for is one JSON
object, `{"message": "...", "intention": "C" | "D" | "none"}`: the message the other player
reads, and the move the agent means to play next, which the other player never sees. A reply
that is not such an object is read as the message itself (its intention then read from the text
by the rule reader, `pdbench.core.talk.read_intent`); an empty reply is retried, and after
`max_retries` the agent says nothing that turn (a counted fallback). Every call goes through
the run's broker (cache, retries, budgets, llm_calls.jsonl with purpose `message`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pdbench.agents.providers.base import CallTag, CompletionRequest
from pdbench.core.rng import Purpose, counter_bits
from pdbench.core.talk import clip_text, quote_message
from pdbench.core.types import Action, Attempt, Observation, SeenMessage, Utterance

if TYPE_CHECKING:
    from pdbench.agents.llm import LLMAgent, ProviderAgent

DEFAULT_MESSAGE_TEMPLATE = """{horizon_text}
{history_section}
{totals}

{messages}

Before the next move you may send the other player one message (at most {max_chars} characters).
{message_instruction}"""
MESSAGE_FIELDS = ("messages", "max_chars", "message_instruction")
PURPOSE_MESSAGE = "message"


def message_instruction(labels: tuple[str, str]) -> str:
    """The sentence that asks for the structured reply (in the agent's labels)."""
    c, d = labels
    return (
        'Answer with only a JSON object: {"message": "<one sentence to the other player>", '
        '"intention": '
        f'"{c}", "{d}" or "none"}}. The intention is the move you mean to play next; the other '
        "player does not see it."
    )


def messages_block(messages: Sequence[SeenMessage]) -> str:
    """The messages an agent can see, as lines of its prompt (rounds numbered from 1): one line
    each, the text quoted and escaped (`quote_message`), so a message never reads as the game's
    history or as instructions."""
    if not messages:
        return "No messages yet."
    lines = [
        f"- before round {m.round_index + 1}, {'you' if m.mine else 'the other player'}: "
        f"{quote_message(m.text)}"
        for m in messages
    ]
    return "Messages (oldest first):\n" + "\n".join(lines)


def message_values(obs: Observation, labels: tuple[str, str], max_chars: int) -> dict[str, object]:
    """The values the message template gets beside the round prompt's (`MESSAGE_FIELDS`)."""
    return {
        "messages": messages_block(obs.messages),
        "max_chars": max_chars,
        "message_instruction": message_instruction(labels),
    }


def read_reply(text: str, labels: tuple[str, str]) -> tuple[str, Action | None, bool]:
    """(message, declared intention, whether one was declared) of a reply: the last JSON object
    with a "message" string, else the whole reply as the message with no declaration."""
    decoder = json.JSONDecoder()
    found: tuple[str, Action | None, bool] | None = None
    start = text.find("{")
    while start != -1:
        try:
            payload, end = decoder.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            start = text.find("{", start + 1)
            continue
        if isinstance(payload, dict) and isinstance(payload.get("message"), str):
            intention = str(payload.get("intention") or "none").strip().upper()
            move = {labels[0].upper(): Action.C, labels[1].upper(): Action.D}.get(intention)
            found = (payload["message"], move, move is not None)
        start = text.find("{", end)
    if found is not None:
        return found
    return text, None, False


def call_seed(agent: ProviderAgent, round_index: int, turn: int, attempt: int) -> int:
    """The seed sent with one message call (keyed apart from the move calls)."""
    return counter_bits(agent.seed, round_index, Purpose.MESSAGE, turn * 64 + attempt) >> 1


async def speak(agent: LLMAgent, obs: Observation, turn: int, max_chars: int) -> Utterance:
    """Ask the agent's provider for its message of this turn; see the module docstring."""
    template = agent.templates.message or DEFAULT_MESSAGE_TEMPLATE
    prompt = agent.round_prompt(
        obs, template=template, extra=message_values(obs, agent.labels, max_chars)
    )
    return await ask_message(agent, prompt, obs.round_index, turn, max_chars)


async def ask_message(
    agent: ProviderAgent,
    prompt: str,
    round_index: int,
    turn: int,
    max_chars: int,
    seed_for: Callable[[int], int] | None = None,
) -> Utterance:
    """Send the message prompt `prompt` to the agent's provider and read the reply (retried
    while empty; after `max_retries` a fallback of no message). `seed_for(attempt)` gives each
    call's seed (default: `call_seed` of the round and turn)."""
    from pdbench.agents.llm import prompt_sha256

    cfg = agent.config
    attempts: list[Attempt] = []
    for index in range(cfg.max_retries + 1):
        request = CompletionRequest(
            system=agent.system_prompt,
            prompt=prompt,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            seed=seed_for(index) if seed_for else call_seed(agent, round_index, turn, index),
            tag=CallTag(round_index, index),
            labels=agent.labels,
            mode=cfg.prompt_mode,
            purpose=PURPOSE_MESSAGE,
            turn=turn,
            max_chars=max_chars,
            # a server that constrains answers (output_format choice) constrains the message
            # reply to its JSON form too
            output_format="choice" if cfg.output_format == "choice" else "token",
        )
        completion = await agent.provider.complete(request)
        words, intent, declared = read_reply(completion.text, agent.labels)
        words = clip_text(words, max_chars)
        ok = bool(words)
        attempts.append(
            Attempt(
                index,
                prompt_sha256(agent.system_prompt, prompt),
                completion.text,
                ok,
                None if ok else "empty message",
                truncated=completion.truncated,
            )
        )
        if ok:
            source = "declared" if declared else "none"
            return Utterance(words, intent, source, attempts, prompt)
    return Utterance("", None, "none", attempts, prompt, fallback=True)
