"""The README's lists of policies and providers name exactly what the registries hold (a policy
or provider added without its README entry fails here)."""

from __future__ import annotations

import re
from pathlib import Path

from pdbench.agents.policy import policy_names
from pdbench.agents.providers.base import registry

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _names_after(marker: str, closing: str = ")") -> list[str]:
    text = _flat(README)
    start = text.index(marker) + len(marker)
    inside = text[start : text.index(closing, start)]
    return [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", inside)]


def test_policy_lists_name_every_registered_policy() -> None:
    config_list = _names_after("`policy` (", ";")
    assert sorted(config_list) == policy_names()
    players = [w for w in _names_after("a policy by name (") if w.isupper()]
    assert sorted(players) == policy_names()


def test_provider_list_names_every_registered_provider() -> None:
    assert sorted(_names_after("`provider` (")) == sorted(registry())


def test_message_rule_list_names_every_registered_rule() -> None:
    from pdbench.core.talk import rule_names

    assert sorted(_names_after("message rule (`talk` (")) == sorted(rule_names())


def test_parse_mode_list_names_every_registered_mode() -> None:
    from pdbench.core.parse_modes import parse_mode_names

    assert sorted(_names_after("in place of `answer_pattern`:", ";")) == parse_mode_names()


def test_group_policy_list_names_every_registered_group_policy() -> None:
    from pdbench.agents.group_policy import group_policy_names

    assert sorted(_names_after("a seat's `policy` (")) == sorted(group_policy_names())


def test_public_goods_and_harvest_policy_lists_name_every_registered_policy() -> None:
    from pdbench.agents.pgg_policy import pgg_policy_names
    from pdbench.agents.resource_policy import harvest_policy_names

    assert sorted(_names_after("a contributor's `policy` (")) == pgg_policy_names()
    assert sorted(_names_after("a fisher's `policy` (")) == harvest_policy_names()
