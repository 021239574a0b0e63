"""An LLM as the reader of messages: the judge.

`judge_message(client, cfg, text)` asks any configured LLM agent (its provider and model, through
whatever client is given: a run's broker-bound client caches, logs and budgets the call like
every other) to read one message into one of the five readings of
`pdbench.core.talk_reader.READINGS`, with a fixed prompt (`JUDGE_SYSTEM`, `judge_prompt`). The
reply is parsed strictly (`parse_judgement`): after trimming white space, quotes and a final
full stop it must be exactly one of "C", "D", "conditional C" (or "conditional_C"), "none" or
"unread", in any case; anything else is `unread`. A judge answers no `standing`.
"""

from __future__ import annotations

from pdbench.agents.providers.base import CallTag, CompletionRequest, Provider
from pdbench.core.config import LLMAgentConfig
from pdbench.core.talk import quote_message

JUDGE_NAME = "LLM judge"
PURPOSE_JUDGE = "judge"
JUDGE_SYSTEM = (
    "You read messages that players of a repeated Prisoner's Dilemma send each other before a "
    "move. The moves are C (cooperate) and D (defect). Classify what the message commits its "
    "writer to, with exactly one of these five answers and nothing else:\n"
    "C - the writer says it will cooperate\n"
    "D - the writer says it will defect\n"
    "conditional C - the writer will cooperate only under a condition on the other player "
    '("I\'ll cooperate if you do", "if you defect I\'ll defect")\n'
    "none - the message states no move of the writer (a greeting, a question, a remark)\n"
    "unread - you cannot tell (a contradiction, a language you do not read, nonsense)"
)
_ANSWERS = {
    "c": "C",
    "d": "D",
    "conditional c": "conditional_C",
    "conditional_c": "conditional_C",
    "none": "none",
    "unread": "unread",
}


def judge_prompt(text: str, labels: tuple[str, str] = ("C", "D")) -> str:
    """The user prompt asking for the reading of `text` (quoted, on one line; the writer's move
    labels named when they are not C/D)."""
    shown = ""
    if labels != ("C", "D"):
        shown = (
            f" The writer's game called the moves {labels[0]} (cooperate) and {labels[1]} (defect)."
        )
    return f"Message: {quote_message(text)}{shown}\nAnswer with one of: C, D, conditional C, none, unread."


def parse_judgement(reply: str) -> str:
    """The reading a judge's reply gives (one of READINGS); a reply that is not exactly one of
    the five answers is "unread"."""
    answer = reply.strip().strip("\"'`").strip().rstrip(".").strip().lower()
    return _ANSWERS.get(" ".join(answer.split()), "unread")


def judge_request(
    cfg: LLMAgentConfig, text: str, labels: tuple[str, str] = ("C", "D"), index: int = 0
) -> CompletionRequest:
    """The call that asks `cfg`'s model to read `text` (free text answer, a judge purpose so
    caches and logs keep it apart from moves and messages; `index` numbers the message)."""
    return CompletionRequest(
        system=JUDGE_SYSTEM,
        prompt=judge_prompt(text, labels),
        temperature=cfg.temperature,
        max_tokens=min(cfg.max_tokens, 16),
        seed=index,
        tag=CallTag(index, 0),
        mode="chat" if cfg.prompt_mode == "completion" else cfg.prompt_mode,
        purpose=PURPOSE_JUDGE,
    )


async def judge_message(
    client: Provider,
    cfg: LLMAgentConfig,
    text: str,
    labels: tuple[str, str] = ("C", "D"),
    index: int = 0,
) -> str:
    """The judge's reading of `text` (one of READINGS; see the module docstring)."""
    completion = await client.complete(judge_request(cfg, text, labels, index))
    return parse_judgement(completion.text)
