"""The app's tabs, one module each, found in this package: a module with `LABEL`, `KEY`,
`POSITION` and `render(ctx: AppContext)` is a tab. It may also say when it opens first:
`FIRST_FOR` (the run kinds it opens first for; the tab whose list holds "experiment" also
opens first for a directory of unknown kind, so its problem shows) or `FIRST_WITHOUT_RUN`
(it opens first when the app starts without a run directory).

To add a tab, write a module with those names: nothing else changes.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pdbench.ui.components import AppContext


@dataclass(frozen=True, slots=True)
class Tab:
    """A tab: its label, the function drawing it, and where it goes."""

    key: str
    label: str
    render: Callable[[AppContext], None]
    position: int
    first_for: tuple[str, ...] = ()
    first_without_run: bool = False
    on_hidden: Callable[[], None] | None = None  # called on reruns where another tab is open


def tabs_from(modules: Iterable[ModuleType | Any]) -> dict[str, Tab]:
    """The tabs of these modules (those with LABEL, KEY, POSITION and render), by key, in
    position order; a key or a position used twice is an error."""
    found: list[Tab] = []
    for module in modules:
        if not all(hasattr(module, name) for name in ("LABEL", "KEY", "POSITION", "render")):
            continue
        found.append(
            Tab(
                module.KEY,
                module.LABEL,
                module.render,
                int(module.POSITION),
                tuple(getattr(module, "FIRST_FOR", ())),
                bool(getattr(module, "FIRST_WITHOUT_RUN", False)),
                getattr(module, "on_hidden", None),
            )
        )
    for attribute in ("key", "position"):
        values = [getattr(tab, attribute) for tab in found]
        repeated = sorted({str(v) for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(f"two tabs share a {attribute}: {', '.join(repeated)}")
    return {tab.key: tab for tab in sorted(found, key=lambda t: t.position)}


def _tab_modules() -> list[ModuleType]:
    return [
        importlib.import_module(f"{__name__}.{info.name}")
        for info in pkgutil.iter_modules(__path__)
    ]


TABS: dict[str, Tab] = tabs_from(_tab_modules())


def tab_order(
    run_kind: str | None, has_run_dir: bool, tabs: dict[str, Tab] | None = None
) -> list[Tab]:
    """The tab for the run directory given at launch first: the one whose FIRST_FOR names its
    kind (the "experiment" one for a directory of unknown kind); without a run directory, the
    one with FIRST_WITHOUT_RUN. The others keep their positions."""
    usual = list((tabs or TABS).values())
    if not has_run_dir:
        first = next((t for t in usual if t.first_without_run), usual[0])
    else:
        first = next(
            (t for t in usual if (run_kind or "") in t.first_for),
            next((t for t in usual if "experiment" in t.first_for), usual[0]),
        )
    return [first, *(t for t in usual if t is not first)]
