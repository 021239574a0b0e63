"""Config fuzzing (issue 9): random mutations of the example configs either load into a valid
run plan or are refused with one `file: dotted.path: message` line per problem; no other
outcome, no traceback, nothing written. Mutants that once broke that rule are kept in
tests/fuzz_corpus/ and checked on every run.
"""

from __future__ import annotations

import random
import re
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from tests.support.fuzz import KEYS, OPERATORS, REPO, VALUES, examples, mutate

from pdbench.errors import ConfigError
from pdbench.runners.config.loader import load_config
from pdbench.runners.plan import describe_plan

# 1,200 mutants (2,400 until the suite had to get faster): the first 1,200 of the same seeded
# sequence. Within them every mutation operator and every entry of KEYS is applied to each
# example config, and every entry of VALUES to some example (checked below).
N_MUTANTS = 1200
CORPUS = REPO / "tests" / "fuzz_corpus"
# `file: message` or `file: dotted.path: message`; a file name may hold ': ' only in a path.
LINE = re.compile(r"^\S[^\n]*?\.yaml: [^\n]+$")


def check(path: Path) -> str:
    """'valid' or 'refused' for one config file; fails the test on anything else."""
    try:
        loaded = load_config(path)
    except ConfigError as exc:
        lines = exc.lines()
        assert lines and all(LINE.match(line) for line in lines), (path, lines)
        assert all("Traceback" not in line and "\n" not in line for line in lines), lines
        return "refused"
    plan = describe_plan(loaded)
    assert "games: " in plan and "rounds: " in plan
    return "valid"


def dump(tree: object) -> str:
    """YAML text of a mutant (NaN and infinities written as YAML does)."""
    return yaml.safe_dump(tree, allow_unicode=True, sort_keys=False)


@pytest.fixture(scope="module")
def config_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz")
    for sub in ("agents", "prompts"):
        shutil.copytree(REPO / "configs" / sub, root / sub)
    (root.parent / "outside.yaml").write_text("type: policy\npolicy: TFT\n")
    return root


@pytest.mark.slow
def test_mutated_configs_load_or_are_refused_with_one_line_each(config_root: Path) -> None:
    rng = random.Random(20261123)
    seeds = examples()
    before = sorted(p.relative_to(config_root) for p in config_root.rglob("*"))
    outcomes = {"valid": 0, "refused": 0}
    applied: dict[str, Counter[str]] = {name: Counter() for name, _ in seeds}
    slowest = 0.0
    for i in range(N_MUTANTS):
        name, tree = seeds[i % len(seeds)]
        path = config_root / f"m{i}_{name}"
        path.write_text(dump(mutate(tree, rng, applied[name])), encoding="utf-8")
        started = time.perf_counter()
        try:
            outcomes[check(path)] += 1
        except Exception as exc:  # keep the mutant for the corpus, then fail
            found = CORPUS / f"found_{path.stem}.yaml"
            found.write_text("# expect: refused\n" + path.read_text(encoding="utf-8"))
            message = f"{type(exc).__name__}: {exc}"
            raise AssertionError(
                f"mutant {path.name} (saved as {found}; minimise it and check the expect line): "
                f"{message[:500]}"
            ) from exc
        slowest = max(slowest, time.perf_counter() - started)
        path.unlink()
    after = sorted(p.relative_to(config_root) for p in config_root.rglob("*"))
    assert after == before  # nothing written by loading or planning
    # Every operator and every key of KEYS was applied to every example config, every value of
    # VALUES to some example (at 1,200 mutants: each operator 21-237 times per example).
    edits = [*OPERATORS, *(f"key:{i}" for i in range(len(KEYS)))]
    for name, counts in applied.items():
        assert [e for e in edits if not counts[e]] == [], name
    used = sum(applied.values(), Counter())
    assert [i for i in range(len(VALUES)) if not used[f"value:{i}"]] == []
    # Both outcomes happen a lot, or the mutations are too timid or too destructive.
    assert outcomes["valid"] > N_MUTANTS // 10 and outcomes["refused"] > N_MUTANTS // 2, outcomes
    print(f"fuzz: {N_MUTANTS} mutants, {outcomes}, slowest {slowest * 1000:.0f} ms")


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.yaml")), ids=lambda p: p.stem)
def test_corpus_of_found_cases(path: Path, config_root: Path) -> None:
    target = config_root / path.name
    shutil.copy(path, target)
    expected = path.read_text().splitlines()[0].removeprefix("# expect: ").strip()
    assert check(target) == expected
