"""`pdbench profile RUN_DIR`: strategy inference for every condition and agent of an experiment
run, written to strategy_fit.parquet (see core/strategy_fit.py for the method)."""

from __future__ import annotations

import json
import math
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pdbench.agents.strategy_library import (
    LIBRARIES,
    MEMORY_ONE,
    axelrod_candidates,
    builtin_candidates,
)
from pdbench.core.metrics import GameOutcome
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.rng import derive_seed
from pdbench.core.strategy_card import (
    EVIDENCE,
    NOISE_LIMIT,
    TIE_TOLERANCE,
    card_ranking,
    card_ties,
    strategy_label,
)
from pdbench.core.strategy_fit import (
    DEFAULT_BOOTSTRAP,
    Candidate,
    GameStats,
    StrategyFit,
    fit_each,
    game_stats,
    sfem,
    share_intervals,
)
from pdbench.core.strategy_gof import (
    GOF_ALPHA,
    GOF_METHOD,
    GOF_RESAMPLES,
    card_verdict,
    gof_test,
    moves_explained,
    round_designs,
)
from pdbench.errors import RunError
from pdbench.storage.aggregate import condition_outcomes
from pdbench.storage.record.table import RunDirError
from pdbench.storage.run_dir import RunLock, read_manifest
from pdbench.storage.strategy_fit import STRATEGY_FIT_FILE, write_strategy_fit

WORKERS = 2  # threads fitting agents (this machine class has 2 cores)
QUEUED = 1  # agents waiting for a worker before the next condition is read


@dataclass(frozen=True, slots=True)
class ProfileResult:
    """The rows written and where."""

    rows: list[dict[str, Any]]
    path: Path


def _matrix(manifest: dict[str, Any]) -> PayoffMatrix:
    game = (manifest.get("config") or {}).get("game") or {}
    table = game.get("payoff_matrix")
    return PayoffMatrix.from_nested(table) if table else PayoffMatrix()


def _side_games(
    games: list[GameOutcome], side: str
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]]:
    out = []
    for g in games:
        own, opp = (g.a_coop, g.b_coop) if side == "a" else (g.b_coop, g.a_coop)
        fallback = g.a_fallback if side == "a" else g.b_fallback
        p_coop = g.a_p_cooperate if side == "a" else g.b_p_cooperate
        decided = None if fallback is None else ~np.asarray(fallback, dtype=bool)
        out.append((own, opp, decided, p_coop))
    return out


@dataclass(frozen=True, slots=True)
class _Side:
    """One condition's agent to fit: its games (replicate order) and candidates."""

    condition: str
    side: str
    games: list[GameOutcome]
    data: list[tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]]
    candidates: list[Candidate]
    seed: int
    resamples: int


def _sides(
    manifest: dict[str, Any], outcomes: list[GameOutcome], library: str, resamples: int
) -> tuple[list[str], list[_Side]]:
    """The conditions of `outcomes` (config order, then by name) and their agents to fit. The
    Axelrod library's candidates (replayed here) are built in the calling thread."""
    if library not in LIBRARIES:
        raise RunError(f"unknown strategy library {library!r} (valid: {', '.join(LIBRARIES)})")
    matrix = _matrix(manifest)
    seed = int(manifest.get("seed") or 0)
    by_condition: dict[str, list[GameOutcome]] = {}
    for outcome in outcomes:
        by_condition.setdefault(outcome.condition, []).append(outcome)
    order = [c["name"] for c in manifest.get("conditions", []) if c.get("name") in by_condition]
    order += sorted(set(by_condition) - set(order))
    sides = []
    for condition in order:
        games = sorted(by_condition[condition], key=lambda g: g.replicate)
        for side_index, side in enumerate(("a", "b")):
            data = _side_games(games, side)
            candidates = builtin_candidates(matrix, side_index)
            if library == "all":
                candidates += axelrod_candidates([(own, opp) for own, opp, _, _ in data])
            sides.append(_Side(condition, side, games, data, candidates, seed, resamples))
    return order, sides


def _side_rows(job: _Side) -> list[dict[str, Any]]:
    """The strategy_fit rows of one condition's agent (candidate order)."""
    condition, side, games, data, candidates = (
        job.condition,
        job.side,
        job.games,
        job.data,
        job.candidates,
    )
    stats = game_stats(data, candidates)
    fits = card_ranking(fit_each(stats, candidates), candidates)
    mixture = sfem(stats, candidates)
    rng = np.random.default_rng(derive_seed(job.seed, "strategy_fit", condition, side))
    low, high = share_intervals(stats, candidates, rng, job.resamples, mixture=mixture)
    named, p_values = _gof(data, candidates, stats, fits, job.seed, condition, side)
    adequate = bool(p_values.get(named, math.nan) >= GOF_ALPHA)
    if not adequate:  # the intervals would describe sampling from a library that is wrong
        low = np.full(len(candidates), np.nan)
        high = low
    name = games[0].agent_a_name if side == "a" else games[0].agent_b_name
    soft = any(p is not None and np.any(~np.isnan(p)) for *_, p in data)
    n_moves = int(stats.moves.sum())
    rows = []
    for j, (cand, fit, share, lo, hi) in enumerate(
        zip(candidates, fits, mixture.shares, low, high, strict=True)
    ):
        rows.append(
            {
                "condition": condition,
                "agent": side,
                "agent_name": name,
                "strategy": fit.strategy,
                "rank": fit.rank,
                "log_likelihood": fit.log_likelihood,
                "bic": fit.bic,
                "n_params": fit.n_params,
                "tremble": fit.tremble,
                "parameters": json.dumps(cand.parameters(fit.free_probabilities)),
                "share": _finite(share),
                "share_ci_low": _finite(lo),
                "share_ci_high": _finite(hi),
                "mixture_tremble": _finite(mixture.tremble),
                "n_games": len(games),
                "n_moves": n_moves,
                "soft_labels": bool(soft),
                "adequate": adequate,
                "gof_p_value": _finite(p_values.get(j, math.nan)),
                "moves_explained": _finite(moves_explained(stats, j)),
                "indistinguishable_from": json.dumps(list(fit.indistinguishable_from)),
            }
        )
    return rows


def _ordered(rows: list[dict[str, Any]], order: list[str]) -> list[dict[str, Any]]:
    rows.sort(key=lambda r: (order.index(r["condition"]), r["agent"], r["rank"]))
    return rows


def profile_rows(
    manifest: dict[str, Any],
    outcomes: list[GameOutcome],
    library: str = "builtin",
    resamples: int = DEFAULT_BOOTSTRAP,
) -> list[dict[str, Any]]:
    """strategy_fit rows of every condition (config order) and agent."""
    order, sides = _sides(manifest, outcomes, library, resamples)
    return _ordered([row for job in sides for row in _side_rows(job)], order)


def _gof(
    data: list[tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]],
    candidates: list[Candidate],
    stats: GameStats,
    fits: list[StrategyFit],
    seed: int,
    condition: str,
    side: str,
) -> tuple[int, dict[int, float]]:
    """The best-ranked named strategy (the index of the candidate that decides `adequate`) and
    the goodness-of-fit p-values (core/strategy_gof.py) of it and of the memory-one family, by
    candidate index; machines are not run again (their states come from `stats`)."""
    named = min((f.rank, j) for j, f in enumerate(fits) if candidates[j].in_mixture)[1]
    tested = [named] + [j for j, c in enumerate(candidates) if c.name == MEMORY_ONE]
    designs = round_designs(
        data, [candidates[j] for j in tested], [stats.states_of(j) for j in tested]
    )
    out = {}
    for j, design in zip(tested, designs, strict=True):
        rng = np.random.default_rng(
            derive_seed(seed, "strategy_gof", condition, side, candidates[j].name)
        )
        out[j] = gof_test(design, rng, GOF_RESAMPLES).p_value
    return named, out


def _finite(value: float) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def profile_settings(library: str, resamples: int = DEFAULT_BOOTSTRAP) -> dict[str, Any]:
    """The strategy card's settings, recorded in strategy_fit.parquet's metadata."""
    return {
        "library": library,
        "ranking": "BIC of each strategy fitted alone (tremble, free probabilities); RANDOM(p) "
        f"ahead of rules with a tremble above {NOISE_LIMIT} unless their BIC is lower by more "
        f"than {EVIDENCE}",
        "indistinguishable": "the same number of parameters and log-likelihoods equal within "
        f"{TIE_TOLERANCE} (relative)",
        "shares": "Dal Bo-Frechette mixture (EM), conditional on the library",
        "share_interval": f"bootstrap over games, {resamples} resamples, expanded percentile; "
        "null when the card is not adequate",
        "gof_method": GOF_METHOD,
        "gof_resamples": GOF_RESAMPLES,
        "gof_alpha": GOF_ALPHA,
        "gof_tested": "the best-ranked named strategy (decides `adequate`) and MEMORY_ONE",
    }


def profile_run(
    run_dir: Path, library: str = "builtin", resamples: int = DEFAULT_BOOTSTRAP
) -> ProfileResult:
    """Fit every condition and agent of an experiment run; write strategy_fit.parquet."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: not a directory")
    manifest = read_manifest(run_dir, "experiment")
    with RunLock(run_dir):
        rows = _fit_conditions(run_dir, manifest, library, resamples)
        path = run_dir / STRATEGY_FIT_FILE
        write_strategy_fit(rows, path, profile_settings(library, resamples))
    return ProfileResult(rows, path)


def _fit_conditions(
    run_dir: Path, manifest: dict[str, Any], library: str, resamples: int
) -> list[dict[str, Any]]:
    """The rows of every condition, in the order they are read. Each agent of each condition
    is fitted in a worker thread (NumPy releases the GIL in its loops) while the next
    conditions are read: a condition is read whenever at most QUEUED agents wait or run
    besides one per worker, so a long fit does not hold the other worker idle, and memory
    stays bounded (only the conditions with unfinished fits are held). Every agent's fit is
    computed as if alone, so the rows are those of a fit one after the other. On an error (or
    Ctrl-C) the fits not started are cancelled."""
    pool = ThreadPoolExecutor(WORKERS)
    try:
        read: list[tuple[list[str], list[Future[list[dict[str, Any]]]]]] = []
        unfinished: set[Future[list[dict[str, Any]]]] = set()
        for _, outcomes in condition_outcomes(run_dir, manifest):
            order, sides = _sides(manifest, outcomes, library, resamples)
            futures = [pool.submit(_side_rows, job) for job in sides]
            read.append((order, futures))
            unfinished.update(futures)
            while len(unfinished) > WORKERS + QUEUED:
                done, unfinished = wait(unfinished, return_when=FIRST_COMPLETED)
                for future in done:
                    future.result()  # an error stops the run now
        return [row for order, futures in read for row in _collect(order, futures)]
    finally:
        pool.shutdown(cancel_futures=True)


def _collect(order: list[str], futures: list[Future[list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    return _ordered([row for future in futures for row in future.result()], order)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def strategy_table(rows: list[dict[str, Any]], top: int = 3) -> str:
    """The best-ranked strategies of each condition and agent, one line each: BIC rank, the
    tremble, and the mixture share with its interval. When other strategies explain the moves
    as well as the best named one, a line names them (indistinguishable on these games); when
    the best named strategy fails its goodness-of-fit test, a line says so in words and no
    share is shown."""
    lines = [
        f"{'condition':24} {'agent':28} {'rank':>4} {'strategy':22} {'tremble':>7} "
        f"{'share [95% CI]':>18}  parameters"
    ]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["condition"], row["agent"]), []).append(row)
    for group in groups.values():
        verdict = card_verdict(group)
        ties = card_ties(group)
        for row in sorted(group, key=lambda r: r["rank"])[:top]:
            share = "-" if verdict else _pct(row["share"])
            if not verdict and row["share_ci_low"] is not None:
                share += f" [{_pct(row['share_ci_low'])}, {_pct(row['share_ci_high'])}]"
            tremble = "-" if row["tremble"] is None else f"{row['tremble']:.3f}"
            params = json.loads(row["parameters"])
            shown = ", ".join(f"{k} {v:.2f}" for k, v in params.items())
            label = strategy_label(row["strategy"], params)
            lines.append(
                f"{row['condition'][:24]:24} {row['agent']}: {row['agent_name'][:25]:25} "
                f"{row['rank']:>4} {label[:22]:22} {tremble:>7} {share:>18}  {shown}"
            )
        if ties:
            lines.append(f"{'':24} {group[0]['agent']}: {ties}")
        if verdict:
            lines.append(f"{'':24} {group[0]['agent']}: {verdict}")
    return "\n".join(lines)
