"""Seeded damage to experiment run directories, for the run-directory fuzz test and benchmark.

A case copies a finished run directory (rounds.jsonl, run_manifest.json, aggregates.parquet,
comparisons.parquet, strategy_fit.parquet) and applies one or two damages: truncate a file at a
random byte, duplicate, delete or swap lines of rounds.jsonl, give a record's field a value of
another type or outside its domain (markup, NaN, a negative round, an unknown condition), edit or
drop a manifest field, flip bytes of a Parquet file, or rewrite one of its columns with markup,
NaN or infinities. Then one reader (`aggregate`, `report`, `compare`, `profile`) runs on it: it
must refuse in one line with exit 2, or succeed with the output of the undamaged directory
(aggregate), escaped markup and no `nan`/`inf` (report), finite p-values in [0, 1] (compare).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

MARKUP = "<img src=x onerror=alert(1)>"
ODD_VALUES: list[Any] = [
    None,
    MARKUP,
    "",
    -1,
    10**9,
    1.5,
    float("nan"),
    "X",
    [],
    {"a": 1},
    True,
]
ROUND_FIELDS = (
    "condition",
    "replicate",
    "round_index",
    "agent_a_action",
    "agent_b_action",
    "agent_a_payoff",
    "agent_b_payoff",
    "agent_a_parse_failure",
    "agent_a_name",
    "schema_version",
)
MANIFEST_EDITS: list[tuple[tuple[Any, ...], Any]] = [
    (("status",), "running"),
    (("status",), MARKUP),
    (("run_id",), MARKUP),
    (("conditions", 0, "games", 0, "n_rounds"), 7),
    (("conditions", 0, "games", 0, "n_rounds"), "10"),
    (("conditions", 0, "games"), None),
    (("conditions", 0, "name"), MARKUP),
    (("conditions",), "x"),
    (("collapse", "k"), "ten"),
    (("intervals", "resamples"), "many"),
    (("seed",), "seven"),
    (("schema_version",), 99),
    (("kind",), "tournament"),
]
COMMANDS = ("aggregate", "report", "compare", "profile")
PARQUETS = ("aggregates.parquet", "comparisons.parquet", "strategy_fit.parquet")


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def damage_rounds(path: Path, rng: random.Random) -> str:
    lines = _lines(path)
    kind = rng.choice(["truncate", "duplicate", "delete", "swap", "edit", "garbage"])
    i = rng.randrange(len(lines))
    if kind == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: rng.randrange(len(data))])
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    elif kind == "delete":
        del lines[i]
    elif kind == "swap":
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "edit":
        try:
            record = json.loads(lines[i])
        except ValueError:
            return "rounds.unreadable"
        if not isinstance(record, dict):
            return "rounds.unreadable"
        field = rng.choice(ROUND_FIELDS)
        record[field] = rng.choice([v for v in ODD_VALUES if v != record.get(field)])
        text = json.dumps(record).replace("NaN", "NaN")
        lines[i] = text.encode() + b"\n"
    else:
        lines.insert(i, rng.choice([b"{}\n", b"not json\n", b"[1,2]\n", b"\xff\xfe\n"]))
    if kind != "truncate":
        path.write_bytes(b"".join(lines))
    return f"rounds.{kind}@{i}"


def _set(data: Any, where: tuple[Any, ...], value: Any) -> None:
    for part in where[:-1]:
        data = data[part]
    data[where[-1]] = value


def damage_manifest(path: Path, rng: random.Random) -> str:
    kind = rng.choice(["truncate", "edit", "edit", "drop"])
    if kind == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: rng.randrange(len(data))])
        return "manifest.truncate"
    try:
        manifest = json.loads(path.read_text())
    except ValueError:  # already damaged by this case
        return "manifest.unreadable"
    if kind == "drop":
        key = rng.choice(sorted(manifest))
        del manifest[key]
        path.write_text(json.dumps(manifest))
        return f"manifest.drop.{key}"
    where, value = rng.choice(MANIFEST_EDITS)
    try:
        _set(manifest, where, value)
    except (KeyError, IndexError, TypeError):
        return "manifest.none"
    path.write_text(json.dumps(manifest))
    return f"manifest.edit.{'.'.join(map(str, where))}"


def damage_parquet(path: Path, rng: random.Random) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        return "parquet.none"
    kind = rng.choice(["truncate", "flip", "column", "column", "delete"])
    if kind == "delete":
        path.unlink()
    elif kind == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: rng.randrange(len(data))])
    elif kind == "flip":
        data = bytearray(path.read_bytes())
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] ^= 0xFF
        path.write_bytes(bytes(data))
    else:
        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError):
            return "parquet.unreadable"
        i = rng.randrange(table.num_columns)
        field = table.schema.field(i)
        n = table.num_rows
        choice = rng.choice(["markup", "nan", "inf", "null"])
        if choice == "markup":
            column = pa.array([MARKUP] * n)
            field = pa.field(field.name, pa.string())
        elif pa.types.is_floating(field.type):
            value = {"nan": float("nan"), "inf": rng.choice([1, -1]) * float("inf")}.get(choice)
            column = pa.array([value] * n, type=field.type)
        else:
            column = pa.nulls(n, type=field.type)
        table = table.set_column(i, field, column)
        pq.write_table(table.replace_schema_metadata(table.schema.metadata), path)
        return f"parquet.{path.name}.{choice}.{field.name}"
    return f"parquet.{path.name}.{kind}"


def damage(run_dir: Path, rng: random.Random) -> list[str]:
    """One or two damages to a run directory; returns what was done (each entry starts with
    the damaged file's kind: rounds, manifest or parquet.<name>)."""
    done = []
    for _ in range(rng.randint(1, 2)):
        target = rng.choice(["rounds", "rounds", "manifest", "parquet", "parquet"])
        if target == "rounds":
            done.append(damage_rounds(run_dir / "rounds.jsonl", rng))
        elif target == "manifest":
            done.append(damage_manifest(run_dir / "run_manifest.json", rng))
        else:
            done.append(damage_parquet(run_dir / rng.choice(PARQUETS), rng))
    return done


def copy_run(base: Path, to: Path) -> Path:
    """A fresh copy of a run directory (no lock file)."""
    shutil.copytree(base, to, ignore=shutil.ignore_patterns("*.lock", ".lock*"))
    return to


class Restorer:
    """A work copy of a run directory that a case damages and the next case gets back whole:
    only the files the damage touched are written again (from memory), so a case costs a write
    or two, not a copy of the directory."""

    FILES = {"rounds": "rounds.jsonl", "manifest": "run_manifest.json"}

    def __init__(self, base: Path, work: Path) -> None:
        self.files = {p.name: p.read_bytes() for p in base.iterdir() if p.is_file()}
        self.work = work
        copy_run(base, work)

    def restore(self, done: list[str]) -> None:
        """Put back the files named by a case's damages (`damage`'s return value)."""
        for what in done:
            kind = what.split(".")[0]
            name = self.FILES.get(kind) or ".".join(what.split(".")[1:3])
            if name in self.files:
                (self.work / name).write_bytes(self.files[name])
