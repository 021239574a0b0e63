"""The readers of a run's rounds that every command uses: from the columnar parts when the run
has them, else from rounds.jsonl; whole, one condition at a time, or one game.

The parts are read while rounds.jsonl is absent or still the file the last session left (its
size and modification time, in the manifest): a session killed before its end (the parts lag
its rounds.jsonl) or a rounds.jsonl edited, torn or replaced since is read from rounds.jsonl,
whose checks then name the damage; `resume` rebuilds the parts from it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pdbench.storage.record.fields import AGGREGATE_INPUT_FIELDS
from pdbench.storage.schema import ROUNDS_FILE

# Rounds read at a time by `condition_tables` (at 2**18, 60 MB more was held at 10M rounds).
BATCH_ROUNDS = 1 << 17


def uses_columns(run_dir: Path, manifest: dict[str, Any] | None) -> bool:
    """Whether the run's rounds are read from its columnar parts."""
    from pdbench.storage.record.parts import has_columns
    from pdbench.storage.rounds_log import JSONL_STAMP_KEY, jsonl_stamp

    if not has_columns(run_dir):
        return False
    stamp = jsonl_stamp(run_dir)
    return stamp is None or stamp == (manifest or {}).get(JSONL_STAMP_KEY)


def read_rounds(
    run_dir: Path,
    manifest: dict[str, Any] | None,
    fields: tuple[str, ...] = AGGREGATE_INPUT_FIELDS,
    required: tuple[str, ...] | None = None,
) -> Any:
    """Every round of the run (these record fields, plain types) as one pyarrow Table."""
    if uses_columns(run_dir, manifest):
        from pdbench.storage.record.columns import read_table

        return read_table(Path(run_dir), fields, manifest)
    from pdbench.storage.record.table import read_rounds_table

    return read_rounds_table(Path(run_dir) / ROUNDS_FILE, fields, required)


def _condition_names(manifest: dict[str, Any]) -> list[str]:
    conditions = manifest.get("conditions")
    if not isinstance(conditions, list):
        return []
    return [str(c["name"]) for c in conditions if isinstance(c, dict) and "name" in c]


def condition_tables(
    run_dir: Path,
    manifest: dict[str, Any],
    fields: tuple[str, ...] = AGGREGATE_INPUT_FIELDS,
    decode: bool = True,
) -> Iterator[tuple[str | None, Any]]:
    """(condition, rounds of some of its games) in batches of whole games of about
    `BATCH_ROUNDS` rounds, the conditions in the manifest's order (a condition's batches one
    after the other; one empty table for a condition without games; conditions stored but not
    planned come last), so a caller holds one batch of rounds at a time. Without columnar
    parts, the whole of rounds.jsonl comes as one table, with condition None. `decode=False`
    leaves the parts' dictionary-encoded text as stored (`columns.plain`)."""
    if not uses_columns(run_dir, manifest):
        yield None, read_rounds(run_dir, manifest, fields)
        return
    from pdbench.storage.record.columns import ColumnsReader, empty_table

    reader = ColumnsReader(Path(run_dir), manifest)
    by_condition: dict[str, list[tuple[str, int]]] = {}
    for key in reader.index:
        by_condition.setdefault(key[0], []).append(key)
    names = _condition_names(manifest)
    names += [c for c in by_condition if c not in names]
    for name in names:
        found = False
        for table in reader.games(fields, by_condition.get(name, []), BATCH_ROUNDS, decode):
            found = True
            yield name, table
        if not found:
            yield name, empty_table(fields)


def read_game_rounds(
    run_dir: Path,
    condition: str,
    replicate: int,
    fields: tuple[str, ...] | None = None,
    manifest: dict[str, Any] | None = None,
) -> Any | None:
    """One game's rounds (record fields, plain types, by round) from the columnar parts; None
    when the run has no parts or the game is not there. The parts are checked against
    `manifest` (default: the one beside them)."""
    from pdbench.storage.record.columns import read_game
    from pdbench.storage.record.parts import has_columns

    if not has_columns(run_dir):
        return None
    return read_game(Path(run_dir), condition, replicate, fields, manifest)
