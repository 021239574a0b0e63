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

import re
from typing import Any

import numpy as np
import orjson

from pdbench.core.group_metrics import GroupOutcome
from pdbench.errors import RunError
from pdbench.runners.engine.broker import CallBroker
from pdbench.runners.engine.group_engine import GroupEngine, GroupPlan, GroupResult
from pdbench.runners.lifecycle.session import RunSession, SessionResult, resume_kept
from pdbench.storage.files import JsonlAppender
from pdbench.storage.record.fields import ROUND_INDEX, SIDE_FIELDS
from pdbench.storage.record.group_fields import SEAT_LETTERS, seat_field, seat_fields, seats_of
from pdbench.storage.record.group_jsonl import GroupRoundsEncoder
from pdbench.storage.record.group_messages import game_talk, round_messages
from pdbench.storage.record.jsonl import OrderedRoundsWriter, finished_games, write_games_in_order

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
        return resume_kept(self, self._kept_games)

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
        for plan, problem in self._replay_differences(
            [p for p in logged if p.key in good], good, run_id
        ):
            damaged.append(f"condition {plan.condition!r} replicate {plan.replicate}: {problem}")
            del kept[plan.index], good[plan.key]
        write_games_in_order(self.run_dir, good, [p.key for p in logged])
        return kept, damaged

    def _replay_differences(
        self, plans: list[GroupPlan], found: dict[Key, list[bytes]], run_id: str
    ) -> list[tuple[GroupPlan, str]]:
        """The kept games of policies (which replay exactly, cheaply) whose records are not the
        records their replay writes, timestamps aside: a game rewritten so that its payoffs
        still fit its moves is played again too."""
        replayable = [p for p in plans if all(_is_policy(s.config) for s in p.agents)]
        if not replayable:
            return []
        replayed: dict[int, bytes] = {}
        engine = GroupEngine(
            run_id=run_id,
            broker=None,
            encoder=self._encoder(),
            sink=replayed.__setitem__,
            on_result=lambda result: None,
        )
        engine.play(replayable)
        out = []
        for plan in replayable:
            want = [_untimed(line) for line in replayed[plan.index].splitlines()]
            got = [_untimed(line.rstrip(b"\n")) for line in found[plan.key]]
            if got != want:
                first = next(
                    (t for t, (a, b) in enumerate(zip(got, want, strict=True)) if a != b), 0
                )
                out.append((plan, f"round {first}: not what its policies play (replayed)"))
        return out

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
    game's for the moves and the running totals add up. The first problem in round order is
    named (within a round: the record's facts, then each seat's payoff and total in turn)."""
    n = plan.n_players
    records = sorted((orjson.loads(line) for line in lines), key=lambda r: r[ROUND_INDEX])
    played = np.zeros((n, len(records)), dtype=bool)
    intended = np.zeros((n, len(records)), dtype=bool)
    payoffs = np.zeros((n, len(records)), dtype=np.float64)
    recorded_totals = np.zeros((n, len(records)), dtype=np.float64)
    failures = [0] * n
    names = [spec.name for spec in plan.agents]
    messages = []
    fields = {what: seat_fields(what, n) for what in SIDE_FIELDS}
    problem: tuple[int, str] | None = None  # the first round's facts that are wrong
    for t, record in enumerate(records):
        problem = _record_problem(record, t, plan, names, fields, run_id, messages)
        if problem is not None:
            break
        for seat, (move, meant, pay, total_field, failed) in enumerate(
            zip(
                fields["action"],
                fields["intended_action"],
                fields["payoff"],
                fields["cum_payoff"],
                fields["parse_failure"],
                strict=True,
            )
        ):
            played[seat, t] = record[move] == "C"
            intended[seat, t] = record[meant] == "C"
            payoffs[seat, t] = float(record[pay])
            total = record.get(total_field)
            recorded_totals[seat, t] = np.nan if total is None else float(total)
            failures[seat] += bool(record.get(failed))
    checked = len(records) if problem is None else problem[0]
    arithmetic = _payoff_problem(plan, played, payoffs, recorded_totals, checked)
    if arithmetic is not None:
        return arithmetic, None
    if problem is not None:
        return problem[1], None
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


def _record_problem(
    record: dict[str, Any],
    t: int,
    plan: GroupPlan,
    names: list[str],
    fields: dict[str, tuple[str, ...]],
    run_id: str,
    messages: list[Any],
) -> tuple[int, str] | None:
    """(t, what is wrong) with round t's record but its payoffs and totals (its messages are
    added to `messages`), None when nothing is. `fields`: the seats' field names by kind."""
    try:
        messages += round_messages(record, t)
    except (TypeError, ValueError) as exc:
        return t, f"round {t}: a message entry is not one ({exc})"
    if record.get("run_id") != run_id:
        return t, f"round {t}: another run's record (run_id {record.get('run_id')!r})"
    if record.get("seed") != plan.seed:
        return t, f"round {t}: seed {record.get('seed')!r}, planned {plan.seed}"
    n = plan.n_players
    seat_names = fields["name"]
    if not all(f in record for f in seat_names) or (
        n < len(SEAT_LETTERS) and seat_field(n, "name") in record
    ):
        return t, f"round {t}: {seats_of(record)} seats, the group has {n}"
    for seat, (name, move, meant) in enumerate(
        zip(seat_names, fields["action"], fields["intended_action"], strict=True)
    ):
        if record[name] != names[seat]:
            return t, f"round {t}: seat {seat} is not {names[seat]!r}"
        if record.get(move) not in ("C", "D") or record.get(meant) not in ("C", "D"):
            return t, f"round {t}: seat {seat}'s move is not C or D"
    return None


def _payoff_problem(
    plan: GroupPlan,
    played: np.ndarray,
    payoffs: np.ndarray,
    recorded_totals: np.ndarray,
    rounds: int,
) -> str | None:
    """The first of the first `rounds` rounds (and in it the first seat) whose payoff is not
    the stage game's for the moves or whose running total does not add up; None when all are
    right. Vectorized: the game's payoffs from the count of cooperators, the totals as the
    engine sums them (in round order)."""
    if rounds == 0:
        return None
    moves = played[:, :rounds]
    k = moves.sum(axis=0)
    pay_c = np.asarray(plan.game.pay_c, dtype=np.float64)
    pay_d = np.asarray(plan.game.pay_d, dtype=np.float64)
    last = len(pay_d) - 1  # both branches are indexed: clip what the other branch reads
    expected = np.where(moves, pay_c[np.maximum(k - 1, 0)], pay_d[np.minimum(k, last)])
    got = payoffs[:, :rounds]
    wrong_pay = ~np.isclose(got, expected, rtol=0, atol=1e-9)
    totals = np.cumsum(got, axis=1)
    recorded = recorded_totals[:, :rounds]
    wrong_total = ~np.isclose(recorded, totals, rtol=1e-9, atol=1e-6)  # NaN (missing): wrong
    # A seat's total is checked after its payoff, in seat order, within a round; payoffs past
    # a wrong one are summed as recorded, as the reader always did.
    bad = np.stack([wrong_pay.T, wrong_total.T], axis=2)  # (rounds, seats, [payoff, total])
    if not bad.any():
        return None
    t, seat, which = np.unravel_index(int(np.argmax(bad.reshape(-1))), bad.shape)
    if which == 0:
        return f"round {t}: seat {seat}'s payoff is not the game's for the moves"
    return f"round {t}: seat {seat}'s running total does not add up"


_TIMESTAMP = re.compile(rb',"timestamp_utc":"[^"]*"')


def _untimed(line: bytes) -> bytes:
    """A record line without its timestamp (the one field a replay cannot reproduce)."""
    return _TIMESTAMP.sub(b"", line)


def _is_policy(config: Any) -> bool:
    from pdbench.core.config import PolicyAgentConfig

    return isinstance(config, PolicyAgentConfig)
