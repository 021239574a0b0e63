"""End-to-end smoke tests of the `pdbench` command line, each command in its own interpreter.

`run` works on a copy of the real `configs/` in a temporary working directory, so the run
directory (`data/runs/<run_id>`, relative to the working directory) and any cache land in tmp.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
ARTIFACTS = ("rounds.jsonl", "run_manifest.json", "aggregates.parquet")
HEAVY = ("pandas", "pyarrow", "streamlit", "litellm")


def cli(args: list[str], cwd: Path, *, entry: str = "module") -> subprocess.CompletedProcess[str]:
    """Run the CLI in a fresh interpreter: `python -m pdbench.cli` or the `pdbench` script."""
    script = Path(sys.executable).parent / "pdbench"
    if entry == "script":
        assert script.is_file(), f"console script not installed at {script}"
        command = [str(script), *args]
    else:
        command = [sys.executable, "-m", "pdbench.cli", *args]
    return subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
        timeout=300,
    )


def real_config() -> dict[str, Any]:
    return yaml.safe_load((CONFIGS / "experiment.yaml").read_text())


def assert_one_error_line(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def listing(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`pdbench run configs/experiment.yaml --replicates 2` on a copy of configs/ in a tmp cwd."""
    work = tmp_path_factory.mktemp("smoke")
    shutil.copytree(CONFIGS, work / "configs")
    proc = cli(["run", "configs/experiment.yaml", "--replicates", "2"], work)
    cfg = real_config()
    return {
        "work": work,
        "proc": proc,
        "cfg": cfg,
        "run_dir": work / cfg["run"]["output_dir"],
    }


# --------------------------------------------------------------------------------------------
# validate
# --------------------------------------------------------------------------------------------


def test_validate_real_config_prints_a_summary() -> None:
    proc = cli(["validate", "configs/experiment.yaml"], REPO, entry="script")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    cfg = real_config()
    out = proc.stdout
    assert "configs/experiment.yaml: valid" in out
    assert cfg["run"]["run_id"] in out
    assert f"replicates: {cfg['experiment']['replicates']}" in out
    assert f"conditions: {len(cfg['experiment']['conditions'])}" in out
    for cond in cfg["experiment"]["conditions"]:
        assert f"  {cond['name']}: " in out, cond["name"]


# --------------------------------------------------------------------------------------------
# run
# --------------------------------------------------------------------------------------------


def test_run_with_two_replicates_writes_the_artifacts(smoke: dict[str, Any]) -> None:
    proc, cfg, run_dir = smoke["proc"], smoke["cfg"], smoke["run_dir"]
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    names = [c["name"] for c in cfg["experiment"]["conditions"]]
    assert f"{len(names) * 2} games" in proc.stdout
    for name in ARTIFACTS:
        assert (run_dir / name).is_file(), name

    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["replicates"] == 2
    assert manifest["run_id"] == cfg["run"]["run_id"]

    records = [json.loads(line) for line in (run_dir / "rounds.jsonl").read_text().splitlines()]
    games: dict[tuple[str, int], int] = {}
    for rec in records:
        key = (rec["condition"], rec["replicate"])
        games[key] = games.get(key, 0) + 1
    assert set(games) == {(n, r) for n in names for r in (0, 1)}
    fixed_n = cfg["horizon"]["n_rounds"]
    for cond in cfg["experiment"]["conditions"]:
        if "horizon" not in cond:
            assert games[(cond["name"], 0)] == games[(cond["name"], 1)] == fixed_n

    agg = pd.read_parquet(run_dir / "aggregates.parquet")
    assert len(agg) == 3 * len(names)
    assert list(dict.fromkeys(agg["condition"])) == names  # config order
    for name in names:
        rows = agg[agg["condition"] == name]
        reps = rows[rows["scope"] == "replicate"]
        summary = rows[rows["scope"] == "condition"]
        assert sorted(reps["replicate"].astype(int)) == [0, 1]
        assert len(summary) == 1
        assert summary["n_replicates"].iloc[0] == 2
        for column in ("agent_a_cooperation_rate", "agent_b_total_payoff", "n_rounds"):
            assert summary[column].iloc[0] == pytest.approx(reps[column].mean()), (name, column)
        # rounds per replicate agree with rounds.jsonl
        for _, row in reps.iterrows():
            assert row["n_rounds"] == games[(name, int(row["replicate"]))]


def test_run_tft_vs_alld_in_the_real_config_matches_hand_values(smoke: dict[str, Any]) -> None:
    cfg = smoke["cfg"]
    n = cfg["horizon"]["n_rounds"]
    cond = next(c for c in cfg["experiment"]["conditions"] if c["name"] == "TFT_vs_ALLD")
    assert cond["agent_a"]["overrides"]["policy"] == "TFT"
    assert cond["agent_b"]["overrides"]["policy"] == "ALLD"
    agg = pd.read_parquet(smoke["run_dir"] / "aggregates.parquet")
    rows = agg[agg["condition"] == "TFT_vs_ALLD"]
    assert len(rows) == 3
    for _, row in rows.iterrows():
        # TFT: C then D x (n-1); ALLD: D x n
        assert row["agent_a_cooperation_rate"] == pytest.approx(1 / n)
        assert row["agent_b_cooperation_rate"] == 0
        assert row["agent_a_total_payoff"] == pytest.approx(0 + (n - 1) * 1)  # S then P each round
        assert row["agent_b_total_payoff"] == pytest.approx(5 + (n - 1) * 1)  # T then P
        assert row["agent_a_exploitability_payoff_gap"] == pytest.approx(5)
        # first 10-round window: 1 C among 20 moves = 0.05 <= 0.2
        assert row["time_to_collapse"] == 0


def test_run_refuses_an_existing_run_dir_without_overwrite(smoke: dict[str, Any]) -> None:
    run_dir = smoke["run_dir"]
    before = (run_dir / "rounds.jsonl").read_bytes()
    proc = cli(["run", "configs/experiment.yaml", "--replicates", "2"], smoke["work"])
    assert_one_error_line(proc, "--overwrite")
    assert (run_dir / "rounds.jsonl").read_bytes() == before


def test_dry_run_writes_nothing_and_predicts_llm_calls(
    smoke: dict[str, Any], tmp_path: Path
) -> None:
    shutil.copytree(CONFIGS, tmp_path / "configs")
    before = listing(tmp_path)
    proc = cli(["run", "configs/experiment.yaml", "--replicates", "2", "--dry-run"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert listing(tmp_path) == before  # no data/, no cache, nothing
    # the real run's LLM decisions: one per (round, LLM side); each took 1..1+max_retries calls
    records = [
        json.loads(line) for line in (smoke["run_dir"] / "rounds.jsonl").read_text().splitlines()
    ]
    decisions = sum(len(rec.get("raw_responses", {})) for rec in records)
    attempts = sum(len(a) for rec in records for a in rec.get("raw_responses", {}).values())
    max_retries = yaml.safe_load((CONFIGS / "agents" / "llm_default.yaml").read_text())[
        "max_retries"
    ]
    assert decisions > 0
    assert decisions <= attempts <= decisions * (1 + max_retries)
    assert (
        f"expected LLM calls: {decisions} (up to {decisions * (1 + max_retries)}" in proc.stdout
    ), proc.stdout


# --------------------------------------------------------------------------------------------
# aggregate and ui
# --------------------------------------------------------------------------------------------


def test_aggregate_rewrites_identical_values(smoke: dict[str, Any]) -> None:
    run_dir = smoke["run_dir"]
    before = pd.read_parquet(run_dir / "aggregates.parquet")
    proc = cli(["aggregate", str(run_dir)], smoke["work"])
    assert proc.returncode == 0, proc.stderr
    assert f"({len(before)} rows)" in proc.stdout
    after = pd.read_parquet(run_dir / "aggregates.parquet")
    pd.testing.assert_frame_equal(before, after)


def test_ui_print_command(smoke: dict[str, Any]) -> None:
    run_dir = smoke["run_dir"]
    proc = cli(["ui", str(run_dir), "--print-command"], smoke["work"])
    assert proc.returncode == 0, proc.stderr
    assert "streamlit run" in proc.stdout
    tokens = shlex.split(proc.stdout.strip())
    assert str(run_dir.resolve()) in tokens
    app = tokens[tokens.index("run") + 1]
    assert app.endswith(".py") and Path(app).is_file(), app


@pytest.mark.parametrize(
    "case", ["missing_dir", "no_manifest", "empty_rounds"], ids=lambda c: str(c)
)
def test_aggregate_on_a_broken_run_dir_fails_with_one_line(
    case: str, smoke: dict[str, Any], tmp_path: Path
) -> None:
    target = tmp_path / "run"
    if case == "no_manifest":
        target.mkdir()
        shutil.copy(smoke["run_dir"] / "rounds.jsonl", target / "rounds.jsonl")
    elif case == "empty_rounds":
        target.mkdir()
        shutil.copy(smoke["run_dir"] / "run_manifest.json", target / "run_manifest.json")
        (target / "rounds.jsonl").write_text("")
    before = listing(tmp_path)
    proc = cli(["aggregate", str(target)], tmp_path)
    assert_one_error_line(proc, str(target))
    assert listing(tmp_path) == before  # no aggregates.parquet, nothing else


# --------------------------------------------------------------------------------------------
# lazy imports
# --------------------------------------------------------------------------------------------

PROBE = """
import json, sys
sys.argv = ["pdbench", *json.loads(sys.argv[1])]
import pdbench.cli
code = None
try:
    pdbench.cli.main()
except SystemExit as exc:
    code = exc.code
print("PROBE " + json.dumps({"code": code, "heavy": [m for m in HEAVY if m in sys.modules]}))
"""


def probe_imports(args: list[str], cwd: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.replace("HEAVY", repr(HEAVY)), json.dumps(args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("PROBE "))
    return {**json.loads(line.removeprefix("PROBE ")), "stdout": proc.stdout}


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["validate", "configs/experiment.yaml"],
        ["validate", "configs/talk.yaml"],
        ["validate", "configs/groups.yaml"],
        ["validate", "configs/group_tournament.yaml"],
        ["validate", "configs/group_evolution.yaml"],
    ],
    ids=["help", "validate", "validate_talk", "groups", "group_tournament", "group_evolution"],
)
def test_help_and_validate_do_not_import_heavy_libraries(args: list[str]) -> None:
    result = probe_imports(args, REPO)
    assert result["code"] in (0, None)
    assert result["heavy"] == []
    if args == ["--help"]:
        for command in ("validate", "run", "aggregate", "ui"):
            assert command in result["stdout"]
    else:
        assert f"{args[1]}: valid" in result["stdout"]


def test_import_probe_detects_heavy_libraries(smoke: dict[str, Any]) -> None:
    """Control for the probe above: `aggregate` does need pyarrow, and the probe sees it."""
    result = probe_imports(["aggregate", str(smoke["run_dir"])], smoke["work"])
    assert result["code"] in (0, None)
    assert "pyarrow" in result["heavy"]


def test_tournament_imports_pyarrow_only(tmp_path: Path) -> None:
    """`tournament` writes its Parquet files with pyarrow and loads no pandas (pyarrow's
    `array` would import it), app or provider library."""
    config = yaml.safe_load((CONFIGS / "tournament.yaml").read_text())
    config["tournament"]["repetitions"] = 2
    path = tmp_path / "tournament.yaml"
    path.write_text(yaml.safe_dump(config))
    result = probe_imports(["tournament", str(path), "-o", str(tmp_path / "out")], tmp_path)
    assert result["code"] in (0, None)
    assert result["heavy"] == ["pyarrow"]
    leaderboard = pd.read_parquet(tmp_path / "out" / "leaderboard.parquet")
    assert len(leaderboard) == len(config["tournament"]["players"])


@pytest.mark.parametrize(
    "args",
    [["aggregate"], ["profile"], ["report"], ["resume"], ["compare", "--across-runs"]],
)
def test_a_directory_name_the_system_refuses_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """A name longer than the file system allows (ENAMETOOLONG) is one line, exit 2."""
    from tests.support.cli import run_in_process

    name = str(tmp_path / ("a" * 300))
    code, _, err = run_in_process([*args, name, *([name] if "compare" in args else [])], capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "File name too long" in lines[0] and "Traceback" not in err
