"""The on-disk response cache (SQLite): a re-run of the same config makes no provider calls.

Keys are sha256 digests of everything that shapes a reply (see `cache_key`); values are the reply
text and its usage. Writes commit at once (WAL journal), so a killed run keeps what it paid for.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from pdbench.errors import RunError

DEFAULT_CACHE_DIR = Path(".pdbench_cache")
CACHE_FILE = "responses.sqlite"


def cache_key(**parts: Any) -> str:
    """sha256 of the canonical JSON of the key parts."""
    return hashlib.sha256(
        json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()


class ResponseCache:
    """A small key -> completion store in `<cache_dir>/responses.sqlite`."""

    def __init__(self, cache_dir: Path) -> None:
        self.dir = Path(cache_dir)
        self.path = self.dir / CACHE_FILE
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                " key TEXT PRIMARY KEY, provider TEXT, model TEXT, text TEXT,"
                " input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL, created_utc TEXT)"
            )
        except (OSError, sqlite3.Error) as exc:
            raise RunError(
                f"{self.path}: cannot open the response cache ({exc}); "
                "pass another --cache-dir or --no-cache"
            ) from None

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply for `key`, or None."""
        row = self._db.execute(
            "SELECT text, input_tokens, output_tokens, cost_usd FROM responses WHERE key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        return {"text": row[0], "input_tokens": row[1], "output_tokens": row[2], "cost_usd": row[3]}

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
    ) -> None:
        """Store a reply (replacing any older one with the same key)."""
        self._db.execute(
            "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (key, provider, model, text, input_tokens, output_tokens, cost_usd, created_utc),
        )

    def stats(self) -> dict[str, Any]:
        """Entry counts per provider/model and the file size."""
        rows = self._db.execute(
            "SELECT provider, model, COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0) "
            "FROM responses GROUP BY provider, model ORDER BY provider, model"
        ).fetchall()
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
        count = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        self._db.execute("DELETE FROM responses")
        self._db.execute("VACUUM")
        return int(count)

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
