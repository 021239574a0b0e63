"""Round-robin tournaments: every pair of players (optionally each against itself), repeated.

Match seeds are `derive_seed(run.seed, "match", player_a, player_b, repetition)` (player display
names, in config order: player_a is the earlier one), so adding or removing a player changes no
other match. Lengths come from the horizon and the match seed. Matches between two policies whose
rounds are not logged are played for their totals only (`play_fast`, `pdbench.core.batch_totals`:
the engine's draws, no per-round arrays); the others by the shared engine (Axelrod strategies
synchronously, LLM agents round by round, logged policy matches in a vectorized batch) through a
`RunSession`: budgets, llm_calls.jsonl, stored prompts and resume work as in experiments. A match
is a game whose condition is `<player_a>_vs_<player_b>` and whose replicate is the repetition.

Artifacts in the output dir:
- tournament_manifest.json: config snapshot, players, seed scheme, totals, timings, environment.
- matches.parquet: one row per match: match, player_a, player_b, repetition, seed, rounds,
  score_a, score_b (totals), coop_rate_a, coop_rate_b.
- leaderboard.parquet: see `pdbench.core.tournament_metrics` (mean score per round, 95% CI, wins,
  draws, losses, cooperation rate, rank).
- payoff_matrix.parquet: long form: player, opponent, mean_score_per_round, matches.
- rounds.jsonl: the rounds of matches with an LLM player, or of every match with `log_rounds`,
  with the same record fields as an experiment's; llm_calls.jsonl when LLM players take part.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pdbench.core.batch_totals import play_totals
from pdbench.core.config import TournamentConfig
from pdbench.core.metrics import GameOutcome
from pdbench.core.rng import derive_seed
from pdbench.core.tournament_metrics import (
    MatchTable,
    leaderboard,
    pairwise_payoffs,
    payoff_table,
)
from pdbench.runners.config.loader import SEPARATOR, LoadedConfig
from pdbench.runners.engine.engine import GamePlan, MachineTable
from pdbench.runners.engine.progress import RunStats, StatsFn
from pdbench.runners.lifecycle.session import RunOptions, RunSession, play_in_memory
from pdbench.storage.parquet import write_columns
from pdbench.storage.schema import LEADERBOARD_FILE, MATCHES_FILE, PAYOFF_MATRIX_FILE


@dataclass
class TournamentResult:
    """What a tournament produced (also written to `output_dir` by `run_tournament`)."""

    players: list[str]
    matches: dict[str, Any]
    leaderboard: list[dict[str, Any]]
    pairwise: list[dict[str, Any]]
    manifest: dict[str, Any] = field(default_factory=dict)
    output_dir: Path | None = None

    def payoff_table(self) -> np.ndarray:
        """Mean per-round payoff [player, opponent] as a square array."""
        return payoff_table(self.players, self.pairwise)


def match_seeds(run_seed: int, player_a: str, player_b: str, repetitions: int) -> list[int]:
    """`derive_seed(run_seed, "match", player_a, player_b, rep)` for rep = 0, 1, ...

    The SHA-256 of the labels' common prefix is computed once and copied per repetition (a
    tournament has thousands of matches); the first value is checked against `derive_seed`, and
    should the label text ever change there, every seed is taken from `derive_seed` itself.
    """
    if repetitions <= 0:
        return []
    prefix = f"{int(run_seed)}\x1fstr:match\x1fstr:{player_a}\x1fstr:{player_b}\x1fint:"
    state = hashlib.sha256(prefix.encode())
    seeds = []
    for rep in range(repetitions):
        h = state.copy()
        h.update(str(rep).encode())
        seeds.append(int.from_bytes(h.digest()[:8], "big") >> 1)
    if seeds[0] != derive_seed(run_seed, "match", player_a, player_b, 0):
        return [derive_seed(run_seed, "match", player_a, player_b, r) for r in range(repetitions)]
    return seeds


@dataclass
class Schedule:
    """Every match of a tournament as arrays in plan order (pairs in config order, i <= j with
    self-play, else i < j, then repetitions), and the `GamePlan`s when they are wanted.

    `fast` marks the matches played for their totals only (`play_fast`): both players batchable
    policies and the rounds not logged; the others are played by the engine.
    """

    loaded: LoadedConfig
    pairs: list[tuple[int, int]]
    player_a: np.ndarray
    player_b: np.ndarray
    repetition: np.ndarray
    seeds: np.ndarray  # uint64
    lengths: np.ndarray  # int64
    batchable: np.ndarray  # bool
    logged: np.ndarray  # bool

    @property
    def fast(self) -> np.ndarray:
        """The matches `play_fast` plays (bool per match)."""
        return self.batchable & ~self.logged

    def plans(self, which: np.ndarray | None = None) -> list[GamePlan]:
        """The GamePlans of the matches `which` marks (default: all), in plan order."""
        cfg: TournamentConfig = self.loaded.config
        players = self.loaded.players
        horizon = cfg.horizon.build()
        noise = cfg.game.noise
        seeds = self.seeds.tolist()
        lengths = self.lengths.tolist()
        reps = self.repetition.tolist()
        logged = self.logged.tolist()
        pair_of = np.repeat(np.arange(len(self.pairs)), cfg.tournament.repetitions)
        chosen = range(len(seeds)) if which is None else np.flatnonzero(which).tolist()
        plans = []
        for index in chosen:
            i, j = self.pairs[pair_of[index]]
            plans.append(
                GamePlan(
                    index,
                    f"{players[i].name}{SEPARATOR}{players[j].name}",
                    reps[index],
                    (players[i], players[j]),
                    seeds[index],
                    horizon,
                    noise,
                    lengths[index],
                    logged[index],
                )
            )
        return plans


def schedule(loaded: LoadedConfig) -> Schedule:
    """The tournament's matches (see `Schedule`); seeds from `match_seeds`, lengths from the
    horizon and the seeds."""
    cfg: TournamentConfig = loaded.config
    section = cfg.tournament
    players = loaded.players
    reps = section.repetitions
    pairs = [
        (i, j)
        for i in range(len(players))
        for j in range(i if section.self_play else i + 1, len(players))
    ]
    seeds = np.array(
        [
            seed
            for i, j in pairs
            for seed in match_seeds(cfg.run.seed, players[i].name, players[j].name, reps)
        ],
        dtype=np.uint64,
    )
    batchable = [players[i].batchable and players[j].batchable for i, j in pairs]
    logged = [section.log_rounds or players[i].is_llm or players[j].is_llm for i, j in pairs]
    pair_a = np.array([i for i, _ in pairs], dtype=np.int64)
    pair_b = np.array([j for _, j in pairs], dtype=np.int64)
    return Schedule(
        loaded,
        pairs,
        np.repeat(pair_a, reps),
        np.repeat(pair_b, reps),
        np.tile(np.arange(reps, dtype=np.int64), len(pairs)),
        seeds,
        np.asarray(cfg.horizon.build().lengths(seeds), dtype=np.int64),
        np.repeat(np.array(batchable, dtype=bool), reps),
        np.repeat(np.array(logged, dtype=bool), reps),
    )


def plan_matches(loaded: LoadedConfig) -> list[GamePlan]:
    """Every match: pairs in config order (i <= j with self-play, else i < j), then repetitions."""
    return schedule(loaded).plans()


def tournament_tables(
    loaded: LoadedConfig, plans: Sequence[GamePlan], outcomes: dict[int, GameOutcome]
) -> TournamentResult:
    """matches, leaderboard and pairwise payoffs from the played matches (`plans`, all of
    them played, in plan order)."""
    index = {name: i for i, name in enumerate(loaded.names)}
    games = [outcomes[p.index] for p in plans]
    totals = np.array([g.totals for g in games], dtype=np.float64).reshape(-1, 2)
    coops = np.array([g.cooperations for g in games], dtype=np.int64).reshape(-1, 2)
    columns = {
        "player_a": np.array([index[p.agents[0].name] for p in plans], dtype=np.int64),
        "player_b": np.array([index[p.agents[1].name] for p in plans], dtype=np.int64),
        "repetition": np.array([p.replicate for p in plans], dtype=np.int64),
        "seed": np.array([p.seed for p in plans], dtype=np.uint64),
        "rounds": np.array([p.n_rounds for p in plans], dtype=np.int64),
        "score_a": totals[:, 0],
        "score_b": totals[:, 1],
        "coop_a": coops[:, 0],
        "coop_b": coops[:, 1],
    }
    return _tables(loaded, columns)


def play_fast(sched: Schedule) -> dict[str, np.ndarray]:
    """Totals (score_a, score_b, coop_a, coop_b) of the `fast` matches, in plan order, played
    by `pdbench.core.batch_totals` in one batch: the draws and totals of the engine's batch."""
    loaded = sched.loaded
    fast = sched.fast
    table = MachineTable(loaded.matrix())
    used = np.unique(np.concatenate([sched.player_a[fast], sched.player_b[fast]]))
    machine_of = np.zeros(len(loaded.players), dtype=np.int64)
    for player in used.tolist():
        machine_of[player] = table.index(loaded.players[player])
    totals = play_totals(
        table.machines,
        machine_of[sched.player_a[fast]],
        machine_of[sched.player_b[fast]],
        sched.seeds[fast],
        sched.lengths[fast],
        table.matrix,
        float(loaded.config.game.noise),
    )
    return {
        "score_a": totals.score_a,
        "score_b": totals.score_b,
        "coop_a": totals.coop_a,
        "coop_b": totals.coop_b,
    }


def _columns_of(
    sched: Schedule, fast: dict[str, np.ndarray], outcomes: dict[int, GameOutcome]
) -> dict[str, np.ndarray]:
    """Per match (plan order): the schedule's arrays and the totals, from `play_fast` for the
    fast matches and from the engine's outcomes (by plan index) for the others."""
    n = sched.seeds.size
    columns = {
        "player_a": sched.player_a,
        "player_b": sched.player_b,
        "repetition": sched.repetition,
        "seed": sched.seeds,
        "rounds": sched.lengths,
        "score_a": np.empty(n, dtype=np.float64),
        "score_b": np.empty(n, dtype=np.float64),
        "coop_a": np.empty(n, dtype=np.int64),
        "coop_b": np.empty(n, dtype=np.int64),
    }
    is_fast = sched.fast
    for key, values in fast.items():
        columns[key][is_fast] = values
    rest = np.flatnonzero(~is_fast).tolist()
    if rest:
        games = [outcomes[i] for i in rest]
        totals = np.array([g.totals for g in games], dtype=np.float64).reshape(-1, 2)
        coops = np.array([g.cooperations for g in games], dtype=np.int64).reshape(-1, 2)
        columns["score_a"][rest], columns["score_b"][rest] = totals[:, 0], totals[:, 1]
        columns["coop_a"][rest], columns["coop_b"][rest] = coops[:, 0], coops[:, 1]
    return columns


def _tables(loaded: LoadedConfig, columns: dict[str, np.ndarray]) -> TournamentResult:
    """matches, leaderboard and pairwise payoffs from per-match columns (players' indices,
    repetition, seed, rounds, both sides' totals and C counts)."""
    names = loaded.names
    cfg: TournamentConfig = loaded.config
    lengths = columns["rounds"]
    coop_a, coop_b = columns["coop_a"], columns["coop_b"]
    matches = {
        "match": np.arange(lengths.size),
        "player_a": [names[i] for i in columns["player_a"].tolist()],
        "player_b": [names[i] for i in columns["player_b"].tolist()],
        "repetition": columns["repetition"],
        "seed": columns["seed"].astype(np.int64),
        "rounds": lengths,
        "score_a": columns["score_a"],
        "score_b": columns["score_b"],
        "coop_rate_a": coop_a / lengths,
        "coop_rate_b": coop_b / lengths,
    }
    table = MatchTable.of(
        player_a=columns["player_a"],
        player_b=columns["player_b"],
        rounds=lengths,
        score_a=columns["score_a"],
        score_b=columns["score_b"],
        coop_a=coop_a,
        coop_b=coop_b,
        repetition=columns["repetition"],
    )
    rng = np.random.default_rng(derive_seed(cfg.run.seed, "leaderboard"))
    board = leaderboard(names, table, rng)
    pairwise = pairwise_payoffs(names, table)
    return TournamentResult(names, matches, board, pairwise)


def tournament_manifest(sched: Schedule) -> dict[str, Any]:
    """The tournament's own manifest keys."""
    loaded = sched.loaded
    cfg: TournamentConfig = loaded.config
    batched = int(sched.batchable.sum())
    return {
        "repetitions": cfg.tournament.repetitions,
        "self_play": cfg.tournament.self_play,
        "noise": cfg.game.noise,
        "horizon": cfg.horizon.model_dump(mode="json"),
        "players": [
            {"name": spec.name, "type": spec.config.type, "batched": spec.batchable}
            for spec in loaded.players
        ],
        "seed_scheme": 'derive_seed(run.seed, "match", player_a, player_b, repetition)',
        "totals": {
            "matches": int(sched.seeds.size),
            "rounds": int(sched.lengths.sum()),
            "batched_matches": batched,
            "per_round_matches": int(sched.seeds.size) - batched,
            "logged_matches": int(sched.logged.sum()),
        },
    }


def play_tournament(loaded: LoadedConfig, concurrency: int = 16) -> TournamentResult:
    """Play every match in memory and compute the tables (no files written)."""
    started = time.perf_counter()
    sched = schedule(loaded)
    rest = sched.plans(~sched.fast)
    outcomes = play_in_memory(loaded, rest, concurrency) if rest else {}
    result = _tables(loaded, _columns_of(sched, play_fast(sched), outcomes))
    result.manifest = tournament_manifest(sched)
    result.manifest["elapsed_s"] = round(time.perf_counter() - started, 4)
    return result


def run_tournament(loaded: LoadedConfig, options: RunOptions | None = None) -> TournamentResult:
    """Play (or resume) a tournament into its output dir and write the artifacts.

    The session plays the matches that need the engine (logged ones, Axelrod or LLM players);
    the `fast` matches are played for their totals when it finishes (`play_fast`), their games
    and rounds counted in the progress beside the engine's.
    """
    options = options or RunOptions()
    started = time.perf_counter()
    sched = schedule(loaded)
    fast = sched.fast
    progress = _Progress(options, int(fast.sum()), int(sched.lengths[fast].sum()))
    tables: list[TournamentResult] = []

    def finish(outcomes: dict[int, GameOutcome], run_dir: Path) -> dict[str, Any]:
        columns = _columns_of(sched, play_fast(sched), outcomes)
        progress.fast_done()
        result = _tables(loaded, columns)
        write_columns(run_dir / MATCHES_FILE, result.matches)
        write_columns(run_dir / LEADERBOARD_FILE, _columns(result.leaderboard))
        write_columns(run_dir / PAYOFF_MATRIX_FILE, _columns(result.pairwise))
        tables.append(result)
        return {"elapsed_s": round(time.perf_counter() - started, 4)}

    rest = sched.plans(~fast)
    session = RunSession(loaded, rest, progress.options, tournament_manifest(sched))
    played = session.run(finish)
    result = tables[0]
    result.manifest = played.manifest
    result.output_dir = played.run_dir
    return result


class _Progress:
    """The run's progress counting the fast matches too: the session's engine reports only the
    matches it plays, so its rounds and games are shown with the fast ones added (as done once
    `fast_done` is called)."""

    def __init__(self, options: RunOptions, games: int, rounds: int) -> None:
        self.games, self.rounds, self.done = games, rounds, False
        self.last = (0, 0)
        self.report = options.progress
        self.options = dataclasses.replace(
            options,
            progress=self.tick if options.progress is not None else None,
            progress_stats=(
                self.stats_with(options.progress_stats)
                if options.progress_stats is not None
                else None
            ),
        )

    def tick(self, done: int, total: int) -> None:
        """The engine's (done, total) rounds, with the fast matches' rounds added."""
        self.last = (done, total)
        if self.report is not None:
            self.report(done + (self.rounds if self.done else 0), total + self.rounds)

    def fast_done(self) -> None:
        """The fast matches are played: report their rounds."""
        self.done = True
        self.tick(*self.last)

    def stats_with(self, receive: Callable[[StatsFn], None]) -> Callable[[StatsFn], None]:
        """Hands the reporter the session's live figures with the fast games added."""

        def wrap(stats: StatsFn) -> None:
            def with_fast() -> RunStats:
                figures = stats()
                done = figures.games_done + (self.games if self.done else 0)
                total = figures.games_total + self.games
                return dataclasses.replace(figures, games_done=done, games_total=total)

            receive(with_fast)

        return wrap


def _columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {key: [row[key] for row in rows] for key in (rows[0] if rows else {})}
