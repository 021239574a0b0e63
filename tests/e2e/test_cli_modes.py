"""The same command-line options mean the same thing in `run`, `tournament` and `evolve`; every
command's help shows an example; `validate` and `--dry-run` read every kind of config; `resume`
continues a run of any kind from its directory."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import yaml
from tests.support.cli import run_in_process

REPO = Path(__file__).resolve().parents[2]
RUN_COMMANDS = {
    "run": "experiment.yaml",
    "tournament": "tournament.yaml",
    "evolve": "evolution.yaml",
}
SHARED = [
    "--seed",
    "--noise",
    "--dry-run",
    "--output-dir",
    "--overwrite",
    "--resume",
    "--concurrency",
    "--no-cache",
    "--cache-dir",
]


def pdbench(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pdbench.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )


def option_lines(help_text: str) -> dict[str, str]:
    """Option -> its help line (first line of its row in rich's table)."""
    out = {}
    for line in help_text.splitlines():
        cells = line.strip("│ ").split()
        if cells and cells[0].startswith("--"):
            out[cells[0]] = " ".join(cells[1:])
    return out


@pytest.mark.slow
def test_run_commands_share_their_options_and_show_an_example() -> None:
    helps = {cmd: pdbench(cmd, "--help") for cmd in RUN_COMMANDS}
    tables = {}
    for cmd, done in helps.items():
        assert done.returncode == 0, done.stderr
        assert f"Example: pdbench {cmd} configs/" in done.stdout, cmd
        tables[cmd] = option_lines(done.stdout)
        assert all(option in tables[cmd] for option in SHARED), (cmd, sorted(tables[cmd]))
    for option in SHARED:  # the same words in every command's help
        assert len({tables[cmd][option] for cmd in RUN_COMMANDS}) == 1, option
    for cmd in ("validate", "resume", "aggregate", "ui", "cache stats", "cache clear"):
        done = pdbench(*cmd.split(), "--help")
        assert done.returncode == 0 and "Example: pdbench " in done.stdout, cmd


@pytest.mark.parametrize("command", list(RUN_COMMANDS))
def test_validate_and_dry_run_read_every_kind(command: str) -> None:
    config = f"configs/{RUN_COMMANDS[command]}"
    done = pdbench("validate", config)
    assert done.returncode == 0, done.stderr
    kind = yaml.safe_load((REPO / config).read_text()).keys() & {
        "experiment",
        "tournament",
        "evolution",
    }
    assert f"valid {kind.pop()} config" in done.stdout
    dry = pdbench(command, config, "--dry-run", "--seed", "5")
    assert dry.returncode == 0 and "dry run: nothing was written" in dry.stdout
    assert "seed: 5" in dry.stdout  # the override is what would run


def test_a_config_of_another_kind_names_its_command() -> None:
    done = pdbench("run", "configs/tournament.yaml")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().endswith("run it with `pdbench tournament`")


def test_seed_and_noise_mean_the_same_in_every_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--seed and --noise land in the run's config snapshot and manifest, for every kind.
    (In this process: what is checked is the runs' artifacts, not a process's start-up.)"""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(REPO / "configs", tmp_path / "configs")
    small = {
        "run.yaml": ("experiment", "replicates", 1),
        "tournament.yaml": ("tournament", "repetitions", 1),
        "evolution.yaml": ("evolution", "generations", 3),
    }
    for command, name in RUN_COMMANDS.items():
        path = tmp_path / "configs" / name
        data = yaml.safe_load(path.read_text())
        section, key, value = small["run.yaml" if command == "run" else name]
        data[section][key] = value
        data["horizon"] = {"type": "fixed", "n_rounds": 5}
        path.write_text(yaml.safe_dump(data))
        out = tmp_path / command
        code, _, err = run_in_process(
            [
                command,
                str(path),
                "-o",
                str(out),
                "--seed",
                "31",
                "--noise",
                "0.1",
                "--cache-dir",
                str(tmp_path / "cache"),
            ],
            capsys,
        )
        assert code == 0, err
        manifest_name = {"run": "run_manifest.json", "tournament": "tournament_manifest.json"}
        manifest = orjson.loads(
            (out / manifest_name.get(command, "evolution_manifest.json")).read_bytes()
        )
        assert manifest["seed"] == 31 and manifest["config"]["run"]["seed"] == 31, command
        assert manifest["config"]["game"]["noise"] == 0.1, command
        assert manifest["overrides"] == {"run.seed": 31, "game.noise": 0.1}, command
        code, _, err = run_in_process([command, str(path), "-o", str(out)], capsys)
        assert code == 2 and "--overwrite" in err, command
