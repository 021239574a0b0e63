"""`pdbench merge OUT_DIR SHARD_DIR...` for groups runs: join the shards of a groups config
(`pdbench run CONFIG --shard i/K`) into one run directory whose rounds.jsonl (timestamps aside),
groups_manifest.json and group tables equal those of an unsharded run.

The same steps and guarantees as the experiments' merge (`merge.py`, whose split, usage and
model checks this module reuses): take OUT_DIR's lock; accept only an empty OUT_DIR or what an
unfinished merge left; read every shard and check it (a completed groups run not in use, the
same config, prompt and persona files and record schema as the others, every shard of the split
once, its manifest's games those of the plan it owns, its rounds.jsonl whole records of exactly
those games (`storage.record.group_shard_check`), each game's payoffs, totals and messages those
a resume would keep (`group_session.game_from_lines`), its call log agreeing with its usage).
Only then write: the manifest with status `merging`, rounds.jsonl in plan order,
llm_calls.jsonl, the group tables recomputed from the games, and last the manifest with status
`completed`. A merge killed at any moment leaves OUT_DIR completed or `merging`; the same merge
run again finishes it.
"""

from __future__ import annotations

import copy
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from pydantic import ValidationError

import pdbench.core.config  # noqa: F401 - the config models in their import order
from pdbench.core.group_config import GroupsConfig
from pdbench.core.group_metrics import GroupOutcome
from pdbench.core.rng import game_seed
from pdbench.errors import RunError
from pdbench.runners.engine.group_engine import GroupPlan
from pdbench.runners.lifecycle.group_session import game_from_lines
from pdbench.runners.lifecycle.merge import (
    MERGING,
    _check_split,
    _check_usage,
    _merged_models,
    check_same_inputs,
    merge_into,
)
from pdbench.runners.lifecycle.session import usage_summary
from pdbench.runners.science.experiment import shard_owner
from pdbench.runners.science.groups import drawn_group
from pdbench.storage.aggregate import usage_by_game
from pdbench.storage.group_aggregate import GROUP_ARTIFACTS, group_game_of, write_group_aggregates
from pdbench.storage.record.group_shard_check import ExpectedGroupGame, group_shard_rounds
from pdbench.storage.record.shard_check import GameId, shard_calls
from pdbench.storage.run_dir import (
    check_not_in_use,
    read_manifest,
    remove_artifact,
    spending,
    write_manifest,
)
from pdbench.storage.schema import CALLS_FILE, GROUPS_MANIFEST_FILE, ROUNDS_FILE

KIND = "groups"
MERGED_FILES = (GROUPS_MANIFEST_FILE, ROUNDS_FILE, CALLS_FILE, *GROUP_ARTIFACTS)


@dataclass
class GroupShard:
    """One groups shard directory as read: its manifest, config and place in the split."""

    dir: Path
    manifest: dict[str, Any]
    config: GroupsConfig
    index: int
    k: int


@dataclass(frozen=True)
class ScheduledGroupGame:
    """One game of the full plan (every shard's): its place and what its records must carry."""

    index: int
    expected: ExpectedGroupGame
    entry: dict[str, Any]  # the manifest's games entry of an unsharded run

    @property
    def key(self) -> GameId:
        """(condition, replicate)."""
        return self.expected.condition, self.expected.replicate


def merge_group_shards(out_dir: Path, shard_dirs: list[Path]) -> dict[str, Any]:
    """Write the merged groups run into `out_dir` (new, empty, or left by an unfinished
    merge); returns its manifest. RunError (one line) for anything that does not fit."""
    return merge_into(out_dir, shard_dirs, _merge_locked, MERGED_FILES, GROUPS_MANIFEST_FILE)


def _read_shard(shard_dir: Path) -> GroupShard:
    """A shard's manifest and config; RunError unless it is a completed groups shard that no
    process is using."""
    if not shard_dir.is_dir():
        raise RunError(f"{shard_dir}: no such shard directory")
    check_not_in_use(shard_dir)
    if not (shard_dir / GROUPS_MANIFEST_FILE).is_file():
        raise RunError(
            f"{shard_dir}: not a groups run (no {GROUPS_MANIFEST_FILE}); merge joins shards of "
            "one kind of run"
        )
    manifest = read_manifest(shard_dir, KIND)
    if manifest.get("status") != "completed":
        raise RunError(
            f"{shard_dir}: shard not completed (status {manifest.get('status')}); resume it first"
        )
    try:
        config = GroupsConfig.model_validate(manifest.get("config"))
        spec = config.run.shard_of() or (1, 1)
    except (ValidationError, ValueError, TypeError) as exc:
        first = str(exc).splitlines()[0][:120]
        raise RunError(
            f"{shard_dir / GROUPS_MANIFEST_FILE}: config is not a valid groups config ({first}); "
            "not a manifest pdbench wrote (restore it)"
        ) from None
    return GroupShard(shard_dir, manifest, config, spec[0], spec[1])


def group_schedule(
    cfg: GroupsConfig, entries: list[dict[str, Any]], k: int
) -> list[ScheduledGroupGame]:
    """Every game of the full plan in plan order (as `plan_groups` orders them), from the
    config and the manifest's condition entries (the seats' names), each with its owner among
    k shards; RunError when an entry's seats do not fit its condition."""
    out: list[ScheduledGroupGame] = []
    for cond, entry in zip(cfg.groups.conditions, entries, strict=True):
        horizon_cfg = cond.horizon or cfg.horizon
        horizon = horizon_cfg.build()
        noise = cfg.game.noise if cond.noise is None else cond.noise
        seeds = [game_seed(cfg.run.seed, cond.name, r) for r in range(cfg.groups.replicates)]
        lengths = horizon.lengths(np.array(seeds, dtype=np.uint64)).tolist()
        members = entry.get("pool") if cond.matching == "random" else entry.get("seats")
        if not (
            isinstance(members, list)
            and len(members) == len(cond.members)
            and all(isinstance(m, str) for m in members)
        ):
            raise RunError(
                f"{GROUPS_MANIFEST_FILE}: condition {cond.name!r}: its seats disagree with its "
                "config; not a manifest pdbench wrote (restore it)"
            )
        for rep, (seed, n_rounds) in enumerate(zip(seeds, lengths, strict=True)):
            names = list(members)
            if cond.matching == "random":
                drawn = drawn_group(cfg.run.seed, cond.name, rep, len(members), cond.n_players)
                names = [members[j] for j in drawn]
            index = len(out)
            expected = ExpectedGroupGame(
                cond.name,
                rep,
                shard_owner(index, k),
                seed,
                int(n_rounds),
                float(noise),
                horizon.type,
                getattr(horizon, "n_rounds", None),
                getattr(horizon, "stop_prob", None),
                tuple(names),
            )
            entry_game: dict[str, Any] = {
                "replicate": rep,
                "seed": seed,
                "n_rounds": int(n_rounds),
            }
            if cond.matching == "random":
                entry_game["seats"] = names
            out.append(ScheduledGroupGame(index, expected, entry_game))
    return out


def _merge_locked(out_dir: Path, shard_dirs: list[Path], leftovers: list[Path]) -> dict[str, Any]:
    shards = [_read_shard(d) for d in shard_dirs]
    by_index = _check_split(shards)  # type: ignore[arg-type]
    first = by_index[1]
    cfg = first.config
    entries = first.manifest.get("conditions") or []
    if [c.get("name") for c in entries] != [c.name for c in cfg.groups.conditions]:
        raise RunError(f"{first.dir / GROUPS_MANIFEST_FILE}: conditions disagree with its config")
    schedule = group_schedule(cfg, entries, first.k)
    for shard in sorted(shards, key=lambda s: s.index):  # the first shard first
        _check_inputs(shard, first, schedule)
    games = {g.key: g.expected for g in schedule}
    run_id = cfg.run.run_id
    rounds: dict[GameId, list[bytes]] = {}
    calls: dict[GameId, list[bytes]] = {}
    for shard in sorted(shards, key=lambda s: s.index):
        rounds.update(
            group_shard_rounds(shard.dir / ROUNDS_FILE, shard.index, shard.k, games, run_id)
        )
        calls.update(shard_calls(shard.dir / CALLS_FILE, shard.index, games))  # type: ignore[arg-type]
        _check_usage(shard)  # type: ignore[arg-type]
    outcomes = _outcomes(cfg, entries, schedule, rounds, first, by_index)
    order = [g.key for g in schedule]
    manifest = _merged_manifest(out_dir, shards, first, schedule)
    for path in leftovers:
        remove_artifact(path)
    write_manifest(out_dir, KIND, manifest)  # status `merging`: never mistaken for a run
    write_lines_atomic(out_dir / ROUNDS_FILE, (rounds[key] for key in order))
    if any((s.dir / CALLS_FILE).is_file() for s in shards):
        write_lines_atomic(out_dir / CALLS_FILE, (calls.get(key, []) for key in order))
    usage = usage_summary(usage_by_game(out_dir))
    usage["spent_all_sessions"] = spending(out_dir)
    manifest["usage"] = usage
    write_group_aggregates(out_dir, outcomes, manifest)
    manifest["status"] = "completed"
    write_manifest(out_dir, KIND, manifest)  # last: the run is complete
    return manifest


def write_lines_atomic(path: Path, games: Iterable[list[bytes]]) -> None:
    """Write games' lines (with their newlines) to a file atomically, as `write_bytes_atomic`
    does (its temporary name, so an unfinished merge's leftover is recognised), one game at a
    time: no copy of the whole file is made in memory."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "wb") as fh:
            for lines in games:
                fh.writelines(lines)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise RunError(f"{path}: cannot write ({exc.strerror or exc})") from None


def _outcomes(
    cfg: GroupsConfig,
    entries: list[dict[str, Any]],
    schedule: list[ScheduledGroupGame],
    rounds: dict[GameId, list[bytes]],
    first: GroupShard,
    by_index: dict[int, GroupShard],
) -> list[GroupOutcome]:
    """Every game's outcome in plan order, read by the resume's reader (`game_from_lines`):
    RunError naming the shard's rounds.jsonl when a game's payoffs, totals or messages are
    not those of its moves."""
    conditions = {c.name: c for c in cfg.groups.conditions}
    by_name = {e["name"]: e for e in entries}
    stages = {}
    for name, cond in conditions.items():
        try:
            stages[name] = group_game_of(by_name[name])
        except (KeyError, TypeError, ValueError, AttributeError):
            stages[name] = None
        if stages[name] != cfg.game_of(cond):
            raise RunError(
                f"{first.dir / GROUPS_MANIFEST_FILE}: condition {name!r}: its game disagrees "
                "with its config; not a manifest pdbench wrote (restore it)"
            )
    out: list[GroupOutcome] = []
    for game in schedule:
        g = game.expected
        cond = conditions[g.condition]
        entry = by_name[g.condition]
        stage = stages[g.condition]
        channel = cfg.communication_of(cond)
        labels = entry.get("message_labels") or {}
        seats = tuple(
            SimpleNamespace(name=name, message_labels=tuple(labels.get(name) or ("C", "D")))
            for name in g.names
        )
        plan = GroupPlan(
            game.index,
            g.condition,
            g.replicate,
            seats,  # type: ignore[arg-type] - game_from_lines reads names and labels only
            stage,
            g.seed,
            (cond.horizon or cfg.horizon).build(),
            g.noise,
            g.n_rounds,
            communication=channel if channel.enabled else None,
        )
        problem, outcome = game_from_lines(rounds[game.key], plan, cfg.run.run_id)
        if problem is not None or outcome is None:
            where = by_index[g.owner].dir / ROUNDS_FILE
            raise RunError(
                f"{where}: condition {g.condition!r} replicate {g.replicate}: {problem}; the "
                f"shard is damaged; `pdbench resume {where.parent}` replays its damaged games"
            )
        out.append(outcome)
    return out


def _check_inputs(shard: GroupShard, first: GroupShard, schedule: list[ScheduledGroupGame]) -> None:
    """The shard was played with the same config, prompt and persona files and record schema
    as the first shard (and this pdbench), and its manifest agrees with the plan."""
    check_same_inputs(shard.dir, shard.manifest, first.dir, first.manifest, GROUPS_MANIFEST_FILE)
    m, where = shard.manifest, shard.dir
    cfg = shard.config
    plain = {
        "run_id": cfg.run.run_id,
        "seed": cfg.run.seed,
        "replicates": cfg.groups.replicates,
        "collapse": cfg.metrics.collapse.model_dump(mode="json"),
    }
    for key, want in plain.items():
        if m.get(key) != want:
            raise RunError(f"{where / GROUPS_MANIFEST_FILE}: {key} disagrees with its config")
    conditions = m.get("conditions") or []
    if [c.get("name") for c in conditions] != [c.name for c in cfg.groups.conditions]:
        raise RunError(f"{where / GROUPS_MANIFEST_FILE}: conditions disagree with its config")
    firsts = {c["name"]: c for c in first.manifest["conditions"]}
    for cond in conditions:
        name = cond["name"]
        owned = [
            g.entry
            for g in schedule
            if g.expected.condition == name and shard_owner(g.index, shard.k) == shard.index
        ]
        planned = [g for g in schedule if g.expected.condition == name]
        problem = ""
        keys = (set(cond) | set(firsts[name])) - {"games"}
        if any(cond.get(key) != firsts[name].get(key) for key in keys):
            problem = f"differs from {first.dir}'s"
        elif cond.get("games") != owned:
            problem = "games are not those this shard owns in the plan"
        elif planned and cond.get("noise") != planned[0].expected.noise:
            problem = "noise disagrees with its config"
        if problem:
            raise RunError(f"{where / GROUPS_MANIFEST_FILE}: condition {name!r}: {problem}")
    totals = m.get("totals") or {}
    mine = [g for g in schedule if shard_owner(g.index, shard.k) == shard.index]
    want = {"games": len(mine), "rounds": sum(g.expected.n_rounds for g in mine)}
    if totals != want:
        raise RunError(f"{where / GROUPS_MANIFEST_FILE}: totals disagree with its games")


def _merged_manifest(
    out_dir: Path,
    shards: list[GroupShard],
    first: GroupShard,
    schedule: list[ScheduledGroupGame],
) -> dict[str, Any]:
    """The merged run's manifest (status `merging`): the first shard's, with every game of the
    plan, the sessions and model names of every shard, and where it came from."""
    ordered = sorted(shards, key=lambda s: s.index)
    manifest = copy.deepcopy(first.manifest)
    manifest["config"]["run"]["shard"] = None
    manifest["config"]["run"]["output_dir"] = str(out_dir)  # each shard's differs
    manifest["output_dir"] = str(out_dir)
    for cond in manifest["conditions"]:
        cond["games"] = [g.entry for g in schedule if g.expected.condition == cond["name"]]
    manifest["totals"] = {
        "games": len(schedule),
        "rounds": sum(g.expected.n_rounds for g in schedule),
    }
    manifest["sessions"] = [
        {**session, "shard": f"{s.index}/{s.k}"}
        for s in ordered
        for session in (s.manifest.get("sessions") or [])
        if isinstance(session, dict)
    ]
    started = [s.manifest.get("started_at_utc") for s in ordered]
    finished = [s.manifest.get("finished_at_utc") for s in ordered]
    manifest["started_at_utc"] = min((t for t in started if isinstance(t, str)), default=None)
    manifest["finished_at_utc"] = max((t for t in finished if isinstance(t, str)), default=None)
    models = _merged_models(ordered)  # type: ignore[arg-type]
    if models:
        manifest["models"] = models
    else:
        manifest.pop("models", None)
    manifest["usage"] = None
    manifest["error"] = None
    manifest["status"] = MERGING
    manifest["merged_from"] = [
        {"dir": str(s.dir.resolve()), "shard": f"{s.index}/{s.k}"} for s in ordered
    ]
    return manifest
