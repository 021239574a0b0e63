"""Unit tests of pdbench.storage.group_aggregate and report.groups: a group run's rounds.jsonl
written by hand (`group_fields.group_key` / `round_values`), read back as games, measured into the
group tables (checked against hand-worked values) and shown in the report's groups section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow.parquet as pq
import pytest

from pdbench.core.group_game import GroupGame
from pdbench.errors import RunError
from pdbench.report.groups import groups_section
from pdbench.report.markup import page_problems
from pdbench.storage.group_aggregate import (
    GROUP_ARTIFACTS,
    read_group_outcomes,
    write_group_aggregates,
)
from pdbench.storage.record.group_fields import group_key, round_values

PD3 = GroupGame.linear_pd(3)
PD2 = GroupGame.linear_pd(2)
TRIO = ("p0", "p1", "p2")
PAIR = ("tft", "<b>alld</b>")  # a name that must reach the report as text


def game_entry(game: GroupGame) -> dict[str, Any]:
    return {
        "kind": game.kind,
        "n_players": game.n_players,
        "pay_c": list(game.pay_c),
        "pay_d": list(game.pay_d),
        "params": dict(game.params),
        "label": game.describe(),
    }


def manifest(exact_pair: bool = True) -> dict[str, Any]:
    """A groups manifest as in the interfaces: two conditions in plan order."""
    return {
        "run_id": "run-g",
        "seed": 7,
        "kind": "groups",
        "status": "complete",
        "collapse": {"k": 2, "threshold": 0.2},
        "intervals": {"resamples": 300, "level": 0.95, "seed": 7},
        "conditions": [
            {
                "name": "trio",
                "n_players": 3,
                "seats": list(TRIO),
                "game": game_entry(PD3),
                "noise": 0.0,
                "horizon": {"type": "fixed", "n_rounds": 4},
                "replicates": 2,
                "talks": False,
            },
            {
                "name": "pair",
                "n_players": 2,
                "seats": list(PAIR),
                "game": game_entry(PD2),
                "noise": 0.0,
                "horizon": {"type": "fixed", "n_rounds": 3},
                "replicates": 2,
                "talks": False,
                "exact": exact_pair,
            },
        ],
    }


def game_lines(
    condition: str,
    replicate: int,
    names: tuple[str, ...],
    game: GroupGame,
    rows: tuple[str, ...],
    fails: dict[tuple[int, int], bool] | None = None,
) -> list[bytes]:
    """One game's records: `rows[i]` is seat i's moves ('CCD'); payoffs from the game."""
    key = group_key(
        "run-g", condition, replicate, 100 + replicate, names, "fixed", len(rows[0]), None
    )
    cum = [0.0] * len(names)
    lines = []
    for t in range(len(rows[0])):
        moves = [row[t] for row in rows]
        pay = game.payoffs([m == "C" for m in moves])
        cum = [c + p for c, p in zip(cum, pay, strict=True)]
        seats = {
            "action": moves,
            "intended_action": moves,
            "payoff": list(pay),
            "cum_payoff": list(cum),
            "parse_failure": [bool((fails or {}).get((i, t))) for i in range(len(names))],
            "p_cooperate": [None] * len(names),
        }
        record = {**key, **round_values(t, seats, "2026-01-01T00:00:00Z")}
        lines.append(orjson.dumps(record))
    return lines


EXAMPLE = ("CCDD", "CDDC", "DCDD")  # hand-worked in test_group_metrics.py
ALL_C = ("CCCC",) * 3
PAIR_GAME = ("CCD", "CDD")  # TFT-like vs ALLD-like, identical in both replicates


def write_run(tmp_path: Path, lines: list[bytes] | None = None) -> Path:
    if lines is None:
        lines = (
            game_lines("trio", 0, TRIO, PD3, EXAMPLE, {(1, 2): True})
            + game_lines("trio", 1, TRIO, PD3, ALL_C)
            + game_lines("pair", 0, PAIR, PD2, PAIR_GAME)
            + game_lines("pair", 1, PAIR, PD2, PAIR_GAME)
        )
    (tmp_path / "rounds.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return tmp_path


def table(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


def test_games_are_read_back_as_they_were_played(tmp_path: Path) -> None:
    games = read_group_outcomes(write_run(tmp_path), manifest())
    assert [(g.condition, g.replicate) for g in games] == [
        ("trio", 0),
        ("trio", 1),
        ("pair", 0),
        ("pair", 1),
    ]
    first = games[0]
    assert first.names == TRIO and first.game == PD3
    assert first.played.tolist() == [[m == "C" for m in row] for row in EXAMPLE]
    assert first.payoffs.sum(axis=1).tolist() == [7.0, 7.5, 10.5]  # by hand
    assert first.intended is not None and np.array_equal(first.intended, first.played)
    assert first.parse_failures == (0, 1, 0)
    assert games[2].names == PAIR and games[2].played.shape == (2, 3)


def test_the_group_tables_hold_the_hand_worked_values(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path)
    m = manifest()
    paths = write_group_aggregates(run_dir, read_group_outcomes(run_dir, m), m)
    assert [p.name for p in paths] == list(GROUP_ARTIFACTS)
    rows = table(run_dir / "aggregates.parquet")
    conditions = {r["condition"]: r for r in rows if r["scope"] == "condition"}
    assert list(conditions) == ["trio", "pair"]  # the manifest's order
    trio = conditions["trio"]
    assert trio["run_id"] == "run-g" and trio["n_players"] == 3 and trio["n_replicates"] == 2
    assert trio["group_cooperation_rate"] == pytest.approx((5 / 12 + 1) / 2)
    assert trio["time_to_collapse"] == 2.0 and trio["collapsed_fraction"] == 0.5
    assert trio["fallback_rate"] == pytest.approx((1 / 12 + 0) / 2)
    assert trio["n_rounds_ci_low"] == trio["n_rounds_ci_high"] == 4.0  # a fixed horizon
    assert trio["exact"] is False
    # The pair: C C D / C D D.  Round 0 C C: 3, 3; round 1 C D: 0, 5; round 2 D D: 1, 1.
    pair = conditions["pair"]
    assert pair["exact"] is True and pair["identical_games"] is True
    assert pair["group_cooperation_rate"] == pytest.approx(3 / 6)
    assert pair["group_cooperation_rate_ci_low"] == pair["group_cooperation_rate_ci_high"]
    assert pair["payoff_gini"] == pytest.approx(5 / 26)  # totals 4, 9: 2*5 / (2*4*6.5)
    seats = [r for r in table(run_dir / "seats.parquet") if r["scope"] == "condition"]
    assert [(r["condition"], r["seat"], r["name"]) for r in seats] == [
        ("trio", 0, "p0"),
        ("trio", 1, "p1"),
        ("trio", 2, "p2"),
        ("pair", 0, PAIR[0]),
        ("pair", 1, PAIR[1]),
    ]
    assert seats[1]["parse_failures"] == 0.5 and seats[4]["total_payoff"] == 9.0
    rounds = [r for r in table(run_dir / "group_rounds.parquet") if r["condition"] == "pair"]
    assert [r["cooperation"] for r in rounds] == [1.0, 0.5, 0.0]
    given = table(run_dir / "group_conditional.parquet")
    trio_given = [r for r in given if r["condition"] == "trio" and r["scope"] == "condition"]
    assert [(r["k"], r["cases"], r["cooperations"]) for r in trio_given] == [
        (0, 3, 1),
        (1, 4, 1),
        (2, 2 + 9, 1 + 9),
    ]


def test_a_condition_not_recorded_exact_keeps_wide_intervals(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path)
    m = manifest(exact_pair=False)
    write_group_aggregates(run_dir, read_group_outcomes(run_dir, m), m)
    pair = [r for r in table(run_dir / "aggregates.parquet") if r["scope"] == "condition"][1]
    assert pair["exact"] is False and pair["identical_games"] is True
    assert pair["group_cooperation_rate_ci_low"] < 0.5 < pair["group_cooperation_rate_ci_high"]


def test_the_report_section_shows_the_tables_and_escapes_names(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path)
    m = manifest()
    write_group_aggregates(run_dir, read_group_outcomes(run_dir, m), m)
    html = groups_section(run_dir)
    assert page_problems(html) == []
    assert "&lt;b&gt;alld&lt;/b&gt;" in html and "<b>alld</b>" not in html
    assert "linear_pd N=3" in html and "trio" in html
    assert "41.7%" not in html  # the trio's mean is (5/12 + 1) / 2 = 70.8%
    assert "70.8%" in html
    assert "exact: deterministic" in html  # the pair's cells
    assert html.count("class='band'") == 2  # a banded curve per condition
    assert "Group cooperation per condition" in html
    assert "2 of 2 co-players cooperated" in html


def test_the_report_section_without_group_tables_says_what_to_run(tmp_path: Path) -> None:
    html = groups_section(tmp_path)
    assert "pdbench aggregate" in html and page_problems(html) == []


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda lines: lines[:2] + [b'{"condition": "trio", "repl'] + lines[3:], "rounds.jsonl:3:"),
        (
            lambda lines: lines[:1] + lines[2:],
            "rounds.jsonl:2: condition 'trio' replicate 0: round 2",
        ),
        (
            lambda lines: lines + game_lines("quartet", 0, TRIO, PD3, ALL_C),
            "condition 'quartet' is not in the manifest",
        ),
        (
            lambda lines: lines + game_lines("pair", 2, TRIO, PD3, ALL_C),
            "condition 'pair' has 2 seats, the record 3",
        ),
        (lambda lines: lines + lines[:4], "rounds.jsonl:9: game 'trio' replicate 0 appears twice"),
        (
            lambda lines: (
                [lines[0].replace(b'"agent_b_action":"C"', b'"agent_b_action":"X"')] + lines[1:]
            ),
            "rounds.jsonl:1: a seat's move or payoff is missing or invalid",
        ),
    ],
)
def test_a_damaged_rounds_file_is_one_line_naming_file_and_line(
    tmp_path: Path, damage: Any, message: str
) -> None:
    lines = game_lines("trio", 0, TRIO, PD3, EXAMPLE) + game_lines("trio", 1, TRIO, PD3, ALL_C)
    run_dir = write_run(tmp_path, damage(lines))
    with pytest.raises(RunError, match=message.replace("(", r"\(")) as caught:
        read_group_outcomes(run_dir, manifest())
    assert "\n" not in str(caught.value)
