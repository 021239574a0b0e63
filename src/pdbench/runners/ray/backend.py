"""The Ray backend (`--backend ray`): a run's games played as Ray tasks on a local or remote
Ray cluster, with artifacts equal to the local backend's.

The driver (the `pdbench` process) keeps all the bookkeeping: it plans, resumes, and writes
rounds.jsonl, llm_calls.jsonl, the manifest and the mode's artifacts exactly as the local backend
does. The games still to play are dealt round-robin into chunks (see `play_on_ray`); each chunk
is one Ray task (a streaming generator) that plays its games with the same `Engine` and sends
back, as soon as each game finishes, its outcome, its encoded rounds.jsonl lines and the call
records made meanwhile.
The driver writes the games in plan order through the session's `OrderedRoundsWriter`, so
rounds.jsonl (timestamps aside) and the Parquet artifacts equal the local backend's, and a run
killed at any moment keeps the games it had written and resumes like a local one.

Limits hold across the whole cluster: one `LimitsKeeper` actor per session holds the run's call
gate (`--concurrency`), each provider's gate (`max_concurrency`, per provider, model and server)
and the budget (`run.budget`, starting from what earlier sessions spent); every worker's broker
takes its call slots from it (`RayLimits`; both in `pdbench.runners.ray.limits`). The first
error of any task (budget, provider failure, parse abort) halts the keeper, so the other tasks
stop at their next call; the driver writes what finished and raises that error, as the local
backend would. The response cache is
the run's cache directory, opened by every task: on a multi-node cluster it must be on a file
system every node sees.

`ray` is imported only by this module's functions, and the module only for `--backend ray`.
"""

from __future__ import annotations

import os
import queue
import signal
import socket
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pdbench.agents.llm import ParseFailureAbort
from pdbench.core.config import BudgetConfig
from pdbench.core.metrics import GameOutcome
from pdbench.core.payoff import PayoffMatrix
from pdbench.errors import RunError
from pdbench.redact import redact
from pdbench.runners.engine.broker import (
    Budget,
    BudgetExhausted,
    CallBroker,
    ProviderFatalError,
    RunHalted,
)
from pdbench.runners.engine.engine import Engine, GamePlan, GameResult
from pdbench.runners.ray.limits import LimitsKeeper, RayLimits
from pdbench.storage.cache import ResponseCache, cache_key
from pdbench.storage.files import JsonlAppender
from pdbench.storage.record.fields import GameKey
from pdbench.storage.record.jsonl import OrderedRoundsWriter, RoundsEncoder

MISSING = "--backend ray needs the ray extra: run `uv sync --extra ray`"
# Errors a task may report, raised again by the driver as themselves.
ERRORS: dict[str, type[Exception]] = {
    "BudgetExhausted": BudgetExhausted,
    "ProviderFatalError": ProviderFatalError,
    "ParseFailureAbort": ParseFailureAbort,
    "RunHalted": RunHalted,
    "RunError": RunError,
    "CacheUnusable": RunError,
}
CHUNKS_PER_CPU = 4  # chunks of CPU-bound round-by-round games per cluster CPU


def load_ray() -> Any:
    """The `ray` module; RunError naming the extra when it is not installed.

    Ray's usage statistics are off, and a driver started with `uv run` does not make Ray ship
    the project to its workers (`RAY_ENABLE_UV_RUN_RUNTIME_ENV=1` turns that back on)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        import ray
    except ImportError:
        raise RunError(MISSING) from None
    return ray


RAY_CURRENT_CLUSTER = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"


def check_address(address: str | None) -> None:
    """The cluster at `--ray-address` must accept a connection before anything is created (else
    a run dir would be made for a run that cannot start, or Ray would retry for minutes);
    RunError in one line when it does not. `HOST:PORT` (the cluster's GCS) is tried directly;
    `auto` is the cluster this machine runs (RAY_ADDRESS, else Ray's record of it in
    /tmp/ray/ray_current_cluster). The Ray Client form `ray://HOST:PORT` is refused: pdbench
    streams games from actors, which Ray Client does not support. No address (a new local
    instance) passes."""
    if not address:
        return
    target = address
    if address == "auto":
        target = os.environ.get("RAY_ADDRESS") or ""
        if not target:
            try:
                target = RAY_CURRENT_CLUSTER.read_text(encoding="utf-8").strip()
            except OSError:
                target = ""
        if not target or target == "auto":
            raise RunError(
                "--ray-address auto: no Ray cluster is running on this machine (start one with "
                "`ray start --head`, or leave --ray-address out for a local instance)"
            )
    if target.startswith("ray://"):
        raise RunError(
            f"--ray-address {address}: the Ray Client form (ray://) is not supported (pdbench "
            "streams games from Ray actors, which Ray Client cannot); give the cluster's "
            "HOST:PORT (its GCS, 6379 by default) or auto on a cluster node"
        )
    if "://" in target:
        raise RunError(f"--ray-address {address}: use HOST:PORT or auto")
    host, _, port = target.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
            pass
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise RunError(
            f"--ray-address {address}: cannot reach a Ray cluster there ({reason})"
        ) from None


@contextmanager
def ray_connection(address: str | None) -> Iterator[Any]:
    """Ray, connected: the instance this process already started or joined (left running),
    else the cluster at `address`, else a new local instance (both shut down afterwards).

    `ray.init` replaces the SIGTERM handler with one that exits; pdbench's own (stop like
    Ctrl-C, resumable) is put back."""
    ray = load_ray()
    if ray.is_initialized():
        yield ray
        return
    import logging

    main = threading.current_thread() is threading.main_thread()
    on_term = signal.getsignal(signal.SIGTERM) if main else None
    try:
        ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING)
    except Exception as exc:  # noqa: BLE001 - any failure to connect is one line
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise RunError(f"cannot start or reach {where}: {type(exc).__name__}: {exc}") from None
    finally:
        if main:
            signal.signal(signal.SIGTERM, on_term)
    try:
        yield ray
    finally:
        ray.shutdown()


# --------------------------------------------------------------------------------------------
# Worker side


@dataclass
class ChunkWork:
    """What a task needs to play its games: the plans and the run's settings."""

    plans: list[GamePlan]
    run_id: str
    matrix: PayoffMatrix
    store_prompts: bool
    store_raw: bool
    concurrency: int
    session: int
    cache_dir: str | None
    keeper: Any  # LimitsKeeper handle, None for a chunk without LLM agents


class _Collector:
    """The engine's sink in a worker: keeps each game's lines until it is sent."""

    def __init__(self, encoder: RoundsEncoder) -> None:
        self.encoder = encoder
        self.blobs: dict[int, bytes] = {}

    def add(self, index: int, blob: bytes) -> None:
        self.blobs[index] = blob

    def add_game(self, index: int, key: GameKey, arrays: dict[str, Any], timestamp: str) -> None:
        self.blobs[index] = self.encoder.game_bytes(key, arrays, timestamp)


class _QueueLog:
    """The broker's call log in a worker: every record goes to the driver with the next game."""

    def __init__(self, out: queue.Queue[tuple[Any, ...]]) -> None:
        self.out = out

    def write_many(self, records: list[dict[str, Any]]) -> None:
        self.out.put(("calls", records))


def _play_into(work: ChunkWork, out: queue.Queue[tuple[Any, ...]]) -> None:
    """Play the chunk (in a thread), putting ("game", index, outcome, lines) and ("calls",
    records) items on `out`, then ("end", models report, error or None)."""
    llm = any(p.has_llm for p in work.plans)
    cache: ResponseCache | None = None
    broker: CallBroker | None = None
    error: tuple[str, str] | None = None
    try:
        cache = ResponseCache(Path(work.cache_dir)) if llm and work.cache_dir else None
        shared = RayLimits(work.keeper) if work.keeper is not None else None
        log = _QueueLog(out)
        broker = CallBroker(
            cache, Budget(BudgetConfig()), log, work.concurrency, work.session, shared=shared
        )

        def send(result: GameResult) -> None:
            index = result.plan.index
            out.put(("game", index, result.outcome, sink.blobs.pop(index, b"")))

        encoder = RoundsEncoder(
            work.matrix, store_prompts=work.store_prompts, store_raw=work.store_raw
        )
        sink = _Collector(encoder)
        Engine(
            run_id=work.run_id,
            matrix=work.matrix,
            broker=broker,
            encoder=encoder,
            writer=sink,
            on_result=send,
            concurrency=work.concurrency,
        ).play(work.plans)
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the driver
        error = (type(exc).__name__, redact(str(exc)))
        if work.keeper is not None and error[0] != "RunHalted":
            work.keeper.halt.remote(f"{error[0]}: {error[1]}")
    finally:
        if cache is not None:
            cache.close()
        report = broker.models_report() if broker is not None else {}
        out.put(("end", report, error))


def play_chunk(
    work: Any, play: Callable[[Any, queue.Queue[tuple[Any, ...]]], None] = _play_into
) -> Iterator[list[tuple[Any, ...]]]:
    """The Ray task: yields lists of items (see `_play_into`; `play`: what plays the chunk) as
    games finish; the last list ends with the "end" item."""
    out: queue.Queue[tuple[Any, ...]] = queue.Queue()
    threading.Thread(target=play, args=(work, out), daemon=True).start()
    pending: list[tuple[Any, ...]] = []
    while True:
        pending.append(out.get())
        while not out.empty():
            pending.append(out.get_nowait())
        kinds = {item[0] for item in pending}
        if kinds == {"calls"}:
            continue  # call records go with the next game
        yield pending
        if "end" in kinds:
            return
        pending = []


# --------------------------------------------------------------------------------------------
# Driver side


@dataclass
class RaySettings:
    """The run's settings the tasks need (besides their plans)."""

    run_id: str
    matrix: PayoffMatrix
    store_prompts: bool
    store_raw: bool
    concurrency: int
    session: int
    cache_dir: str | None


def deal(plans: list[GamePlan], n_chunks: int) -> list[list[GamePlan]]:
    """Plans dealt round-robin into at most `n_chunks` non-empty chunks (plan order kept in
    each), so every chunk holds early and late games alike."""
    n = max(1, min(n_chunks, len(plans)))
    return [plans[i::n] for i in range(n) if plans[i::n]]


def count_calls(broker: CallBroker, records: list[dict[str, Any]]) -> None:
    """Keep the driver's broker figures (progress, manifest models) from workers' records."""
    for record in records:
        if record.get("cached"):
            broker.cached += 1
            continue
        broker.budget.calls += 1
        if not record.get("ok"):
            continue
        broker.budget.tokens += (record.get("input_tokens") or 0) + (
            record.get("output_tokens") or 0
        )
        if record.get("cost_usd") is None:
            broker.budget.unpriced_calls += 1
        else:
            broker.budget.cost_usd += record["cost_usd"]
        if record.get("served_model"):
            name = f"{record['provider']}:{record['model']}"
            broker.answered_models.setdefault(name, set()).add(record["served_model"])


def play_on_ray(
    ray: Any,
    plans: list[GamePlan],
    settings: RaySettings,
    broker: CallBroker,
    writer: OrderedRoundsWriter,
    calls_log: JsonlAppender | None,
    on_game: Callable[[GamePlan, GameOutcome], None],
    progress: Callable[[int], None] | None = None,
    chunk_task: Callable[[Any], Iterator[list[tuple[Any, ...]]]] = play_chunk,
    make_work: Callable[..., Any] = ChunkWork,
) -> None:
    """Play `plans` as Ray tasks; write each game (through `writer`) and call record as they
    arrive; raise the first task's error after every running task has ended. `chunk_task` and
    `make_work`: the task and its work (`make_work(chunk, keeper=..., **vars(settings))`), for
    games other than pairs (`pdbench.runners.ray.group_backend`)."""
    if not plans:
        return
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    llm = [p for p in plans if p.has_llm]
    keeper = None
    if llm:
        name = "pdbench-limits-" + cache_key(run=settings.run_id, nonce=uuid.uuid4().hex)[:12]
        actor = ray.remote(num_cpus=0, max_concurrency=10_000)(LimitsKeeper)
        keeper = actor.options(name=name).remote(broker.budget, settings.concurrency)
    # Policy games: one vectorized batch per CPU. LLM games mostly wait for replies: one chunk
    # per CPU, so that all of them are in flight at once (as with the local backend) and the
    # limits, not the chunks, bound the calls. Other round-by-round games (Axelrod) are
    # CPU-bound: several chunks per CPU balance the load.
    batched = [p for p in plans if p.batchable]
    rest = [p for p in plans if not p.batchable and not p.has_llm]
    chunks = deal(batched, cpus) + deal(llm, cpus) + deal(rest, cpus * CHUNKS_PER_CPU)
    task = ray.remote(num_returns="streaming")(chunk_task)
    by_index = {p.index: p for p in plans}
    running: list[Any] = []
    errors: list[tuple[str, str]] = []
    todo = list(reversed(chunks))
    try:
        while todo or running:
            while todo and len(running) < 2 * cpus and not errors:
                chunk = todo.pop()
                work = make_work(
                    chunk,
                    keeper=keeper if any(p.has_llm for p in chunk) else None,
                    **vars(settings),
                )
                running.append(task.remote(work))
            if errors:
                todo.clear()
            if not running:
                break
            ready, _ = ray.wait(running, num_returns=1)
            for generator in ready:
                try:
                    items = ray.get(next(generator))
                except StopIteration:
                    running.remove(generator)
                    continue
                except Exception as exc:  # noqa: BLE001 - a task or worker that died
                    running.remove(generator)
                    errors.append(("RunError", f"a Ray task failed: {exc}".splitlines()[0]))
                    if keeper is not None:
                        keeper.halt.remote(errors[-1][1])
                    continue
                _take(items, by_index, broker, writer, calls_log, on_game, progress, errors)
    except BaseException:
        if keeper is not None:
            keeper.halt.remote("the driver stopped")
        raise
    finally:
        if keeper is not None:
            ray.kill(keeper)
    if errors:
        name, message = next((e for e in errors if e[0] != "RunHalted"), errors[0])
        raise ERRORS.get(name, RunError)(
            message if name in ERRORS else f"a Ray task failed: {name}: {message}"
        )


def _take(
    items: list[tuple[Any, ...]],
    by_index: dict[int, GamePlan],
    broker: CallBroker,
    writer: OrderedRoundsWriter,
    calls_log: JsonlAppender | None,
    on_game: Callable[[GamePlan, GameOutcome], None],
    progress: Callable[[int], None] | None,
    errors: list[tuple[str, str]],
) -> None:
    """Write what a task sent: call records, finished games, its models and its error."""
    for item in items:
        if item[0] == "calls":
            if calls_log is not None:
                calls_log.write_many(item[1])
            count_calls(broker, item[1])
        elif item[0] == "game":
            _, index, outcome, lines = item
            plan = by_index[index]
            if plan.logged:
                writer.add(index, lines)
            on_game(plan, outcome)
            if progress is not None:
                progress(plan.n_rounds)
        else:
            _, report, error = item
            for key, seen in report.items():
                if seen["listed"] is not None or key not in broker.listed_models:
                    broker.listed_models[key] = seen["listed"]
                broker.answered_models.setdefault(key, set()).update(seen["answered"])
            if error is not None:
                errors.append(error)
