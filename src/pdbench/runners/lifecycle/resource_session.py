"""A resource run directory's life (issue 31): the experiments' `RunSession` with resource games.

What differs from an experiment: games are played by `ResourceEngine`, rounds are kept in
rounds.jsonl only (one line a round, a game's lines written when it ends), and a resume keeps a
game when its lines are whole (rounds 0..k in order, one seed and seat list, `last` on its final
line, every planned round unless a commons collapsed). A game a kill cut short has no final line
and is played again (an LLM game from the response cache, so with the same replies). A kept
game of policies only is played again in memory and must give the same lines (timestamps
aside), else it is played again and named in the manifest. Every kept game must also add up
under its rules (`resource_record.pgg_records_problem`, `commons_records_problem`: each round
starts where the last ended, and what follows the decisions is what the rules give); a whole
LLM game that fails a check stops the resume, as in experiments (its replies would differ if
played again).
"""

from __future__ import annotations

from typing import Any

from pdbench.core.config import LLMAgentConfig
from pdbench.errors import RunError
from pdbench.runners.engine.broker import CallBroker
from pdbench.runners.engine.resource_engine import (
    ResourceEngine,
    ResourcePlan,
    ResourceResult,
    policy_seat,
)
from pdbench.runners.lifecycle.session import RunSession, SessionResult, resume_kept
from pdbench.storage.record.jsonl import OrderedRoundsWriter, write_games_in_order
from pdbench.storage.record.resource_record import finished_resource_games, untimed

Key = tuple[str, int]


class ResourceRunSession(RunSession):
    """Plays a resource config's planned games into a run directory (module docstring)."""

    plans: list[ResourcePlan]  # type: ignore[assignment]

    @property
    def _rounds_log(self) -> str:
        return "jsonl"

    def _encoder(self) -> Any:  # type: ignore[override]
        return None

    def _engine(self, broker: CallBroker | None, sink: Any, collect: Any, pool: Any) -> Any:
        run = self.loaded.config.run
        seat = seat_factory(run.store_prompts, run.store_raw_responses, broker, pool)
        return ResourceEngine(
            run_id=run.run_id,
            seats=seat,
            sink=sink,
            on_result=collect,
            concurrency=self.options.concurrency,
            progress=self.options.progress,
            broker=broker,
        )

    def _play(  # type: ignore[override]
        self,
        todo: list[ResourcePlan],
        broker: CallBroker,
        writer: OrderedRoundsWriter,
        result: SessionResult,
    ) -> None:
        from pdbench.agents.providers.pool import ProviderPool

        def collect(game: ResourceResult) -> None:
            result.outcomes[game.plan.index] = game.records  # type: ignore[assignment]
            result.games_played += 1

        pool = ProviderPool() if any(p.has_llm for p in todo) else None
        engine = self._engine(broker, writer.add, collect, pool)
        total = sum(p.n_rounds for p in self.plans)
        try:
            engine.play(todo, done_before=total - sum(p.n_rounds for p in todo), total=total)
        finally:
            if pool is not None:
                import asyncio

                asyncio.run(pool.aclose())

    def _preflight(self) -> None:
        """The session's checks, and first of all: these games play in this process (refused
        before anything is created, so a retry needs no --overwrite)."""
        if self.options.backend == "ray":
            raise RunError(
                "public goods and commons runs play in this process; use --backend local"
            )
        super()._preflight()

    def _play_on_ray(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        raise RunError("public goods and commons runs play in this process; use --backend local")

    def _resume(self) -> tuple[dict[str, Any], dict[int, Any]]:  # type: ignore[override]
        return resume_kept(self, self._kept_games)

    def _kept_games(self, manifest: dict[str, Any]) -> tuple[dict[int, Any], list[str]]:
        """The whole games of the log that pass the checks (rewritten in plan order, alone),
        and a line for each finished game that does not."""
        planned = {p.key: p.n_rounds for p in self.plans}
        whole, broken = finished_resource_games(self.run_dir, planned)
        run_id = str(manifest.get("run_id") or self.loaded.config.run.run_id)
        kept: dict[int, Any] = {}
        good: dict[Key, list[bytes]] = {}
        damaged: list[str] = []
        by_key = {p.key: p for p in self.plans}
        for key, problem in broken.items():
            plan = by_key[key]
            where = f"condition {plan.condition!r} replicate {plan.replicate}"
            if plan.has_llm:
                raise RunError(
                    f"{self.run_dir}: {where}: {problem}; an LLM game is not played again on its "
                    "own (its replies would differ): restore rounds.jsonl or start a new run"
                )
            damaged.append(f"{where}: {problem}")
        for plan in self.plans:
            lines = whole.get(plan.key)
            if lines is None:
                continue
            problem = _identity_problem(lines[0], plan, run_id) or _rules_problem(lines, plan)
            if problem is not None:
                where = f"condition {plan.condition!r} replicate {plan.replicate}"
                if plan.has_llm:
                    raise RunError(
                        f"{self.run_dir}: {where}: {problem}; restore rounds.jsonl or start a "
                        "new run"
                    )
                damaged.append(f"{where}: {problem}")
                continue
            kept[plan.index] = lines
            good[plan.key] = lines
        for plan in self._replay_differences(
            [p for p in self.plans if p.key in good], good, run_id
        ):
            damaged.append(
                f"condition {plan.condition!r} replicate {plan.replicate}: not what its "
                "policies play (replayed)"
            )
            del kept[plan.index], good[plan.key]
        write_games_in_order(self.run_dir, good, [p.key for p in self.plans])
        return kept, damaged

    def _replay_differences(
        self, plans: list[ResourcePlan], found: dict[Key, list[bytes]], run_id: str
    ) -> list[ResourcePlan]:
        """The kept games of policies whose lines are not what a replay writes (timestamps
        aside)."""
        replayable = [p for p in plans if not p.has_llm]
        if not replayable:
            return []
        replayed: dict[int, bytes] = {}
        engine = ResourceEngine(
            run_id=run_id,
            seats=policy_seat,
            sink=replayed.__setitem__,
            on_result=lambda result: None,
        )
        engine.play(replayable)
        out = []
        for plan in replayable:
            want = [untimed(line) for line in replayed[plan.index].splitlines()]
            got = [untimed(line) for line in found[plan.key]]
            if got != want:
                out.append(plan)
        return out

    def _reorder(self, manifest: dict[str, Any], needed: bool) -> None:
        """Put the games in plan order; RunError when a game this session counts as finished
        is not whole in the log."""
        planned = {p.key: p.n_rounds for p in self.plans}
        games, _ = finished_resource_games(self.run_dir, planned)
        lost = [p.key for p in self.plans if p.key not in games]
        if lost:
            condition, replicate = lost[0]
            raise RunError(
                f"{self.run_dir}: condition {condition!r} replicate {replicate}: not whole in the "
                f"rounds log after this session ({len(lost)} games); the run is not completed: "
                f"`pdbench resume {self.run_dir}` plays them again"
            )
        if needed:
            write_games_in_order(self.run_dir, games, [p.key for p in self.plans])


def _rules_problem(lines: list[bytes], plan: ResourcePlan) -> str | None:
    """Why a game's records do not add up under the plan's rules (None when they do)."""
    import orjson

    from pdbench.core.pgg import PGGRules
    from pdbench.storage.record.resource_record import (
        commons_records_problem,
        pgg_records_problem,
    )

    records = [orjson.loads(line) for line in lines]
    if isinstance(plan.rules, PGGRules):
        return pgg_records_problem(plan.rules, records)
    return commons_records_problem(plan.rules, records)


def _identity_problem(line: bytes, plan: ResourcePlan, run_id: str) -> str | None:
    """Why a game's first line is not this plan's game (None when it is)."""
    import orjson

    record = orjson.loads(line)
    if record.get("run_id") != run_id:
        return f"run_id {record.get('run_id')!r} is not this run's"
    if record.get("game_seed") != plan.seed:
        return "its seed is not the planned one"
    if record.get("seats") != list(plan.names):
        return "its seats are not the planned ones"
    if record.get("game") != plan.game:
        return f"game {record.get('game')!r} is not {plan.game!r}"
    return None


def seat_factory(store_prompts: bool, store_raw: bool, broker: CallBroker | None, pool: Any) -> Any:
    """The seats of a resource run's games: a policy's or a person's scripted seat
    (`policy_seat`), or an LLM seat calling through `broker` (a provider from `pool`). The
    run and the Play tab's live replay (`runners.live_resource`) both seat games with it."""

    def seat(plan: ResourcePlan, i: int) -> Any:
        spec = plan.agents[i]
        if not isinstance(spec.config, LLMAgentConfig):
            return policy_seat(plan, i)
        from pdbench.agents.resource_llm import make_llm_seat

        assert broker is not None and pool is not None
        client = broker.bind(
            pool.get(spec.config),
            spec.config,
            condition=plan.condition,
            replicate=plan.replicate,
            agent_key=spec.name if plan.names.count(spec.name) == 1 else f"{spec.name}#{i}",
            game_seed=plan.seed,
        )
        return make_llm_seat(
            spec, plan, i, client, store_prompts=store_prompts, store_raw=store_raw
        )

    return seat
