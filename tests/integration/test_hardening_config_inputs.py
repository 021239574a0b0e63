"""Issue 20, config inputs: sweeps are bounded before they are expanded and may not reach one
setting twice (W01, W09); the `.pdbench-root` marker widens the root only from the config's own
project, owned by the user (P07); special files are refused without being read (P09, P10); every
path setting obeys the root (L04)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from tests.support.configs import experiment, llm, policy, write_config

from pdbench.errors import ConfigError
from pdbench.runners.config.loader import load_config


def one_line(exc: pytest.ExceptionInfo[ConfigError]) -> str:
    text = str(exc.value)
    assert len(exc.value.issues) == 1 and "\n" not in text.strip(), text
    return text


def sweep_config(tmp_path: Path, sweep: dict[str, Any], replicates: int = 1) -> Path:
    data = experiment(
        [("l", llm("cooperative"), policy("TFT")), ("p", policy("TFT"), policy("ALLD"))],
        replicates=replicates,
    )
    data["experiment"]["sweep"] = sweep
    return write_config(data, tmp_path)


@pytest.mark.parametrize(
    ("axes", "values"),
    [(6, 50), (40, 2), (2, 2_000), (1, 5_000)],
    ids=["6x50", "40x2", "2x2000", "1x5000"],
)
def test_w01_a_huge_sweep_of_any_shape_is_refused_before_expansion(
    tmp_path: Path, axes: int, values: int
) -> None:
    # 50**6 = 1.6e10, 2**40 = 1.1e12 and 2,000**2 = 4e6 combinations (the old loader expanded
    # them first and never returned): beyond 1e6 games; 2 x 5,000 conditions of one game fit
    # the games bound but not the 100,000 values a config holds once expanded.
    names = ["temperature", "max_tokens", "timeout_s", "history_window", "top_p", "seed"]
    sweep = {
        (f"agent_a.overrides.{names[i]}" if i < len(names) else f"agent_a.params.p{i}"): [
            k + 1 for k in range(values)
        ]
        for i in range(axes)
    }
    started = time.monotonic()
    with pytest.raises(ConfigError) as exc:
        load_config(sweep_config(tmp_path, sweep))
    text = one_line(exc)
    assert "experiment.sweep" in text and ("conditions" in text or "values" in text), text
    assert time.monotonic() - started < 60  # a hang is the failure mode, not a timing target


def test_w01_games_bound_counts_replicates(tmp_path: Path) -> None:
    # Both conditions swept over 6 noise values: 12 conditions x 100,000 replicates = 1.2e6
    # games, over the 1e6 bound (by hand: at most 1,000,000 // 100,000 = 10 conditions).
    noise = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    with pytest.raises(ConfigError) as exc:
        load_config(sweep_config(tmp_path, {"noise": noise}, replicates=100_000))
    assert "12 conditions" in one_line(exc) and "10 fit" in str(exc.value)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("noise", "game.noise"),
        ("agent_a.temperature", "agent_a.overrides.temperature"),
        ("agent_a.overrides.params", "agent_a.params.coop_prob"),
        ("horizon", "horizon.n_rounds"),
    ],
)
def test_w09_two_sweep_entries_reaching_one_setting_are_refused(
    tmp_path: Path, first: str, second: str
) -> None:
    values: dict[str, list[Any]] = {
        "noise": [0.0, 0.1],
        "game.noise": [0.1],
        "agent_a.temperature": [0.1],
        "agent_a.overrides.temperature": [0.2],
        "agent_a.overrides.params": [{"coop_prob": 0.5}],
        "agent_a.params.coop_prob": [0.2],
        "horizon": [{"type": "fixed", "n_rounds": 3}],
        "horizon.n_rounds": [4],
    }
    with pytest.raises(ConfigError) as exc:
        load_config(sweep_config(tmp_path, {first: values[first], second: values[second]}))
    text = one_line(exc)
    assert f"experiment.sweep.{second}" in text and repr(first) in text, text


def test_w09_distinct_settings_still_sweep(tmp_path: Path) -> None:
    data = sweep_config(tmp_path, {"noise": [0.0, 0.1], "agent_a.overrides.temperature": [0.2]})
    text = data.read_text().replace("sweep:", "sweep_conditions: [l]\n  sweep:")
    data.write_text(text)
    loaded = load_config(data)
    # 2 x 1 expanded conditions from `l`, plus `p` as written.
    conditions = loaded.config.experiment.conditions
    assert [c.name for c in conditions] == [
        "l+noise_0+temperature_0.2",
        "l+noise_0.1+temperature_0.2",
        "p",
    ]
    assert [c.noise for c in conditions] == [0.0, 0.1, None]


# --------------------------------------------------------------------------------------------
# P07: the root marker
# --------------------------------------------------------------------------------------------


def leak_config(study: Path, out: Path) -> Path:
    data = experiment(
        [
            (
                "leak",
                llm("cooperative", prompts={"system": "../../otheruser/notes.md"}),
                policy("TFT"),
            )
        ],
        run={"output_dir": str(out)},
    )
    return write_config(data, study, "x.yaml")


def marker_setup(tmp_path: Path) -> tuple[Path, Path]:
    top = tmp_path / "hi"
    (top / "otheruser").mkdir(parents=True)
    (top / "otheruser" / "notes.md").write_text("password=hunter2\n")
    config = leak_config(top / "dl" / "study", tmp_path / "out")
    return top, config


def refused_leaving_root(config: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(config)
    assert "leaves the config root" in str(exc.value) and "hunter2" not in str(exc.value)


def test_p07_own_marker_in_the_project_still_widens_the_root(tmp_path: Path) -> None:
    top, config = marker_setup(tmp_path)
    (top / ".pdbench-root").touch()
    assert load_config(config).root == top.resolve()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_p07_a_marker_owned_by_another_user_does_not_count(tmp_path: Path) -> None:
    top, config = marker_setup(tmp_path)
    marker = top / ".pdbench-root"
    marker.touch()
    os.chown(marker, 65534, 65534)  # nobody
    refused_leaving_root(config)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_p07_a_directory_owned_by_another_user_stops_the_search(tmp_path: Path) -> None:
    top, config = marker_setup(tmp_path)
    (top / ".pdbench-root").touch()  # ours, but in a directory someone else owns
    os.chown(top, 65534, 65534)
    try:
        refused_leaving_root(config)
    finally:
        os.chown(top, 0, 0)


def test_p07_a_world_writable_directory_is_never_searched(tmp_path: Path) -> None:
    top, config = marker_setup(tmp_path)
    (top / ".pdbench-root").touch()
    top.chmod(0o1777)  # like /tmp: anyone could have planted the marker
    refused_leaving_root(config)


def test_p07_the_search_stops_at_the_projects_git_directory(tmp_path: Path) -> None:
    top, config = marker_setup(tmp_path)
    (top / ".pdbench-root").touch()
    (top / "dl" / ".git").mkdir()  # the config's project is hi/dl: hi's marker is another's
    refused_leaving_root(config)


def test_p07_a_symlinked_marker_does_not_count(tmp_path: Path) -> None:
    top, config = marker_setup(tmp_path)
    (tmp_path / "elsewhere").touch()
    (top / ".pdbench-root").symlink_to(tmp_path / "elsewhere")
    refused_leaving_root(config)


# --------------------------------------------------------------------------------------------
# P09, P10: special files
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_p09_a_device_as_config_is_refused_without_reading_it(device: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(device)
    assert "not a regular file (a character device)" in one_line(exc)


def test_p09_a_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"# " + b"x" * 1_000_000 + b"\n")
    with pytest.raises(ConfigError) as exc:
        load_config(big)
    assert "file too large" in one_line(exc)


def test_p10_a_fifo_as_config_or_ref_or_prompt_is_refused_without_waiting(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError) as exc:
        load_config(fifo)  # the old loader waited forever for a writer
    assert "not a regular file (a FIFO)" in one_line(exc)
    config = write_config(
        experiment([("x", llm(prompts={"system": "fifo.md"}), policy("TFT"))]), tmp_path
    )
    os.mkfifo(tmp_path / "fifo.md")
    with pytest.raises(ConfigError) as exc:
        load_config(config)
    assert "prompts.system: not found" in str(exc.value)  # never opened


# --------------------------------------------------------------------------------------------
# L04: model_path obeys the root
# --------------------------------------------------------------------------------------------


def local_agent(model_path: str) -> dict[str, Any]:
    return {"ref": "agents/local_smollm2.yaml", "overrides": {"model_path": model_path}}


@pytest.mark.parametrize("where", ["/etc/passwd", "../outside.gguf"])
def test_l04_model_path_outside_the_root_is_refused(tmp_path: Path, where: str) -> None:
    (tmp_path / "outside.gguf").write_bytes(b"GGUF" + b"\0" * 60)
    project = tmp_path / "project"
    config = write_config(experiment([("x", local_agent(where), policy("TFT"))]), project)
    with pytest.raises(ConfigError) as exc:
        load_config(config)
    text = one_line(exc)
    assert "model_path: path leaves the config root" in text and "root:" not in text


def test_l04_a_file_in_the_root_without_gguf_magic_is_refused_without_quoting_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.gguf").write_bytes(b"root:x:0:0 password=hunter2\n")
    config = write_config(experiment([("x", local_agent("notes.gguf"), policy("TFT"))]), tmp_path)
    with pytest.raises(ConfigError) as exc:
        load_config(config)
    text = one_line(exc)
    assert "not a GGUF model file" in text and "hunter2" not in text and "'root" not in text


def test_l04_a_gguf_file_in_the_root_is_accepted_and_resolved(tmp_path: Path) -> None:
    model = tmp_path / "models" / "m.gguf"
    model.parent.mkdir()
    model.write_bytes(b"GGUF" + b"\0" * 60)
    config = write_config(
        experiment([("x", local_agent("models/m.gguf"), policy("TFT"))]), tmp_path
    )
    loaded = load_config(config)
    agent = loaded.config.experiment.conditions[0].agent_a
    assert agent.model_path == str(model.resolve())
