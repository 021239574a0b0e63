"""Keeping secrets out of everything pdbench writes or prints.

API key values are remembered when they are read (`remember`), and every text that leaves the
process (error lines, the call log, stored replies, the cache, manifests) goes through `redact`,
which replaces each remembered value by `***`. Credentials in URLs (a password, query values such
as `?key=...`) are hidden by `redact_url` and remembered too.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit, urlunsplit

MASK = "***"
_KNOWN: set[str] = set()
_MIN_LENGTH = 4  # shorter values would mask ordinary words


def remember(secret: str | None) -> None:
    """Add a secret value to those `redact` removes."""
    if secret and len(secret) >= _MIN_LENGTH:
        _KNOWN.add(secret)


def redact(text: str) -> str:
    """`text` with every remembered secret replaced by ***, longest first."""
    for secret in sorted(_KNOWN, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def url_secrets(url: str) -> list[str]:
    """The password and the query values of a URL (what `redact_url` hides)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return []
    values = [value for _, value in parse_qsl(parts.query, keep_blank_values=False)]
    return [v for v in [password, *values] if v]


def redact_url(url: str) -> str:
    """The URL with user info and query values replaced by ***."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return MASK if any(c in url for c in "@?") else url
    netloc = parts.netloc
    if parts.username or parts.password:
        netloc = f"{MASK}@{host}{port}"
    query = "&".join(f"{key}={MASK}" for key, _ in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
