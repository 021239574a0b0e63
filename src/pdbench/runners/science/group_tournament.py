"""Group tournaments: every group of N of a field of players plays, repeated.

The groups are the combinations of N distinct players (`with_replacement: false`) or the
multisets of N players, a player in several seats (`true`), seats in config order. A group is a
game whose condition is its members' names joined by `_vs_` (`ALLC_vs_ALLD_vs_TFT`) and whose
replicate is the repetition; its seed is `derive_seed(run.seed, "group", member_1, ..., member_N,
repetition)`, so adding a player changes no other group's games. Lengths come from the horizon
and the seeds. The games are played by the group engine through a `GroupRunSession` (policy
groups vectorized, LLM seats round by round; budgets, the call log, resume): games with an LLM
seat are logged to rounds.jsonl, and every game with `log_rounds`.

Artifacts in the output dir:
- group_tournament_manifest.json: config snapshot, players, game, seed scheme, totals.
- groups.parquet: one row per game (`GAME_COLUMNS`): its group, members (seat order), each
  member's payoff per round and cooperation rate, the group's cooperation.
- leaderboard.parquet: one row per player (`LEADERBOARD_COLUMNS`), best first: the mean over its
  games of its payoff per round (a player in several seats of a game: their mean) with a 95%
  interval, the game as the unit (core.stats: Student-t / bootstrap-t over its games; a
  tournament deterministic by construction, whose every game is the same each repetition, gets
  the value itself, as exact conditions do), its cooperation rate likewise, and its rank (ties
  share the better rank: 1, 1, 3).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pdbench.core.exact import condition_exactness
from pdbench.core.group_game import GroupGame
from pdbench.core.group_metrics import GroupOutcome
from pdbench.core.group_science_config import GroupTournamentConfig
from pdbench.core.rng import derive_seed
from pdbench.core.stats import IntervalSettings, clipped_mean_intervals, resample_weights
from pdbench.runners.config.loader import SEPARATOR, LoadedConfig
from pdbench.runners.engine.group_engine import GroupPlan
from pdbench.runners.lifecycle.group_session import GroupRunSession
from pdbench.runners.lifecycle.session import RunOptions
from pdbench.storage.parquet import write_columns
from pdbench.storage.schema import GROUP_GAMES_FILE, LEADERBOARD_FILE

__all__ = [
    "GAME_COLUMNS",
    "LEADERBOARD_COLUMNS",
    "GroupTournamentResult",
    "game_entry",
    "group_leaderboard",
    "group_seeds",
    "member_groups",
    "plan_group_games",
    "run_group_tournament",
]

GAME_COLUMNS = (
    "game",  # plan order
    "group",  # the members' names joined by _vs_
    "repetition",
    "seed",
    "rounds",
    "members",  # list: the seats' players, in seat order
    "payoff_per_round",  # list: each seat's mean payoff per round
    "cooperation_rate",  # list: each seat's share of C moves
    "group_cooperation",
    "group_payoff_per_round",
)
LEADERBOARD_COLUMNS = (
    "rank",
    "player",
    "mean_payoff_per_round",
    "ci_low",
    "ci_high",
    "cooperation_rate",
    "cooperation_ci_low",
    "cooperation_ci_high",
    "games",
    "groups",
    "exact",
)
# groups.parquet's list columns and the Arrow type of their items (a pyarrow factory's name).
LIST_COLUMNS = {"members": "string", "payoff_per_round": "float64", "cooperation_rate": "float64"}
SEED_SCHEME = 'derive_seed(run.seed, "group", member_1, ..., member_N, repetition)'
TIE_TOLERANCE = 1e-12  # means this close (relative) share a rank (sums in another order)


@dataclass
class GroupTournamentResult:
    """What a group tournament produced (also written to `output_dir`)."""

    players: list[str]
    games: dict[str, Any]
    leaderboard: list[dict[str, Any]]
    manifest: dict[str, Any] = field(default_factory=dict)
    output_dir: Path | None = None
    n_games: int = 0
    n_rounds: int = 0
    games_played: int = 0
    games_resumed: int = 0


def member_groups(n_players: int, group_size: int, with_replacement: bool) -> list[tuple[int, ...]]:
    """Every group as player indices in config order: combinations of distinct players, or
    multisets with replacement (itertools' order: lexicographic)."""
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    return list(pick(range(n_players), group_size))


def group_seeds(run_seed: int, members: Sequence[str], repetitions: int) -> list[int]:
    """The seeds of a group's games: `derive_seed(run_seed, "group", *members, repetition)`."""
    return [derive_seed(run_seed, "group", *members, rep) for rep in range(repetitions)]


def group_label(members: Sequence[str]) -> str:
    """A group's condition name in records: its members' names joined by `_vs_`."""
    return SEPARATOR.join(members)


def game_entry(game: GroupGame) -> dict[str, Any]:
    """The stage game as a manifest records it (as groups manifests do)."""
    return {
        "kind": game.kind,
        "n_players": game.n_players,
        "pay_c": list(game.pay_c),
        "pay_d": list(game.pay_d),
        "params": [list(pair) for pair in game.params],  # in the game's order
        "label": game.describe(),
    }


def payoff_bounds(game: GroupGame) -> tuple[float, float]:
    """The payoffs one round can give a seat: (lowest, highest)."""
    values = [*game.pay_c, *game.pay_d]
    return min(values), max(values)


def plan_group_games(loaded: LoadedConfig) -> list[GroupPlan]:
    """Every (group, repetition) game in plan order: groups as `member_groups` lists them, then
    repetitions."""
    cfg: GroupTournamentConfig = loaded.config
    section = cfg.group_tournament
    players = loaded.players
    game = cfg.stage_game()
    horizon = cfg.horizon.build()
    plans: list[GroupPlan] = []
    for group in member_groups(len(players), section.group_size, section.with_replacement):
        specs = tuple(players[i] for i in group)
        names = [spec.name for spec in specs]
        seeds = group_seeds(cfg.run.seed, names, section.repetitions)
        lengths = horizon.lengths(np.array(seeds, dtype=np.uint64)).tolist()
        logged = section.log_rounds or any(spec.is_llm for spec in specs)
        for rep, (seed, n_rounds) in enumerate(zip(seeds, lengths, strict=True)):
            plans.append(
                GroupPlan(
                    len(plans),
                    group_label(names),
                    rep,
                    specs,
                    game,
                    seed,
                    horizon,
                    cfg.game.noise,
                    int(n_rounds),
                    logged=logged,
                )
            )
    return plans


def seat_rates(outcome: GroupOutcome) -> tuple[np.ndarray, np.ndarray]:
    """(payoff per round, cooperation rate) of each seat of a played game."""
    rounds = max(outcome.played.shape[1], 1)
    return outcome.seat_payoffs().sum(axis=1) / rounds, outcome.played.sum(axis=1) / rounds


def game_columns(plans: Sequence[GroupPlan], outcomes: dict[int, GroupOutcome]) -> dict[str, Any]:
    """groups.parquet's columns (`GAME_COLUMNS`), one row per game in plan order."""
    rows: dict[str, list[Any]] = {name: [] for name in GAME_COLUMNS}
    for plan in plans:
        outcome = outcomes[plan.index]
        pay, coop = seat_rates(outcome)
        rows["game"].append(plan.index)
        rows["group"].append(plan.condition)
        rows["repetition"].append(plan.replicate)
        rows["seed"].append(int(plan.seed))
        rows["rounds"].append(int(outcome.played.shape[1]))
        rows["members"].append([spec.name for spec in plan.agents])
        rows["payoff_per_round"].append(pay.tolist())
        rows["cooperation_rate"].append(coop.tolist())
        rows["group_cooperation"].append(float(outcome.played.mean()))
        rows["group_payoff_per_round"].append(float(pay.mean()))
    return rows


def group_leaderboard(
    names: Sequence[str],
    plans: Sequence[GroupPlan],
    outcomes: dict[int, GroupOutcome],
    settings: IntervalSettings,
    exact: bool = False,
) -> list[dict[str, Any]]:
    """One row per player (`LEADERBOARD_COLUMNS`), best first (see the module docstring).
    `settings.seed` seeds each player's bootstrap (`derive_seed(seed, "group_leaderboard",
    player)`); `exact`: every game is deterministic by construction (intervals = values)."""
    index = {name: i for i, name in enumerate(names)}
    values: list[list[float]] = [[] for _ in names]
    coops: list[list[float]] = [[] for _ in names]
    groups: list[set[str]] = [set() for _ in names]
    bounds = (0.0, 0.0)
    for plan in plans:
        outcome = outcomes[plan.index]
        bounds = payoff_bounds(plan.game)
        pay, coop = seat_rates(outcome)
        seats: dict[int, list[int]] = {}
        for seat, spec in enumerate(plan.agents):
            seats.setdefault(index[spec.name], []).append(seat)
        for player, where in seats.items():
            values[player].append(float(pay[where].mean()))
            coops[player].append(float(coop[where].mean()))
            groups[player].add(plan.condition)
    rows = []
    for player, name in enumerate(names):
        pays, rates = np.array(values[player]), np.array(coops[player])
        mean = float(pays.mean()) if pays.size else None
        rate = float(rates.mean()) if rates.size else None
        if exact or pays.size == 0:
            (low, high), (c_low, c_high) = (mean, mean), (rate, rate)
        else:
            rng = np.random.default_rng(derive_seed(settings.seed, "group_leaderboard", name))
            weights = resample_weights(pays.size, settings.resamples, rng)
            found = clipped_mean_intervals(
                np.column_stack([pays, rates]), weights, settings.level, [bounds, (0.0, 1.0)]
            )
            (low, high, _), (c_low, c_high, _) = found
        rows.append(
            {
                "player": name,
                "mean_payoff_per_round": mean,
                "ci_low": low,
                "ci_high": high,
                "cooperation_rate": rate,
                "cooperation_ci_low": c_low,
                "cooperation_ci_high": c_high,
                "games": int(pays.size),
                "groups": len(groups[player]),
                "exact": bool(exact),
            }
        )
    order = sorted(
        range(len(rows)),
        key=lambda i: (
            rows[i]["mean_payoff_per_round"] is None,
            -(rows[i]["mean_payoff_per_round"] or 0.0),
            i,
        ),
    )
    ranked: list[dict[str, Any]] = []
    for position, i in enumerate(order):
        row = rows[i]
        rank = position + 1
        if ranked and _tied(row["mean_payoff_per_round"], ranked[-1]["mean_payoff_per_round"]):
            rank = ranked[-1]["rank"]
        ranked.append({column: {**row, "rank": rank}[column] for column in LEADERBOARD_COLUMNS})
    return ranked


def _tied(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= TIE_TOLERANCE * max(1.0, abs(a), abs(b))


def tournament_exactness(loaded: LoadedConfig) -> Any:
    """Whether every game is deterministic by construction (`core.exact`), and why not."""
    from pdbench.runners.science.groups import seat_could_vary

    cfg: GroupTournamentConfig = loaded.config
    return condition_exactness(
        [seat_could_vary(spec) for spec in loaded.players], cfg.horizon.type, cfg.game.noise
    )


def tournament_manifest(loaded: LoadedConfig, plans: Sequence[GroupPlan]) -> dict[str, Any]:
    """The group tournament's own manifest keys."""
    cfg: GroupTournamentConfig = loaded.config
    section = cfg.group_tournament
    exactness = tournament_exactness(loaded)
    batched = sum(1 for p in plans if p.batchable)
    return {
        "kind": "group_tournament",
        "group_size": section.group_size,
        "with_replacement": section.with_replacement,
        "repetitions": section.repetitions,
        "noise": cfg.game.noise,
        "horizon": cfg.horizon.model_dump(mode="json"),
        "game": game_entry(cfg.stage_game()),
        "players": [
            {"name": spec.name, "type": spec.config.type, "llm": spec.is_llm}
            for spec in loaded.players
        ],
        "seed_scheme": SEED_SCHEME,
        "exact": exactness.exact,
        "could_vary": list(exactness.could_vary),
        "intervals": {
            "unit": "game",
            "method": "mean over a player's games: Student-t below 5 games, else the hull of "
            "Student-t and the bootstrap-t (core.stats); exact tournaments: the value",
            "seed_per_player": 'derive_seed(run.seed, "group_leaderboard", player)',
        },
        "totals": {
            "groups": section.n_groups,
            "games": len(plans),
            "rounds": sum(p.n_rounds for p in plans),
            "batched_games": batched,
            "per_round_games": len(plans) - batched,
            "logged_games": sum(1 for p in plans if p.logged),
        },
    }


def tournament_tables(
    loaded: LoadedConfig, plans: Sequence[GroupPlan], outcomes: dict[int, GroupOutcome]
) -> GroupTournamentResult:
    """groups.parquet's columns and the leaderboard from every game's outcome (no files)."""
    cfg: GroupTournamentConfig = loaded.config
    exact = tournament_exactness(loaded).exact
    board = group_leaderboard(
        loaded.names, plans, outcomes, IntervalSettings(seed=cfg.run.seed), exact
    )
    return GroupTournamentResult(
        loaded.names,
        game_columns(plans, outcomes),
        board,
        n_games=len(plans),
        n_rounds=sum(p.n_rounds for p in plans),
    )


def run_group_tournament(
    loaded: LoadedConfig, options: RunOptions | None = None
) -> GroupTournamentResult:
    """Play (or resume) every group's games into the output dir and write the artifacts."""
    options = options or RunOptions()
    started = time.perf_counter()
    plans = plan_group_games(loaded)
    tables: list[GroupTournamentResult] = []

    def finish(outcomes: dict[int, Any], run_dir: Path) -> dict[str, Any]:
        result = tournament_tables(loaded, plans, outcomes)
        write_games(run_dir / GROUP_GAMES_FILE, result.games)
        board = result.leaderboard
        write_columns(
            run_dir / LEADERBOARD_FILE, {c: [r[c] for r in board] for c in LEADERBOARD_COLUMNS}
        )
        tables.append(result)
        return {"elapsed_s": round(time.perf_counter() - started, 4)}

    session = GroupRunSession(loaded, plans, options, tournament_manifest(loaded, plans))  # type: ignore[arg-type]
    played = session.run(finish)  # type: ignore[arg-type]
    result = tables[0]
    result.manifest = played.manifest
    result.output_dir = played.run_dir
    result.games_played = played.games_played
    result.games_resumed = played.games_kept
    return result


def write_games(path: Path, columns: dict[str, Any]) -> None:
    """groups.parquet: the per-seat columns (members, payoffs, cooperation) as Arrow lists,
    built from buffers (no pandas import)."""
    import pyarrow as pa

    from pdbench.storage.parquet import _write, arrow_array, typed_array

    arrays = []
    for name in GAME_COLUMNS:
        values = columns[name]
        if name in LIST_COLUMNS:
            offsets = np.zeros(len(values) + 1, dtype=np.int32)
            np.cumsum([len(v) for v in values], out=offsets[1:])
            inner = typed_array([x for v in values for x in v], getattr(pa, LIST_COLUMNS[name])())
            arrays.append(pa.ListArray.from_arrays(pa.array(offsets), inner))
        else:
            arrays.append(arrow_array(values))
    _write(path, pa.Table.from_arrays(arrays, names=list(GAME_COLUMNS)))


def summary_lines(result: GroupTournamentResult, resumed: bool = False) -> list[str]:
    """What `pdbench tournament` prints after a group tournament: where it went, then the
    leaderboard as a text table."""
    totals = result.manifest.get("totals") or {}
    kept = f" ({result.games_resumed} kept from before)" if resumed else ""
    head = (
        f"group tournament {result.manifest.get('run_id')}: {len(result.players)} players in "
        f"{totals.get('groups')} groups of {result.manifest.get('group_size')}, "
        f"{result.n_games} games{kept}, {result.n_rounds} rounds -> {result.output_dir}"
    )
    return [head, leaderboard_text(result.leaderboard)]


def leaderboard_text(board: Sequence[dict[str, Any]]) -> str:
    """A group tournament's leaderboard as a fixed-width text table."""
    width = max([len("player")] + [len(str(r["player"])) for r in board])
    width = min(width, 32)
    head = f"{'rank':>4}  {'player':<{width}} {'payoff/round [95%]':>26} {'cooperation [95%]':>24} {'games':>6}"
    lines = [head, "-" * len(head)]
    for row in board:
        pay = _span(row["mean_payoff_per_round"], row["ci_low"], row["ci_high"], 1.0, "", 3)
        coop = _span(
            row["cooperation_rate"],
            row["cooperation_ci_low"],
            row["cooperation_ci_high"],
            100,
            "%",
            1,
        )
        lines.append(
            f"{row['rank']:>4}  {str(row['player'])[:width]:<{width}} {pay:>26} {coop:>24} "
            f"{row['games']:>6}"
        )
    exact = bool(board) and all(r.get("exact") for r in board)
    lines.append(
        "exact: every game is deterministic, so each mean is the value itself"
        if exact
        else "intervals: 95%, the game as the unit (groups.parquet, leaderboard.parquet)"
    )
    return "\n".join(lines)


def _span(
    value: float | None, low: float | None, high: float | None, scale: float, unit: str, digits: int
) -> str:
    if value is None:
        return "-"
    shown = f"{value * scale:.{digits}f}{unit}"
    if low is None or high is None:
        return shown
    return f"{shown} [{low * scale:.{digits}f}, {high * scale:.{digits}f}]"
