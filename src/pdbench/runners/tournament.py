"""Round-robin tournaments: every pair of players (optionally each against itself), repeated.

Match seeds are `derive_seed(run.seed, "match", player_a, player_b, repetition)` (player display
names, in config order: player_a is the earlier one), so adding or removing a player changes no
other match. Lengths come from the horizon and the match seed. Matches between batchable policies
run through the vectorized engine in a single batch; the rest round by round (see
`pdbench.runners.matches`).

Artifacts in the output dir:
- tournament_manifest.json: config snapshot, players, seeds scheme, totals, timings, environment.
- matches.parquet: one row per match: match, player_a, player_b, repetition, seed, rounds,
  score_a, score_b (totals), coop_rate_a, coop_rate_b.
- leaderboard.parquet: see `pdbench.core.tournament_metrics` (mean score per round, 95% CI, wins,
  draws, losses, cooperation rate, rank).
- payoff_matrix.parquet: long form: player, opponent, mean_score_per_round (the player's mean
  per-round payoff against that opponent), matches.
- rounds.parquet (only with log_rounds): match, round_index, action_a, action_b, intended_a,
  intended_b, payoff_a, payoff_b.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from pdbench.core.batch import BatchResult, is_batchable
from pdbench.core.rng import derive_seed
from pdbench.core.tournament_metrics import leaderboard, pairwise_payoffs, payoff_table
from pdbench.runners.games_config import LoadedGames, load_tournament
from pdbench.runners.matches import ProgressFn, play_matches, write_parquet
from pdbench.runners.run_files import manifest_header, prepare_output_dir
from pdbench.storage.files import environment_info, write_json_atomic

MANIFEST_FILE = "tournament_manifest.json"
MATCHES_FILE = "matches.parquet"
LEADERBOARD_FILE = "leaderboard.parquet"
PAYOFF_MATRIX_FILE = "payoff_matrix.parquet"
ROUNDS_FILE = "rounds.parquet"
ARTIFACTS = (MANIFEST_FILE, MATCHES_FILE, LEADERBOARD_FILE, PAYOFF_MATRIX_FILE, ROUNDS_FILE)


@dataclass
class TournamentResult:
    """What a tournament produced (also written to `output_dir` by `run_tournament`)."""

    players: list[str]
    matches: dict[str, Any]
    leaderboard: list[dict[str, Any]]
    pairwise: list[dict[str, Any]]
    rounds: dict[str, np.ndarray] | None = None
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


def match_schedule(
    names: list[str], run_seed: int, repetitions: int, self_play: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(player_a, player_b, repetition, seed) of every match: pairs in config order, then reps."""
    pairs = [
        (i, j) for i in range(len(names)) for j in range(i if self_play else i + 1, len(names))
    ]
    seeds = [s for i, j in pairs for s in match_seeds(run_seed, names[i], names[j], repetitions)]
    pair_index = np.repeat(np.array(pairs, dtype=np.int64).reshape(-1, 2), repetitions, axis=0)
    return (
        pair_index[:, 0].copy(),
        pair_index[:, 1].copy(),
        np.tile(np.arange(repetitions, dtype=np.int64), len(pairs)),
        np.array(seeds, dtype=np.uint64),
    )


def play_tournament(
    loaded: LoadedGames,
    *,
    progress: ProgressFn | None = None,
    log_rounds: bool | None = None,
    repetitions: int | None = None,
    concurrency: int = 16,
) -> TournamentResult:
    """Play every match in memory and compute the leaderboard (no files written)."""
    cfg = loaded.config
    section = cfg.tournament
    reps = repetitions if repetitions is not None else section.repetitions
    names = loaded.names
    horizon = cfg.horizon.build()
    started = time.perf_counter()
    player_a, player_b, rep, seeds = match_schedule(names, cfg.run.seed, reps, section.self_play)
    lengths = horizon.lengths(seeds)
    result, batched = play_matches(
        loaded,
        player_a,
        player_b,
        seeds,
        lengths,
        horizon=horizon,
        noise=cfg.game.noise,
        progress=progress,
        concurrency=concurrency,
    )
    score_a, score_b = result.totals()
    coop_a, coop_b = result.cooperations()
    name_arr = np.array(names, dtype=object)
    matches = {
        "match": np.arange(lengths.size),
        "player_a": name_arr[player_a].tolist(),
        "player_b": name_arr[player_b].tolist(),
        "repetition": rep,
        "seed": seeds.astype(np.int64),
        "rounds": lengths,
        "score_a": score_a,
        "score_b": score_b,
        "coop_rate_a": coop_a / lengths,
        "coop_rate_b": coop_b / lengths,
    }
    board = leaderboard(names, player_a, player_b, lengths, score_a, score_b, coop_a, coop_b)
    pairwise = pairwise_payoffs(names, player_a, player_b, lengths, score_a, score_b)
    want_rounds = section.log_rounds if log_rounds is None else log_rounds
    manifest = {
        "repetitions": reps,
        "self_play": section.self_play,
        "noise": cfg.game.noise,
        "horizon": cfg.horizon.model_dump(mode="json"),
        "players": [
            {"name": name, "type": p.type, "batched": is_batchable(p)}
            for name, p in zip(names, loaded.players, strict=True)
        ],
        "seed_scheme": 'derive_seed(run.seed, "match", player_a, player_b, repetition)',
        "totals": {
            "matches": int(lengths.size),
            "rounds": int(lengths.sum()),
            "batched_matches": int(batched.sum()),
            "per_round_matches": int((~batched).sum()),
        },
        "elapsed_s": round(time.perf_counter() - started, 4),
    }
    return TournamentResult(
        names,
        matches,
        board,
        pairwise,
        rounds_table(result) if want_rounds else None,
        manifest,
    )


def rounds_table(result: BatchResult) -> dict[str, np.ndarray]:
    """Every round of every match as columns (match, round_index, moves as "C"/"D", payoffs)."""
    valid = np.arange(result.played_a.shape[1])[None, :] < result.lengths[:, None]
    match, round_index = np.nonzero(valid)
    letters = np.array(["D", "C"], dtype=object)
    return {
        "match": match,
        "round_index": round_index,
        "action_a": letters[result.played_a[valid].astype(np.int64)],
        "action_b": letters[result.played_b[valid].astype(np.int64)],
        "intended_a": letters[result.intended_a[valid].astype(np.int64)],
        "intended_b": letters[result.intended_b[valid].astype(np.int64)],
        "payoff_a": result.payoffs_a[valid],
        "payoff_b": result.payoffs_b[valid],
    }


def run_tournament(
    config: str | Path | LoadedGames,
    output_dir: Path | None = None,
    overwrite: bool = False,
    progress: ProgressFn | None = None,
    *,
    log_rounds: bool | None = None,
    repetitions: int | None = None,
    concurrency: int = 16,
) -> TournamentResult:
    """Load (if given a path), play and write a tournament; returns the result with its dir."""
    loaded = config if isinstance(config, LoadedGames) else load_tournament(config)
    cfg = loaded.config
    out = Path(output_dir or cfg.run.output_dir)
    prepare_output_dir(out, overwrite, ARTIFACTS)
    started = datetime.now(UTC).isoformat()
    result = play_tournament(
        loaded,
        progress=progress,
        log_rounds=log_rounds,
        repetitions=repetitions,
        concurrency=concurrency,
    )
    write_parquet(out / MATCHES_FILE, result.matches)
    write_parquet(out / LEADERBOARD_FILE, _columns(result.leaderboard))
    write_parquet(out / PAYOFF_MATRIX_FILE, _columns(result.pairwise))
    if result.rounds is not None:
        write_parquet(out / ROUNDS_FILE, result.rounds)
    result.manifest = {
        **manifest_header(loaded, started),
        **result.manifest,
        "artifacts": [
            name for name in ARTIFACTS if name != ROUNDS_FILE or result.rounds is not None
        ],
        "environment": environment_info(loaded.root),
    }
    write_json_atomic(out / MANIFEST_FILE, result.manifest)
    result.output_dir = out
    return result


def _columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {key: [row[key] for row in rows] for key in (rows[0] if rows else {})}


def format_leaderboard(result: TournamentResult, width: int = 24) -> str:
    """The leaderboard as a fixed-width text table."""
    header = (
        f"{'rank':>4}  {'player':<{width}} {'score/round':>11} {'95% CI':>15} "
        f"{'wins':>5} {'draws':>5} {'losses':>6} {'coop':>5}"
    )
    lines = [header, "-" * len(header)]

    def num(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    for row in result.leaderboard:
        ci = f"[{num(row['ci95_low'], '.3f')}, {num(row['ci95_high'], '.3f')}]"
        lines.append(
            f"{row['rank']:>4}  {row['player'][:width]:<{width}} "
            f"{num(row['mean_score_per_round'], '.3f'):>11} {ci:>15} {row['wins']:>5} "
            f"{row['draws']:>5} {row['losses']:>6} {num(row['cooperation_rate'], '.2f'):>5}"
        )
    return "\n".join(lines)
