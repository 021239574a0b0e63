"""A group run directory's life: the `RunSession` of experiments, with group games.

Everything a session does is the same (preflight, the lock, the manifest and its statuses, the
call broker with its cache, budget and call log, what a stop says); what differs is how games are
played (`GroupEngine`), that the rounds are kept in rounds.jsonl only, and how a resume reads the
games a stopped run finished: a game is kept when it has its planned rounds 0..n-1, every record
names this run, the game's planned seed and its seats in order, and its moves and payoffs agree
with the stage game; the others are played again (policy games replay identically; an LLM game
that is found damaged stops the resume, as in experiments). On `--backend ray` the games are Ray
tasks (`pdbench.runners.ray.group_backend`) and this process writes every record.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from pdbench.core.group_metrics import GroupOutcome
from pdbench.errors import RunError
from pdbench.runners.engine.broker import CallBroker
from pdbench.runners.engine.engine import utc_now
from pdbench.runners.engine.group_engine import GroupEngine, GroupPlan, GroupResult
from pdbench.runners.lifecycle.session import (
    RunSession,
    SessionResult,
    input_changes,
    snapshot_changes,
)
from pdbench.storage.files import JsonlAppender, leftover_temp_files
from pdbench.storage.record.fields import ROUND_INDEX
from pdbench.storage.record.group_fields import seat_field, seats_of
from pdbench.storage.record.group_jsonl import GroupRoundsEncoder
from pdbench.storage.record.group_messages import game_talk, round_messages
from pdbench.storage.record.jsonl import OrderedRoundsWriter, finished_games, write_games_in_order
from pdbench.storage.run_dir import read_manifest

Key = tuple[str, int]


class GroupRunSession(RunSession):
    """Plays a groups config's planned games into a run directory (see the module docstring)."""

    plans: list[GroupPlan]  # type: ignore[assignment]

    @property
    def _rounds_log(self) -> str:
        return "jsonl"

    def _encoder(self) -> GroupRoundsEncoder:  # type: ignore[override]
        run = self.loaded.config.run
        return GroupRoundsEncoder(
            store_prompts=run.store_prompts, store_raw=run.store_raw_responses
        )

    def _play(  # type: ignore[override]
        self,
        todo: list[GroupPlan],
        broker: CallBroker,
        writer: OrderedRoundsWriter,
        result: SessionResult,
    ) -> None:
        def collect(game: GroupResult) -> None:
            result.outcomes[game.plan.index] = game.outcome  # type: ignore[assignment]
            result.games_played += 1

        engine = GroupEngine(
            run_id=self.loaded.config.run.run_id,
            broker=broker,
            encoder=self._encoder(),
            sink=writer.add,
            on_result=collect,
            concurrency=self.options.concurrency,
            progress=self.options.progress,
        )
        total = sum(p.n_rounds for p in self.plans)
        engine.play(todo, done_before=total - sum(p.n_rounds for p in todo), total=total)

    def _play_on_ray(  # type: ignore[override]
        self,
        todo: list[GroupPlan],
        broker: CallBroker,
        writer: OrderedRoundsWriter,
        result: SessionResult,
        calls_log: JsonlAppender | None,
    ) -> None:
        """Play as Ray tasks (`pdbench.runners.ray.group_backend`); this process writes every
        record, as `_play` does."""
        from pdbench.runners.ray.group_backend import GroupRaySettings, play_groups_on_ray

        run = self.loaded.config.run
        total = sum(p.n_rounds for p in self.plans)
        done = [total - sum(p.n_rounds for p in todo)]
        progress = self.options.progress

        def tick(rounds: int) -> None:
            done[0] += rounds
            if progress is not None:
                progress(done[0], total)

        def collect(plan: GroupPlan, outcome: GroupOutcome) -> None:
            result.outcomes[plan.index] = outcome  # type: ignore[assignment]
            result.games_played += 1

        tick(0)
        settings = GroupRaySettings(
            run.run_id,
            run.store_prompts,
            run.store_raw_responses,
            self.options.concurrency,
            broker.session,
            self._cache_dir(),
        )
        play_groups_on_ray(
            self.options.ray_address, todo, settings, broker, writer, calls_log, collect, tick
        )

    def _resume(self) -> tuple[dict[str, Any], dict[int, Any]]:  # type: ignore[override]
        manifest = read_manifest(self.run_dir, self.loaded.kind)
        changed = snapshot_changes(manifest.get("config") or {}, self.loaded.snapshot)
        if changed:
            raise RunError(
                f"{self.run_dir}: the config changed since this run started ({changed}; only "
                "run.budget may change on resume); start a new run with another output_dir "
                "or --overwrite"
            )
        edited = input_changes(manifest, self.loaded.prompt_files)
        if edited:
            raise RunError(
                f"{self.run_dir}: {edited} changed since this run started, so finished and new "
                "games would differ; restore it, or start a new run with another output_dir "
                "or --overwrite"
            )
        for path in leftover_temp_files(self.run_dir):
            path.unlink(missing_ok=True)
        kept, damaged = self._kept_games(manifest)
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
        if damaged:
            session["games_replayed_damaged"] = damaged
        manifest.setdefault("sessions", []).append(session)
        return manifest, kept

    def _kept_games(self, manifest: dict[str, Any]) -> tuple[dict[int, GroupOutcome], list[str]]:
        """The finished games of the log that pass the checks (rewritten in plan order, alone),
        and a line for each finished game that does not."""
        logged = [p for p in self.plans if p.logged]
        found = finished_games(self.run_dir, {p.key: p.n_rounds for p in logged})
        kept: dict[int, GroupOutcome] = {}
        good: dict[Key, list[bytes]] = {}
        damaged: list[str] = []
        run_id = str(manifest.get("run_id") or self.loaded.config.run.run_id)
        for plan in logged:
            lines = found.get(plan.key)
            if lines is None:
                continue
            problem, outcome = game_from_lines(lines, plan, run_id)
            if problem is not None:
                where = f"condition {plan.condition!r} replicate {plan.replicate}"
                if plan.has_llm:
                    raise RunError(
                        f"{self.run_dir}: {where}: {problem}; an LLM game is not played again "
                        "on its own (its replies would differ): restore rounds.jsonl or start "
                        "a new run"
                    )
                damaged.append(f"{where}: {problem}")
                continue
            assert outcome is not None
            kept[plan.index] = outcome
            good[plan.key] = lines
        write_games_in_order(self.run_dir, good, [p.key for p in logged])
        return kept, damaged

    def _reorder(self, manifest: dict[str, Any], needed: bool) -> None:
        """Put the logged games in plan order (the round-by-round speed finishes games out of
        order); RunError when a game this session counts as finished is not whole."""
        if not needed:
            return
        logged = [p for p in self.plans if p.logged]
        games = finished_games(self.run_dir, {p.key: p.n_rounds for p in logged})
        lost = [p.key for p in logged if p.key not in games]
        if lost:
            condition, replicate = lost[0]
            raise RunError(
                f"{self.run_dir}: condition {condition!r} replicate {replicate}: not whole in the "
                f"rounds log after this session ({len(lost)} games); the run is not completed: "
                f"`pdbench resume {self.run_dir}` plays them again"
            )
        write_games_in_order(self.run_dir, games, [p.key for p in logged])


def game_from_lines(
    lines: list[bytes], plan: GroupPlan, run_id: str
) -> tuple[str | None, GroupOutcome | None]:
    """(problem, None) or (None, the game's outcome) from its rounds.jsonl lines, in round
    order: every record names the run, the planned seed and the seats; payoffs are the stage
    game's for the moves and the running totals add up."""
    n = plan.n_players
    records = sorted((orjson.loads(line) for line in lines), key=lambda r: r[ROUND_INDEX])
    played = np.zeros((n, len(records)), dtype=bool)
    intended = np.zeros((n, len(records)), dtype=bool)
    payoffs = np.zeros((n, len(records)), dtype=np.float64)
    failures = [0] * n
    totals = [0.0] * n
    names = [spec.name for spec in plan.agents]
    messages = []
    for t, record in enumerate(records):
        try:
            messages += round_messages(record, t)
        except (TypeError, ValueError) as exc:
            return f"round {t}: a message entry is not one ({exc})", None
        if record.get("run_id") != run_id:
            return f"round {t}: another run's record (run_id {record.get('run_id')!r})", None
        if record.get("seed") != plan.seed:
            return f"round {t}: seed {record.get('seed')!r}, planned {plan.seed}", None
        if seats_of(record) != n:
            return f"round {t}: {seats_of(record)} seats, the group has {n}", None
        for seat in range(n):
            if record[seat_field(seat, "name")] != names[seat]:
                return f"round {t}: seat {seat} is not {names[seat]!r}", None
            move = record.get(seat_field(seat, "action"))
            meant = record.get(seat_field(seat, "intended_action"))
            if move not in ("C", "D") or meant not in ("C", "D"):
                return f"round {t}: seat {seat}'s move is not C or D", None
            played[seat, t] = move == "C"
            intended[seat, t] = meant == "C"
            payoffs[seat, t] = float(record[seat_field(seat, "payoff")])
            failures[seat] += bool(record.get(seat_field(seat, "parse_failure")))
        expected = plan.game.payoffs(list(played[:, t]))
        for seat in range(n):
            if not np.isclose(payoffs[seat, t], expected[seat], rtol=0, atol=1e-9):
                return f"round {t}: seat {seat}'s payoff is not the game's for the moves", None
            totals[seat] += payoffs[seat, t]
            total = record.get(seat_field(seat, "cum_payoff"))
            if total is None or not np.isclose(float(total), totals[seat], rtol=1e-9, atol=1e-6):
                return f"round {t}: seat {seat}'s running total does not add up", None
    talk = game_talk(
        messages,
        intended,
        [spec.message_labels for spec in plan.agents],
        plan.communication is not None and plan.communication.mode == "pregame",
    )
    outcome = GroupOutcome(
        plan.condition,
        plan.replicate,
        tuple(names),
        plan.game,
        played,
        payoffs,
        intended,
        tuple(failures),
        talk,
    )
    return None, outcome
