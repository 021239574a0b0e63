"""`pdbench run` of the resource games (issue 31) with policy seats, checked against hand
calculations: a commons whose policies' outcome is known in closed form (sustainable forever, the
greedy collapse in the first season, a moderate overuse collapsing in the season worked out below,
GovSim's outsider emptying the lake when it arrives), and public goods rounds worked by hand.
Also: the same config and seed give the same rounds.jsonl; a resume keeps whole games and plays
again a game a kill cut short or a tampered one; bad configs get one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from tests.support.configs import execute

from pdbench.errors import ConfigError
from pdbench.runners.config.loader import load_config


def write(tmp: Path, body: dict[str, Any], name: str = "cfg.yaml") -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def commons_body(out: Path, conditions: list[dict[str, Any]], seasons: int = 12) -> dict:
    return {
        "run": {"run_id": "commons_t", "seed": 5, "output_dir": str(out)},
        "horizon": {"type": "fixed", "n_rounds": seasons},
        "commons": {"replicates": 2, "conditions": conditions},
    }


def records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "rounds.jsonl").read_text().splitlines()]


def by_condition(run_dir: Path) -> dict[str, dict[str, Any]]:
    rows = pq.read_table(run_dir / "aggregates.parquet").to_pylist()
    return {r["condition"]: r for r in rows}


@pytest.fixture(scope="module")
def commons_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("commons")
    out = tmp / "out"
    cfg = write(
        tmp,
        commons_body(
            out,
            [
                {"name": "sustainable", "seats": ["SUSTAINABLE"] * 5},
                {"name": "greedy", "seats": ["GREEDY"] * 5},
                {"name": "moderate", "seats": ["MODERATE"] * 5},
                {
                    "name": "outsider",
                    "seats": ["SUSTAINABLE"] * 4 + ["GREEDY"],
                    "outsider_arrival": 3,
                },
            ],
        ),
    )
    summary = execute(cfg)
    assert summary.manifest["status"] == "completed"
    return out


def stocks(run_dir: Path, condition: str, replicate: int = 0) -> list[int]:
    return [
        r["stock"]
        for r in records(run_dir)
        if r["condition"] == condition and r["replicate"] == replicate
    ]


def test_sustainable_harvest_keeps_the_lake_full_forever(commons_run: Path) -> None:
    # 5 x (100 // 2) // 5 = 50 taken, 50 left, doubled back to 100: every season starts full
    assert stocks(commons_run, "sustainable") == [100] * 12
    row = by_condition(commons_run)["sustainable"]
    assert row["survival"] == 1.0 and row["survival_months"] == 12.0


def test_greedy_harvest_collapses_in_the_first_season(commons_run: Path) -> None:
    # 5 agents asking 100 of 100 tons: the lake is emptied, 0 < 5 left: collapse in month 1
    assert stocks(commons_run, "greedy") == [100]
    season = [r for r in records(commons_run) if r["condition"] == "greedy"][0]
    assert sum(season["caught"]) == 100 and season["left"] == 0 and season["collapsed"]
    assert season["last"] is True
    row = by_condition(commons_run)["greedy"]
    assert row["survival"] == 0.0 and row["survival_months"] == 1.0


def test_moderate_overuse_collapses_in_the_season_worked_by_hand(commons_run: Path) -> None:
    # share s = (stock // 2) // 5, each asks s + max(1, s // 5); left = stock - 5 ask; next = 2 left
    # 100: s10 ask12 left40 -> 80: s8 ask9 left35 -> 70: s7 ask8 left30 -> 60: s6 ask7 left25
    # -> 50: s5 ask6 left20 -> 40: s4 ask5 left15 -> 30: s3 ask4 left10 -> 20: s2 ask3 left5
    # (5 is not below 5) -> 10: s1 ask2 left0: collapse in the 9th season (index 8)
    assert stocks(commons_run, "moderate") == [100, 80, 70, 60, 50, 40, 30, 20, 10]
    assert [r["collapsed"] for r in records(commons_run) if r["condition"] == "moderate"][
        -1
    ] is True
    assert by_condition(commons_run)["moderate"]["survival_months"] == 9.0


def test_the_outsider_empties_the_lake_when_it_arrives(commons_run: Path) -> None:
    # 4 incumbents take (100 // 2) // 4 = 12 each (GovSim counts its 4 configured agents): 48
    # taken, 52 left, back to 100; the outsider arrives in month 4 asking 100: 148 asked of 100
    season = [
        r for r in records(commons_run) if r["condition"] == "outsider" and r["replicate"] == 0
    ]
    assert [s["requested"] for s in season[:3]] == [[12, 12, 12, 12, 0]] * 3
    assert [s["present"][4] for s in season] == [False, False, False, True]
    assert season[3]["requested"] == [12, 12, 12, 12, 100] and season[3]["left"] == 0
    assert all(d["seat"] != 4 for s in season[:3] for d in s["decisions"])  # not asked
    assert by_condition(commons_run)["outsider"]["survival_months"] == 4.0
    # overuse against GovSim's threshold of 4 agents (12 t): the incumbents never ask above it,
    # the outsider in the one season it was in the lake (seasons before it arrived are no chance)
    seats = pq.read_table(commons_run / "resource_seats.parquet").to_pylist()
    over = [r["overuse_rate"] for r in seats if r["condition"] == "outsider"]
    assert over == [0.0, 0.0, 0.0, 0.0, 1.0]
    # pooled over the condition: 1 request over the share of 4 x 4 + 1 present agent-seasons
    assert by_condition(commons_run)["outsider"]["overuse_rate"] == pytest.approx(1 / 17)


def test_same_config_and_seed_give_the_same_rounds(tmp_path: Path, commons_run: Path) -> None:
    body = yaml.safe_load((commons_run.parent / "cfg.yaml").read_text())
    body["run"]["output_dir"] = str(tmp_path / "again")
    execute(write(tmp_path, body))

    def untimed(run_dir: Path) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k != "timestamp_utc"} for r in records(run_dir)]

    assert untimed(tmp_path / "again") == untimed(commons_run)


def pgg_body(out: Path, seats: list[str], punishment: bool, rounds: int = 2) -> dict:
    return {
        "run": {"run_id": "pgg_t", "seed": 3, "output_dir": str(out)},
        "horizon": {"type": "fixed", "n_rounds": rounds},
        "pgg": {
            "replicates": 3,
            "game": {
                "endowment": 10,
                "multiplier": 2.0,
                "budget": "round",
                "punishment": punishment,
            },
            "conditions": [{"name": "g", "seats": seats}],
        },
    }


def test_public_goods_without_punishment_by_hand(tmp_path: Path) -> None:
    # E 10, r 2, N 3: contributions 10, 10, 0 -> pot 20 -> 40 shared: 13.333 each.
    # Cooperators' income 10 - 10 + 13.333, the free rider's 10 + 13.333; full cooperation would
    # give each 10 - 10 + 20 = 20. Efficiency (2 x 13.333 + 23.333) / 60 = 50 / 60.
    out = tmp_path / "out"
    execute(write(tmp_path, pgg_body(out, ["FULL_COOPERATOR"] * 2 + ["FREE_RIDER"], False)))
    first = records(out)[0]
    assert first["contributions"] == [10, 10, 0]
    assert first["share"] == pytest.approx(40 / 3)
    assert first["balances"] == pytest.approx([40 / 3, 40 / 3, 10 + 40 / 3])
    row = by_condition(out)["g"]
    assert row["contribution_rate"] == pytest.approx(2 / 3)
    assert row["efficiency"] == pytest.approx(50 / 60)
    assert row["free_riding_rate"] == pytest.approx(1 / 3)  # 1 seat of 3 in every round
    assert row["n_games"] == 3


def test_public_goods_punishment_by_hand(tmp_path: Path) -> None:
    # Two punishers (contribute 10, spend 2 tokens on each seat that gave 0 while others gave)
    # and a free rider: after the fund 13.333, 13.333, 23.333; each punisher pays 2 and removes
    # 3 x 2 = 6 from the free rider (6 < half of 23.333: no cap). Round income: 11.333 each.
    out = tmp_path / "out"
    execute(write(tmp_path, pgg_body(out, ["PUNISHER", "PUNISHER", "FREE_RIDER"], True)))
    first = records(out)[0]
    assert first["punish_tokens"] == [[0, 2, 2], [1, 2, 2]]
    assert first["balances"] == pytest.approx([40 / 3 - 2, 40 / 3 - 2, 10 + 40 / 3 - 12])
    decisions = [d for d in first["decisions"] if d["stage"] == "punishment"]
    assert [d["tokens"] for d in decisions] == [[[2, 2]], [[2, 2]], []]
    row = by_condition(out)["g"]
    assert row["punish_spent"] == pytest.approx(2 * 2 * 2)  # 2 punishers x 2 tokens x 2 rounds
    assert row["antisocial_rate"] == 0.0
    # retaliation: the free rider was punished in round 1 and never punishes back: 0 of 2
    assert row["retaliation_rate"] == 0.0


def mark_stopped(run_dir: Path, kind: str) -> None:
    path = run_dir / f"{kind}_manifest.json"
    manifest = json.loads(path.read_text())
    manifest["status"] = "interrupted"
    path.write_text(json.dumps(manifest))


def test_resume_keeps_whole_games_and_replays_cut_and_tampered_ones(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cfg = write(
        tmp_path, pgg_body(out, ["PUNISHER", "CONDITIONAL_COOPERATOR", "FREE_RIDER"], True, 4)
    )
    execute(cfg)
    want = [{k: v for k, v in r.items() if k != "timestamp_utc"} for r in records(out)]
    tables = by_condition(out)
    lines = (out / "rounds.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == 12
    tampered = json.loads(lines[1])
    tampered["contributions"] = [0, 0, 0]  # replicate 0, round 2: not what the policies play
    cut = lines[:1] + [json.dumps(tampered).encode() + b"\n"] + lines[2:9] + [lines[9][:40]]
    (out / "rounds.jsonl").write_bytes(b"".join(cut))  # replicate 2 cut short mid-line
    mark_stopped(out, "pgg")
    summary = execute(cfg, resume=True)
    assert summary.manifest["status"] == "completed"
    session = summary.manifest["sessions"][-1]
    assert session["games_kept"] == 1  # replicate 1
    assert "replicate 0" in session["games_replayed_damaged"][0]
    assert [{k: v for k, v in r.items() if k != "timestamp_utc"} for r in records(out)] == want
    assert by_condition(out) == tables


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda b: b["pgg"]["game"].update(multiplier=-1), "pgg.game.multiplier"),
        (lambda b: b["pgg"]["conditions"][0]["seats"].append("GREEDY"), "unknown public goods"),
        (lambda b: b["horizon"].update(type="geometric", stop_prob=0.1, n_rounds=None), "fixed"),
        (lambda b: b["run"].update(rounds_log="columns"), "rounds.jsonl only"),
        (lambda b: b["pgg"]["conditions"][0].update(outsider_arrival=1), "a commons setting"),
    ],
)
def test_bad_pgg_configs_get_one_line_errors(tmp_path: Path, edit: Any, message: str) -> None:
    body = pgg_body(tmp_path / "out", ["FREE_RIDER", "FULL_COOPERATOR"], True)
    edit(body)
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, body))
    text = str(info.value)
    assert message in text
    assert all("cfg.yaml" in line for line in text.splitlines())


def test_commons_outsider_after_the_last_season_is_refused(tmp_path: Path) -> None:
    body = commons_body(
        tmp_path / "out", [{"name": "c", "seats": ["GREEDY"] * 3, "outsider_arrival": 12}]
    )
    with pytest.raises(ConfigError, match=r"commons\.conditions\[0\]\.outsider_arrival"):
        load_config(write(tmp_path, body))


def llm_seat(tmp_path: Path, kind: str) -> dict[str, Any]:
    """A mock LLM seat of the game (its agent file from a copy of configs/ in `tmp_path`)."""
    import shutil

    for part in ("agents", "prompts"):
        if not (tmp_path / part).exists():
            shutil.copytree(Path(__file__).resolve().parents[2] / "configs" / part, tmp_path / part)
    return {"ref": f"agents/llm_{kind}.yaml", "overrides": {"persona": "cooperative"}}


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("commons", "GovSim's words: GovSim's prompt describes 5 fishermen"),
        ("pgg", "PGG-Bench's words, which describe other rules: budget 'round'"),
    ],
)
def test_an_llm_seat_whose_prompt_would_misdescribe_the_rules_is_refused(
    tmp_path: Path, kind: str, message: str
) -> None:
    # GovSim's prompt names 5 fishermen (here 3); PGG-Bench's a carried balance (here E a round)
    if kind == "commons":
        body = commons_body(tmp_path / "out", [{"name": "c", "seats": ["GREEDY", "GREEDY"]}])
    else:
        body = pgg_body(tmp_path / "out", ["FREE_RIDER", "FULL_COOPERATOR"], True)
    body[kind]["conditions"][0]["seats"].append(llm_seat(tmp_path, kind))
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, body))
    lines = str(info.value).splitlines()
    assert len(lines) == 1 and message in lines[0]
    assert f"{kind}.conditions[0].seats[2]" in lines[0]


def test_efficiency_above_one_when_the_pot_shrinks_stays_inside_its_interval(
    tmp_path: Path,
) -> None:
    # r = 0.5, E 10 a round, N 2: a full cooperator gives 10, the free rider 0; the pot 10 x 0.5
    # = 5 shared: 2.5 each. Group gain 2.5 + 12.5 = 15 a round; full cooperation's: 2 x 5 = 10.
    body = pgg_body(tmp_path / "out", ["FULL_COOPERATOR", "FREE_RIDER"], False)
    body["pgg"]["game"]["multiplier"] = 0.5
    execute(write(tmp_path, body))
    row = by_condition(tmp_path / "out")["g"]
    assert row["efficiency"] == pytest.approx(1.5)
    assert row["efficiency_ci_low"] <= row["efficiency"] <= row["efficiency_ci_high"]


def test_backend_ray_is_refused_before_the_run_directory_is_made(tmp_path: Path) -> None:
    from pdbench.errors import RunError

    out = tmp_path / "out"
    cfg = write(tmp_path, pgg_body(out, ["FREE_RIDER", "FULL_COOPERATOR"], False))
    with pytest.raises(RunError, match="use --backend local"):
        execute(cfg, backend="ray")
    assert not out.exists()


def llm_commons_body(tmp_path: Path) -> dict[str, Any]:
    seat = llm_seat(tmp_path, "commons")
    body = commons_body(tmp_path / "out", [{"name": "c", "seats": [seat] * 5}], seasons=4)
    body["commons"]["replicates"] = 2
    return body


def test_resume_stops_on_an_llm_game_whose_numbers_do_not_add_up(tmp_path: Path) -> None:
    # one catch of a kept LLM game edited: the season no longer leaves stock - sum(caught)
    from pdbench.errors import RunError

    out = tmp_path / "out"
    cfg = write(tmp_path, llm_commons_body(tmp_path))
    execute(cfg, cache_dir=tmp_path / "cache")
    lines = (out / "rounds.jsonl").read_bytes().splitlines(keepends=True)
    record = json.loads(lines[0])
    record["caught"][0] += 1
    lines[0] = json.dumps(record).encode() + b"\n"
    (out / "rounds.jsonl").write_bytes(b"".join(lines))
    mark_stopped(out, "commons")
    with pytest.raises(RunError, match="replicate 0: season 0: not what the rules give"):
        execute(cfg, resume=True, cache_dir=tmp_path / "cache")


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: r.update(balances=[b + 1 for b in r["balances"]]),  # money from nowhere
        lambda r: r.update(share=r["share"] + 0.5),
        lambda r: r.update(punish_tokens=[]),  # punishments dropped, balances kept
    ],
)
def test_a_public_goods_round_that_does_not_add_up_is_played_again(
    tmp_path: Path, edit: Any
) -> None:
    out = tmp_path / "out"
    cfg = write(tmp_path, pgg_body(out, ["PUNISHER", "PUNISHER", "FREE_RIDER"], True, 3))
    execute(cfg)
    want = [{k: v for k, v in r.items() if k != "timestamp_utc"} for r in records(out)]
    lines = (out / "rounds.jsonl").read_bytes().splitlines(keepends=True)
    record = json.loads(lines[1])
    edit(record)
    lines[1] = json.dumps(record).encode() + b"\n"
    (out / "rounds.jsonl").write_bytes(b"".join(lines))
    mark_stopped(out, "pgg")
    summary = execute(cfg, resume=True)
    damaged = summary.manifest["sessions"][-1]["games_replayed_damaged"]
    assert len(damaged) == 1 and "replicate 0: round 1:" in damaged[0]
    assert [{k: v for k, v in r.items() if k != "timestamp_utc"} for r in records(out)] == want
