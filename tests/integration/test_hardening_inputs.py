"""Hardening against bad input (issue 9): every malformed or hostile config, run directory or
option gives exit 2 and one line per problem, never a traceback, and nothing escapes the config
root or echoes a secret. Each test names the numbered case of the issue it covers."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.support.cli import run_in_process
from tests.support.configs import REPO, execute, experiment, llm, write_config

KEY = "sk-live-0123456789abcdefABCDEF"


def cli_lines(args: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    """stderr lines of a `pdbench` call that must fail with exit 2 and no traceback."""
    code, _, err = run_in_process(args, capsys)
    assert code == 2, err
    assert "Traceback" not in err and err.strip(), err
    return err.strip().splitlines()


def validate(path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    return cli_lines(["validate", str(path)], capsys)


def write_text(tmp_path: Path, text: str, name: str = "bad.yaml") -> Path:
    shutil.copytree(REPO / "configs", tmp_path, dirs_exist_ok=True)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------
# 3. the app listens on this machine unless asked otherwise


def test_3_the_app_binds_loopback_and_warns_about_wider_addresses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_in_process(["ui", "--print-command"], capsys)
    assert code == 0 and "--server.address 127.0.0.1" in out and not err
    code, out, err = run_in_process(["ui", "--print-command", "--address", "0.0.0.0"], capsys)
    assert code == 0 and "--server.address 0.0.0.0" in out
    assert "warning: the app listens on 0.0.0.0" in err and "API keys" in err


# --------------------------------------------------------------------------------------------
# 4. a persona file may not lead out of the config root


def test_4_a_persona_link_out_of_the_root_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "outside.md"
    secret.write_text("Persona: spy. THE SECRET OUTSIDE TEXT\n")
    cfg_dir = tmp_path / "cfg"
    cfg = write_config(experiment([("c", llm("spy"), "TFT")]), cfg_dir)
    os.symlink(secret, cfg_dir / "prompts" / "personas" / "spy.md")
    lines = validate(cfg, capsys)
    assert len(lines) == 1
    assert "overrides.persona: the persona file: path leaves the config root" in lines[0]
    assert lines[0].endswith("(got 'spy')") and "SECRET" not in lines[0]
    assert cli_lines(["run", str(cfg), "-o", str(tmp_path / "out")], capsys) == lines
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------------------
# 5. a key pasted into the config is never echoed; credentials do not go into base_url


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("api_key_env", KEY, "api_key_env: must be the NAME of the environment variable"),
        (
            "api_key_env",
            "OPENAI_API_KEY_" + KEY.upper().replace("-", "_"),
            None,
        ),  # a valid name: accepted
        ("base_url", f"http://user:{KEY}@127.0.0.1:8000/v1", "base_url: must not hold credentials"),
    ],
)
def test_5_secrets_in_the_config_are_not_echoed(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    field: str,
    value: str,
    expected: str | None,
) -> None:
    agent = llm(provider="openai", model="m", **{field: value})
    cfg = write_config(experiment([("c", agent, "TFT")]), tmp_path / "cfg")
    if expected is None:
        assert run_in_process(["validate", str(cfg)], capsys)[0] == 0
        return
    lines = validate(cfg, capsys)
    assert len(lines) == 1 and expected in lines[0], lines
    assert KEY not in lines[0] and KEY.lower() not in lines[0]


# --------------------------------------------------------------------------------------------
# 11. hostile sizes fail at once with one line


def alias_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\nrun: {run_id: x, seed: 1, output_dir: o}\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (alias_bomb(), "too many values (over 100,000 once refs and YAML aliases are expanded)"),
        ("a: " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply (at most 40 levels)"),
        ("a: " + "{b: " * 60 + "1" + "}" * 60 + "\n", "nested too deeply (at most 40 levels)"),
        ("x: '" + "y" * 1_100_000 + "'\n", "file too large"),
    ],
    ids=["alias_bomb", "deep_lists", "deep_maps", "huge_file"],
)
def test_11_hostile_yaml_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    lines = validate(write_text(tmp_path, text), capsys)
    assert len(lines) == 1 and expected in lines[0], lines


@pytest.mark.parametrize(
    ("horizon", "replicates", "expected"),
    [
        (
            {"type": "geometric", "stop_prob": 1e-300},
            1,
            "horizon.stop_prob: must be at least 1e-06",
        ),
        ({"type": "fixed", "n_rounds": 10**12}, 1, "horizon.n_rounds: Input should be less than"),
        ({"type": "fixed", "n_rounds": 5}, 10**11, "experiment.replicates: Input should be less"),
        (
            {"type": "geometric", "stop_prob": 1e-6},
            1000,
            "experiment: games with a geometric horizon may total at most 1e+08 expected rounds",
        ),
        ({"type": "fixed", "n_rounds": 10**7}, 10**4, "experiment: a run plays at most 1e+10"),
    ],
)
def test_11_sizes_are_bounded(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    horizon: dict[str, Any],
    replicates: int,
    expected: str,
) -> None:
    data = experiment([("c", "TFT", "ALLD")], horizon=horizon, replicates=replicates)
    lines = validate(write_config(data, tmp_path / "cfg"), capsys)
    assert len(lines) == 1 and expected in lines[0], lines


# --------------------------------------------------------------------------------------------
# 12. one line instead of a traceback


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{persona.foo}", "template error: unknown placeholder {persona.foo}"),
        ("{persona[abc]}", "template error: unknown placeholder {persona[abc]}"),
        ("a lone { brace", "(write {{ and }} for literal braces)"),
        ("a lone } brace", "template error: Single '}' encountered"),
        ("{R:99999999999}", "placeholders take no conversion or format spec (got {R:99999999999})"),
        ("{persona!r}", "placeholders take no conversion or format spec (got {persona!r})"),
        ("{}", "template error: unknown placeholder {}"),
    ],
)
def test_12_bad_templates_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], template: str, expected: str
) -> None:
    cfg = write_config(experiment([("c", llm(), "TFT")]), tmp_path / "cfg")
    (tmp_path / "cfg" / "prompts" / "pd_system.md").write_text(template)
    lines = validate(cfg, capsys)
    assert len(lines) == 1 and "prompts.system: " in lines[0] and expected in lines[0], lines


def test_12_unwritable_places_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(experiment([("c", "TFT", "ALLD")], replicates=2), tmp_path / "cfg")
    (tmp_path / "file").write_text("x")
    lines = cli_lines(["run", str(cfg), "-o", str(tmp_path / "file" / "out")], capsys)
    assert lines == [
        f"{tmp_path / 'file' / 'out'}: cannot create the output directory (Not a directory)"
    ]
    # An artifact that cannot be replaced (here a directory stands in its place, which also
    # fails as root, unlike a read-only directory).
    out = tmp_path / "out"
    execute(cfg, output_dir=out)
    (out / "aggregates.parquet").unlink()
    (out / "aggregates.parquet").mkdir()
    lines = cli_lines(["aggregate", str(out)], capsys)
    assert len(lines) == 1 and lines[0].startswith(f"{out / 'aggregates.parquet'}: cannot write")
    (out / "aggregates.parquet").rmdir()
    (out / "rounds.jsonl").unlink()
    (out / "rounds.jsonl").mkdir()
    lines = cli_lines(["resume", str(out)], capsys)
    assert len(lines) == 1 and lines[0].startswith(f"{out / 'rounds.jsonl'}: cannot write")


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        ([], "not a JSON object"),
        ({"run_id": 5}, "run_id should be a str (got int)"),
        ({"collapse": "x"}, "collapse should be a dict (got str)"),
        ({"collapse": {"k": 0}}, "collapse.k should be a positive integer (got 0)"),
        ({"conditions": [5]}, "conditions[0] should be an object with a name"),
        ({"overrides": []}, "overrides should be a dict (got list)"),
    ],
)
def test_12_a_broken_manifest_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], manifest: Any, expected: str
) -> None:
    out = tmp_path / "out"
    execute(write_config(experiment([("c", "TFT", "ALLD")]), tmp_path / "cfg"), output_dir=out)
    path = out / "run_manifest.json"
    if isinstance(manifest, dict):
        manifest = {**orjson.loads(path.read_bytes()), **manifest}
    path.write_bytes(orjson.dumps(manifest))
    for command in ("aggregate", "resume"):
        lines = cli_lines([command, str(out)], capsys)
        assert len(lines) == 1 and lines[0].startswith(f"{path}: ") and expected in lines[0]


@pytest.mark.parametrize("url", ["::::", "ftp://host/v1", "not a url", "http://"])
def test_12_a_bad_base_url_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    cfg = write_config(
        experiment([("c", llm(provider="openai", base_url=url), "TFT")]), tmp_path / "c"
    )
    lines = validate(cfg, capsys)
    assert (
        len(lines) == 1 and "base_url: must be an http:// or https:// URL with a host" in lines[0]
    )


# --------------------------------------------------------------------------------------------
# 15. YAML leniency: duplicate keys and booleans for numbers are errors


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "run: {run_id: a, seed: 1, output_dir: o}\nrun: {run_id: b, seed: 1, output_dir: o}\n",
            "line 2, column 1: YAML syntax error: duplicate key 'run' (first at line 1)",
        ),
        (
            "run: {run_id: a, seed: 1, output_dir: o}\nhorizon: {type: fixed, n_rounds: true}\n"
            "experiment: {conditions: [{name: c, agent_a: TFT, agent_b: ALLD}]}\n",
            "horizon.n_rounds: Input should be a valid integer (got True)",
        ),
        (
            "run: {run_id: a, seed: 1, output_dir: o}\nhorizon: {type: fixed, n_rounds: 2.0}\n"
            "experiment: {conditions: [{name: c, agent_a: TFT, agent_b: ALLD}]}\n",
            "horizon.n_rounds: Input should be a valid integer (got 2.0)",
        ),
        (
            "run: {run_id: a, seed: 1, output_dir: o}\nhorizon: {type: fixed, n_rounds: '5'}\n"
            "experiment: {conditions: [{name: c, agent_a: TFT, agent_b: ALLD}]}\n",
            "horizon.n_rounds: Input should be a valid integer (got '5')",
        ),
    ],
)
def test_15_yaml_leniency_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    lines = validate(write_text(tmp_path, text), capsys)
    assert len(lines) == 1 and lines[0].endswith(expected), lines


# --------------------------------------------------------------------------------------------
# 16. payoffs are bounded so totals stay exact


@pytest.mark.parametrize("value", ["1.0e+308", "-2.0e+6", ".inf", ".nan"])
def test_16_payoffs_are_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    text = (
        "run: {run_id: a, seed: 1, output_dir: o}\nhorizon: {type: fixed, n_rounds: 5}\n"
        f"game: {{payoff_matrix: {{C: {{C: [3, 3], D: [0, {value}]}}, D: {{C: [5, 0], D: [1, 1]}}}}}}\n"
        "experiment: {conditions: [{name: c, agent_a: TFT, agent_b: ALLD}]}\n"
    )
    lines = validate(write_text(tmp_path, text), capsys)
    assert len(lines) == 1, lines
    assert "game.payoff_matrix.C.D: payoffs must be finite and at most 1e+06" in lines[0]
