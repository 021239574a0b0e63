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
from pdbench.storage.record.group_fields import TO, seat_name


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
        policies have them. Built from pieces orjson wrote (numbers formatted by orjson, in one
        call per game), in `group_fields`' order: the bytes of `round_line` for each round
        (`tests/unit/test_group_record.py`)."""
        n_seats, n_rounds = played.shape
        if n_rounds == 0:
            return b""
        names = [seat_name(i) for i in range(n_seats)]

        def numbers(values: np.ndarray) -> list[list[bytes]]:
            """Each seat's values over the rounds as orjson writes them."""
            flat = orjson.dumps(values.reshape(-1).tolist())[1:-1].split(b",")
            return [flat[i * n_rounds : (i + 1) * n_rounds] for i in range(n_seats)]

        def key_of(seat: int, what: str) -> bytes:
            return b',"' + f"{names[seat]}_{what}".encode() + b'":'

        def literal(text: bytes) -> bytes:  # a fixed part of the line, as a %-format
            return text.replace(b"%", b"%%")

        letters = np.array([b"D", b"C"])
        totals = np.cumsum(payoffs, axis=1, dtype=np.float64)
        columns: list[Any] = [range(n_rounds)]
        parts = [literal(orjson.dumps(key)[:-1] + b',"round_index":') + b"%d"]
        for what, moves in (("action", played), ("intended_action", intended)):
            for seat in range(n_seats):
                parts.append(literal(key_of(seat, what)) + b'"%s"')
                columns.append(letters[moves[seat].astype(np.intp)].tolist())
        for what, values in (("payoff", payoffs), ("cum_payoff", totals)):
            for seat, column in enumerate(numbers(np.asarray(values, dtype=np.float64))):
                parts.append(literal(key_of(seat, what)) + b"%s")
                columns.append(column)
        fixed = b"".join(
            [
                *(key_of(i, "parse_failure") + b"false" for i in range(n_seats)),
                *(key_of(i, "p_cooperate") + b"null" for i in range(n_seats)),
                b',"timestamp_utc":',
                orjson.dumps(timestamp),
                b"}\n",
            ]
        )
        line = b"".join(parts) + literal(fixed)
        return b"".join([line % row for row in zip(*columns, strict=True)])
