"""Encoding group games' rounds as rounds.jsonl lines (the record of `group_fields`).

`GroupRoundsEncoder.round_line` encodes one round of a game played round by round (with the LLM
fields and the messages where they apply); `game_bytes` a whole game of the vectorized engine.
Both build each record in `group_fields`' order, so two seats give exactly the pairwise
`RoundsEncoder`'s bytes (`tests/unit/test_group_record.py` checks it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson

from pdbench.core.types import Decision, Message, Utterance
from pdbench.storage.record.fields import MESSAGE_FIELDS, MESSAGES, PROMPTS, RAW_RESPONSES
from pdbench.storage.record.group_fields import TO, round_values, seat_name

_LETTERS = np.array(["D", "C"])


class GroupRoundsEncoder:
    """Encodes group rounds records; `store_prompts`/`store_raw` shape the LLM fields."""

    def __init__(self, *, store_prompts: bool = True, store_raw: bool = True) -> None:
        self.store_prompts = store_prompts
        self.store_raw = store_raw

    def round_line(
        self,
        key: dict[str, Any],
        values: dict[str, Any],
        decisions: Sequence[Decision] | None = None,
        said: Sequence[tuple[Message, Utterance]] = (),
    ) -> bytes:
        """One record as a line (with its newline); `said`: the messages written before the
        round's moves."""
        record: dict[str, Any] = {**key, **values}
        if decisions is not None:
            self._add_llm_fields(record, decisions)
        if said:
            record[MESSAGES] = [self.message_record(m, u) for m, u in said]
        return orjson.dumps(record) + b"\n"

    def message_record(self, message: Message, utterance: Utterance) -> dict[str, Any]:
        """One entry of a round's messages: writer (a seat name), turn, text, intention and its
        source; `to` (a seat name) for a directed message; for an LLM agent also its attempts,
        `fallback`, and its message prompt when store_prompts (as pairwise records have them)."""
        entry: dict[str, Any] = dict(
            zip(
                MESSAGE_FIELDS,
                (
                    seat_name(message.side),
                    message.turn,
                    message.text,
                    None if message.intent is None else message.intent.value,
                    message.source,
                ),
                strict=True,
            )
        )
        to = getattr(message, "to", None)
        if to is not None:
            entry[TO] = seat_name(to)
        if utterance.attempts:
            attempts = [a.as_record() for a in utterance.attempts]
            if not self.store_raw:
                for attempt in attempts:
                    attempt["raw"] = None
            entry["attempts"] = attempts
            entry["fallback"] = utterance.fallback
            if self.store_prompts:
                entry["prompt"] = utterance.prompt
        return entry

    def _add_llm_fields(self, record: dict[str, Any], decisions: Sequence[Decision]) -> None:
        prompts: dict[str, Any] = {}
        replies: dict[str, Any] = {}
        for seat, dec in enumerate(decisions):
            if not dec.attempts:
                continue
            name = seat_name(seat)
            if self.store_prompts:
                prompts[name] = {"system": dec.system_prompt, "round": dec.round_prompt}
            attempts = [a.as_record() for a in dec.attempts]
            if not self.store_raw:
                for attempt in attempts:
                    attempt["raw"] = None
                    if attempt["error"]:
                        attempt["error"] = attempt["error"].split(" (got ")[0]
            replies[name] = attempts
        if prompts:
            record[PROMPTS] = prompts
        if replies:
            record[RAW_RESPONSES] = replies

    def game_bytes(
        self,
        key: dict[str, Any],
        played: np.ndarray,
        intended: np.ndarray,
        payoffs: np.ndarray,
        timestamp: str,
    ) -> bytes:
        """Every line of one game of policies: `played`/`intended` (N, T) booleans (True = C),
        `payoffs` (N, T); parse failures False and P(C) null, as the pairwise records of
        policies have them."""
        n_seats, n_rounds = played.shape
        if n_rounds == 0:
            return b""
        moves = _LETTERS[played.astype(np.int64)].T.tolist()
        meant = _LETTERS[intended.astype(np.int64)].T.tolist()
        pays = payoffs.T.tolist()
        totals = np.cumsum(payoffs, axis=1).T.tolist()
        no = [False] * n_seats
        unknown = [None] * n_seats
        head = orjson.dumps(key)[:-1]  # the key's fields, without the closing brace
        lines = []
        for t in range(n_rounds):
            values = round_values(
                t,
                {
                    "action": moves[t],
                    "intended_action": meant[t],
                    "payoff": pays[t],
                    "cum_payoff": totals[t],
                    "parse_failure": no,
                    "p_cooperate": unknown,
                },
                timestamp,
            )
            lines.append(head + b"," + orjson.dumps(values)[1:] + b"\n")
        return b"".join(lines)
