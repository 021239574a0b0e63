"""The on-disk response cache (SQLite): a re-run of the same config makes no provider calls.

Keys are sha256 digests of everything that shapes a reply (see `cache_key`); values are the reply
text and its usage. Writes commit at once (WAL journal), so a killed run keeps what it paid for.
A cache that cannot be read (a damaged file) is a one-line RunError naming the file and the fix;
`pdbench cache clear` removes even a damaged one (`remove_files`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pdbench.errors import RunError

CACHE_DIR_ENV = "PDBENCH_CACHE_DIR"  # where the cache lives when --cache-dir is not given
CACHE_FILE = "responses.sqlite"


def default_cache_dir() -> Path:
    """$PDBENCH_CACHE_DIR, else `.pdbench_cache` in the working directory."""
    return Path(os.environ.get(CACHE_DIR_ENV) or ".pdbench_cache")


T = TypeVar("T")


def cache_key(**parts: Any) -> str:
    """sha256 of the canonical JSON of the key parts."""
    return hashlib.sha256(
        json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()


class CacheUnusable(RunError):
    """The cache file cannot be opened or read."""


class ResponseCache:
    """A small key -> completion store in `<cache_dir>/responses.sqlite`."""

    def __init__(self, cache_dir: Path) -> None:
        self.dir = Path(cache_dir)
        self.path = self.dir / CACHE_FILE
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheUnusable(
                f"{self.path}: cannot open the response cache ({exc.strerror or exc}); "
                "pass another --cache-dir or --no-cache"
            ) from None
        self._db: sqlite3.Connection | None = None

        def connect() -> sqlite3.Connection:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                " key TEXT PRIMARY KEY, provider TEXT, model TEXT, text TEXT,"
                " input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL, created_utc TEXT,"
                " extra TEXT)"
            )
            columns = {row[1] for row in db.execute("PRAGMA table_info(responses)")}
            if "extra" not in columns:  # a cache written before replies carried their facts
                db.execute("ALTER TABLE responses ADD COLUMN extra TEXT")
            return db

        self._db = self._guard(connect)

    def _guard(self, action: Callable[[], T]) -> T:
        """Run a database action; a damaged or unreadable file becomes one line."""
        try:
            return action()
        except (sqlite3.Error, OSError) as exc:
            if any(w in str(exc) for w in ("disk is full", "disk I/O error", "too large")):
                # No room to write (a full disk, a file size limit): the cache is not damaged.
                raise CacheUnusable(
                    f"{self.path}: cannot write to the response cache ({exc}; the disk may be "
                    "full or a file size limit reached); make room, then `pdbench resume`"
                ) from None
            raise CacheUnusable(
                f"{self.path}: the response cache cannot be read ({exc}); remove it with "
                f"`pdbench cache clear --cache-dir {self.dir}` or run with --no-cache"
            ) from None

    @property
    def db(self) -> sqlite3.Connection:
        """The open database."""
        assert self._db is not None
        return self._db

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply for `key`, or None."""
        row = self._guard(
            lambda: self.db.execute(
                "SELECT text, input_tokens, output_tokens, cost_usd, extra FROM responses "
                "WHERE key = ?",
                (key,),
            ).fetchone()
        )
        if row is None:
            return None
        try:
            extra = json.loads(row[4]) if row[4] else {}
        except ValueError:
            extra = {}
        return {
            "text": row[0],
            "input_tokens": row[1],
            "output_tokens": row[2],
            "cost_usd": row[3],
            "extra": extra if isinstance(extra, dict) else {},
        }

    def put(
        self,
        key: str,
        *,
        provider: str,
        model: str,
        text: str,
        input_tokens: int | None,
        output_tokens: int | None,
        cost_usd: float | None,
        created_utc: str,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Store a reply (replacing any older one with the same key); `extra` holds the reply's
        other facts (finish reason, served model, log-probabilities) as JSON."""
        blob = json.dumps(extra, separators=(",", ":")) if extra else None
        row = (key, provider, model, text, input_tokens, output_tokens, cost_usd, created_utc, blob)
        self._guard(
            lambda: self.db.execute(
                "INSERT OR REPLACE INTO responses (key, provider, model, text, input_tokens, "
                "output_tokens, cost_usd, created_utc, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
        )

    def stats(self) -> dict[str, Any]:
        """Entry counts per provider/model and the file size."""
        rows = self._guard(
            lambda: self.db.execute(
                "SELECT provider, model, COUNT(*), COALESCE(SUM(input_tokens), 0), "
                "COALESCE(SUM(output_tokens), 0) FROM responses GROUP BY provider, model "
                "ORDER BY provider, model"
            ).fetchall()
        )
        size = sum(p.stat().st_size for p in self.dir.glob(f"{CACHE_FILE}*") if p.is_file())
        return {
            "path": str(self.path),
            "entries": sum(r[2] for r in rows),
            "bytes": size,
            "by_model": [
                {
                    "provider": r[0],
                    "model": r[1],
                    "entries": r[2],
                    "input_tokens": r[3],
                    "output_tokens": r[4],
                }
                for r in rows
            ],
        }

    def clear(self) -> int:
        """Delete every entry; returns how many there were."""
        count = self._guard(lambda: self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
        self._guard(lambda: self.db.execute("DELETE FROM responses"))
        self._guard(lambda: self.db.execute("VACUUM"))
        return int(count)

    def close(self) -> None:
        """Close the database."""
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def remove_files(cache_dir: Path) -> list[Path]:
    """Delete the cache's files (the database and its journal), readable or not."""
    removed = []
    for path in sorted(Path(cache_dir).glob(f"{CACHE_FILE}*")):
        if path.is_file():
            path.unlink()
            removed.append(path)
    return removed
