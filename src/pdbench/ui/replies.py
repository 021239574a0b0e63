"""An LLM agent's replies, round by round, as the animated replay shows them beside its moves.

rounds.jsonl keeps, for each round and LLM agent, every attempt in `raw_responses`
(`{"agent_a": [{"attempt": 0, "raw": ..., "valid": ..., "error": ...}, ...]}`): the agent
stops at its first valid reply, so a round's attempts are its invalid replies (retried) and,
last, the valid reply parsed into its move, or, after `max_retries + 1` invalid ones, a fallback
move (the round's `parse_failure`). `raw` is null when the run kept no raw replies
(`store_raw_responses: false`).

`slim` keeps what the replay needs of one round's attempts (the raw text cut to `MAX_CHARS`);
`encode` turns a game's rounds into the compact form the page carries: each distinct
(reply, valid, error) once in a table, and per round and agent the table indices of its attempts
in order, so a 10,000-round game of short replies adds a few tens of kB to the page.
Nothing here reads files or draws (see `ui.data.load_game_replies` and `assets/replies.js`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MAX_CHARS = 600  # a longer reply is cut here (with an ellipsis and its full length)
MAX_ERROR_CHARS = 160
SIDES = ("agent_a", "agent_b")

ReplyAttempt = tuple[str | None, bool, str | None]  # (raw reply, valid, error)


def clip(text: str | None, limit: int = MAX_CHARS) -> str | None:
    """`text` cut to `limit` characters, marked with an ellipsis and its full length."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text):,} characters in all]"


def _error(attempt: Mapping[str, Any]) -> str | None:
    """The parse error without the excerpt of the reply it quotes (the reply is shown)."""
    error = attempt.get("error")
    if not error:
        return None
    return clip(str(error).split(" (got ")[0], MAX_ERROR_CHARS)


def slim(raw_responses: Mapping[str, Any] | None) -> dict[str, list[ReplyAttempt]]:
    """One round's `raw_responses`: per agent that replied, its attempts in order as
    (raw cut to MAX_CHARS or None, valid, error)."""
    out: dict[str, list[ReplyAttempt]] = {}
    for side in SIDES:
        attempts = (raw_responses or {}).get(side)
        if not isinstance(attempts, list) or not attempts:
            continue
        ordered = sorted(
            (a for a in attempts if isinstance(a, Mapping)), key=lambda a: int(a.get("attempt", 0))
        )
        out[side] = [
            (
                clip(a["raw"]) if isinstance(a.get("raw"), str) else None,
                bool(a.get("valid")),
                _error(a),
            )
            for a in ordered
        ]
    return out


def encode(
    rounds: Sequence[Mapping[str, list[ReplyAttempt]] | None],
    llm: tuple[bool, bool] = (False, False),
) -> dict[str, Any] | None:
    """The replies of one game's rounds (each `slim` output, or None for a round without a
    record) for the replay page: `{"texts": [[raw, valid 0/1, error], ...], "a": [...],
    "b": [...]}` where a side's list holds, per round, the indices into `texts` of that round's
    attempts (an empty list: nothing recorded), or is null for an agent that never replies (a
    policy) unless `llm` says it is an LLM agent. None when neither agent replies."""
    table: dict[tuple[str | None, bool, str | None], int] = {}
    sides: dict[str, list[list[int]] | None] = {}
    for side, is_llm in zip(SIDES, llm, strict=True):
        per_round: list[list[int]] = []
        seen = is_llm
        for record in rounds:
            attempts = (record or {}).get(side) or []
            seen = seen or bool(attempts)
            per_round.append([table.setdefault(a, len(table)) for a in attempts])
        sides[side[-1]] = per_round if seen else None
    if sides["a"] is None and sides["b"] is None:
        return None
    texts = [[raw, int(valid), error] for raw, valid, error in table]
    return {"texts": texts, **sides}
