"""A small groups run directory written by hand, for the app's tests: `groups_manifest.json`
and `rounds.jsonl` as a groups run writes them (`pdbench.storage.record.group_fields`), games in
plan order, with messages in some rounds (one of them directed).

`write_group_run(root)` writes three games: the five-seat public goods group
`five_talking` (replicates 0 and 1, six rounds, talking) and the ten-seat `ten_seats` (four
rounds, two messages before the first). The moves are spelled out below (FIVE_MOVES...), so tests can check what the
app reads against values worked out by hand: in a public goods game of five (r = 3, c = 1) a
round with k cooperators pays each cooperator 0.6 k - 1 and each defector 0.6 k.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pdbench.core.group_game import GroupGame
from pdbench.storage.record.fields import MESSAGES
from pdbench.storage.record.group_fields import group_key, round_values, seat_name
from pdbench.storage.schema import GROUPS_MANIFEST_FILE, ROUNDS_FILE, SCHEMA_VERSION

RUN_ID = "groups_fixture"
TIMESTAMP = "2026-11-28T12:00:00+00:00"

FIVE_NAMES = ("CC", "TFT", "WSLS", "mock-gpt-4o-mini[tit_for_tat]", "ALLD")
# Moves played, one string per seat (A..E), a character per round.
FIVE_MOVES = ("CCCCCC", "CCDCCC", "CDDDDD", "CCCDDC", "DDDDDD")
# Seat D meant C in round 4 (index 3): noise flipped it to D; its round 6 was a fallback.
FIVE_INTENDED = ("CCCCCC", "CCDCCC", "CDDDDD", "CCCCDC", "DDDDDD")
FIVE_FALLBACKS = {(3, 5)}  # (seat, round index)
FIVE_MOVES_REP1 = ("CCCCCC", "CCCCCC", "CCCCCC", "CCCCCC", "DCDCDC")
# Messages before a round's moves: round index -> entries (writer seat, text, intent, to).
FIVE_MESSAGES: dict[int, list[tuple[int, str, str | None, int | None]]] = {
    0: [(0, "Let's all cooperate!", "C", None), (4, "I will cooperate.", "C", None)],
    2: [
        (2, "Defect with me, D.", "D", 3),
        (0, "Who defected? Please come back to C.", None, None),
    ],
}
FIVE_MESSAGES_REP1: dict[int, list[tuple[int, str, str | None, int | None]]] = {
    0: [(4, "Trust me this time.", "C", None)],
}
TEN_NAMES = tuple(
    ["mock-gpt-4o-mini[cooperative]", "mock-claude-haiku[exploitative]"]
    + [f"seat-{i}-TFT" for i in range(3, 11)]
)
TEN_MOVES = tuple("CCDC" if i % 3 else "DDDD" for i in range(10))
TEN_MESSAGES: dict[int, list[tuple[int, str, str | None, int | None]]] = {
    0: [
        (1, "Ten of us: if six or more put in, every one of us gains. I will put in.", "C", None),
        (9, "I will keep my coin this round and see what the others do.", "D", None),
    ],
}


@dataclass
class GameSpec:
    """One game to write: its moves (and intended moves), fallbacks and messages."""

    replicate: int
    moves: Sequence[str]
    intended: Sequence[str] | None = None
    fallbacks: set[tuple[int, int]] = field(default_factory=set)
    messages: dict[int, list[tuple[int, str, str | None, int | None]]] = field(default_factory=dict)


@dataclass
class ConditionSpec:
    """One condition: its seats' names, its games and whether it talks."""

    name: str
    names: Sequence[str]
    games: list[GameSpec]
    talks: bool = False
    r: float = 3.0
    noise: float = 0.0


def five_and_ten() -> list[ConditionSpec]:
    """The default conditions: five talking seats (two replicates), ten silent seats."""
    return [
        ConditionSpec(
            "five_talking",
            FIVE_NAMES,
            [
                GameSpec(0, FIVE_MOVES, FIVE_INTENDED, FIVE_FALLBACKS, FIVE_MESSAGES),
                GameSpec(1, FIVE_MOVES_REP1, messages=FIVE_MESSAGES_REP1),
            ],
            talks=True,
            noise=0.05,
        ),
        ConditionSpec(
            "ten_seats", TEN_NAMES, [GameSpec(0, TEN_MOVES, messages=TEN_MESSAGES)], talks=True
        ),
    ]


def _message(seat: int, turn: int, text: str, intent: str | None, to: int | None) -> dict:
    entry: dict[str, Any] = {
        "from": seat_name(seat),
        "turn": turn,
        "text": text,
        "intent": intent,
        "source": "phrases",
    }
    if to is not None:
        entry["to"] = seat_name(to)
    return entry


def game_lines(cond: ConditionSpec, game: GameSpec, seed: int) -> list[bytes]:
    """The rounds.jsonl lines of one game."""
    n, rounds = len(cond.names), len(game.moves[0])
    stage = GroupGame.public_goods(n, cond.r, 1.0)
    intended = game.intended or game.moves
    key = group_key(RUN_ID, cond.name, game.replicate, seed, cond.names, "fixed", rounds, None)
    totals = [0.0] * n
    lines = []
    for t in range(rounds):
        moves = [game.moves[s][t] for s in range(n)]
        pays = stage.payoffs([m == "C" for m in moves])
        totals = [a + b for a, b in zip(totals, pays, strict=True)]
        values = round_values(
            t,
            {
                "action": moves,
                "intended_action": [intended[s][t] for s in range(n)],
                "payoff": list(pays),
                "cum_payoff": list(totals),
                "parse_failure": [(s, t) in game.fallbacks for s in range(n)],
                "p_cooperate": [None] * n,
            },
            TIMESTAMP,
        )
        record = {**key, **values}
        said = game.messages.get(t)
        if said:
            record[MESSAGES] = [
                _message(s, i, text, it, to) for i, (s, text, it, to) in enumerate(said)
            ]
        lines.append(orjson.dumps(record) + b"\n")
    return lines


def manifest(conditions: Sequence[ConditionSpec], status: str = "completed") -> dict[str, Any]:
    """The groups manifest of these conditions (as `runners.science.groups` writes it)."""
    entries = []
    for cond in conditions:
        n = len(cond.names)
        stage = GroupGame.public_goods(n, cond.r, 1.0)
        rounds = len(cond.games[0].moves[0])
        entries.append(
            {
                "name": cond.name,
                "n_players": n,
                "seats": list(cond.names),
                "game": {
                    "kind": stage.kind,
                    "n_players": n,
                    "pay_c": list(stage.pay_c),
                    "pay_d": list(stage.pay_d),
                    "params": dict(stage.params),
                    "label": stage.describe(),
                },
                "horizon": {"type": "fixed", "n_rounds": rounds},
                "noise": cond.noise,
                "replicates": len(cond.games),
                "talks": cond.talks,
                "games": [
                    {"replicate": g.replicate, "seed": 1000 + g.replicate, "n_rounds": rounds}
                    for g in cond.games
                ],
            }
        )
    return {
        "run_id": RUN_ID,
        "kind": "groups",
        "schema_version": SCHEMA_VERSION,
        "seed": 2026,
        "status": status,
        "started_at_utc": TIMESTAMP,
        "finished_at_utc": TIMESTAMP,
        "conditions": entries,
        "totals": {
            "games": sum(len(c.games) for c in conditions),
            "rounds": sum(len(g.moves[0]) for c in conditions for g in c.games),
        },
        "config": {},
    }


def write_group_run(
    root: Path, conditions: Sequence[ConditionSpec] | None = None, name: str = RUN_ID
) -> Path:
    """Write a groups run directory `root/name` (default conditions: `five_and_ten`)."""
    conditions = list(conditions or five_and_ten())
    run_dir = root / name
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        line
        for cond in conditions
        for game in cond.games
        for line in game_lines(cond, game, 1000 + game.replicate)
    ]
    (run_dir / ROUNDS_FILE).write_bytes(b"".join(lines))
    (run_dir / GROUPS_MANIFEST_FILE).write_bytes(
        orjson.dumps(manifest(conditions), option=orjson.OPT_INDENT_2)
    )
    return run_dir


def write_group_tables(run_dir: Path) -> None:
    """Hand-made group tables (aggregates, seats, group_rounds, group_conditional .parquet)
    for `five_and_ten`'s conditions, with the columns `pdbench.core.group_conditions` writes:
    numbers chosen to be told apart on the page, not computed from the rounds."""
    import pandas as pd

    def ci(value: float, half: float) -> dict[str, float]:
        return {"ci_low": value - half, "ci_high": value + half}

    aggregates = []
    for name, n, coop, gini in (("five_talking", 5, 0.6, 0.12), ("ten_seats", 10, 0.55, 0.3)):
        row: dict[str, Any] = {
            "run_id": RUN_ID,
            "condition": name,
            "scope": "condition",
            "replicate": None,
            "n_replicates": 2 if n == 5 else 1,
            "n_players": n,
            "game_label": f"public_goods N={n} r=3 c=1",
            "exact": False,
            "identical_games": False,
        }
        values = {
            "n_rounds": 6.0,
            "group_cooperation_rate": coop,
            "group_payoff_per_round": 0.96,
            "efficiency": 0.48,
            "payoff_gini": gini,
            "time_to_collapse": float("nan"),
            "collapsed_fraction": 0.0,
        }
        for column, value in values.items():
            row[column] = value
            row[f"{column}_ci_low"], row[f"{column}_ci_high"] = ci(value, 0.1).values()
        aggregates.append(row)
    seats = [
        {
            "run_id": RUN_ID,
            "condition": "five_talking",
            "scope": "condition",
            "replicate": None,
            "n_replicates": 2,
            "seat": s,
            "name": FIVE_NAMES[s],
            "cooperation_rate": 0.9 - 0.2 * s,
            "cooperation_rate_ci_low": 0.8 - 0.2 * s,
            "cooperation_rate_ci_high": 1.0 - 0.2 * s,
            "payoff_per_round": 0.5 + 0.25 * s,
            "payoff_per_round_ci_low": 0.4 + 0.25 * s,
            "payoff_per_round_ci_high": 0.6 + 0.25 * s,
            "total_payoff": 3.0 + 1.5 * s,
            "total_payoff_ci_low": 2.4 + 1.5 * s,
            "total_payoff_ci_high": 3.6 + 1.5 * s,
        }
        for s in range(5)
    ]
    rounds = [
        {
            "run_id": RUN_ID,
            "condition": "five_talking",
            "round": r,
            "games": 2,
            "cooperation": c,
            "cooperation_ci_low": c - 0.1,
            "cooperation_ci_high": min(1.0, c + 0.1),
        }
        for r, c in enumerate((0.8, 0.7, 0.6, 0.6, 0.5, 0.7))
    ]
    conditional = [
        {
            "run_id": RUN_ID,
            "condition": "five_talking",
            "scope": "condition",
            "replicate": None,
            "k": k,
            "others_share": k / 4,
            "cases": cases,
            "cooperations": coops,
            "p_coop_given_k": coops / cases if cases else None,
            "p_coop_given_k_ci_low": coops / cases - 0.1 if cases else None,
            "p_coop_given_k_ci_high": min(1.0, coops / cases + 0.1) if cases else None,
        }
        for k, (cases, coops) in enumerate(((0, 0), (4, 1), (12, 6), (20, 16), (14, 13)))
    ]
    for name, rows in (
        ("aggregates.parquet", aggregates),
        ("seats.parquet", seats),
        ("group_rounds.parquet", rounds),
        ("group_conditional.parquet", conditional),
    ):
        pd.DataFrame(rows).to_parquet(run_dir / name, index=False)


# A real groups run (`pdbench run`, offline: the MockProvider's personas), for the browser test:
# five seats that talk before each move, and ten seats (two of them with long names) that talk.
FIVE_PERSONAS = ("cooperative", "tit_for_tat", "exploitative", "liar", "grim_trigger")
TEN_PERSONAS = (*FIVE_PERSONAS, "generous_tft", "wsls", "cooperative", "liar", "tit_for_tat")


def _llm_seat(persona: str, name: str | None = None) -> dict[str, Any]:
    overrides: dict[str, Any] = {"persona": persona}
    if name:
        overrides["name"] = name
    return {"ref": "agents/llm_group.yaml", "overrides": overrides}


def groups_config(output_dir: Path, rounds: int = 6) -> dict[str, Any]:
    """A groups config of two talking conditions: `five_talking` (five mock personas) and
    `ten_talking` (ten, two named at length), two replicates each."""
    ten = [_llm_seat(p) for p in TEN_PERSONAS]
    ten[0] = _llm_seat("cooperative", "a-rather-long-agent-name[cooperative-v2]")
    ten[5] = _llm_seat("generous_tft", "Generous Tit For Tat With A Long Name")
    return {
        "run": {
            "run_id": "groups_ui",
            "seed": 2026,
            "output_dir": str(output_dir),
            "rounds_log": "jsonl",
        },
        "horizon": {"type": "fixed", "n_rounds": rounds},
        "group_game": {"kind": "public_goods", "r": 3.0, "c": 1.0},
        "communication": {"mode": "every_round", "order": "simultaneous", "max_chars": 280},
        "groups": {
            "replicates": 2,
            "conditions": [
                {"name": "five_talking", "seats": [_llm_seat(p) for p in FIVE_PERSONAS]},
                {"name": "ten_talking", "seats": ten},
            ],
        },
    }


def make_real_group_run(base: Path) -> Path:
    """Run `groups_config` with `pdbench run CONFIG -o DIR` (in this process) into
    `base/data/runs/groups_ui`; returns the run directory."""
    import shutil

    import yaml
    from tests.support.cli import run_uncaptured

    config_dir = base / "config"
    for sub in ("agents", "prompts"):
        shutil.copytree(REPO_CONFIGS / sub, config_dir / sub, dirs_exist_ok=True)
    run_dir = base / "data" / "runs" / "groups_ui"
    path = config_dir / "groups.yaml"
    path.write_text(yaml.safe_dump(groups_config(run_dir), sort_keys=False), encoding="utf-8")
    code, err = run_uncaptured(["run", str(path), "-o", str(run_dir)])
    if code != 0:
        raise RuntimeError(f"pdbench run failed ({code}): {err.strip()[-400:]}")
    return run_dir


REPO_CONFIGS = Path(__file__).resolve().parents[2] / "configs"
