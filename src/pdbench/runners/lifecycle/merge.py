"""`pdbench merge OUT_DIR SHARD_DIR...`: join the shards of an experiment (`pdbench run CONFIG
--shard i/K`) into one run directory whose rounds.jsonl and aggregates.parquet equal those of an
unsharded run (timestamps aside).

In this order: take OUT_DIR's lock (so a second merge or run into it refuses before either reads
anything); check OUT_DIR holds nothing but what an unfinished merge leaves (its temporary files,
a manifest with status `merging` and the artifacts beside it); read every shard and check it:
completed and not in use, the same config, prompt and persona files and record schema as the
others and as this pdbench (the rules resume uses), every shard of the split once, its manifest's
games those of the plan it owns, every record of its rounds.jsonl a whole record of one of its
games with every round once and in order (`storage.shard_records`), its call log agreeing with
the usage its manifest records. Only then write: the manifest with status `merging`, rounds.jsonl,
llm_calls.jsonl, aggregates.parquet, and last the manifest with status `completed`, usage and
sessions summed over every shard. A merge killed at any moment leaves OUT_DIR either completed or
`merging`, and running the same merge again finishes it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from pdbench.core.config import ExperimentConfig
from pdbench.errors import RunError
from pdbench.runners.lifecycle.session import input_changes, snapshot_changes, usage_summary
from pdbench.runners.science.experiment import ScheduledGame, game_schedule, shard_owner
from pdbench.storage.aggregate import aggregate_held_run_dir, usage_by_game
from pdbench.storage.files import read_json, write_bytes_atomic
from pdbench.storage.record.shard_check import (
    ExpectedGame,
    GameId,
    shard_calls,
    shard_rounds,
    short,
)
from pdbench.storage.rounds_log import JSONL_STAMP_KEY, jsonl_stamp, keeps_columns, keeps_jsonl
from pdbench.storage.run_dir import (
    RunLock,
    check_not_in_use,
    make_run_dir,
    read_manifest,
    remove_artifact,
    spending,
    write_manifest,
)
from pdbench.storage.schema import (
    ARTIFACTS,
    CALLS_FILE,
    LOCK_FILE,
    MANIFEST_FILE,
    ROUNDS_COLUMNS_DIR,
    ROUNDS_FILE,
)

MERGING = "merging"  # a merge's manifest status until every artifact is written
# Manifest keys that differ between the shards of one split (the config and conditions are
# compared on their own); every other key is equal in every shard.
PER_SHARD_KEYS = {
    "output_dir",
    JSONL_STAMP_KEY,
    "config",
    "config_sha256",
    "config_path",
    "overrides",
    "conditions",
    "sessions",
    "started_at_utc",
    "finished_at_utc",
    "usage",
    "models",
    "environment",
    "cache_dir",
    "warnings",
    "error",
    "totals",
    "pdbench_version",
}
# Condition entry keys that differ between shards: the games each played, and what its LLM
# agents were told of the horizon (empty in a shard without games of the condition).
PER_SHARD_CONDITION_KEYS = {"games", "horizon_disclosure"}


@dataclass
class Shard:
    """One shard directory as read: its manifest, config and place in the split."""

    dir: Path
    manifest: dict[str, Any]
    config: ExperimentConfig
    index: int
    k: int


def merge_shards(out_dir: Path, shard_dirs: list[Path]) -> dict[str, Any]:
    """Write the merged run into `out_dir` (new, empty, or left by an unfinished merge);
    returns its manifest. RunError (one line) for anything that does not fit."""
    return merge_into(out_dir, shard_dirs, _merge_locked, ARTIFACTS["experiment"], MANIFEST_FILE)


MergeLocked = Callable[[Path, list[Path], list[Path]], dict[str, Any]]


def merge_into(
    out_dir: Path,
    shard_dirs: list[Path],
    merge_locked: MergeLocked,
    artifacts: Sequence[str],
    manifest_name: str,
) -> dict[str, Any]:
    """The shell of every merge: `out_dir` made and locked, what an unfinished merge left in it
    found (`artifacts`, the merged run's files; `manifest_name`, its manifest), then
    `merge_locked(out_dir, shard_dirs, leftovers)`; a refused merge leaves no directory it
    made."""
    out_dir = Path(out_dir)
    if not shard_dirs:
        raise RunError("merge: give at least one shard directory")
    created = _first_missing(out_dir)
    try:
        make_run_dir(out_dir)
        with RunLock(out_dir):
            leftovers = _leftovers(out_dir, artifacts, manifest_name)
            return merge_locked(out_dir, [Path(d) for d in shard_dirs], leftovers)
    except BaseException:
        if created is not None:  # a refused merge leaves no directory it made (when empty)
            _remove_empty(out_dir, created)
        raise


def _first_missing(path: Path) -> Path | None:
    """The outermost directory of `path` that does not exist yet (None when it exists)."""
    missing = None
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            break
        missing = candidate
    return missing


def _remove_empty(path: Path, up_to: Path) -> None:
    """Remove `path` and its parents up to `up_to` while they are empty."""
    for candidate in (path, *path.parents):
        try:
            candidate.rmdir()
        except OSError:
            return
        if candidate == up_to:
            return


def _leftovers(out_dir: Path, artifacts: Sequence[str], manifest_name: str) -> list[Path]:
    """What an unfinished merge left in `out_dir` (to remove before writing); RunError when
    the directory holds anything else."""
    names = {p.name: p for p in out_dir.iterdir() if p.name != LOCK_FILE}
    ours = [
        p
        for name, p in names.items()
        if name.endswith(".tmp") and any(name.startswith(f".{a}.") for a in artifacts)
    ]
    rest = [name for name in names if names[name] not in ours]
    if rest and manifest_name in rest and _unfinished_merge(out_dir / manifest_name):
        ours += [names[name] for name in rest if name in artifacts]
        rest = [name for name in rest if name not in artifacts]
    if rest:
        raise RunError(
            f"{out_dir}: output directory is not empty (holds {sorted(rest)[0]}); choose a new one"
        )
    return ours


def _unfinished_merge(path: Path) -> bool:
    """Whether a manifest is that of a merge that did not finish."""
    try:
        manifest = read_json(path)
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("status") == MERGING


def _merge_locked(out_dir: Path, shard_dirs: list[Path], leftovers: list[Path]) -> dict[str, Any]:
    shards = [_read_shard(d) for d in shard_dirs]
    by_index = _check_split(shards)
    first = by_index[1]
    cfg = first.config
    schedule = game_schedule(cfg)
    for shard in sorted(shards, key=lambda s: s.index):  # the first shard first
        _check_inputs(shard, first, schedule)
    _check_disclosure(shards)
    agent_facts = {
        cond.name: _agent_facts(cond.agent_a, cond.agent_b) for cond in cfg.experiment.conditions
    }
    games = {
        (g.condition, g.replicate): ExpectedGame(
            g.condition,
            g.replicate,
            shard_owner(g.index, first.k),
            g.seed,
            g.n_rounds,
            g.noise,
            g.horizon.type,
            getattr(g.horizon, "n_rounds", None),
            getattr(g.horizon, "stop_prob", None),
            *agent_facts[g.condition],
        )
        for g in schedule
    }
    matrix = cfg.game.matrix()
    rounds: dict[GameId, list[bytes]] = {}
    calls: dict[GameId, list[bytes]] = {}
    for shard in sorted(shards, key=lambda s: s.index):
        log_path, log_data = _shard_log(shard.dir)
        rounds.update(
            shard_rounds(
                log_path, shard.index, shard.k, games, cfg.run.run_id, matrix, data=log_data
            )
        )
        calls.update(shard_calls(shard.dir / CALLS_FILE, shard.index, games))
        _check_usage(shard)
    _check_players(rounds)
    order = [(g.condition, g.replicate) for g in schedule]
    manifest = _merged_manifest(out_dir, shards, first, schedule)
    for path in leftovers:
        remove_artifact(path)
    write_manifest(out_dir, "experiment", manifest)  # status `merging`: never mistaken for a run
    mode = cfg.run.rounds_log
    if keeps_jsonl(mode):
        write_bytes_atomic(out_dir / ROUNDS_FILE, b"".join(b"".join(rounds[key]) for key in order))
    if keeps_columns(mode):
        from pdbench.storage.record.columns import lines_batch, rewrite_columns
        from pdbench.storage.record.parts import run_origin

        rewrite_columns(
            out_dir,
            (lines_batch(b"".join(rounds[key])) for key in order),
            run_origin(manifest),
            {key: len(rounds[key]) for key in order},
        )
    if any((s.dir / CALLS_FILE).is_file() for s in shards):
        write_bytes_atomic(
            out_dir / CALLS_FILE, b"".join(b"".join(calls.get(key, [])) for key in order)
        )
    usage = usage_summary(usage_by_game(out_dir))
    usage["spent_all_sessions"] = spending(out_dir)
    manifest["usage"] = usage
    if keeps_columns(mode):
        manifest[JSONL_STAMP_KEY] = jsonl_stamp(out_dir)
    aggregate_held_run_dir(out_dir)
    manifest["status"] = "completed"
    write_manifest(out_dir, "experiment", manifest)  # last: the run is complete
    return manifest


def _shard_log(shard_dir: Path) -> tuple[Path, bytes | None]:
    """Where a shard's rounds are (for messages) and, when it keeps them in columns only, the
    records as lines (checked like rounds.jsonl's)."""
    path = shard_dir / ROUNDS_FILE
    if path.is_file():
        return path, None
    from pdbench.storage.record.columns import jsonl_bytes
    from pdbench.storage.record.parts import has_columns

    if has_columns(shard_dir):
        return shard_dir / ROUNDS_COLUMNS_DIR, jsonl_bytes(shard_dir)
    return path, None


def _agent_facts(a: Any, b: Any) -> tuple[tuple[bool, bool], tuple[bool, bool]]:
    """Per side: whether the agent can fall back after invalid replies (an LLM agent), and
    whether it records P(C) (an LLM agent with record_logprobs)."""
    llm = (a.type == "llm", b.type == "llm")
    logprobs = (
        llm[0] and bool(getattr(a, "record_logprobs", False)),
        llm[1] and bool(getattr(b, "record_logprobs", False)),
    )
    return llm, logprobs


def _read_shard(shard_dir: Path) -> Shard:
    """A shard's manifest and config; RunError unless it is a completed experiment shard that
    no process is using."""
    if not shard_dir.is_dir():
        raise RunError(f"{shard_dir}: no such shard directory")
    check_not_in_use(shard_dir)
    manifest = read_manifest(shard_dir, "experiment")
    if manifest.get("status") != "completed":
        raise RunError(
            f"{shard_dir}: shard not completed (status {manifest.get('status')}); resume it first"
        )
    try:
        config = ExperimentConfig.model_validate(manifest.get("config"))
        spec = config.run.shard_of() or (1, 1)
    except (ValidationError, ValueError, TypeError) as exc:
        first = str(exc).splitlines()[0][:120]
        raise RunError(
            f"{shard_dir / MANIFEST_FILE}: config is not a valid experiment config ({first}); "
            "not a manifest pdbench wrote (restore it)"
        ) from None
    return Shard(shard_dir, manifest, config, spec[0], spec[1])


def _check_split(shards: list[Shard]) -> dict[int, Shard]:
    """The shards by index: one split, each shard once, none missing."""
    by_index: dict[int, Shard] = {}
    k = shards[0].k
    for shard in shards:
        if shard.k != k:
            raise RunError(
                f"{shard.dir}: shard {shard.index}/{shard.k} of another split than {k} shards"
            )
        if shard.index in by_index:
            raise RunError(
                f"{shard.dir}: shard {shard.index}/{k} given twice (also {by_index[shard.index].dir})"
            )
        by_index[shard.index] = shard
    missing = [f"{i}/{k}" for i in range(1, k + 1) if i not in by_index]
    if missing:
        raise RunError(f"merge: missing shards {', '.join(missing)}")
    return by_index


def _without_place(config: dict[str, Any]) -> dict[str, Any]:
    """A config snapshot without what differs between shards (shard, output dir)."""
    run = dict(config.get("run") or {})
    run.pop("shard", None)
    run.pop("output_dir", None)
    return {**config, "run": run}


def check_same_inputs(
    where: Path, m: dict[str, Any], first_dir: Path, first: dict[str, Any], manifest_name: str
) -> None:
    """RunError (one line) unless a shard's manifest `m` has the first shard's config, input
    files (prompts, personas) and every key that is not a shard's own."""
    changed = snapshot_changes(_without_place(first["config"]), _without_place(m["config"]))
    if changed:
        raise RunError(f"{where}: a shard of another config than {first_dir} ({changed})")
    edited = input_changes(m, first.get("prompt_files") or {})
    if edited:
        raise RunError(
            f"{where}: {edited} differ from those of {first_dir} (or this pdbench), so its games "
            "were played with other inputs; run the shards again with the same files"
        )
    for key in sorted((set(m) | set(first)) - PER_SHARD_KEYS):
        if m.get(key) != first.get(key):
            raise RunError(f"{where / manifest_name}: {short(key)} differs from {first_dir}'s")


def _check_inputs(shard: Shard, first: Shard, schedule: list[ScheduledGame]) -> None:
    """The shard was played with the same config, prompt and persona files and record schema
    as the first shard (and this pdbench), and its manifest agrees with the plan."""
    check_same_inputs(shard.dir, shard.manifest, first.dir, first.manifest, MANIFEST_FILE)
    m, where = shard.manifest, shard.dir
    cfg = shard.config
    plain = {
        "run_id": cfg.run.run_id,
        "seed": cfg.run.seed,
        "replicates": cfg.experiment.replicates,
        "collapse": cfg.metrics.collapse.model_dump(mode="json"),
    }
    for key, want in plain.items():
        if m.get(key) != want:
            raise RunError(f"{where / MANIFEST_FILE}: {key} disagrees with its config")
    conditions = m.get("conditions") or []
    names = [c.name for c in cfg.experiment.conditions]
    if [c.get("name") for c in conditions] != names:
        raise RunError(f"{where / MANIFEST_FILE}: conditions disagree with its config")
    firsts = {c["name"]: c for c in first.manifest["conditions"]}
    for cond in conditions:
        name = cond["name"]
        planned = [g for g in schedule if g.condition == name]
        owned = [
            {"replicate": g.replicate, "seed": g.seed, "n_rounds": g.n_rounds}
            for g in planned
            if shard_owner(g.index, shard.k) == shard.index
        ]
        problem = ""
        keys = (set(cond) | set(firsts[name])) - PER_SHARD_CONDITION_KEYS
        if any(cond.get(key) != firsts[name].get(key) for key in keys):
            problem = f"differs from {first.dir}'s"
        elif cond.get("games") != owned:
            problem = "games are not those this shard owns in the plan"
        elif planned and cond.get("noise") != planned[0].noise:
            problem = "noise disagrees with its config"
        if problem:
            raise RunError(f"{where / MANIFEST_FILE}: condition {name!r}: {problem}")


def _check_disclosure(shards: list[Shard]) -> None:
    """Every shard that played games of a condition told its LLM agents the same about the
    horizon."""
    seen: dict[str, tuple[Any, Path]] = {}
    for shard in shards:
        for cond in shard.manifest["conditions"]:
            if not cond.get("games"):
                continue
            disclosure = cond.get("horizon_disclosure")
            before = seen.setdefault(cond["name"], (disclosure, shard.dir))
            if before[0] != disclosure:
                raise RunError(
                    f"{shard.dir / MANIFEST_FILE}: condition {cond['name']!r}: "
                    f"horizon_disclosure differs from {before[1]}'s"
                )


def _check_usage(shard: Shard) -> None:
    """The shard's call log still gives the usage its manifest recorded (a call lost, repeated
    or edited would change the merged run's spending)."""
    recorded = shard.manifest.get("usage")
    usage = usage_summary(usage_by_game(shard.dir))
    usage["spent_all_sessions"] = spending(shard.dir)
    if recorded != usage:
        raise RunError(
            f"{shard.dir / CALLS_FILE}: does not give the usage its manifest records (calls "
            "lost, repeated or edited); the shard is damaged"
        )


def _check_players(rounds: dict[GameId, list[bytes]]) -> None:
    """Every game of a condition has the same players (the names its records carry)."""
    seen: dict[str, tuple[str, str, GameId]] = {}
    for key, lines in rounds.items():
        record = orjson.loads(lines[0])
        names = (record["agent_a_name"], record["agent_b_name"])
        before = seen.setdefault(key[0], (*names, key))
        if before[:2] != names:
            raise RunError(
                f"merge: condition {key[0]!r} replicate {key[1]} has other players than "
                f"replicate {before[2][1]}; a shard is damaged"
            )


def _merged_manifest(
    out_dir: Path, shards: list[Shard], first: Shard, schedule: list[ScheduledGame]
) -> dict[str, Any]:
    """The merged run's manifest (status `merging`): the first shard's, with every game of the
    plan, the sessions and model names of every shard, and where it came from."""
    ordered = sorted(shards, key=lambda s: s.index)
    manifest = copy.deepcopy(first.manifest)
    manifest["config"]["run"]["shard"] = None
    manifest["config"]["run"]["output_dir"] = str(out_dir)  # each shard's differs
    manifest["output_dir"] = str(out_dir)
    for cond in manifest["conditions"]:
        planned = [g for g in schedule if g.condition == cond["name"]]
        cond["games"] = [
            {"replicate": g.replicate, "seed": g.seed, "n_rounds": g.n_rounds} for g in planned
        ]
        if planned:
            cond["noise"] = planned[0].noise
        cond["horizon_disclosure"] = next(
            (
                c.get("horizon_disclosure")
                for s in ordered
                for c in s.manifest["conditions"]
                if c["name"] == cond["name"] and c.get("games")
            ),
            cond.get("horizon_disclosure"),
        )
    manifest["totals"] = {"games": len(schedule), "rounds": sum(g.n_rounds for g in schedule)}
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
    models = _merged_models(ordered)
    if models:
        manifest["models"] = models
    manifest["usage"] = None
    manifest["error"] = None
    manifest["status"] = MERGING
    manifest["merged_from"] = [
        {"dir": str(s.dir.resolve()), "shard": f"{s.index}/{s.k}"} for s in ordered
    ]
    return manifest


def _merged_models(shards: list[Shard]) -> dict[str, Any]:
    """The model names every shard listed and saw answer, joined; RunError for an entry that
    is not the {listed: [names] or null, answered: [names]} pdbench writes."""
    out: dict[str, Any] = {}
    for shard in shards:
        models = shard.manifest.get("models")
        if models is None:
            continue
        entries = models.items() if isinstance(models, dict) else [("", None)]
        for key, seen in entries:
            listed = seen.get("listed") if isinstance(seen, dict) else None
            answered = seen.get("answered") if isinstance(seen, dict) else None
            if not (
                isinstance(answered, list)
                and all(isinstance(a, str) for a in answered)
                and (listed is None or isinstance(listed, list))
            ):
                raise RunError(
                    f"{shard.dir / MANIFEST_FILE}: models {short(key)} is not a list of model "
                    "names; not a manifest pdbench wrote (restore it)"
                )
            before = out.get(key) or {"listed": None, "answered": []}
            out[key] = {
                "listed": before["listed"] if before["listed"] is not None else listed,
                "answered": sorted(set(before["answered"]) | set(answered)),
            }
    return out
