"""Issue 28: `pdbench report` never writes runnable markup, whatever text the run's artifacts hold.
Small real runs (an experiment with a comparison and a strategy card, a tournament, an
evolution) have every string of every artifact in their directory rewritten with markup:
every string column of every Parquet file (aggregates, strategy_fit, comparisons, leaderboard,
payoff matrix, generations, fixation, the rounds parts), every string of rounds.jsonl, and every
string value of the manifest (names, ids, config values, the published numbers' texts), the
same way everywhere so that names still agree between files. The report must then be written,
and its parsed HTML may hold only the tags and attributes the clean run's report holds: no
`on*` attribute, no `javascript:` URL, no script, iframe, object, embed or srcdoc; the markup is
shown as text. Then each string column alone holding nothing but markup (names no longer agree,
so a reader may refuse): a report or one line, never runnable markup."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.support.cli import run_in_process
from tests.support.configs import REPO, experiment, policy, write_config

from pdbench.runners.science.compare import compare_run
from pdbench.runners.science.profile import profile_run

PAYLOAD = (
    '"\'><iframe srcdoc="<script>alert(1)</script>"></iframe><img src=x onerror=alert(2)>'
    '<script>alert(3)</script><svg onload=alert(4)><a href="javascript:alert(5)">j</a>'
    "<object data=x></object><embed src=x><style>*{}</style>' onmouseover='alert(6)"
)
# Values the readers interpret (not names): kept as they are in the all-strings case.
KEPT = {"scope": None, "kind": None, "status": None, "type": None, "schema_version": None}
URL_ATTRIBUTES = {"href", "src", "xlink:href", "action", "formaction", "data", "poster"}
DANGEROUS_TAGS = {"script", "iframe", "object", "embed", "frame", "frameset", "base", "link"}


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text, of an HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Tags:
    tags = Tags()
    tags.feed(html)
    tags.close()
    return tags


def allowed(clean_html: str) -> set[tuple[str, str]]:
    """(tag, attribute name) pairs of the clean run's report (attribute '' for the tag)."""
    return {
        (tag, name) for tag, attrs in parse(clean_html).tags for name, _ in [("", None), *attrs]
    }


def unsafe(html: str, clean: set[tuple[str, str]]) -> list[str]:
    """What in `html` could run or load something, or is not in the clean report (a URL other
    than the report's own #anchors: no `javascript:`, no `data:`)."""
    found = []
    for tag, attrs in parse(html).tags:
        if tag in DANGEROUS_TAGS or (tag, "") not in clean:
            found.append(f"<{tag}>")
        for name, value in attrs:
            low = (value or "").strip().lower()
            if name.startswith("on") or name == "srcdoc" or (tag, name) not in clean:
                found.append(f"<{tag} {name}=...>")
            if name in URL_ATTRIBUTES and not low.startswith("#"):
                found.append(f"<{tag} {name}={value!r}>")
    if html.count("<style>") != 1:
        found.append("<style> from an artifact")
    return found


def taint_value(value: Any, key: str | None = None) -> Any:
    """`value` with PAYLOAD after every string in it (KEPT keys' strings as they are)."""
    if isinstance(value, str):
        return value if key in KEPT else value + PAYLOAD
    if isinstance(value, list):
        return [taint_value(v, key) for v in value]
    if isinstance(value, dict):
        return {k: taint_value(v, k) for k, v in value.items()}
    return value


def string_columns(path: Path) -> list[str]:
    schema = pq.read_schema(path)
    return [
        f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
    ]


def rewrite_column(path: Path, column: str, change: Any) -> None:
    """Rewrite one string column of a Parquet file (its schema metadata kept)."""
    table = pq.read_table(path)
    values = [None if v is None else change(v) for v in table.column(column).to_pylist()]
    i = table.schema.get_field_index(column)
    table = table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))
    pq.write_table(table.replace_schema_metadata(table.schema.metadata), path)


def parquet_files(run: Path) -> list[Path]:
    return sorted(p for p in run.rglob("*.parquet"))


def taint_run(run: Path) -> None:
    """Every string of every artifact with PAYLOAD after it (KEPT values as they are)."""
    for path in parquet_files(run):
        for column in string_columns(path):
            if column not in KEPT:
                rewrite_column(path, column, lambda v: v + PAYLOAD)
    for path in run.glob("*.json"):
        path.write_text(json.dumps(taint_value(json.loads(path.read_text()))))
    for path in run.rglob("*.jsonl"):
        lines = path.read_text().splitlines()
        path.write_text("".join(json.dumps(taint_value(json.loads(x))) + "\n" for x in lines))


def published_block() -> dict[str, Any]:
    """A published-numbers block as a study recipe records it in the manifest."""
    import yaml  # noqa: PLC0415

    data = yaml.safe_load((REPO / "configs/studies/akata2023.published.yaml").read_text())
    return data.get("published", data)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An experiment (2 conditions x 3 games of 8 rounds, profiled and compared, with published
    numbers in its manifest), a tournament and an evolution, each with its clean report."""
    root = tmp_path_factory.mktemp("markup")
    data = experiment(
        [
            ("TFT_vs_ALLD", policy("TFT"), policy("ALLD")),
            ("GTFT_vs_RANDOM", policy("GTFT"), policy("RANDOM")),
        ],
        horizon={"type": "fixed", "n_rounds": 8},
        replicates=3,
        run={"output_dir": str(root / "experiment")},
    )
    data["run"]["rounds_log"] = "both"
    tournament = (REPO / "configs/tournament.yaml").read_text()
    evolution = (REPO / "configs/evolution.yaml").read_text()
    out = {"experiment": root / "experiment"}
    commands = [["run", str(write_config(data, root / "cfg")), "--no-cache"]]
    for kind, text, extra in (
        ("tournament", tournament, []),
        ("evolution", evolution, ["--seeds", "3"]),
    ):
        cfg = root / f"{kind}.yaml"
        cfg.write_text(
            text.replace("n_rounds: 200", "n_rounds: 10").replace(
                "generations: 100", "generations: 10"
            )
        )
        out[kind] = root / kind
        command = "tournament" if kind == "tournament" else "evolve"
        commands.append([command, str(cfg), "-o", str(out[kind]), *extra])
    for args in commands:
        code = _cli(args)
        assert code == 0, args
    profile_run(out["experiment"])
    compare_run(out["experiment"])
    manifest_path = out["experiment"] / "run_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["published"] = published_block()
    manifest_path.write_text(json.dumps(manifest))
    return out


def _cli(args: list[str]) -> int:
    import sys  # noqa: PLC0415

    from pdbench import cli  # noqa: PLC0415

    old, sys.argv = sys.argv, ["pdbench", *args]
    try:
        cli.main()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = old
    return 0


def report(run: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code, _, err = run_in_process(["report", str(run)], capsys)
    html = (run / "report.html").read_text(encoding="utf-8") if code == 0 else ""
    return code, err, html


@pytest.mark.parametrize("kind", ["experiment", "tournament", "evolution"])
def test_markup_in_every_string_of_every_artifact_is_text(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    code, err, clean_html = report(runs[kind], capsys)
    assert code == 0, err
    clean = allowed(clean_html)
    run = Path(shutil.copytree(runs[kind], tmp_path / kind))
    taint_run(run)
    code, err, html = report(run, capsys)
    assert code == 0, err
    assert unsafe(html, clean) == []
    shown = "".join(parse(html).text)
    assert "<iframe srcdoc=" in shown and "onerror=alert(2)" in shown  # shown as text
    if kind == "experiment":  # the strategy card's agent and strategy names among them
        assert shown.count("<iframe srcdoc=") >= 20


def _columns(runs: dict[str, Path]) -> list[tuple[str, str, str]]:
    return [
        (kind, str(path.relative_to(run)), column)
        for kind, run in runs.items()
        for path in parquet_files(run)
        for column in string_columns(path)
    ]


@pytest.mark.slow  # about 5 s: a report per string column of every artifact
def test_markup_alone_in_any_string_column_is_text_or_one_line(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cleans = {}
    for kind, run in runs.items():
        code, err, html = report(run, capsys)
        assert code == 0, err
        cleans[kind] = allowed(html)
    cases = _columns(runs)
    assert len(cases) > 20
    failures = []
    for kind, name, column in cases:
        run = tmp_path / f"{kind}-{name.replace('/', '_')}-{column}"
        shutil.copytree(runs[kind], run)
        rewrite_column(run / name, column, lambda _v: PAYLOAD)
        code, err, html = report(run, capsys)
        lines = [line for line in err.splitlines() if line.strip()]
        if code == 0:
            bad = unsafe(html, cleans[kind])
            if bad:
                failures.append(f"{kind} {name} {column}: {bad[:3]}")
        elif code != 2 or len(lines) != 1 or "Traceback" in err:
            failures.append(f"{kind} {name} {column}: exit {code}: {err[-300:]}")
    assert failures == []


@pytest.mark.parametrize("module", ["experiment", "svg", "study"])
def test_a_forgotten_escape_is_refused_not_written(
    runs: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    module: str,
) -> None:
    # The page check is the last line of defence: with a module's escaping switched off, the
    # tainted experiment's report is one line naming the markup, and no report.html.
    import importlib  # noqa: PLC0415

    run = Path(shutil.copytree(runs["experiment"], tmp_path / "experiment"))
    taint_run(run)
    (run / "report.html").unlink(missing_ok=True)  # the clean run's
    monkeypatch.setattr(importlib.import_module(f"pdbench.report.{module}"), "text", str)
    code, err, _ = report(run, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("report.html: markup") and "<iframe>" in lines[0]
    assert not (run / "report.html").exists()
