"""Library errors the CLI turns into one-line messages and exit code 2."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """One problem in a config: which file, where in it (dotted path), and what is wrong."""

    file: str
    path: str
    message: str

    def __str__(self) -> str:
        return (
            f"{self.file}: {self.path}: {self.message}"
            if self.path
            else f"{self.file}: {self.message}"
        )


class PdbenchError(Exception):
    """Base class of errors reported to users without a traceback."""

    exit_code = 2

    def lines(self) -> list[str]:
        """The message, one problem per line."""
        return [str(self)]


class ConfigError(PdbenchError):
    """A config that cannot be used; holds one issue per problem."""

    def __init__(self, issues: list[ConfigIssue]) -> None:
        # A file referenced twice reports the same problem twice: keep the first of each.
        unique = list(dict.fromkeys(issues))
        super().__init__("\n".join(str(i) for i in unique))
        self.issues = unique

    def lines(self) -> list[str]:
        return [str(i) for i in self.issues]


class RunError(PdbenchError):
    """A run that cannot start or had to stop (the message says what to do)."""


class RunInterrupted(RunError):
    """The user interrupted a run (Ctrl-C); finished games are kept and the run can be resumed."""

    exit_code = 130
