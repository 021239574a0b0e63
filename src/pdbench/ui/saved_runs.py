"""The lists of saved runs of each kind (experiment, tournament, evolution, and the group kinds)
the pickers offer: the directories holding that kind's manifest, newest first, each described
from its manifest. One list may hold several kinds (the Tournament tab's pairwise and group
tournaments)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from pdbench.storage.schema import MANIFEST_FILES
from pdbench.ui import data, tables


def saved_run(directory: str | Path, kind: str) -> tables.SavedRun:
    """The list entry of a directory (status 'missing' or 'not readable' when broken)."""
    path, name = str(Path(directory).resolve()), Path(directory).name
    try:
        m = data.load_manifest(directory, kind)
    except data.RunDirMissing:
        return tables.SavedRun(path, kind, name, "missing", "", "")
    except data.RunLoadError:
        return tables.SavedRun(path, kind, name, f"not a readable {data.KIND_NAMES[kind]}", "", "")
    return tables.SavedRun(
        path,
        kind,
        str(m.get("run_id") or name),
        str(m.get("status") or "unknown"),
        str(m.get("started_at_utc") or ""),
        tables.run_summary(kind, m),
    )


def kind_of(directory: str | Path, kinds: Sequence[str]) -> str:
    """The first of `kinds` whose manifest the directory holds (the first kind when none:
    its entry then says what is wrong)."""
    try:
        return next(k for k in kinds if (Path(directory) / MANIFEST_FILES[k]).is_file())
    except (StopIteration, OSError):  # OSError: a name too long, a directory not searchable
        return kinds[0]


def list_saved(
    kind: str | Sequence[str], roots: Iterable[str | Path], extra: Iterable[str | Path] = ()
) -> list[tables.SavedRun]:
    """Runs of this kind, or of these kinds (directories holding one's manifest), under
    `roots`, newest first, with the `extra` directories on top."""
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    found: dict[str, tables.SavedRun] = {}
    for root in map(Path, roots):
        if root.is_dir():
            for child in root.iterdir():
                held = [k for k in kinds if (child / MANIFEST_FILES[k]).is_file()]
                if child.is_dir() and held:
                    entry = saved_run(child, held[0])
                    found[entry.path] = entry
    listed = sorted(found.values(), key=lambda r: (r.started, r.run_id), reverse=True)
    extras = list({e.path: e for e in (saved_run(p, kind_of(p, kinds)) for p in extra)}.values())
    return _told_apart(extras + [r for r in listed if r.path not in {e.path for e in extras}])


def _told_apart(runs: list[tables.SavedRun]) -> list[tables.SavedRun]:
    """The runs, those sharing a run_id with another one labelled with their directory too
    (relative to the working directory when inside it)."""
    seen = Counter(r.run_id for r in runs)
    cwd = Path.cwd().resolve()
    out = []
    for r in runs:
        if seen[r.run_id] > 1:
            path = Path(r.path)
            r = replace(r, where=str(path.relative_to(cwd) if path.is_relative_to(cwd) else path))
        out.append(r)
    return out
