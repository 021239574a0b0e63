"""The model of a resource recipe's published numbers (core/resource_published.py): what it
accepts and what it says does not fit a run."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pdbench.core.resource_published import ResourcePublished


def numbers(**changes: object) -> dict:
    entry = {
        "metric": "retaliation_rate",
        "model": "M",
        "value": 1,  # YAML's integer 1 is the number 1.0
        "source": "s",
        "definition": "d",
    }
    data = {"study": "x", "source": "y", "entries": [entry]}
    entry.update(changes.pop("entry", {}))  # type: ignore[arg-type]
    data.update(changes)
    return data


def test_an_integer_value_and_interval_are_numbers() -> None:
    got = ResourcePublished.model_validate(numbers(entry={"ci": [0, 2]}))
    assert got.entries[0].value == 1.0 and got.entries[0].ci == (0.0, 2.0)
    assert got.problems("pgg", ["a"]) == []


def test_an_interval_must_hold_its_value() -> None:
    with pytest.raises(ValidationError, match="ci must hold the value"):
        ResourcePublished.model_validate(numbers(entry={"ci": [2, 3]}))


def test_what_does_not_fit_the_run() -> None:
    got = ResourcePublished.model_validate(
        numbers(
            entry={"metric": "survival", "condition": "b"},
            published_only={"retaliation_rate": "a column, not published-only"},
        )
    )
    problems = dict(got.problems("pgg", ["a"]))
    assert set(problems) == {
        ("published_only", "retaliation_rate"),
        ("entries", 0, "metric"),
        ("entries", 0, "condition"),
    }
    assert problems[("entries", 0, "metric")].endswith("(got 'survival')")
    # the same entry fits a commons run with a condition b
    assert (
        ResourcePublished.model_validate(
            numbers(entry={"metric": "survival", "condition": "b"})
        ).problems("commons", ["a", "b"])
        == []
    )
