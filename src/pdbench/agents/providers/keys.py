"""API keys: read from the environment (or a local .env file) by variable name, never stored."""

from __future__ import annotations

import os
from pathlib import Path

from pdbench.redact import remember


def read_dotenv(path: Path) -> dict[str, str]:
    """Parse a simple .env file (KEY=value lines, # comments, optional quotes)."""
    values: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return values
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def resolve_api_key(api_key_env: str | None, dotenv: Path | None = None) -> str | None:
    """The key held by the variable `api_key_env`: the environment first, then `.env` in the
    cwd. The value is remembered for redaction (`pdbench.redact`)."""
    if not api_key_env:
        return None
    value = os.environ.get(api_key_env) or read_dotenv(dotenv or Path.cwd() / ".env").get(
        api_key_env
    )
    remember(value)
    return value or None
