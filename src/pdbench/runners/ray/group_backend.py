"""Group games on the Ray backend (`--backend ray` for a groups run), with artifacts equal to
the local backend's.

Everything but the playing is the pairwise backend's (`pdbench.runners.ray.backend`): the
driver deals the games still to play into chunks (vectorized policy groups one chunk per CPU,
LLM groups one chunk per CPU, other round-by-round groups several per CPU), runs each chunk as a
streaming Ray task, and writes every record itself, in plan order, through the session's
writer; limits and the budget hold across the cluster through one `LimitsKeeper`; the first
task's error stops the others and is raised as the local backend would. What differs is the
task's engine: a chunk is played by the `GroupEngine` (vectorized batches and round-by-round
games, as locally), each finished game sent back with its rounds.jsonl lines and the call
records made meanwhile.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pdbench.core.config import BudgetConfig
from pdbench.core.group_metrics import GroupOutcome
from pdbench.redact import redact
from pdbench.runners.engine.broker import Budget, CallBroker
from pdbench.runners.engine.group_engine import GroupEngine, GroupPlan, GroupResult
from pdbench.runners.ray.backend import _QueueLog, play_chunk, play_on_ray, ray_connection
from pdbench.runners.ray.limits import RayLimits
from pdbench.storage.cache import ResponseCache
from pdbench.storage.files import JsonlAppender
from pdbench.storage.record.group_jsonl import GroupRoundsEncoder
from pdbench.storage.record.jsonl import OrderedRoundsWriter


@dataclass
class GroupRaySettings:
    """The groups run's settings the tasks need (besides their plans)."""

    run_id: str
    store_prompts: bool
    store_raw: bool
    concurrency: int
    session: int
    cache_dir: str | None


@dataclass
class GroupChunkWork:
    """What a task needs to play its group games: the plans and the run's settings."""

    plans: list[GroupPlan]
    run_id: str
    store_prompts: bool
    store_raw: bool
    concurrency: int
    session: int
    cache_dir: str | None
    keeper: Any  # LimitsKeeper handle, None for a chunk without LLM seats


def _play_groups_into(work: GroupChunkWork, out: queue.Queue[tuple[Any, ...]]) -> None:
    """Play the chunk (in a thread), putting ("game", index, outcome, lines) and ("calls",
    records) items on `out`, then ("end", models report, error or None)."""
    llm = any(p.has_llm for p in work.plans)
    cache: ResponseCache | None = None
    broker: CallBroker | None = None
    error: tuple[str, str] | None = None
    try:
        cache = ResponseCache(Path(work.cache_dir)) if llm and work.cache_dir else None
        shared = RayLimits(work.keeper) if work.keeper is not None else None
        broker = CallBroker(
            cache,
            Budget(BudgetConfig()),
            _QueueLog(out),
            work.concurrency,
            work.session,
            shared=shared,
        )
        blobs: dict[int, bytes] = {}

        def keep(index: int, lines: bytes) -> None:
            blobs[index] = lines

        def send(result: GroupResult) -> None:
            index = result.plan.index
            out.put(("game", index, result.outcome, blobs.pop(index, b"")))

        GroupEngine(
            run_id=work.run_id,
            broker=broker,
            encoder=GroupRoundsEncoder(store_prompts=work.store_prompts, store_raw=work.store_raw),
            sink=keep,
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


def play_group_chunk(work: GroupChunkWork) -> Iterator[list[tuple[Any, ...]]]:
    """The Ray task of a chunk of group games (`backend.play_chunk` with the group engine)."""
    yield from play_chunk(work, _play_groups_into)


def play_groups_on_ray(
    address: str | None,
    plans: list[GroupPlan],
    settings: GroupRaySettings,
    broker: CallBroker,
    writer: OrderedRoundsWriter,
    calls_log: JsonlAppender | None,
    on_game: Callable[[GroupPlan, GroupOutcome], None],
    progress: Callable[[int], None] | None = None,
) -> None:
    """Play group `plans` as Ray tasks on the cluster at `address` (None: a local instance);
    write each game (through `writer`) and call record as they arrive; raise the first task's
    error after every running task has ended."""
    if not plans:
        return
    with ray_connection(address) as ray:
        play_on_ray(
            ray,
            plans,  # type: ignore[arg-type]
            settings,  # type: ignore[arg-type]
            broker,
            writer,
            calls_log,
            on_game,  # type: ignore[arg-type]
            progress,
            chunk_task=play_group_chunk,
            make_work=GroupChunkWork,
        )
