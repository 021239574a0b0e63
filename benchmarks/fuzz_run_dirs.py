"""Seeded fuzzing of damaged experiment run directories at scale (the test suite runs 50 end-to-end cases of
tests/integration/test_damaged_artifacts.py): `uv run python benchmarks/fuzz_run_dirs.py [N]`
runs N cases (default 600) through pytest with the same oracle and prints the outcome counts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    cases = sys.argv[1] if len(sys.argv) > 1 else "600"
    env = dict(os.environ, PDBENCH_FUZZ_CASES=cases)
    test = "tests/integration/test_damaged_artifacts.py::test_fuzz_damaged_run_dirs_refuse_in_one_line_or_give_the_right_output"
    return subprocess.call([sys.executable, "-m", "pytest", "-q", test], cwd=ROOT, env=env)


if __name__ == "__main__":
    raise SystemExit(main())
