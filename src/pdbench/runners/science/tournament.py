"""Round-robin tournaments: every pair of players (optionally each against itself), repeated.

Match seeds are `derive_seed(run.seed, "match", player_a, player_b, repetition)` (player display
names, in config order: player_a is the earlier one), so adding or removing a player changes no
other match. Lengths come from the horizon and the match seed. Matches are played by the shared
engine (policies in one vectorized batch, Axelrod strategies synchronously, LLM agents round by
round) through a `RunSession`: budgets, llm_calls.jsonl, stored prompts and resume work as in
experiments. A match is a game whose condition is `<player_a>_vs_<player_b>` and whose replicate
is the repetition.

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

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

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
from pdbench.runners.engine.engine import GamePlan
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


def plan_matches(loaded: LoadedConfig) -> list[GamePlan]:
    """Every match: pairs in config order (i <= j with self-play, else i < j), then repetitions."""
    cfg: TournamentConfig = loaded.config
    section = cfg.tournament
    players = loaded.players
    horizon = cfg.horizon.build()
    pairs = [
        (i, j)
        for i in range(len(players))
        for j in range(i if section.self_play else i + 1, len(players))
    ]
    seeds = [
        match_seeds(cfg.run.seed, players[i].name, players[j].name, section.repetitions)
        for i, j in pairs
    ]
    flat = [seed for pair in seeds for seed in pair]
    lengths = horizon.lengths(np.array(flat, dtype=np.uint64)).tolist()
    plans = []
    noise = cfg.game.noise
    for (i, j), pair in zip(pairs, seeds, strict=True):
        agents = (players[i], players[j])
        logged = section.log_rounds or agents[0].is_llm or agents[1].is_llm
        label = f"{players[i].name}{SEPARATOR}{players[j].name}"
        first = len(plans)
        plans += [
            GamePlan(first + rep, label, rep, agents, seed, horizon, noise, n, logged)
            for rep, (seed, n) in enumerate(zip(pair, lengths[first:], strict=False))
        ]
    return plans


def tournament_tables(
    loaded: LoadedConfig, plans: Sequence[GamePlan], outcomes: dict[int, GameOutcome]
) -> TournamentResult:
    """matches, leaderboard and pairwise payoffs from the played matches."""
    names = loaded.names
    cfg: TournamentConfig = loaded.config
    index = {name: i for i, name in enumerate(names)}
    names_a = [p.agents[0].name for p in plans]
    names_b = [p.agents[1].name for p in plans]
    player_a = np.array([index[name] for name in names_a], dtype=np.int64)
    player_b = np.array([index[name] for name in names_b], dtype=np.int64)
    games = [outcomes[p.index] for p in plans]
    lengths = np.array([p.n_rounds for p in plans], dtype=np.int64)
    totals = [x for g in games for x in g.totals]  # type: ignore[union-attr]
    score_a, score_b = np.array(totals, dtype=np.float64).reshape(-1, 2).T
    coops = [x for g in games for x in g.cooperations]  # type: ignore[union-attr]
    coop_a, coop_b = np.array(coops, dtype=np.int64).reshape(-1, 2).T
    repetition = np.array([p.replicate for p in plans], dtype=np.int64)
    matches = {
        "match": np.arange(len(plans)),
        "player_a": names_a,
        "player_b": names_b,
        "repetition": repetition,
        "seed": np.array([p.seed for p in plans], dtype=np.int64),
        "rounds": lengths,
        "score_a": score_a,
        "score_b": score_b,
        "coop_rate_a": coop_a / lengths,
        "coop_rate_b": coop_b / lengths,
    }
    table = MatchTable.of(
        player_a=player_a,
        player_b=player_b,
        rounds=lengths,
        score_a=score_a,
        score_b=score_b,
        coop_a=coop_a,
        coop_b=coop_b,
        repetition=repetition,
    )
    rng = np.random.default_rng(derive_seed(cfg.run.seed, "leaderboard"))
    board = leaderboard(names, table, rng)
    pairwise = pairwise_payoffs(names, table)
    return TournamentResult(names, matches, board, pairwise)


def tournament_manifest(loaded: LoadedConfig, plans: Sequence[GamePlan]) -> dict[str, Any]:
    """The tournament's own manifest keys."""
    cfg: TournamentConfig = loaded.config
    batched = sum(p.batchable for p in plans)
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
            "matches": len(plans),
            "rounds": sum(p.n_rounds for p in plans),
            "batched_matches": batched,
            "per_round_matches": len(plans) - batched,
            "logged_matches": sum(p.logged for p in plans),
        },
    }


def play_tournament(loaded: LoadedConfig, concurrency: int = 16) -> TournamentResult:
    """Play every match in memory and compute the tables (no files written)."""
    started = time.perf_counter()
    plans = plan_matches(loaded)
    result = tournament_tables(loaded, plans, play_in_memory(loaded, plans, concurrency))
    result.manifest = tournament_manifest(loaded, plans)
    result.manifest["elapsed_s"] = round(time.perf_counter() - started, 4)
    return result


def run_tournament(loaded: LoadedConfig, options: RunOptions | None = None) -> TournamentResult:
    """Play (or resume) a tournament into its output dir and write the artifacts."""
    options = options or RunOptions()
    started = time.perf_counter()
    plans = plan_matches(loaded)
    tables: list[TournamentResult] = []

    def finish(outcomes: dict[int, GameOutcome], run_dir: Path) -> dict[str, Any]:
        result = tournament_tables(loaded, plans, outcomes)
        write_columns(run_dir / MATCHES_FILE, result.matches)
        write_columns(run_dir / LEADERBOARD_FILE, _columns(result.leaderboard))
        write_columns(run_dir / PAYOFF_MATRIX_FILE, _columns(result.pairwise))
        tables.append(result)
        return {"elapsed_s": round(time.perf_counter() - started, 4)}

    session = RunSession(loaded, plans, options, tournament_manifest(loaded, plans))
    played = session.run(finish)
    result = tables[0]
    result.manifest = played.manifest
    result.output_dir = played.run_dir
    return result


def _columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {key: [row[key] for row in rows] for key in (rows[0] if rows else {})}
