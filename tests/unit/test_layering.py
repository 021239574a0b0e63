"""The import rules: `core` is pure, and imports flow one way.

`cli -> runners -> agents/providers/storage -> core`; `ui -> storage/core` (plus the policy
registry, for each policy's look, and the runners from `ui/launcher.py` alone, the back end of
the tabs that start runs). `core` imports nothing that does I/O, reads the clock or the
environment, or draws from a global random generator, and nothing of pdbench outside `core`.
Every import counts, also those inside functions. The checker is tested on snippets that break
each rule, so a rule that could not fail is caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "pdbench"

# Which pdbench layers each layer may import ("base": pdbench itself, pdbench.errors and
# pdbench.redact).
ALLOWED = {
    "core": {"core", "base"},
    "storage": {"core", "storage", "base"},
    "agents": {"core", "agents", "base"},
    "runners": {"core", "agents", "storage", "runners", "base"},
    "cli": {"core", "agents", "storage", "runners", "base", "cli", "report"},
    # the app offers the HTML report for download (report reads artifacts only)
    "ui": {"core", "storage", "base", "ui", "report"},
    # the HTML report reads artifacts like the app: storage and core only
    "report": {"core", "storage", "base", "report"},
}
UI_EXTRA = {"pdbench.agents.policy"}  # each policy's look and description
# the back end of the tabs that start runs (and show their plans)
UI_RUNNERS_MODULES = {
    "pdbench.ui.launcher",
    "pdbench.ui.planning",
    "pdbench.ui.play_launcher",
    "pdbench.ui.play_group_launcher",
    "pdbench.ui.play_resource_launcher",
}
# Standard and third-party modules core may not touch: I/O, clock, environment, global RNG,
# concurrency, and the heavy libraries of the outer layers.
CORE_FORBIDDEN = {
    "os",
    "sys",
    "io",
    "pathlib",
    "shutil",
    "tempfile",
    "glob",
    "subprocess",
    "socket",
    "time",
    "datetime",
    "random",
    "secrets",
    "uuid",
    "asyncio",
    "threading",
    "multiprocessing",
    "logging",
    "sqlite3",
    "urllib.request",
    "http",
    "yaml",
    "pandas",
    "pyarrow",
    "streamlit",
    "typer",
    "rich",
}
CORE_FORBIDDEN_CALLS = {"open", "print", "input", "exec", "eval"}
NUMPY_RANDOM_OK = {"Generator", "Philox", "PCG64", "SeedSequence", "BitGenerator"}


def layer_of(module: str) -> str:
    """core, agents, storage, runners, cli, ui, or base."""
    parts = module.split(".")
    if parts[:1] != ["pdbench"] or len(parts) == 1 or parts[1] in ("errors", "redact"):
        return "base"
    return (
        "cli" if parts[1] in ("cli", "cli_app", "cli_dirs", "cli_fast", "cli_tools") else parts[1]
    )


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the tree, nested ones included."""
    out: list[tuple[int, str]] = []
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            out.append((node.lineno, base))
            if base in ("pdbench", "pdbench.runners", "pdbench.agents", "pdbench.storage"):
                out.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
    return out


def problems(source: str, module: str) -> list[str]:
    """Every rule `source` (the text of `module`) breaks, one line each."""
    tree = ast.parse(source)
    layer = layer_of(module)
    found: list[str] = []
    for line, name in imported_modules(tree, module):
        top = name.split(".")[0]
        if top == "pdbench":
            target = layer_of(name)
            allowed = target in ALLOWED.get(layer, set())
            if layer == "ui" and not allowed:
                allowed = name in UI_EXTRA or (target == "runners" and module in UI_RUNNERS_MODULES)
            if not allowed:
                found.append(f"{module}:{line}: {layer} imports {name} ({target})")
        elif layer == "core" and any(name == f or name.startswith(f"{f}.") for f in CORE_FORBIDDEN):
            found.append(f"{module}:{line}: core imports {name}")
    if layer == "core":
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id in CORE_FORBIDDEN_CALLS:
                    found.append(f"{module}:{node.lineno}: core calls {node.func.id}()")
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "random"
                and node.attr not in NUMPY_RANDOM_OK
            ):
                found.append(f"{module}:{node.lineno}: core uses numpy's global random.{node.attr}")
    return found


def test_the_source_tree_follows_the_rules() -> None:
    found = []
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 40
    for path in files:
        found.extend(problems(path.read_text(encoding="utf-8"), module_name(path)))
    assert found == []


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("pdbench.core.x", "import os", "core imports os"),
        ("pdbench.core.x", "import urllib.request", "core imports urllib.request"),
        ("pdbench.core.x", "import os.path", "core imports os.path"),
        ("pdbench.core.x", "def f():\n    from datetime import datetime", "core imports datetime"),
        ("pdbench.core.x", "import numpy as np\nnp.random.rand(3)", "global random.rand"),
        ("pdbench.core.x", "x = open('f')", "core calls open()"),
        ("pdbench.core.x", "from pdbench.storage import schema", "core imports pdbench.storage"),
        ("pdbench.core.x", "from pdbench.agents.policy import C", "core imports pdbench.agents"),
        (
            "pdbench.storage.x",
            "from pdbench.runners import engine",
            "storage imports pdbench.runners",
        ),
        ("pdbench.storage.x", "import pdbench.agents.base", "storage imports pdbench.agents"),
        (
            "pdbench.agents.x",
            "from pdbench.storage.cache import C",
            "agents imports pdbench.storage",
        ),
        ("pdbench.runners.x", "from pdbench import cli", "runners imports pdbench.cli"),
        ("pdbench.runners.x", "from pdbench.ui import data", "runners imports pdbench.ui"),
        ("pdbench.ui.data", "from pdbench.runners.engine import E", "ui imports pdbench.runners"),
        ("pdbench.ui.data", "from pdbench.agents.llm import L", "ui imports pdbench.agents.llm"),
        ("pdbench.core.x", "from . import rng\nfrom ..storage import schema", "pdbench.storage"),
    ],
)
def test_the_checker_catches_each_kind_of_violation(
    module: str, source: str, expected: str
) -> None:
    found = problems(source, module)
    assert any(expected in line for line in found), found


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("pdbench.core.x", "import numpy as np\nrng = np.random.Generator(np.random.Philox(1))"),
        ("pdbench.core.x", "import hashlib, math\nfrom pdbench.core import rng"),
        (
            "pdbench.core.x",
            "from urllib.parse import urlsplit\nfrom pdbench.redact import redact_url",
        ),
        ("pdbench.ui.launcher", "def run():\n    from pdbench.runners.engine import Engine"),
        ("pdbench.ui.style", "from pdbench.agents.policy import POLICY_REGISTRY"),
        ("pdbench.cli", "from pdbench.runners.loader import load_config"),
        ("pdbench.runners.x", "from pdbench.errors import RunError"),
    ],
)
def test_the_checker_allows_what_the_rules_allow(module: str, source: str) -> None:
    assert problems(source, module) == []
