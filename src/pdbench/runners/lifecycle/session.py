"""One run directory's life, the same for experiments, tournaments and evolutions.

`RunSession.run` prepares the directory (or picks a stopped run up again), writes the manifest
with status `running`, plays every planned game not yet finished through the `Engine` (logged
games appended to rounds.jsonl in plan order, every provider call through one `CallBroker`:
cache, budget, call log), lets the mode compute and write its own artifacts from the games'
outcomes, and records how it ended: completed, failed, stopped (budget) or interrupted. A run
that stops keeps every finished logged game and can be resumed; the resumed artifacts equal an
uninterrupted run's (timestamps aside), because unlogged games are policy games that replay
identically and logged ones are read back.
"""

from __future__ import annotations

import importlib
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

import pdbench
from pdbench.agents.llm import ParseFailureAbort
from pdbench.agents.providers.pool import require_api_key
from pdbench.core.config import BudgetConfig, LLMAgentConfig
from pdbench.core.metrics import GameOutcome
from pdbench.errors import RunError, RunInterrupted
from pdbench.redact import redact
from pdbench.runners.config.loader import LoadedConfig
from pdbench.runners.engine.broker import Budget, BudgetExhausted, CallBroker, ProviderFatalError
from pdbench.runners.engine.engine import Engine, GamePlan, GameResult, ProgressFn, utc_now
from pdbench.runners.engine.progress import StatsFn, session_stats
from pdbench.storage.aggregate import input_fields, usage_by_game
from pdbench.storage.cache import ResponseCache, default_cache_dir
from pdbench.storage.files import JsonlAppender, environment_info, leftover_temp_files
from pdbench.storage.record.jsonl import OrderedRoundsWriter, RoundsEncoder
from pdbench.storage.record.parts import temp_paths
from pdbench.storage.rounds_log import (
    JSONL_STAMP_KEY,
    KeptGames,
    jsonl_stamp,
    keep_finished,
    keeps_columns,
    keeps_jsonl,
    open_writer,
)
from pdbench.storage.run_dir import (
    RunLock,
    close_all,
    make_run_dir,
    mark_failed_in_place,
    prepare_output_dir,
    read_manifest,
    spending,
    write_manifest,
)
from pdbench.storage.schema import CALLS_FILE, ROUNDS_COLUMNS_DIR, ROUNDS_FILE, SCHEMA_VERSION

# Keys of the config snapshot that may change between a run and its resume.
RESUMABLE_CHANGES = ("budget", "rounds_log")


@dataclass
class RunOptions:
    """How to run: where, whether to overwrite or resume, the cache, concurrency, progress."""

    output_dir: Path | None = None
    overwrite: bool = False
    resume: bool = False
    cache_dir: Path | None = None
    use_cache: bool = True
    concurrency: int = 16
    progress: ProgressFn | None = None
    backend: str = "local"  # local: this process; ray: Ray tasks (pdbench.runners.ray.backend)
    ray_address: str | None = None  # the Ray cluster to join (None: start a local instance)
    # Receives the session's live figures (games, calls, tokens, cost) for progress lines.
    progress_stats: Callable[[StatsFn], None] | None = None


@dataclass
class SessionResult:
    """What a finished session produced: every game's outcome (by plan index) and the manifest."""

    run_dir: Path
    manifest: dict[str, Any]
    outcomes: dict[int, GameOutcome] = field(default_factory=dict)
    games_played: int = 0
    games_kept: int = 0


Finish = Callable[[dict[int, GameOutcome], Path], dict[str, Any]]


class RunSession:
    """Plays a config's planned games into a run directory; see the module docstring."""

    def __init__(
        self,
        loaded: LoadedConfig,
        plans: Sequence[GamePlan],
        options: RunOptions,
        manifest_extra: dict[str, Any] | None = None,
    ) -> None:
        self.loaded = loaded
        self.plans = list(plans)
        self.options = options
        self.run_dir = Path(options.output_dir or loaded.config.run.output_dir)
        self.manifest_extra = manifest_extra or {}

    def run(self, finish: Finish) -> SessionResult:
        """Play, then `finish(outcomes, run_dir)` writes the mode's artifacts and returns keys
        for the manifest. Raises RunError / RunInterrupted when the run had to stop."""
        self._preflight()  # what can be checked is checked before anything is created
        if self.options.resume and not self.run_dir.is_dir():
            raise RunError(
                f"{self.run_dir}: nothing to resume (no such directory); run without --resume"
            )
        if self.options.resume:
            read_manifest(self.run_dir, self.loaded.kind)  # a run directory, before locking it
        make_run_dir(self.run_dir)
        with RunLock(self.run_dir):
            return self._run_locked(finish)

    def _run_locked(self, finish: Finish) -> SessionResult:
        # pyarrow (for Parquet artifacts) takes most of a second to import: do it while games play.
        threading.Thread(
            target=importlib.import_module, args=("pyarrow.parquet",), daemon=True
        ).start()
        manifest, kept = self._start()
        result = SessionResult(self.run_dir, manifest, games_kept=len(kept))
        result.outcomes.update(kept)
        todo = [p for p in self.plans if p.index not in kept]
        status, error = "completed", None
        writer = open_writer(
            self.run_dir,
            self._rounds_log,
            [p.index for p in todo if p.logged],
            self._encoder(),
            manifest,
        )
        llm = any(p.has_llm for p in self.plans)
        cache: ResponseCache | None = None
        calls_log: JsonlAppender | None = None
        try:
            cache = self._cache() if llm and todo else None
            calls_log = JsonlAppender(self.run_dir / CALLS_FILE) if llm else None
            broker = self._broker(manifest, cache, calls_log)
            if self.options.progress_stats is not None:

                def played() -> tuple[int, int]:
                    return result.games_kept + result.games_played, len(self.plans)

                self.options.progress_stats(session_stats(broker, played, llm))
            self._models = broker  # the model names seen go into the manifest at the end
            if self.options.backend == "ray":
                self._play_on_ray(todo, broker, writer, result, calls_log)
            else:
                self._play(todo, broker, writer, result)
            # A resume's first pass leaves the parts as found (`keep_finished`): the last pass
            # rewrites them without the games it did not keep.
            reorder = (
                writer.out_of_order
                or bool(kept)
                or (self.options.resume and keeps_columns(self._rounds_log))
            )
            if writer.pending or reorder:
                writer.close()
            else:  # the last columnar part is written while `finish` computes the aggregate
                writer.close_soon()
            self._reorder(manifest, reorder)
            manifest.update(finish(result.outcomes, self.run_dir))
            writer.close()
        except (ParseFailureAbort, ProviderFatalError) as exc:
            status, error = "failed", str(exc)
        except BudgetExhausted as exc:
            status, error = "stopped", str(exc)
        except RunError as exc:  # e.g. the cache cannot be opened, a key is not set
            status, error = "failed", str(exc)
            raise
        except KeyboardInterrupt:
            status, error = "interrupted", "interrupted by the user"
        except (OSError, sqlite3.OperationalError) as exc:  # a full disk, a file size limit
            reason = getattr(exc, "strerror", None) or str(exc)
            status, error = "failed", f"cannot write to {self.run_dir} ({reason})"
        except BaseException as exc:
            status, error = "failed", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if status != "completed" and keeps_jsonl(self._rounds_log):
                # A stopped session's log is rounds.jsonl: its games are not parsed into
                # rounds/ now (nothing slow on the way out of Ctrl-C); resume rebuilds rounds/.
                writer.drop_columns()
            closing = close_all(writer, calls_log, cache)
            if closing and status == "completed":
                status, error = "failed", f"cannot write to {self.run_dir} ({closing})"
            self._close_manifest(manifest, status, error)
        log = ROUNDS_FILE if keeps_jsonl(self._rounds_log) else ROUNDS_COLUMNS_DIR
        kept_in = self.run_dir / log if any(p.logged for p in self.plans) else None
        where = f"finished games are kept in {kept_in}; " if kept_in else ""
        if status == "interrupted":
            raise RunInterrupted(
                f"interrupted: {where}continue with `pdbench resume {self.run_dir}`"
            )
        if status != "completed":
            raise RunError(
                f"run stopped: {error}. {where.capitalize()}continue with "
                f"`pdbench resume {self.run_dir}`"
            )
        return result

    # ----------------------------------------------------------------------------------------

    def _start(self) -> tuple[dict[str, Any], dict[int, GameOutcome]]:
        """The manifest (new, or the stopped run's) and the outcomes of games kept."""
        kind = self.loaded.kind
        if self.options.resume:
            manifest, kept = self._resume()
        else:
            prepare_output_dir(self.run_dir, self.options.overwrite, kind)
            manifest, kept = base_manifest(self.loaded, utc_now()), {}
            manifest.update(self.manifest_extra)
        manifest["output_dir"] = str(self.run_dir)
        manifest["cache_dir"] = self._cache_dir()
        write_manifest(self.run_dir, kind, manifest)
        return manifest, kept

    def _preflight(self) -> None:
        """Every LLM agent's API key is set (a missing one stops the run before it starts), the
        response cache opens, and Ray is installed and its cluster reachable when asked for."""
        if self.options.backend == "ray":
            from pdbench.runners.ray.backend import check_address, load_ray

            load_ray()
            check_address(self.options.ray_address)
        elif self.options.ray_address is not None:
            raise RunError("--ray-address needs --backend ray")
        for plan in self.plans:
            for spec in plan.agents:
                if isinstance(spec.config, LLMAgentConfig):
                    require_api_key(spec.config)
        if any(p.has_llm for p in self.plans):
            close_all(self._cache())  # an unusable cache dir stops the run before it starts

    def _resume(self) -> tuple[dict[str, Any], dict[int, GameOutcome]]:
        manifest = resumable_manifest(self.run_dir, self.loaded)
        logged = [p for p in self.plans if p.logged]
        # what a kill left half-written: a part, a file written atomically (the lock is ours)
        for path in [*temp_paths(self.run_dir), *leftover_temp_files(self.run_dir)]:
            path.unlink(missing_ok=True)
        by_key = {p.key: p for p in logged}
        found = (
            keep_finished(
                self.run_dir,
                self._rounds_log,
                manifest,
                {p.key: p.n_rounds for p in logged},
                [p.key for p in logged],
                input_fields(manifest),
                replayable=lambda key: not by_key[key].has_llm,
                replay=self._replayed_moves,
            )
            if logged
            else KeptGames()
        )
        games = found.games
        kept = {p.index: outcome_from_rounds(games[p.key], p) for p in logged if p.key in games}
        manifest.update(
            status="running",
            error=None,
            config=self.loaded.snapshot,
            config_sha256=self.loaded.config_sha256,
        )
        session: dict[str, Any] = {
            "started_at_utc": utc_now(),
            "resumed": True,
            "games_kept": len(kept),
        }
        if found.damaged:  # played again: each with its first problem, as `aggregate` names it
            session["games_replayed_damaged"] = list(found.damaged.values())
        manifest.setdefault("sessions", []).append(session)
        return manifest, kept

    def _replayed_moves(self, keys: list[tuple[str, int]]) -> dict[tuple[str, int], Any]:
        """The played moves of games without LLM agents, played again in memory (exactly:
        every draw is keyed by the game seed), to check the kept ones against."""
        by_key = {p.key: p for p in self.plans if p.logged}
        plans = [by_key[key] for key in keys]
        outcomes = play_in_memory(self.loaded, plans)
        return {p.key: (outcomes[p.index].a_coop, outcomes[p.index].b_coop) for p in plans}

    def _cache_dir(self) -> str | None:
        """The response cache's directory (absolute), None when the cache is off."""
        if not self.options.use_cache:
            return None
        return str(Path(self.options.cache_dir or default_cache_dir()).resolve())

    def _cache(self) -> ResponseCache | None:
        where = self._cache_dir()
        return ResponseCache(Path(where)) if where is not None else None

    def _broker(
        self,
        manifest: dict[str, Any],
        cache: ResponseCache | None,
        calls_log: JsonlAppender | None,
    ) -> CallBroker:
        spent = spending(self.run_dir) if self.options.resume else {}
        budget = Budget(
            self.loaded.config.run.budget,
            spent.get("provider_calls", 0),
            spent.get("tokens", 0),
            spent.get("cost_usd") or 0.0,
            unpriced_calls=spent.get("unpriced_calls", 0),
        )
        session = len(manifest.get("sessions") or [None]) - 1
        return CallBroker(cache, budget, calls_log, self.options.concurrency, session=session)

    def _play(
        self,
        todo: list[GamePlan],
        broker: CallBroker,
        writer: OrderedRoundsWriter,
        result: SessionResult,
    ) -> None:
        run = self.loaded.config.run

        def collect(game: GameResult) -> None:
            result.outcomes[game.plan.index] = game.outcome
            result.games_played += 1

        engine = Engine(
            run_id=run.run_id,
            matrix=self.loaded.matrix(),
            broker=broker,
            encoder=writer.encoder or self._encoder(),
            writer=writer,
            on_result=collect,
            concurrency=self.options.concurrency,
            progress=self.options.progress,
        )
        total = sum(p.n_rounds for p in self.plans)
        engine.play(todo, done_before=total - sum(p.n_rounds for p in todo), total=total)

    def _play_on_ray(
        self,
        todo: list[GamePlan],
        broker: CallBroker,
        writer: OrderedRoundsWriter,
        result: SessionResult,
        calls_log: JsonlAppender | None,
    ) -> None:
        """Play as Ray tasks; this process writes every record, as `_play` does."""
        from pdbench.runners.ray.backend import RaySettings, play_on_ray, ray_connection

        run = self.loaded.config.run
        total = sum(p.n_rounds for p in self.plans)
        done = [total - sum(p.n_rounds for p in todo)]
        progress = self.options.progress

        def tick(rounds: int) -> None:
            done[0] += rounds
            if progress is not None:
                progress(done[0], total)

        def collect(plan: GamePlan, outcome: GameOutcome) -> None:
            result.outcomes[plan.index] = outcome
            result.games_played += 1

        tick(0)
        settings = RaySettings(
            run.run_id,
            self.loaded.matrix(),
            run.store_prompts,
            run.store_raw_responses,
            self.options.concurrency,
            broker.session,
            self._cache_dir(),
        )
        if not todo:
            return
        with ray_connection(self.options.ray_address) as ray:
            play_on_ray(ray, todo, settings, broker, writer, calls_log, collect, tick)

    def _reorder(self, manifest: dict[str, Any], needed: bool) -> None:
        """Put the logged games in plan order after a resume or games written out of order (the
        last pass of `keep_finished`); RunError, the run not completed, when a game this session
        counts as finished is not in the log whole."""
        if not needed:
            return
        logged = [p for p in self.plans if p.logged]
        kept = keep_finished(
            self.run_dir,
            self._rounds_log,
            manifest,
            {p.key: p.n_rounds for p in logged},
            [p.key for p in logged],
            check=False,
        )
        lost = [p.key for p in logged if p.key not in kept.games]
        if lost:
            condition, replicate = lost[0]
            raise RunError(
                f"{self.run_dir}: condition {condition!r} replicate {replicate}: not whole in the "
                f"rounds log after this session ({len(lost)} games); the run is not completed: "
                f"`pdbench resume {self.run_dir}` plays them again"
            )

    @property
    def _rounds_log(self) -> str:
        """run.rounds_log: jsonl, columns or both."""
        return str(getattr(self.loaded.config.run, "rounds_log", "jsonl"))

    def _encoder(self) -> RoundsEncoder:
        run = self.loaded.config.run
        return RoundsEncoder(
            self.loaded.matrix(), store_prompts=run.store_prompts, store_raw=run.store_raw_responses
        )

    def _close_manifest(self, manifest: dict[str, Any], status: str, error: str | None) -> None:
        usage = usage_summary(usage_by_game(self.run_dir))
        usage["spent_all_sessions"] = spending(self.run_dir)
        error = redact(error) if error else None
        manifest.update(status=status, error=error, finished_at_utc=utc_now(), usage=usage)
        if keeps_columns(self._rounds_log) and (
            status == "completed" or not keeps_jsonl(self._rounds_log)
        ):
            manifest[JSONL_STAMP_KEY] = jsonl_stamp(self.run_dir)
        else:  # rounds/ may lack this session's games: readers take rounds.jsonl
            manifest.pop(JSONL_STAMP_KEY, None)
        broker = getattr(self, "_models", None)
        if broker is not None and (broker.listed_models or broker.answered_models):
            models = dict(manifest.get("models") or {})  # earlier sessions' names stay
            for key, seen in broker.models_report().items():
                before = models.get(key) or {}
                answered = sorted(set(before.get("answered") or ()) | set(seen["answered"]))
                listed = seen["listed"] if seen["listed"] is not None else before.get("listed")
                models[key] = {"listed": listed, "answered": answered}
            manifest["models"] = models
        try:
            write_manifest(self.run_dir, self.loaded.kind, manifest)
        except RunError:
            # No room for a new manifest (a full disk): mark the old one stopped in place, so
            # it never stays "running"; `pdbench resume` completes the run once there is room.
            mark_failed_in_place(self.run_dir, self.loaded.kind)
            if status == "completed":
                raise


def play_in_memory(
    loaded: LoadedConfig,
    plans: Sequence[GamePlan],
    concurrency: int = 16,
    progress: ProgressFn | None = None,
) -> dict[int, GameOutcome]:
    """Play plans without a run directory (no records, cache, call log or budget): for studies
    and benchmarks that only want the outcomes."""
    outcomes: dict[int, GameOutcome] = {}

    def collect(game: GameResult) -> None:
        outcomes[game.plan.index] = game.outcome

    engine = Engine(
        run_id=loaded.config.run.run_id,
        matrix=loaded.matrix(),
        broker=CallBroker(None, Budget(BudgetConfig()), None, concurrency),
        encoder=RoundsEncoder(loaded.matrix()),
        writer=None,
        on_result=collect,
        concurrency=concurrency,
        progress=progress,
        encode=False,
    )
    engine.play(plans)
    return outcomes


def base_manifest(loaded: LoadedConfig, started: str) -> dict[str, Any]:
    """The keys every manifest starts with: identity, status, config, versions, environment."""
    cfg = loaded.config
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": loaded.kind,
        "run_id": cfg.run.run_id,
        "seed": cfg.run.seed,
        "status": "running",
        "started_at_utc": started,
        "finished_at_utc": None,
        "sessions": [{"started_at_utc": started, "resumed": False}],
        "pdbench_version": pdbench.__version__,
        "config_path": str(Path(loaded.path).resolve()),
        "config_sha256": loaded.config_sha256,
        "config": loaded.snapshot,
        "overrides": loaded.overrides,
        "prompt_files": loaded.prompt_files,
        "warnings": loaded.warnings,
        "environment": environment_info(loaded.root),
        "usage": None,
        "error": None,
    }


def resumable_manifest(run_dir: Path, loaded: LoadedConfig, may_change: str = "") -> dict[str, Any]:
    """The manifest of a stopped run that this config may resume; RunError (one line) when the
    config or an input file (a prompt) changed since it started. `may_change`: what the message
    says may change (default: the keys a resume may change)."""
    manifest = read_manifest(run_dir, loaded.kind)
    changed = snapshot_changes(manifest.get("config") or {}, loaded.snapshot)
    if changed:
        allowed = may_change or " and ".join(f"run.{key}" for key in RESUMABLE_CHANGES)
        raise RunError(
            f"{run_dir}: the config changed since this run started ({changed}; only "
            f"{allowed} may change on resume); start a new run with another output_dir "
            "or --overwrite"
        )
    edited = input_changes(manifest, loaded.prompt_files)
    if edited:
        raise RunError(
            f"{run_dir}: {edited} changed since this run started, so finished and new "
            "games would differ; restore it, or start a new run with another output_dir "
            "or --overwrite"
        )
    return manifest


def resume_kept(
    session: RunSession, kept_games: Callable[[dict[str, Any]], tuple[dict[int, Any], list[str]]]
) -> tuple[dict[str, Any], dict[int, Any]]:
    """The resume of a run kept in rounds.jsonl alone (groups, resource games): the stopped run's
    manifest (only run.budget may change), leftover temp files removed, the games
    `kept_games(manifest)` keeps (and the damaged ones it names, played again), and a new
    session entry in the manifest."""
    manifest = resumable_manifest(session.run_dir, session.loaded, "run.budget")
    for path in leftover_temp_files(session.run_dir):
        path.unlink(missing_ok=True)
    kept, damaged = kept_games(manifest)
    manifest.update(
        status="running",
        error=None,
        config=session.loaded.snapshot,
        config_sha256=session.loaded.config_sha256,
    )
    entry: dict[str, Any] = {"started_at_utc": utc_now(), "resumed": True, "games_kept": len(kept)}
    if damaged:
        entry["games_replayed_damaged"] = damaged
    manifest.setdefault("sessions", []).append(entry)
    return manifest, kept


def input_changes(manifest: dict[str, Any], prompt_files: dict[str, str]) -> str:
    """What shaped the finished games and differs now: prompt and persona files (by sha256)
    and the record schema; '' when nothing did."""
    started = manifest.get("prompt_files") or {}
    edited = sorted(
        name
        for name in set(started) | set(prompt_files)
        if started.get(name) != prompt_files.get(name)
    )
    if edited:
        return ", ".join(edited[:3]) + (f" and {len(edited) - 3} more" if len(edited) > 3 else "")
    version = manifest.get("schema_version")
    if version is not None and version != SCHEMA_VERSION:
        return f"the record schema (schema_version {version} then, {SCHEMA_VERSION} now)"
    return ""


def snapshot_changes(before: dict[str, Any], after: dict[str, Any]) -> str:
    """The dotted paths (at most three) where two config snapshots differ, ignoring the keys a
    resume may change; '' when they are equal."""
    paths: list[str] = []

    def compare(a: Any, b: Any, where: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                if where == "run" and key in RESUMABLE_CHANGES:
                    continue
                compare(a.get(key), b.get(key), f"{where}.{key}" if where else key)
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            # item by item, so that a key a newer pdbench adds with a null default (absent
            # from an older snapshot) is no change inside lists either
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                compare(x, y, f"{where}[{i}]")
        elif a != b:
            paths.append(f"{where}: {orjson.dumps(a).decode()} -> {orjson.dumps(b).decode()}")

    compare(before, after, "")
    shown = "; ".join(p if len(p) <= 120 else p[:117] + "..." for p in paths[:3])
    return shown + (f"; and {len(paths) - 3} more" if len(paths) > 3 else "")


def outcome_from_rounds(rounds: Any, plan: GamePlan) -> GameOutcome:
    """A finished game's outcome, read back from its rounds (a pyarrow Table of the aggregate
    input fields, `keep_finished`'s values) by the record's one reader; its messages read as
    the plan's agents wrote them."""
    from pdbench.core.talk_metrics import TalkSetting
    from pdbench.storage.record.table import outcomes_from_table

    setting = TalkSetting(
        (plan.agents[0].message_labels, plan.agents[1].message_labels),
        plan.communication is not None and plan.communication.mode == "pregame",
    )
    (outcome,) = outcomes_from_table(rounds, {plan.condition: setting})
    return outcome


def usage_summary(usage: dict[tuple[str, int, str], dict[str, Any]]) -> dict[str, Any]:
    """Token, call and cost totals per condition and agent, and overall."""
    per_condition: dict[str, dict[str, dict[str, Any]]] = {}
    total: dict[str, Any] = {}
    for (condition, _rep, agent), counts in sorted(usage.items()):
        slot = per_condition.setdefault(condition, {}).setdefault(agent, {})
        for name, value in counts.items():
            for where in (slot, total):
                before = where.get(name, 0)
                where[name] = None if value is None or before is None else before + value
    return {"per_condition": per_condition, "total": total}
