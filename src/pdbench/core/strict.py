"""The base of every config model: unknown keys are errors and types are exact."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict

MAX_TEXT = 10_000  # characters of a name, model, path or URL


class Strict(BaseModel):
    """Base model: unknown keys are errors and types are exact (`true` is not 1, `"3"` is not 3);
    `removed_keys` explains keys that no longer exist."""

    # defer_build: a model's validator is built when it first validates, so a command builds
    # its own kind of config only (building them all took a fifth of a second at start-up).
    model_config = ConfigDict(
        extra="forbid", strict=True, str_max_length=MAX_TEXT, defer_build=True
    )
    removed_keys: ClassVar[dict[str, str]] = {}
