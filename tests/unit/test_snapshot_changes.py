"""Which config changes a resume refuses: a key a newer pdbench adds with a null default is no
change, at any depth, inside lists too (a stopped run of the previous version must resume)."""

from __future__ import annotations

from pdbench.runners.lifecycle.session import snapshot_changes


def test_a_new_null_key_inside_a_list_is_no_change() -> None:
    before = {"experiment": {"conditions": [{"agent_a": {"params": {"coop_prob": None}}}]}}
    after = {
        "experiment": {"conditions": [{"agent_a": {"params": {"coop_prob": None, "m": None}}}]}
    }
    assert snapshot_changes(before, after) == ""


def test_real_changes_inside_lists_are_named_by_position() -> None:
    before = {"experiment": {"conditions": [{"name": "a"}, {"name": "b", "noise": 0.0}]}}
    after = {"experiment": {"conditions": [{"name": "a"}, {"name": "b", "noise": 0.1}]}}
    assert snapshot_changes(before, after) == "experiment.conditions[1].noise: 0.0 -> 0.1"
    shorter = {"experiment": {"conditions": [{"name": "a"}]}}
    assert snapshot_changes(before, shorter).startswith("experiment.conditions: ")
    assert snapshot_changes({"a": [1, 2]}, {"a": [1, 3]}) == "a[1]: 2 -> 3"
