"""The command lines of `run`, `tournament`, `evolve`, `resume`, `validate`, `aggregate`,
`profile` and `report` parsed without typer, so that starting them does not import typer (and
with it pydantic: 0.1-0.2 s on a 2-core machine).

`parse` takes only what it can read exactly as typer (click) would: the command, at most one
value for each option it declares in `pdbench.cli`, values that are plainly in range. Anything
else -- `--help`, an unknown or repeated option, `--opt=` on a flag, a value out of range or in
an unusual spelling, a missing or extra argument -- gives None, and `pdbench.cli.main` hands the
command line to typer, so help, error messages and exit codes stay typer's. `run_parsed` runs
the command as typer's standalone mode does (exit code 0 at the end, Ctrl-C inside the command:
exit code 130, a closed stdout pipe: exit code 1).
"""

from __future__ import annotations

import errno
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, get_args

from pdbench.cli import (
    COMMANDS,
    RESUME_OPTIONS,
    RUN_OPTIONS,
    Opt,
    echo,
    resume_dir,
    run_config,
    validate_config,
)
from pdbench.cli_dirs import DIR_COMMANDS

_INT = re.compile(r"[0-9]+")
_FLOAT = re.compile(r"[0-9]+(\.[0-9]+)?|\.[0-9]+")


@dataclass(frozen=True)
class Parsed:
    """A command line `parse` read: the function that runs it and its arguments."""

    run: Callable[..., None]
    args: tuple[Any, ...]
    options: dict[str, Any]


def _value_type(opt: Opt) -> type:
    """The option's type without None (`int | None` -> int)."""
    if isinstance(opt.type, UnionType):
        (inner,) = [t for t in get_args(opt.type) if t is not NoneType]
        return inner
    return opt.type


def _convert(opt: Opt, text: str) -> Any:
    """The value of `text` for `opt`, or None when typer might read it differently or refuse
    it (then typer parses the whole command line)."""
    kind = _value_type(opt)
    value: Any
    if kind is int:
        if not _INT.fullmatch(text):
            return None
        value = int(text)
    elif kind is float:
        if not _FLOAT.fullmatch(text):
            return None
        value = float(text)
    elif kind is Path:
        return Path(text) if text and not text.startswith("-") else None
    elif kind is str:
        return text if not text.startswith("-") else None
    elif issubclass(kind, Enum):
        return next((m for m in kind if m.value == text), None)
    else:
        return None
    if (opt.min is not None and value < opt.min) or (opt.max is not None and value > opt.max):
        return None
    return value


def _options(
    args: list[str], options: list[tuple[str, Opt]]
) -> tuple[list[str], dict[str, Any]] | None:
    """(the positional arguments, every option's value) of a command's arguments, or None."""
    by_flag = {decl: (name, opt) for name, opt in options for decl in opt.decls}
    values: dict[str, Any] = {name: opt.default for name, opt in options}
    seen: set[str] = set()
    positional: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if not token.startswith("-"):
            positional.append(token)
            continue
        flag, eq, inline = token.partition("=")
        if flag not in by_flag or (eq and not flag.startswith("--")):
            return None
        name, opt = by_flag[flag]
        if name in seen:
            return None
        seen.add(name)
        if opt.type is bool:
            if eq:
                return None
            values[name] = True
            continue
        if not eq:
            if i == len(args):
                return None
            inline, i = args[i], i + 1
        value = _convert(opt, inline)
        if value is None:
            return None
        values[name] = value
    return positional, values


def parse(argv: list[str]) -> Parsed | None:
    """The command line `pdbench ARGV` when it is a plain one of the commands above, else None."""
    if argv[:1] == ["--debug"]:
        argv = argv[1:]
    if not argv:
        return None
    command, rest = argv[0], argv[1:]
    if command in COMMANDS:
        spec = COMMANDS[command]
        read = _options(rest, spec.own + RUN_OPTIONS)
        if read is None or len(read[0]) != 1 or not read[0][0]:
            return None
        return Parsed(run_config, (spec.kind, Path(read[0][0])), read[1])
    if command == "resume":
        read = _options(rest, RESUME_OPTIONS)
        if read is None or len(read[0]) != 1 or not read[0][0]:
            return None
        return Parsed(resume_dir, (Path(read[0][0]),), read[1])
    if command in DIR_COMMANDS:
        runner, options = DIR_COMMANDS[command]
        read = _options(rest, options)
        if read is None or len(read[0]) != 1 or not read[0][0]:
            return None
        return Parsed(runner, (Path(read[0][0]),), read[1])
    if command == "validate":
        read = _options(rest, [])
        if read is None or len(read[0]) != 1 or not read[0][0]:
            return None
        return Parsed(validate_config, (Path(read[0][0]),), {})
    return None


class _Pacified:
    """A stream whose writes and flushes ignore a closed pipe (click's PacifyFlushWrapper)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def run_parsed(parsed: Parsed) -> None:
    """Run a parsed command line as typer's standalone mode would; always ends in SystemExit."""
    try:
        parsed.run(*parsed.args, **parsed.options)
    except EOFError:
        echo("", err=True)
        echo("Aborted!", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        sys.stdout = _Pacified(sys.stdout)
        sys.stderr = _Pacified(sys.stderr)
        sys.exit(1)
    sys.exit(0)
