"""Playing many matches between configured players, and the files tournaments and evolutions write.

`play_matches` sends every match between two batchable policies through the vectorized engine in
one batch, and plays the others (LLM agents, Axelrod strategies, policies with a too-small history
window) round by round with asyncio, exactly as the per-round experiment engine does: the same
observations, counter-based noise and agent seeds. Results come back as one `BatchResult` in
input order, whichever path each match took.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pdbench.agents.llm import LLMAgent, ParseFailureAbort
from pdbench.core.batch import BatchResult, PolicySpec, is_batchable, play_batch, policy_spec
from pdbench.core.config import BudgetConfig, LLMAgentConfig, PolicyAgentConfig
from pdbench.core.horizon import Horizon
from pdbench.core.payoff import PayoffMatrix
from pdbench.core.rng import Purpose, agent_seed, counter_uniform
from pdbench.core.transcript import Transcript
from pdbench.core.types import Action
from pdbench.errors import RunError
from pdbench.runners.calls import Budget, CallBroker
from pdbench.runners.games_config import LoadedGames
from pdbench.storage.cache import DEFAULT_CACHE_DIR, ResponseCache

ProgressFn = Callable[[int, int], None]


def build_player(loaded: LoadedGames, index: int, providers: dict[str, Any], noise: float) -> Any:
    """A fresh agent for player `index` (policy, Axelrod strategy or LLM agent)."""
    player = loaded.players[index]
    if isinstance(player, PolicyAgentConfig):
        from pdbench.agents.policy import make_policy

        return make_policy(player.policy, player.params, player.display_name())
    if isinstance(player, LLMAgentConfig):
        from pdbench.agents.llm import LLMAgent
        from pdbench.runners.registry import make_provider

        provider = make_provider(player, providers)
        templates = loaded.templates[loaded.template_key(index)]
        return LLMAgent(player, provider, templates, loaded.config.game.matrix())
    from pdbench.agents.axelrod_adapter import AxelrodAgent

    return AxelrodAgent(player.strategy, player.display_name(), noise)


def _view(player: Any, horizon: Horizon, n_rounds: int) -> tuple[Any, ...]:
    """(history_window, include_totals, total_rounds, stop_prob) shown to a player."""
    mode = getattr(player, "horizon_disclosure", None)
    if mode is None:
        mode = "exact" if horizon.type == "fixed" else "stop_prob"
    total, stop = None, None
    if mode == "exact":
        total = n_rounds
    elif mode == "stop_prob" and horizon.type == "geometric":
        stop = horizon.stop_prob  # type: ignore[union-attr]
    include = player.include_totals if isinstance(player, LLMAgentConfig) else True
    return getattr(player, "history_window", None), include, total, stop


async def play_match_rounds(
    agents: tuple[Any, Any],
    players: tuple[Any, Any],
    seed: int,
    n_rounds: int,
    horizon: Horizon,
    matrix: PayoffMatrix,
    noise: float,
    on_round: Callable[[], None] | None = None,
) -> dict[str, list[Any]]:
    """One match round by round (like the experiment engine); lists of moves (True = C) and payoffs."""
    seeds = (agent_seed(seed, 0), agent_seed(seed, 1))
    for agent, s in zip(agents, seeds, strict=True):
        agent.reset(s)
    views = [_view(p, horizon, n_rounds) for p in players]
    transcript = Transcript(matrix)
    intended: tuple[list[bool], list[bool]] = ([], [])
    for r in range(n_rounds):
        obs = [
            transcript.observation(
                i,
                history_window=v[0],
                include_totals=v[1],
                horizon_type=horizon.type,
                total_rounds=v[2],
                stop_prob=v[3],
            )
            for i, v in enumerate(views)
        ]
        decisions = await asyncio.gather(*(_decide(a, o) for a, o in zip(agents, obs, strict=True)))
        played = []
        for side, decision in enumerate(decisions):
            action = decision.action
            intended[side].append(action is Action.C)
            if noise > 0.0 and counter_uniform(seeds[side], r, Purpose.NOISE) < noise:
                action = action.flipped
            played.append(action)
        transcript.record(played[0], played[1])
        if on_round is not None:
            on_round()
    return {
        "intended_a": intended[0],
        "intended_b": intended[1],
        "played_a": [a is Action.C for a in transcript.actions_a],
        "played_b": [b is Action.C for b in transcript.actions_b],
        "payoffs_a": transcript.payoffs_a,
        "payoffs_b": transcript.payoffs_b,
    }


async def _decide(agent: Any, obs: Any) -> Any:
    adecide = getattr(agent, "adecide", None)
    if adecide is not None:
        return await adecide(obs)
    return agent.decide(obs)


def batch_policies(loaded: LoadedGames) -> tuple[np.ndarray, list[PolicySpec]]:
    """(batchable flag per player, a PolicySpec per player: placeholders for non-batchable ones)."""
    flags = np.array([is_batchable(p) for p in loaded.players], dtype=bool)
    specs = [
        policy_spec(p) if ok else PolicySpec("ALLC")
        for p, ok in zip(loaded.players, flags, strict=True)
    ]
    return flags, specs


def play_matches(
    loaded: LoadedGames,
    player_a: np.ndarray,
    player_b: np.ndarray,
    seeds: np.ndarray,
    lengths: np.ndarray,
    *,
    horizon: Horizon,
    noise: float,
    progress: ProgressFn | None = None,
    concurrency: int = 16,
) -> tuple[BatchResult, np.ndarray]:
    """Play match i between players player_a[i] and player_b[i] (indices into loaded.players).

    Returns all matches as one BatchResult (input order) and a mask of those that were batched.
    """
    player_a = np.asarray(player_a, dtype=np.int64)
    player_b = np.asarray(player_b, dtype=np.int64)
    seeds = np.asarray(seeds, dtype=np.uint64)
    lengths = np.asarray(lengths, dtype=np.int64)
    flags, specs = batch_policies(loaded)
    batched = flags[player_a] & flags[player_b]
    matrix = loaded.config.game.matrix()
    total_rounds = int(lengths.sum())
    fast = np.flatnonzero(batched)
    part = play_batch(
        specs, player_a[fast], player_b[fast], seeds[fast], lengths[fast], matrix, noise
    )
    done = int(lengths[fast].sum())
    if progress is not None:
        progress(done, total_rounds)
    slow = np.flatnonzero(~batched)
    if slow.size == 0:
        return part, batched
    max_len = int(lengths.max()) if lengths.size else 0
    out = _empty_result(lengths, max_len)
    _scatter(out, fast, part)
    rows = _play_slow(
        loaded,
        player_a[slow],
        player_b[slow],
        seeds[slow],
        lengths[slow],
        horizon,
        matrix,
        noise,
        progress,
        done,
        total_rounds,
        concurrency,
    )
    for index, row in zip(slow.tolist(), rows, strict=True):
        n = int(lengths[index])
        for key, values in row.items():
            getattr(out, key)[index, :n] = values
    return out, batched


def _empty_result(lengths: np.ndarray, max_len: int) -> BatchResult:
    n = lengths.shape[0]
    moves = [np.zeros((n, max_len), dtype=bool) for _ in range(4)]
    return BatchResult(lengths.copy(), *moves, np.zeros((n, max_len)), np.zeros((n, max_len)))


def _scatter(out: BatchResult, rows: np.ndarray, part: BatchResult) -> None:
    width = part.played_a.shape[1]
    for key in ("intended_a", "intended_b", "played_a", "played_b", "payoffs_a", "payoffs_b"):
        getattr(out, key)[rows, :width] = getattr(part, key)


def _play_slow(
    loaded: LoadedGames,
    player_a: np.ndarray,
    player_b: np.ndarray,
    seeds: np.ndarray,
    lengths: np.ndarray,
    horizon: Horizon,
    matrix: PayoffMatrix,
    noise: float,
    progress: ProgressFn | None,
    done: int,
    total: int,
    concurrency: int,
) -> list[dict[str, list[Any]]]:
    counter = [done]

    def tick() -> None:
        counter[0] += 1
        if progress is not None:
            progress(counter[0], total)

    async def run_all() -> list[dict[str, list[Any]]]:
        providers: dict[str, Any] = {}
        gate = asyncio.Semaphore(max(1, concurrency))
        # LLM players' calls go through the same broker as experiments: the response cache
        # (a re-run makes no provider calls), concurrency limits and transport retries.
        cache = (
            ResponseCache(DEFAULT_CACHE_DIR)
            if any(isinstance(p, LLMAgentConfig) for p in loaded.players)
            else None
        )
        broker = CallBroker(cache, Budget(BudgetConfig()), None, concurrency)

        async def one(i: int) -> dict[str, list[Any]]:
            async with gate:
                a, b = int(player_a[i]), int(player_b[i])
                agents = (
                    build_player(loaded, a, providers, noise),
                    build_player(loaded, b, providers, noise),
                )
                for key, agent in (("agent_a", agents[0]), ("agent_b", agents[1])):
                    if isinstance(agent, LLMAgent):
                        agent.provider = broker.bind(
                            agent.provider,
                            agent.config,
                            condition=f"{loaded.names[a]}_vs_{loaded.names[b]}",
                            replicate=i,
                            agent_key=key,
                            game_seed=int(seeds[i]),
                            api_key=getattr(agent.provider, "api_key_value", None),
                        )
                players = (loaded.players[a], loaded.players[b])
                return await play_match_rounds(
                    agents, players, int(seeds[i]), int(lengths[i]), horizon, matrix, noise, tick
                )

        try:
            return list(await asyncio.gather(*(one(i) for i in range(len(lengths)))))
        finally:
            if cache is not None:
                cache.close()
            for client in providers.values():
                closer = getattr(client, "aclose", None)
                if closer is not None:
                    try:
                        await closer()
                    except Exception:  # noqa: BLE001 - closing is best effort
                        pass

    try:
        return asyncio.run(run_all())
    except ParseFailureAbort as exc:
        raise RunError(f"match stopped: {exc}") from None


def write_parquet(path: Path, columns: dict[str, Any]) -> None:
    """Write named columns (arrays or lists of equal length) to Parquet, atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pdbench.storage.files import write_bytes_atomic

    table = pa.table({k: (v if isinstance(v, list) else np.asarray(v)) for k, v in columns.items()})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    write_bytes_atomic(path, buffer.getvalue())
