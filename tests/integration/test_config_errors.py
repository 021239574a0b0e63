"""Broken configs: `pdbench validate` and `pdbench run` both refuse them the same way.

For every case both commands run, each in its own process, from the case's own directory with the
config at `cfg/experiment.yaml` (next to a copy of the real `configs/` files). Each must exit with
code 2, print exactly one `file: dotted.path: message` line per problem on stderr, name the right
file and path, show no traceback, and create nothing (no output directory).

For speed the processes are forked from one interpreter that has already imported pdbench (see
FORK_DRIVER); `test_forked_runs_match_real_interpreter_runs` checks that a fresh
`python -m pdbench.cli` behaves identically.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
EXPERIMENT = "cfg/experiment.yaml"  # as given on the command line, relative to the case dir
POLICIES = "cfg/agents/policies.yaml"
COMMANDS = ("validate", "run")
SPEC_POLICIES = ("ALLC", "ALLD", "TFT", "GRIM", "GTFT", "WSLS")  # the spec's required policies
PERSONAS = sorted(p.stem for p in (CONFIGS / "prompts" / "personas").glob("*.md"))

TFT = "{ref: agents/policies.yaml, overrides: {policy: TFT}}"
ALLD = "{ref: agents/policies.yaml, overrides: {policy: ALLD}}"


def experiment_yaml(
    agent_a: str = TFT,
    agent_b: str = ALLD,
    *,
    horizon: str = "{type: fixed, n_rounds: 3}",
    replicates: str = "1",
    cond_extra: str = "",
    tail: str = "",
) -> str:
    """A tiny experiment; `out` (relative to the working directory) is where a run would write."""
    return (
        "run: {run_id: broken, seed: 1, output_dir: out}\n"
        f"horizon: {horizon}\n"
        "experiment:\n"
        f"  replicates: {replicates}\n"
        "  conditions:\n"
        "    - name: c0\n"
        f"      agent_a: {agent_a}\n"
        f"      agent_b: {agent_b}\n"
        f"{cond_extra}"
        f"{tail}"
    )


@dataclass(frozen=True)
class Line:
    """One expected stderr line: file, dotted path (a regex), and substrings of the message."""

    file: str
    path: str  # regex matched against the whole path part
    contains: tuple[str, ...] = ()


@dataclass(frozen=True)
class Case:
    id: str
    experiment: str
    lines: tuple[Line, ...]
    files: dict[str, str] = field(default_factory=dict)  # extra files under cfg/


A0 = r"experiment\.conditions\[0\]\.agent_a"
B0 = r"experiment\.conditions\[0\]\.agent_b"

CASES: tuple[Case, ...] = (
    Case(
        "yaml_syntax_error",
        experiment_yaml(tail="bad: [unclosed\n"),
        (Line(EXPERIMENT, r"line \d+, column \d+", ("YAML syntax error",)),),
    ),
    Case(
        "yaml_syntax_error_in_ref",
        experiment_yaml(agent_a="{ref: agents/broken.yaml}"),
        (Line("cfg/agents/broken.yaml", r"line \d+, column \d+", ("YAML syntax error",)),),
        files={"agents/broken.yaml": "type: policy\npolicy: [TFT\n"},
    ),
    Case(
        "unknown_policy",
        experiment_yaml(agent_a="{ref: agents/policies.yaml, overrides: {policy: NOPE}}"),
        (
            Line(
                EXPERIMENT, A0 + r"\.overrides\.policy", ("unknown policy", "NOPE", *SPEC_POLICIES)
            ),
        ),
    ),
    Case(
        "missing_ref_file",
        experiment_yaml(agent_b="{ref: agents/nope.yaml}"),
        (Line(EXPERIMENT, B0 + r"\.ref", ("not found", "agents/nope.yaml")),),
    ),
    Case(
        # ../outside.yaml exists (the fixture writes it next to cfg/) but is outside the root
        "ref_outside_config_root",
        experiment_yaml(agent_b="{ref: ../outside.yaml}"),
        (Line(EXPERIMENT, B0 + r"\.ref", ("config root", "../outside.yaml")),),
    ),
    Case(
        "payoff_cell_not_a_number",
        experiment_yaml(
            tail='game:\n  payoff_matrix:\n    C: {C: [3, 3], D: [0, 5]}\n    D: {C: [5, "x"], D: [1, 1]}\n'
        ),
        (Line(EXPERIMENT, r"game\.payoff_matrix\.D\.C", ("number", "'x'")),),
    ),
    Case(
        "payoff_cell_missing",
        experiment_yaml(
            tail="game:\n  payoff_matrix:\n    C: {C: [3, 3], D: [0, 5]}\n    D: {C: [5, 0]}\n"
        ),
        (Line(EXPERIMENT, r"game\.payoff_matrix\.D\.D", ("pair",)),),
    ),
    Case(
        "unknown_top_level_key",
        experiment_yaml(tail="bogus: 1\n"),
        (
            Line(
                EXPERIMENT,
                r"bogus",
                ("unknown key", "run", "game", "horizon", "experiment", "metrics"),
            ),
        ),
    ),
    Case(
        "unknown_key_in_agent_override",
        experiment_yaml(agent_a="{ref: agents/policies.yaml, overrides: {policy: TFT, bogus: 1}}"),
        (
            Line(
                EXPERIMENT,
                A0 + r"\.overrides\.bogus",
                ("type", "policy", "name", "history_window", "params"),
            ),
        ),
    ),
    Case(
        "unknown_nested_key_in_agent_override",
        experiment_yaml(agent_a="{ref: agents/policies.yaml, overrides: {params: {bogus: 1}}}"),
        (
            Line(
                EXPERIMENT,
                A0 + r"\.overrides\.params\.bogus",
                ("generous_prob", "win_threshold", "coop_prob"),
            ),
        ),
    ),
    Case(
        "unknown_key_in_inline_agent",
        experiment_yaml(agent_a="{type: policy, policy: TFT, bogus: 1}"),
        (
            Line(
                EXPERIMENT,
                A0 + r"\.bogus",
                ("unknown key", "type", "policy", "name", "history_window", "params"),
            ),
        ),
    ),
    Case(
        "unknown_key_in_referenced_file",
        experiment_yaml(agent_a="{ref: agents/extra.yaml}"),
        (Line("cfg/agents/extra.yaml", r"bogus", ("unknown key", "policy", "params")),),
        files={"agents/extra.yaml": "type: policy\npolicy: TFT\nbogus: 1\n"},
    ),
    Case(
        # a typo next to `ref` ("overides") must be reported as an unknown key of the reference,
        # listing the valid keys, not as some other problem
        "misspelled_overrides_next_to_ref",
        experiment_yaml(agent_a="{ref: agents/policies.yaml, overides: {policy: GRIM}}"),
        (Line(EXPERIMENT, A0 + r"\.overides", ("unknown key", "ref", "overrides")),),
    ),
    Case(
        # `name` is a valid agent key, but the referenced file does not have it
        "override_of_key_missing_in_ref_file",
        experiment_yaml(agent_a="{ref: agents/tiny.yaml, overrides: {name: X}}"),
        (Line(EXPERIMENT, A0 + r"\.overrides\.name", ("tiny.yaml", "does not have")),),
        files={"agents/tiny.yaml": "type: policy\npolicy: TFT\n"},
    ),
    Case(
        "negative_replicates",
        experiment_yaml(replicates="-3"),
        (Line(EXPERIMENT, r"experiment\.replicates", ("-3",)),),
    ),
    Case(
        "stop_prob_zero",
        experiment_yaml(horizon="{type: geometric, stop_prob: 0}"),
        (Line(EXPERIMENT, r"horizon\.stop_prob", ("must be at least 1e-06",)),),
    ),
    Case(
        "stop_prob_one",
        experiment_yaml(horizon="{type: geometric, stop_prob: 1}"),
        (Line(EXPERIMENT, r"horizon\.stop_prob", ("must be at least 1e-06",)),),
    ),
    Case(
        "stop_prob_above_one",
        experiment_yaml(horizon="{type: geometric, stop_prob: 1.5}"),
        (Line(EXPERIMENT, r"horizon\.stop_prob", ("must be at least 1e-06", "1.5")),),
    ),
    Case(
        "stop_prob_in_condition_horizon",
        experiment_yaml(cond_extra="      horizon: {type: geometric, stop_prob: 1.5}\n"),
        (Line(EXPERIMENT, r"experiment\.conditions\[0\]\.horizon\.stop_prob", ("1.5",)),),
    ),
    Case(
        "geometric_without_stop_prob",
        experiment_yaml(horizon="{type: geometric}"),
        (Line(EXPERIMENT, r"horizon(\.stop_prob)?", ("stop_prob",)),),
    ),
    Case(
        "unknown_persona_override",
        experiment_yaml(agent_a="{ref: agents/llm_default.yaml, overrides: {persona: nope}}"),
        (Line(EXPERIMENT, A0 + r"\.overrides\.persona", ("unknown persona", "nope", *PERSONAS)),),
    ),
    Case(
        "unknown_persona_in_referenced_file",
        experiment_yaml(agent_a="{ref: agents/llm_bad.yaml}"),
        (Line("cfg/agents/llm_bad.yaml", r"persona", ("unknown persona", "nope")),),
        files={
            "agents/llm_bad.yaml": (CONFIGS / "agents" / "llm_default.yaml")
            .read_text()
            .replace("persona: cooperative", "persona: nope", 1)
        },
    ),
    Case(
        "two_problems_two_lines",
        experiment_yaml(
            agent_a="{ref: agents/policies.yaml, overrides: {policy: NOPE}}",
            agent_b="{ref: agents/policies.yaml, overrides: {policy: ALSO_NOPE}}",
        ),
        (
            Line(EXPERIMENT, A0 + r"\.overrides\.policy", ("NOPE",)),
            Line(EXPERIMENT, B0 + r"\.overrides\.policy", ("ALSO_NOPE",)),
        ),
    ),
    Case(
        # a YAML error in agents/policies.yaml, which both agents reference: one problem, one line
        "yaml_error_in_file_referenced_twice",
        experiment_yaml(),
        (Line(POLICIES, r"line \d+, column \d+", ("YAML syntax error",)),),
        files={"agents/policies.yaml": "type: policy\npolicy: [TFT\n"},
    ),
    Case(
        # one bad key in agents/policies.yaml, which both agents reference: one problem, one line
        "problem_in_file_referenced_twice",
        experiment_yaml(),
        (Line(POLICIES, r"bogus", ("unknown key",)),),
        files={
            "agents/policies.yaml": (CONFIGS / "agents" / "policies.yaml").read_text()
            + "bogus: 1\n"
        },
    ),
)

LINE_RE = re.compile(r"^(?P<file>[^:]+): (?P<path>[^:]+): (?P<message>.+)$")


def _prepare(case_dir: Path, case: Case) -> None:
    shutil.copytree(CONFIGS, case_dir / "cfg")
    (case_dir / "cfg" / "experiment.yaml").write_text(case.experiment, encoding="utf-8")
    for rel, text in case.files.items():
        (case_dir / "cfg" / rel).write_text(text, encoding="utf-8")
    # a perfectly valid agent file, but outside the config root
    (case_dir / "outside.yaml").write_text("type: policy\npolicy: TFT\n", encoding="utf-8")


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m pdbench.cli ARGS` in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "pdbench.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
        timeout=120,
    )


# Starting ~50 interpreters costs ~0.7 s of CPU each. Instead one interpreter imports pdbench.cli
# once and forks one child process per command; each child gets its own working directory, its
# own stdout/stderr files and `sys.argv`, and calls `pdbench.cli.main()` exactly as the `pdbench`
# console script does; its exit status is the command's exit code. An exception escaping main()
# is printed as Python would (a traceback) with status 1. Real `python -m pdbench.cli` runs are
# compared with the forked ones in `test_forked_runs_match_real_interpreter_runs`.
FORK_DRIVER = r"""
import json, os, sys, traceback
jobs = json.loads(open(sys.argv[1]).read())
import pdbench.cli
import pdbench.runners.plan  # what validate and run import first (config models, numpy)
pids = []
for job in jobs:
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(job["cwd"])
            os.dup2(os.open(job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
            os.dup2(os.open(job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
            sys.argv = ["pdbench", *job["args"]]
            try:
                pdbench.cli.main()
                code = 0
            except SystemExit as exc:
                if exc.code is None or isinstance(exc.code, int):
                    code = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
            except BaseException:
                traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    pids.append(pid)
print(json.dumps([os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]))
"""


def run_cli_many(
    jobs: list[tuple[list[str], Path]], scratch: Path
) -> list[subprocess.CompletedProcess[str]]:
    """Run each (args, cwd) as its own CLI process; results in order."""
    if not hasattr(os, "fork"):
        return [_cli(args, cwd) for args, cwd in jobs]
    scratch.mkdir(parents=True, exist_ok=True)
    spec = [
        {
            "args": args,
            "cwd": str(cwd),
            "stdout": str(scratch / f"{i}.out"),
            "stderr": str(scratch / f"{i}.err"),
        }
        for i, (args, cwd) in enumerate(jobs)
    ]
    (scratch / "jobs.json").write_text(json.dumps(spec))
    driver = subprocess.run(
        [sys.executable, "-c", FORK_DRIVER, str(scratch / "jobs.json")],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
        timeout=300,
    )
    assert driver.returncode == 0, driver.stderr
    codes = json.loads(driver.stdout)
    return [
        subprocess.CompletedProcess(
            ["pdbench", *args],
            code,
            Path(job["stdout"]).read_text(),
            Path(job["stderr"]).read_text(),
        )
        for (args, _), job, code in zip(jobs, spec, codes, strict=True)
    ]


@dataclass
class Outcome:
    results: dict[str, subprocess.CompletedProcess[str]]
    listing_after: set[str]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    root = tmp_path_factory.mktemp("broken_configs")
    keys: list[tuple[str, str]] = []
    jobs: list[tuple[list[str], Path]] = []
    for case in CASES:
        case_dir = root / "cases" / case.id
        case_dir.mkdir(parents=True)
        _prepare(case_dir, case)
        for command in COMMANDS:
            keys.append((case.id, command))
            jobs.append(([command, EXPERIMENT], case_dir))
    done = dict(zip(keys, run_cli_many(jobs, root / "io"), strict=True))
    return {
        case.id: Outcome(
            results={command: done[(case.id, command)] for command in COMMANDS},
            listing_after={p.name for p in (root / "cases" / case.id).iterdir()},
        )
        for case in CASES
    }


@pytest.mark.parametrize(
    ("case", "command"),
    [(case, command) for case in CASES for command in COMMANDS],
    ids=[f"{case.id}-{command}" for case in CASES for command in COMMANDS],
)
def test_broken_config_is_refused_with_one_line_per_problem(
    case: Case, command: str, outcomes: dict[str, Outcome]
) -> None:
    proc = outcomes[case.id].results[command]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout.strip() == "", proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == len(case.lines), "expected one line per problem, got:\n" + proc.stderr
    for line, expected in zip(lines, case.lines, strict=True):
        match = LINE_RE.match(line)
        assert match, f"not `file: dotted.path: message`: {line!r}"
        assert match["file"] == expected.file, line
        assert re.fullmatch(expected.path, match["path"]), line
        for needle in expected.contains:
            assert needle in match["message"], f"{needle!r} not in {line!r}"
    # nothing was written: the case directory holds only what the test put there
    assert outcomes[case.id].listing_after == {"cfg", "outside.yaml"}


def test_debug_shows_a_traceback(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.id == "unknown_policy")
    _prepare(tmp_path, case)
    proc = _cli(["--debug", "validate", EXPERIMENT], tmp_path)
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr
    assert "ConfigError" in proc.stderr
    assert "unknown policy" in proc.stderr


def test_forked_runs_match_real_interpreter_runs(
    outcomes: dict[str, Outcome], tmp_path: Path
) -> None:
    """`python -m pdbench.cli` in a fresh interpreter prints and exits exactly like a forked run."""
    case = next(c for c in CASES if c.id == "two_problems_two_lines")
    _prepare(tmp_path, case)  # the same relative layout, so the displayed paths are identical
    for command in ("validate", "run"):
        real = _cli([command, EXPERIMENT], tmp_path)
        forked = outcomes[case.id].results[command]
        assert (real.returncode, real.stdout, real.stderr) == (
            forked.returncode,
            forked.stdout,
            forked.stderr,
        )
        assert real.returncode == 2
        assert len(real.stderr.splitlines()) == 2
    assert {p.name for p in tmp_path.iterdir()} == {"cfg", "outside.yaml"}
