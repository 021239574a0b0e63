"""The round record is spelled in one place: no module outside `pdbench.storage.record` writes a
record field's name, as a string or as an f-string over the seats (`f"agent_{side}_action"`);
they use `fields.side_field`, `ROUND_INDEX` and the named tuples. The fields that are also
aggregate, manifest or config names (run_id, condition, replicate, seed, the agents' names,
stop_prob, prompts) are left out: those words belong to the other artifacts too."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from pdbench.storage.record import fields

SRC = Path(fields.__file__).resolve().parents[2]
RECORD_PACKAGE = SRC / "storage" / "record"
SHARED = {
    "schema_version",
    "run_id",
    "condition",
    "replicate",
    "seed",
    "agent_a_name",
    "agent_b_name",
    "stop_prob",
    "prompts",
}
RECORD_ONLY = sorted(set(fields.ROUND_FIELDS + fields.LLM_FIELDS) - SHARED)
SEATED = "|".join(w for w in fields.SIDE_FIELDS if w != "name")
SEAT_PATTERN = re.compile(rf"agent_(?:\{{[^}}]*\}}|[ab])_(?:{SEATED})$")


def spellings(source: str) -> list[tuple[int, str]]:
    """(line, text) of every record field name written in this module's source."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in RECORD_ONLY:
                found.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):
            text = "".join(
                part.value if isinstance(part, ast.Constant) else "{x}" for part in node.values
            )
            if SEAT_PATTERN.search(text):
                found.append((node.lineno, text))
    return sorted(found)


def test_the_check_finds_what_it_must() -> None:
    source = (
        'a = r["round_index"]\n'
        'b = f"agent_{side}_action"\n'
        'c = f"{p}agent_{s}_cum_payoff"\n'
        'd = "agent_a_payoff_per_round"\n'  # an aggregate column, not a record field
        'e = f"agent_{side}_total_payoff"\n'
        'g = "raw_responses"\n'
    )
    assert [line for line, _ in spellings(source)] == [1, 2, 3, 6]


def test_side_field_names_only_record_fields() -> None:
    assert fields.side_field("a", "action") == "agent_a_action"
    assert fields.side_field("agent_b", "p_cooperate") == "agent_b_p_cooperate"
    assert fields.side_fields("cum_payoff") == ("agent_a_cum_payoff", "agent_b_cum_payoff")
    with pytest.raises(KeyError):
        fields.side_field("c", "action")
    with pytest.raises(KeyError):
        fields.side_field("a", "total_payoff")


def test_no_module_outside_the_record_spells_a_field() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if RECORD_PACKAGE in path.parents:
            continue
        for line, text in spellings(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(SRC)}:{line}: {text}")
    assert not offenders, "\n".join(offenders)
