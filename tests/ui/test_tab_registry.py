"""Tabs own their place: a module in ui/tabs with LABEL, KEY, POSITION and render is a tab, in
position order, with no list to edit elsewhere (a new tab shows by itself)."""

from __future__ import annotations

import pkgutil
from types import SimpleNamespace

import pytest

import pdbench.ui.tabs as tabs_package
from pdbench.ui.tabs import TABS, tab_order, tabs_from


def _module(key: str, position: int, **extra: object) -> SimpleNamespace:
    return SimpleNamespace(
        LABEL=key.title(), KEY=key, POSITION=position, render=lambda ctx: None, **extra
    )


def test_every_tab_module_is_a_tab_in_position_order() -> None:
    modules = {info.name for info in pkgutil.iter_modules(tabs_package.__path__)}
    assert len(TABS) == len(modules) == 8
    assert [t.position for t in TABS.values()] == sorted(t.position for t in TABS.values())
    assert list(TABS) == [
        "view", "replay", "run", "tournament", "evolution", "agents", "play", "groups"
    ]  # fmt: skip


def test_a_new_module_shows_without_editing_a_list() -> None:
    found = tabs_from(
        [_module("view", 1, FIRST_FOR=("experiment",)), _module("new", 7), _module("run", 3)]
    )
    assert [t.key for t in found.values()] == ["view", "run", "new"]
    assert [t.key for t in tab_order(None, True, found)] == ["view", "run", "new"]
    assert [t.key for t in tab_order("unknown", True, found)][0] == "view"


def test_which_tab_opens_first() -> None:
    assert tab_order(None, False)[0].key == "run"
    assert tab_order("experiment", True)[0].key == "view"
    assert tab_order("tournament", True)[0].key == "tournament"
    assert tab_order("evolution", True)[0].key == "evolution"
    assert tab_order("groups", True)[0].key == "groups"
    assert tab_order("no such kind", True)[0].key == "view"
    assert [t.key for t in tab_order("tournament", True)][1:] == [
        "view", "replay", "run", "evolution", "agents", "play", "groups"
    ]  # fmt: skip


def test_two_tabs_with_one_key_or_position_are_an_error() -> None:
    with pytest.raises(ValueError, match="share a key"):
        tabs_from([_module("a", 1), _module("a", 2)])
    with pytest.raises(ValueError, match="share a position"):
        tabs_from([_module("a", 1), _module("b", 1)])
