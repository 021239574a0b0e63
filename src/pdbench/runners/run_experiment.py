"""Running an experiment: conditions x replicates, each game on its own counter-based stream.

Games run as asyncio tasks (LLM calls overlap; both agents of a round are asked at once), and
their rounds are appended to rounds.jsonl a whole game at a time in the deterministic order
(condition, replicate), whatever order they finish in. Provider calls go through the CallBroker
(cache, limits, retries, budget, call log). A run that stops (error, budget, Ctrl-C, kill -9)
keeps every finished game and can be resumed; the resumed artifacts equal an uninterrupted run's.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pdbench.agents.llm import LLMAgent, ParseFailureAbort
from pdbench.core.batch import PolicySpec, is_batchable, play_batch, policy_spec
from pdbench.core.config import LLMAgentConfig
from pdbench.core.metrics import GameOutcome, aggregate_rows
from pdbench.errors import RunError, RunInterrupted
from pdbench.runners.calls import Budget, BudgetExhausted, CallBroker, ProviderFatalError
from pdbench.runners.game import (
    GamePlan,
    GameResult,
    ProgressFn,
    expected_llm_calls,
    plan_games,
    play_game,
    utc_now,
)
from pdbench.runners.registry import LoadedExperiment, build_agent
from pdbench.runners.run_files import (
    base_manifest,
    comparable_snapshot,
    finished_games,
    prepare_output_dir,
    previous_usage,
    read_manifest,
    write_games_in_order,
)
from pdbench.storage.aggregate import (
    add_usage_columns,
    aggregate_run_dir,
    usage_by_game,
    write_aggregates,
)
from pdbench.storage.cache import DEFAULT_CACHE_DIR, ResponseCache
from pdbench.storage.fast_rounds import batch_to_jsonl_games
from pdbench.storage.files import JsonlAppender, write_json_atomic
from pdbench.storage.jsonl_template import RoundsEncoder
from pdbench.storage.jsonl_template import supports as encoder_supports
from pdbench.storage.schema import AGGREGATES_FILE, CALLS_FILE, MANIFEST_FILE, ROUNDS_FILE

__all__ = ["RunSummary", "expected_llm_calls", "plan_games", "run_experiment", "ProgressFn"]


@dataclass
class RunSummary:
    """What a finished run produced."""

    run_dir: Path
    run_id: str
    n_games: int
    n_rounds: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)
    games_played: int = 0
    games_resumed: int = 0


class _OrderedWriter:
    """Writes finished games to rounds.jsonl in plan order; `flush_all` also writes stragglers."""

    def __init__(self, path: Path, order: list[int]) -> None:
        self.appender = JsonlAppender(path)
        self.order = order
        self.position = 0
        self.pending: dict[int, GameResult] = {}
        self.written: list[GameResult] = []
        self.out_of_order = False

    def add(self, result: GameResult) -> None:
        self.pending[result.plan.index] = result
        while self.position < len(self.order) and self.order[self.position] in self.pending:
            done = self.pending.pop(self.order[self.position])
            self.appender.write_bytes(done.blob)
            done.blob = b""  # written: free it (a long run's rounds need not stay in memory)
            self.written.append(done)
            self.position += 1

    def is_next(self, index: int) -> bool:
        """True when the game with this plan index is the next one to write."""
        return self.position < len(self.order) and self.order[self.position] == index

    def wrote_directly(self, result: GameResult) -> None:
        """Record a game an encoder wrote straight into the file (it was `is_next`)."""
        assert self.is_next(result.plan.index)
        self.appender.flush()
        self.written.append(result)
        self.position += 1
        while self.position < len(self.order) and self.order[self.position] in self.pending:
            done = self.pending.pop(self.order[self.position])
            self.appender.write_bytes(done.blob)
            done.blob = b""
            self.written.append(done)
            self.position += 1

    def flush_all(self) -> None:
        for index in sorted(self.pending):
            self.out_of_order = True
            done = self.pending.pop(index)
            self.appender.write_bytes(done.blob)
            done.blob = b""
            self.written.append(done)
        self.appender.close()


def _has_llm(plans: list[GamePlan]) -> bool:
    return any(
        isinstance(getattr(p.condition, k), LLMAgentConfig)
        for p in plans
        for k in ("agent_a", "agent_b")
    )


async def _play_all(
    loaded: LoadedExperiment,
    plans: list[GamePlan],
    writer: _OrderedWriter,
    broker: CallBroker,
    concurrency: int,
    progress: ProgressFn | None,
    done_before: int,
    total: int,
) -> None:
    done = done_before
    providers: dict[str, Any] = {}
    # Games in flight may exceed calls in flight (the broker's limit), so that call slots freed
    # between a game's rounds are taken by other games and the call limit stays saturated.
    # Concurrency 1 is strictly sequential: one game, one call at a time.
    gate = asyncio.Semaphore(1 if concurrency <= 1 else concurrency * 4)
    if progress is not None:
        progress(done, total)

    def tick(n: int = 1) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)

    async def one(plan: GamePlan) -> None:
        async with gate:
            agents = []
            for key in ("agent_a", "agent_b"):
                agent = build_agent(loaded, plan.condition.name, key, providers)
                if isinstance(agent, LLMAgent):
                    agent.provider = broker.bind(
                        agent.provider,
                        agent.config,
                        condition=plan.condition.name,
                        replicate=plan.replicate,
                        agent_key=key,
                        game_seed=plan.seed,
                        api_key=getattr(agent.provider, "api_key_value", None),
                    )
                agents.append(agent)
            writer.add(await play_game(plan, (agents[0], agents[1]), loaded, tick))

    batched = _play_batched(loaded, plans, writer, tick)
    tasks = [asyncio.create_task(one(plan)) for plan in plans if plan.index not in batched]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in providers.values():
            closer = getattr(client, "aclose", None)
            if closer is not None:
                try:
                    await closer()
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass


def _play_batched(
    loaded: LoadedExperiment,
    plans: list[GamePlan],
    writer: _OrderedWriter,
    tick: Callable[[int], None],
) -> set[int]:
    """Play every policy-vs-policy game on the vectorized engine, all conditions in one batch.

    The results are identical to the per-round engine's (same counter-based draws). Records are
    serialized and written a few games at a time, so memory stays small on long runs. Returns
    the plan indexes played here.
    """
    games = [
        p for p in plans if is_batchable(p.condition.agent_a) and is_batchable(p.condition.agent_b)
    ]
    if not games:
        return set()
    specs: dict[PolicySpec, int] = {}
    ids = np.zeros((2, len(games)), dtype=np.int64)
    for i, plan in enumerate(games):
        for side, agent in enumerate((plan.condition.agent_a, plan.condition.agent_b)):
            ids[side, i] = specs.setdefault(policy_spec(agent), len(specs))
    result = play_batch(
        list(specs),
        ids[0],
        ids[1],
        np.array([p.seed for p in games], dtype=np.uint64),
        np.array([p.n_rounds for p in games], dtype=np.int64),
        loaded.config.game.matrix(),
        np.array([p.noise for p in games], dtype=np.float64),
    )
    matrix = loaded.config.game.matrix()
    encoder = RoundsEncoder(matrix) if encoder_supports(matrix) else None
    start = 0
    while start < len(games):
        # A chunk: consecutive games of one condition, about 200,000 rounds at most.
        cond = games[start].condition
        stop, rounds = start, 0
        while (
            stop < len(games)
            and games[stop].condition is cond
            and (rounds < 200_000 or stop == start)
        ):
            rounds += games[stop].n_rounds
            stop += 1
        name_a, name_b = cond.agent_a.display_name(), cond.agent_b.display_name()
        direct = encoder is not None and all(writer.is_next(p.index) for p in games[start:stop][:1])
        blobs: list[bytes] = []
        if not direct:
            blobs = batch_to_jsonl_games(
                result,
                run_id=loaded.config.run.run_id,
                condition=cond.name,
                replicates=[p.replicate for p in games],
                seeds=[p.seed for p in games],
                agent_a_name=name_a,
                agent_b_name=name_b,
                horizon=games[start].horizon,
                timestamps=utc_now(),
                games=list(range(start, stop)),
            )
        for offset, i in enumerate(range(start, stop)):
            plan = games[i]
            arrays = result.game(i)
            outcome = GameOutcome(
                condition=cond.name,
                replicate=plan.replicate,
                agent_a_name=name_a,
                agent_b_name=name_b,
                a_coop=arrays["played_a"],
                b_coop=arrays["played_b"],
                a_payoffs=arrays["payoffs_a"],
                b_payoffs=arrays["payoffs_b"],
            )
            if direct and encoder is not None and writer.is_next(plan.index):
                horizon = plan.horizon
                base = {
                    "run_id": loaded.config.run.run_id,
                    "condition": cond.name,
                    "replicate": plan.replicate,
                    "seed": plan.seed,
                    "agent_a_name": name_a,
                    "agent_b_name": name_b,
                    "horizon_type": horizon.type,
                    "fixed_n": getattr(horizon, "n_rounds", None),
                    "stop_prob": getattr(horizon, "stop_prob", None),
                }
                encoder.write_game(
                    writer.appender.handle, arrays, base=base, horizon=horizon, timestamp=utc_now()
                )
                writer.wrote_directly(GameResult(plan, b"", outcome))
            elif direct:
                blob = batch_to_jsonl_games(
                    result,
                    run_id=loaded.config.run.run_id,
                    condition=cond.name,
                    replicates=[p.replicate for p in games],
                    seeds=[p.seed for p in games],
                    agent_a_name=name_a,
                    agent_b_name=name_b,
                    horizon=plan.horizon,
                    timestamps=utc_now(),
                    games=[i],
                )[0]
                writer.add(GameResult(plan, blob, outcome))
            else:
                writer.add(GameResult(plan, blobs[offset], outcome))
            tick(plan.n_rounds)
        start = stop
    return {p.index for p in games}


def _start_resume(
    run_dir: Path, loaded: LoadedExperiment, plans: list[GamePlan], n_rep: int
) -> tuple[dict[str, Any], dict[tuple[str, int], list[bytes]]]:
    if not run_dir.is_dir():
        raise RunError(f"{run_dir}: nothing to resume (no such directory); run without --resume")
    manifest = read_manifest(run_dir)
    if comparable_snapshot(manifest.get("config", {})) != comparable_snapshot(loaded.snapshot):
        raise RunError(
            f"{run_dir}: the config changed since this run started (only run.budget may change on resume); "
            "start a new run with another output_dir or --overwrite"
        )
    if manifest.get("replicates") != n_rep:
        raise RunError(
            f"{run_dir}: run has {manifest.get('replicates')} replicates, not {n_rep}; pass the same --replicates"
        )
    expected = {(p.condition.name, p.replicate): p.n_rounds for p in plans}
    done = finished_games(run_dir, expected)
    write_games_in_order(run_dir, done, [(p.condition.name, p.replicate) for p in plans])
    manifest["status"] = "running"
    manifest["error"] = None
    manifest["config"] = loaded.snapshot
    manifest.setdefault("sessions", []).append(
        {"started_at_utc": utc_now(), "resumed": True, "games_kept": len(done)}
    )
    return manifest, done


def run_experiment(
    loaded: LoadedExperiment,
    *,
    replicates: int | None = None,
    overwrite: bool = False,
    progress: ProgressFn | None = None,
    concurrency: int = 16,
    output_dir: Path | None = None,
    resume: bool = False,
    cache_dir: Path | None = None,
    use_cache: bool = True,
) -> RunSummary:
    """Run (or resume) every condition x replicate and write the artifacts; see the module docstring."""
    cfg = loaded.config
    # pyarrow (for aggregates.parquet) takes most of a second to import: do it while games play.
    threading.Thread(target=importlib.import_module, args=("pyarrow.parquet",), daemon=True).start()
    run_dir = Path(output_dir or cfg.run.output_dir)
    plans = plan_games(loaded, replicates)
    n_rep = replicates if replicates is not None else cfg.experiment.replicates
    total_rounds = sum(p.n_rounds for p in plans)
    if resume:
        manifest, done = _start_resume(run_dir, loaded, plans, n_rep)
    else:
        prepare_output_dir(run_dir, overwrite)
        manifest, done = base_manifest(loaded, plans, n_rep, utc_now()), {}
    manifest["output_dir"] = str(run_dir)
    write_json_atomic(run_dir / MANIFEST_FILE, manifest)
    todo = [p for p in plans if (p.condition.name, p.replicate) not in done]
    llm = _has_llm(plans)
    cache = ResponseCache(cache_dir or DEFAULT_CACHE_DIR) if (llm and use_cache and todo) else None
    calls_log = JsonlAppender(run_dir / CALLS_FILE) if llm else None
    budget = Budget(cfg.run.budget, *(previous_usage(run_dir) if resume else (0, 0, 0.0)))
    session = len(manifest.get("sessions") or [None]) - 1
    broker = CallBroker(cache, budget, calls_log, concurrency, session=session)
    writer = _OrderedWriter(run_dir / ROUNDS_FILE, [p.index for p in todo])
    done_rounds = total_rounds - sum(p.n_rounds for p in todo)
    status, error = "completed", None
    try:
        asyncio.run(
            _play_all(
                loaded, todo, writer, broker, concurrency, progress, done_rounds, total_rounds
            )
        )
    except (ParseFailureAbort, ProviderFatalError) as exc:
        status, error = "failed", str(exc)
    except BudgetExhausted as exc:
        status, error = "stopped", str(exc)
    except KeyboardInterrupt:
        status, error = "interrupted", "interrupted by the user"
    except BaseException as exc:
        status, error = "failed", f"{type(exc).__name__}: {exc}"
        raise
    finally:
        writer.flush_all()
        if calls_log is not None:
            calls_log.close()
        if cache is not None:
            cache.close()
        usage = usage_by_game(run_dir)
        summary = _usage_summary(usage)
        calls, tokens, cost = previous_usage(run_dir)
        summary["spent_all_sessions"] = {
            "provider_calls": calls,
            "tokens": tokens,
            "cost_usd": round(cost, 8),
        }
        manifest.update(status=status, error=error, finished_at_utc=utc_now(), usage=summary)
        write_json_atomic(run_dir / MANIFEST_FILE, manifest)
    if status == "interrupted":
        raise RunInterrupted(
            f"interrupted: finished games are kept in {run_dir / ROUNDS_FILE}; "
            f"continue with `pdbench resume {run_dir}`"
        )
    if status != "completed":
        raise RunError(
            f"run stopped: {error}. Finished games are kept in {run_dir / ROUNDS_FILE}; "
            f"continue with `pdbench resume {run_dir}`"
        )
    order = [c.name for c in cfg.experiment.conditions]
    if resume or writer.out_of_order:
        expected = {(p.condition.name, p.replicate): p.n_rounds for p in plans}
        write_games_in_order(
            run_dir,
            finished_games(run_dir, expected),
            [(p.condition.name, p.replicate) for p in plans],
        )
        rows = aggregate_run_dir(run_dir)
    else:
        rows = aggregate_rows(
            cfg.run.run_id,
            [r.outcome for r in writer.written],
            order,
            cfg.metrics.collapse_params(),
        )
        rows = add_usage_columns(rows, usage)
        write_aggregates(rows, run_dir / AGGREGATES_FILE)
    return RunSummary(
        run_dir,
        cfg.run.run_id,
        len(plans),
        total_rounds,
        rows,
        manifest,
        len(writer.written),
        len(done),
    )


def _usage_summary(usage: dict[tuple[str, int, str], dict[str, Any]]) -> dict[str, Any]:
    """Token, call and cost totals per condition and agent, and overall."""
    per_condition: dict[str, dict[str, dict[str, Any]]] = {}
    total: dict[str, Any] = {}
    for (condition, _rep, agent), counts in sorted(usage.items()):
        slot = per_condition.setdefault(condition, {}).setdefault(agent, {})
        for name, value in counts.items():
            slot[name] = slot.get(name, 0) + value
            total[name] = total.get(name, 0) + value
    return {"per_condition": per_condition, "total": total}
