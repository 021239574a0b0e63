"""Published reference numbers stored beside a study recipe (`experiment.published`), and which
games of a run each one is compared with (pure: the file is read by the loader).

A file lists comparisons; each names an aggregates.parquet metric, the axis its points lie on
(`by`: a swept path, or `condition`), the points, and per published model one value per point
(a number, `{value, ci: [low, high]}`, or null where the paper gives none). `where` keeps only
the conditions at given values of other axes (e.g. the prompt the paper used when a recipe sweeps
prompts). `deviations` lists where the recipe still departs from the authors' protocol; the
report shows them.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field, model_validator

from pdbench.core.config import Strict

BY_CONDITION = "condition"


class PublishedValue(Strict):
    """A published number with its interval, when the source gives one."""

    value: float
    ci: tuple[float, float] | None = None


class Comparison(Strict):
    """One published result: a metric at some points of an axis, per model."""

    title: str = Field(min_length=1)
    metric: str = Field(min_length=1)
    by: str = BY_CONDITION
    points: list[float | str] = Field(min_length=1)
    published: dict[str, list[float | PublishedValue | None]] = Field(min_length=1)
    where: dict[str, float | str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _lax_numbers(cls, data: Any) -> Any:
        # YAML writes 0 and 1 as integers; a point or a value is a number either way.
        if isinstance(data, dict):
            data = dict(data)
            if isinstance(data.get("where"), dict):
                data["where"] = {k: _as_float(v) for k, v in data["where"].items()}
            if isinstance(data.get("points"), list):
                data["points"] = [_as_float(p) for p in data["points"]]
            if isinstance(data.get("published"), dict):
                data["published"] = {
                    k: [_as_float(x) for x in v] if isinstance(v, list) else v
                    for k, v in data["published"].items()
                }
        return data

    @model_validator(mode="after")
    def _one_value_per_point(self) -> Comparison:
        for model, values in self.published.items():
            if len(values) != len(self.points):
                raise ValueError(
                    f"published.{model}: needs one value per point ({len(self.points)}; "
                    f"got {len(values)})"
                )
        return self


def _as_float(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, dict) and isinstance(value.get("value"), int):
        value = {**value, "value": float(value["value"])}
    if isinstance(value, dict) and isinstance(value.get("ci"), list):
        value = {**value, "ci": tuple(_as_float(x) for x in value["ci"])}
    return value


class PublishedNumbers(Strict):
    """A study's published numbers: where they come from and what they are compared with."""

    study: str = Field(min_length=1)
    source: str = Field(min_length=1)
    note: str | None = None
    comparisons: list[Comparison] = Field(min_length=1)
    not_reproduced: list[str] = Field(default_factory=list)
    deviations: list[str] = Field(default_factory=list)


def published_value(entry: float | PublishedValue | dict[str, Any] | None) -> PublishedValue | None:
    """A published entry as value and interval (None where the source gives none)."""
    if entry is None:
        return None
    if isinstance(entry, PublishedValue):
        return entry
    if isinstance(entry, dict):
        return PublishedValue.model_validate(_as_float(entry))
    return PublishedValue(value=float(entry))


def matches(
    point: float | str,
    by: str,
    condition: str,
    coordinates: dict[str, Any],
    where: dict[str, float | str] | None = None,
) -> bool:
    """Whether a condition (its name and sweep coordinates) lies at a comparison's point (and
    at every value of `where`)."""
    for path, wanted in (where or {}).items():
        if not matches(wanted, path, condition, coordinates):
            return False
    if by == BY_CONDITION:
        return condition == point or condition.split("+", 1)[0] == point
    value = coordinates.get(by)
    if isinstance(point, float) and isinstance(value, int | float) and not isinstance(value, bool):
        return math.isclose(float(value), point, rel_tol=1e-9, abs_tol=1e-12)
    return value == point
