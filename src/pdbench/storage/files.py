"""Small, careful file operations: atomic writes, JSON Lines appends, environment facts."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from pdbench.errors import RunError

KEY_PACKAGES = (
    "pdbench",
    "numpy",
    "pandas",
    "pyarrow",
    "pydantic",
    "typer",
    "orjson",
    "litellm",
    "openai",
    "anthropic",
    "axelrod",
    "streamlit",
)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write a file so readers see either the old or the new content, never a half file.

    The temporary file's name is unique to this process and call, so two writers never share
    one; a file that cannot be written is a RunError naming it.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise RunError(f"{path}: cannot write ({exc.strerror or exc})") from None


# What `write_bytes_atomic` calls a file until it is complete: .<name>.<pid>.<hex>.tmp
_ATOMIC_TEMP = re.compile(r"\..+\.\d+\.[0-9a-f]+\.tmp")


def leftover_temp_files(directory: Path) -> list[Path]:
    """The temporary files of atomic writes a kill left in `directory` (not below it)."""
    if not directory.is_dir():
        return []
    return [p for p in directory.iterdir() if p.is_file() and _ATOMIC_TEMP.fullmatch(p.name)]


def write_json_atomic(path: Path, data: Any) -> None:
    """Atomic pretty JSON."""
    write_bytes_atomic(
        path, orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    )


def read_json(path: Path) -> Any:
    """Read a JSON file."""
    return orjson.loads(path.read_bytes())


class JsonlAppender:
    """Appends whole batches of records (e.g. one game) to a JSON Lines file, one write each."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._fh = open(path, "ab")
        except OSError as exc:
            raise RunError(f"{path}: cannot write ({exc.strerror or exc})") from None

    def write_many(self, records: list[dict[str, Any]]) -> None:
        """Append the records and flush, so a crash loses at most this batch."""
        if not records:
            return
        dumps = orjson.dumps
        self._fh.write(b"\n".join(dumps(r) for r in records) + b"\n")
        self._fh.flush()

    def write_bytes(self, blob: bytes) -> None:
        """Append pre-serialized lines (must end with a newline)."""
        self._fh.write(blob)
        self._fh.flush()

    @property
    def handle(self) -> BinaryIO:
        """The open file, for encoders that write straight into it (then call `flush`)."""
        return self._fh

    def flush(self) -> None:
        """Flush buffered bytes to the OS."""
        self._fh.flush()

    def close(self) -> None:
        """fsync and close."""
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages that shape results (None when not installed)."""
    out: dict[str, str | None] = {}
    for name in KEY_PACKAGES:
        try:
            out[name] = package_version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def package_version(name: str) -> str:
    """`importlib.metadata.version(name)`, read from the Version header of the distribution's
    metadata (the text before the first empty line) rather than by parsing the whole file as an
    e-mail message, which takes a few milliseconds a package: the same text, the header's value
    after its leading blanks. A folded or missing header goes to `version` itself."""
    dist = importlib.metadata.distribution(name)
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for i, line in enumerate(lines):
        if not line:
            break
        if line[:8].lower() == "version:":
            following = lines[i + 1] if i + 1 < len(lines) else ""
            if following[:1] not in (" ", "\t"):
                return line[8:].lstrip(" \t")
            break
    return dist.version


def git_commit(path: Path) -> str | None:
    """The git commit of the repository holding `path`, with '+dirty' if it has changes; None if none."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=path,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=path,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "") if head else None


def environment_info(config_dir: Path) -> dict[str, Any]:
    """Python, platform, package versions and git commit, for the manifest."""
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "packages": package_versions(),
        "git_commit": git_commit(config_dir),
    }
