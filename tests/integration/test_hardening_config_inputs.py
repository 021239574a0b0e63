"""Issue 20, config inputs: sweeps are bounded before they are expanded and may not reach one
setting twice (W01, W09); the `.pdbench-root` marker widens the root only from the config's own
project, owned by the user (P07); special files are refused without being read (P09, P10); every
path setting obeys the root (L04)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from tests.support.configs import experiment, llm, policy, write_config

from pdbench.errors import ConfigError
from pdbench.runners.loader import load_config


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
