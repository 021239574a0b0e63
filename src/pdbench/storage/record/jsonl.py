"""The one encoder of rounds.jsonl records, for both engine speeds.

`RoundsEncoder.round_line` turns one round of the round-by-round engine into a line (orjson of
`GameKey` + `RoundValues`, plus prompts and replies of LLM agents). `write_game` writes a whole
game of the vectorized engine, byte for byte what `round_line` would write for its rounds
(`timestamp_utc` aside: one per game there), much faster: a game's lines share everything but
the round index, the moves, the payoffs and the totals, so runs of rows whose numbers have the
same digit counts are laid out as one (rows x width) byte matrix from a template, the variable
fields are written column-wise with NumPy, and the matrix is written as is. That needs payoffs
that orjson spells as `N.0` (non-negative integers, totals below 10**15): `fast_path` says when;
otherwise `write_game` falls back to `round_line` per round. `OrderedRoundsWriter` appends
finished games to the file in plan order.

Both paths take the field names and their order from `pdbench.storage.schema`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

import numpy as np
import orjson

from pdbench.core.horizon import Horizon
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.types import Decision, Message, Utterance
from pdbench.storage.files import JsonlAppender, write_bytes_atomic
from pdbench.storage.record.fields import (
    MESSAGE_FIELDS,
    MESSAGES,
    SCHEMA_VERSION,
    GameKey,
    RoundValues,
    check_version,
)
from pdbench.storage.schema import ROUNDS_FILE

SIDES = ("agent_a", "agent_b")  # a message's writer, as the record names the seats

if TYPE_CHECKING:
    from pdbench.storage.record.writer import ColumnarRoundsWriter

_POW10 = np.array([10**k for k in range(1, 19)], dtype=np.int64)
_CHUNK_BYTES = 1 << 26
_BOOL_WORD = {True: b"true", False: b"false"}


def game_key(
    run_id: str,
    condition: str,
    replicate: int,
    seed: int,
    names: tuple[str, str],
    horizon: Horizon,
) -> GameKey:
    """The record fields that one game's rounds share."""
    return GameKey(
        schema_version=SCHEMA_VERSION,
        run_id=run_id,
        condition=condition,
        replicate=int(replicate),
        seed=int(seed),
        agent_a_name=names[0],
        agent_b_name=names[1],
        horizon_type=horizon.type,
        fixed_n=getattr(horizon, "n_rounds", None),
        stop_prob=getattr(horizon, "stop_prob", None),
    )


def _n_digits(values: np.ndarray) -> np.ndarray:
    """Decimal digits of non-negative ints (0 has one digit)."""
    return np.searchsorted(_POW10, values, side="right") + 1


def _put_digits(block: np.ndarray, values: np.ndarray) -> None:
    """Write `values` (all with exactly block.shape[1] digits) into the uint8 `block`."""
    rest = values.astype(np.int64, copy=True)
    for col in range(block.shape[1] - 1, -1, -1):
        block[:, col] = 48 + rest % 10
        rest //= 10


class RoundsEncoder:
    """Encodes rounds.jsonl records; `store_prompts`/`store_raw` shape the LLM fields."""

    def __init__(
        self, matrix: PayoffMatrix, *, store_prompts: bool = True, store_raw: bool = True
    ) -> None:
        self.matrix = matrix
        self.store_prompts = store_prompts
        self.store_raw = store_raw
        cells = (matrix.cc, matrix.cd, matrix.dc, matrix.dd)  # index: 2 * a_defects + b_defects
        self.fast_path = all(v >= 0 and float(v).is_integer() and v < 1e6 for c in cells for v in c)
        self._pay_text = [[orjson.dumps(float(cell[side])) for cell in cells] for side in (0, 1)]
        self._buf = np.empty(0, dtype=np.uint8)

    # ----------------------------------------------------------------------------------------
    # Round by round

    def round_line(
        self,
        key: GameKey,
        values: RoundValues,
        decisions: tuple[Decision, Decision] | None = None,
        said: Sequence[tuple[Message, Utterance]] = (),
    ) -> bytes:
        """One record as a line (with its newline); `said`: the messages written before the
        round's moves (games with a message channel)."""
        record: dict[str, Any] = {**key._asdict(), **values._asdict()}
        if decisions is not None:
            self._add_llm_fields(record, decisions)
        if said:
            record[MESSAGES] = [self.message_record(m, u) for m, u in said]
        return orjson.dumps(record) + b"\n"

    def message_record(self, message: Message, utterance: Utterance) -> dict[str, Any]:
        """One entry of a round's `messages`: who wrote it, its turn, text and intention (and
        where that came from); for an LLM agent also its attempts (raw replies when store_raw)
        and its message prompt (when store_prompts), and `fallback` when no reply was usable."""
        entry: dict[str, Any] = dict(
            zip(
                MESSAGE_FIELDS,
                (
                    SIDES[message.side],
                    message.turn,
                    message.text,
                    None if message.intent is None else message.intent.value,
                    message.source,
                ),
                strict=True,
            )
        )
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

    def _add_llm_fields(self, record: dict[str, Any], decisions: tuple[Decision, Decision]) -> None:
        """Prompts (texts when store_prompts) and every attempt of LLM agents (raw replies when
        store_raw, else their hashes and validity only)."""
        prompts: dict[str, Any] = {}
        replies: dict[str, Any] = {}
        for side, dec in zip(("agent_a", "agent_b"), decisions, strict=True):
            if not dec.attempts:
                continue
            if self.store_prompts:
                prompts[side] = {"system": dec.system_prompt, "round": dec.round_prompt}
            attempts = [a.as_record() for a in dec.attempts]
            if not self.store_raw:  # nor the excerpt of the reply that parse errors quote
                for attempt in attempts:
                    attempt["raw"] = None
                    if attempt["error"]:
                        attempt["error"] = attempt["error"].split(" (got ")[0]
            replies[side] = attempts
        if prompts:
            record["prompts"] = prompts
        if replies:
            record["raw_responses"] = replies

    # ----------------------------------------------------------------------------------------
    # Whole games from the vectorized engine

    def game_bytes(self, key: GameKey, arrays: dict[str, np.ndarray], timestamp: str) -> bytes:
        """All lines of one batched game (see `write_game` for `arrays`)."""
        import io

        buffer = io.BytesIO()
        self.write_game(buffer, key, arrays, timestamp)
        return buffer.getvalue()

    def write_game(
        self, fh: BinaryIO, key: GameKey, arrays: dict[str, np.ndarray], timestamp: str
    ) -> int:
        """Write one game's lines to `fh`; returns the bytes written.

        `arrays` holds the game's `played_a/b`, `intended_a/b` (True = C) and `payoffs_a/b`.
        """
        n = int(arrays["played_a"].shape[0])
        if n == 0:
            return 0
        cum_a = np.cumsum(arrays["payoffs_a"])
        cum_b = np.cumsum(arrays["payoffs_b"])
        if not self.fast_path or max(cum_a[-1], cum_b[-1]) >= 1e15:
            return self._write_slow(fh, key, arrays, cum_a, cum_b, timestamp)
        columns = self._columns(arrays, cum_a.astype(np.int64), cum_b.astype(np.int64), timestamp)
        return self._write_fast(fh, key, columns, n)

    def _write_slow(
        self,
        fh: BinaryIO,
        key: GameKey,
        arrays: dict[str, np.ndarray],
        cum_a: np.ndarray,
        cum_b: np.ndarray,
        timestamp: str,
    ) -> int:
        letters = np.array(["D", "C"])
        moves = {
            k: letters[arrays[k].astype(np.int64)].tolist()
            for k in ("played_a", "played_b", "intended_a", "intended_b")
        }
        pay_a, pay_b = arrays["payoffs_a"].tolist(), arrays["payoffs_b"].tolist()
        totals_a, totals_b = cum_a.tolist(), cum_b.tolist()
        lines = [
            self.round_line(
                key,
                RoundValues(
                    t,
                    moves["played_a"][t],
                    moves["played_b"][t],
                    moves["intended_a"][t],
                    moves["intended_b"][t],
                    pay_a[t],
                    pay_b[t],
                    totals_a[t],
                    totals_b[t],
                    False,
                    False,
                    None,
                    None,
                    timestamp,
                ),
            )
            for t in range(len(pay_a))
        ]
        blob = b"".join(lines)
        fh.write(blob)
        return len(blob)

    def _columns(
        self, arrays: dict[str, np.ndarray], cum_a: np.ndarray, cum_b: np.ndarray, timestamp: str
    ) -> dict[str, tuple[str, Any]]:
        """How each RoundValues field is filled: ('digits', ints), ('move', bools),
        ('pay', side), ('total', ints) or ('lit', bytes)."""
        n = int(cum_a.shape[0])
        return {
            "round_index": ("digits", np.arange(n, dtype=np.int64)),
            "agent_a_action": ("move", arrays["played_a"]),
            "agent_b_action": ("move", arrays["played_b"]),
            "agent_a_intended_action": ("move", arrays["intended_a"]),
            "agent_b_intended_action": ("move", arrays["intended_b"]),
            "agent_a_payoff": ("pay", 0),
            "agent_b_payoff": ("pay", 1),
            "agent_a_cum_payoff": ("total", cum_a),
            "agent_b_cum_payoff": ("total", cum_b),
            "agent_a_parse_failure": ("lit", _BOOL_WORD[False]),
            "agent_b_parse_failure": ("lit", _BOOL_WORD[False]),
            "agent_a_p_cooperate": ("lit", b"null"),
            "agent_b_p_cooperate": ("lit", b"null"),
            "timestamp_utc": ("lit", orjson.dumps(timestamp)),
        }

    def _write_fast(
        self, fh: BinaryIO, key: GameKey, columns: dict[str, tuple[str, Any]], n: int
    ) -> int:
        """The exact-width path: rows whose numbers have the same digit counts share a layout."""
        missing = set(RoundValues._fields) ^ set(columns)
        if missing:
            raise ValueError(f"encoder columns do not match the schema: {sorted(missing)}")
        prefix = orjson.dumps(key._asdict())[:-1] + b","
        pair = (~columns["agent_a_action"][1]).astype(np.int64) * 2 + (
            ~columns["agent_b_action"][1]
        ).astype(np.int64)
        numbers = {k: v for k, (kind, v) in columns.items() if kind in ("digits", "total")}
        digits = {k: _n_digits(v) for k, v in numbers.items()}
        change = np.zeros(n, dtype=bool)
        change[0] = True
        for d in digits.values():
            change[1:] |= d[1:] != d[:-1]
        starts = np.flatnonzero(change).tolist() + [n]
        pay_width = [max(len(t) for t in self._pay_text[side]) for side in (0, 1)]
        pay_table = [np.zeros((4, w), dtype=np.uint8) for w in pay_width]
        for side in (0, 1):
            for k, text in enumerate(self._pay_text[side]):
                pay_table[side][k, pay_width[side] - len(text) :] = np.frombuffer(text, np.uint8)
        padded = any(len(set(map(len, self._pay_text[side]))) > 1 for side in (0, 1))
        written = 0
        for lo, hi in zip(starts[:-1], starts[1:], strict=True):
            template = bytearray(prefix)
            spans: list[tuple[str, str, int, int]] = []
            for i, name in enumerate(RoundValues._fields):
                template += (b"," if i else b"") + b'"' + name.encode() + b'":'
                kind, value = columns[name]
                if kind == "lit":
                    template += value
                    continue
                if kind == "move":
                    template += b'"'
                    width = 1
                elif kind == "pay":
                    width = pay_width[value]
                else:
                    width = int(digits[name][lo])
                spans.append((name, kind, len(template), len(template) + width))
                template += b"\0" * width
                template += {"move": b'"', "total": b".0"}.get(kind, b"")
            template += b"}\n"
            row = np.frombuffer(bytes(template), dtype=np.uint8)
            step = max(1, min(hi - lo, _CHUNK_BYTES // row.size))
            for start in range(lo, hi, step):
                stop = min(hi, start + step)
                grid = self._grid(stop - start, row)
                for name, kind, a, b in spans:
                    block = grid[:, a:b]
                    value = columns[name][1]
                    if kind == "move":
                        block[:, 0] = np.where(value[start:stop], 67, 68)  # "C" / "D"
                    elif kind == "pay":
                        block[:] = pay_table[value][pair[start:stop]]
                    else:
                        _put_digits(block, value[start:stop])
                flat = grid.reshape(-1)
                if padded:
                    flat = flat[flat != 0]
                fh.write(memoryview(flat))
                written += flat.size
        return written

    def _grid(self, rows: int, row: np.ndarray) -> np.ndarray:
        """A (rows x width) scratch matrix filled with the template row (buffer reused)."""
        size = rows * row.size
        if self._buf.size < size:
            self._buf = np.empty(size, dtype=np.uint8)
        grid = self._buf[:size].reshape(rows, row.size)
        grid[:] = row
        return grid


class OrderedRoundsWriter:
    """Appends games to the rounds log in plan order, whatever order they finish in.

    The log is rounds.jsonl (`jsonl`), the columnar parts under `rounds/` (`columns`), or both.
    `order` lists the plan indexes of the games to write. A finished game is written at once
    when it is next in order (a vectorized game straight into rounds.jsonl by the encoder),
    else held until the games before it are written; `close` writes whatever is still held. A
    run with no game to log (a policy-only tournament without log_rounds) writes no rounds file.
    """

    def __init__(
        self,
        path: Path,
        order: list[int],
        encoder: RoundsEncoder | None = None,
        *,
        jsonl: bool = True,
        columns: ColumnarRoundsWriter | None = None,
    ) -> None:
        self.path = path
        self._appender: JsonlAppender | None = None
        self.order = order
        self.encoder = encoder
        self.jsonl = jsonl
        self.columns = columns
        self.position = 0
        self.pending: dict[int, bytes | _HeldGame] = {}
        self.out_of_order = False

    @property
    def appender(self) -> JsonlAppender:
        """The rounds file, opened for appending on first use."""
        if self._appender is None:
            self._appender = JsonlAppender(self.path)
        return self._appender

    def add(self, index: int, blob: bytes) -> None:
        """A finished game's rounds.jsonl lines."""
        self.pending[index] = blob
        self._drain()

    def add_game(
        self, index: int, key: GameKey, arrays: dict[str, np.ndarray], timestamp: str
    ) -> None:
        """A finished game of the vectorized engine (see `RoundsEncoder.write_game`)."""
        self.pending[index] = _HeldGame(key, arrays, timestamp)
        self._drain()

    def _write(self, item: bytes | _HeldGame) -> None:
        if isinstance(item, bytes):
            if self.jsonl:
                self.appender.write_bytes(item)
            if self.columns is not None:
                self.columns.add_lines(item)
            return
        if self.jsonl:
            assert self.encoder is not None, "a vectorized game needs the encoder"
            self.encoder.write_game(self.appender.handle, item.key, item.arrays, item.timestamp)
            self.appender.flush()
        if self.columns is not None:
            self.columns.add_game(item.key, item.arrays, item.timestamp)

    def _drain(self) -> None:
        while self.position < len(self.order) and self.order[self.position] in self.pending:
            self._write(self.pending.pop(self.order[self.position]))
            self.position += 1

    def close_soon(self) -> None:
        """`close`, with the columnar log's last part written in the background when every
        game came in order (see `ColumnarRoundsWriter.close_in_background`); `close` then
        waits for that part."""
        if self.pending or self.columns is None:
            self.close()
            return
        if self.jsonl and (self.order or self._appender is not None):
            self.appender.close()
        self.columns.close_in_background()

    def drop_columns(self) -> None:
        """Write no more columnar parts (a stopped session keeps rounds.jsonl as its log): a
        part being written in the background is finished first, its error ignored."""
        if self.columns is not None:
            try:
                self.columns.wait()
            except OSError:
                pass
        self.columns = None

    def close(self) -> None:
        """Write games still held (a run that stopped early), then fsync and close."""
        for index in sorted(self.pending):
            self.out_of_order = True
            self._write(self.pending.pop(index))
        if self.jsonl and (self.order or self._appender is not None):
            self.appender.close()  # a run that logs games has the file, even before the first
        if self.columns is not None:
            self.columns.close()


class _HeldGame(NamedTuple):
    """A vectorized game waiting for the games before it in plan order."""

    key: GameKey
    arrays: dict[str, np.ndarray]
    timestamp: str


def finished_games(
    run_dir: Path, expected_rounds: dict[tuple[str, int], int]
) -> dict[tuple[str, int], list[bytes]]:
    """Lines of every complete game in rounds.jsonl, keyed by (condition, replicate).

    A game is complete when it has exactly its planned rounds 0..n-1; a torn last line (a kill
    mid-write) and incomplete or unexpected games are dropped. A record newer than this pdbench
    is an error.
    """
    path = run_dir / ROUNDS_FILE
    if not path.is_file():
        return {}
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
    games: dict[tuple[str, int], list[bytes]] = {}
    rounds_seen: dict[tuple[str, int], set[int]] = {}
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
            key = (str(record["condition"]), int(record["replicate"]))
            round_index = int(record["round_index"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
        check_version(str(path), record.get("schema_version"))
        games.setdefault(key, []).append(line)
        rounds_seen.setdefault(key, set()).add(round_index)
    complete: dict[tuple[str, int], list[bytes]] = {}
    for key, lines in games.items():
        n = expected_rounds.get(key)
        if n is not None and len(lines) == n and rounds_seen[key] == set(range(n)):
            complete[key] = lines
    return complete


def write_games_in_order(
    run_dir: Path, games: dict[tuple[str, int], list[bytes]], order: Iterable[tuple[str, int]]
) -> None:
    """Rewrite rounds.jsonl atomically with the given games in plan order."""
    chunks = [b"\n".join(games[key]) + b"\n" for key in order if key in games]
    write_bytes_atomic(run_dir / ROUNDS_FILE, b"".join(chunks))
