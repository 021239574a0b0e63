"""Issue 20, readers of artifacts: `aggregate`, `report`, `compare` and `profile` on a damaged,
truncated or hand-edited run directory refuse in one line naming the file (exit 2, no
traceback) or give the undamaged result: markup from any file is escaped or refused (R03, R04,
R05), NaN and infinities are missing and never a p-value (R07), truncated Parquet is one line
(R09, R11), a torn or invalid round record is named against the manifest's plan (R12, R13).
The seeded fuzzer (tests/support/run_dir_fuzz.py) runs 550 cases here: 500 through the readers'
checks (manifest and rounds.jsonl against the plan; checked Parquet), 50 end to end through the
four commands; benchmarks/fuzz_run_dirs.py runs more end to end."""

from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.support.cli import run_in_process
from tests.support.configs import experiment, llm, policy, write_config
from tests.support.run_dir_fuzz import COMMANDS, MARKUP, Restorer, copy_run, damage

from pdbench.runners.science.compare import compare_run
from pdbench.runners.science.profile import profile_run


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small finished run (3 conditions x 3 games of 6 rounds, one mock LLM) with every
    experiment artifact: aggregates, comparisons, strategy_fit."""
    root = tmp_path_factory.mktemp("base")
    data = experiment(
        [
            ("TFT_vs_ALLD", policy("TFT"), policy("ALLD")),
            ("GTFT_vs_RANDOM", policy("GTFT"), policy("RANDOM")),
            ("LLM_vs_TFT", llm("cooperative"), policy("TFT")),
        ],
        horizon={"type": "fixed", "n_rounds": 6},
        replicates=3,
        run={"output_dir": str(root / "run")},
    )
    config = write_config(data, root / "cfg")
    run = root / "run"
    import sys  # noqa: PLC0415

    from pdbench import cli  # noqa: PLC0415

    old, sys.argv = sys.argv, ["pdbench", "run", str(config), "-o", str(run), "--no-cache"]
    try:
        cli.main()
    except SystemExit as exc:
        assert not exc.code
    finally:
        sys.argv = old
    profile_run(run)
    compare_run(run)
    return run


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run_in_process(args, capsys)


_COMMAND: list[object] = []


def cli_fast(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`pdbench ARGS` as `pdbench.cli.main` runs it (library errors: their lines and exit 2;
    anything else propagates, as a traceback would), with the command tree built once."""
    import sys  # noqa: PLC0415

    import typer  # noqa: PLC0415

    from pdbench import cli as cli_module  # noqa: PLC0415
    from pdbench.errors import PdbenchError  # noqa: PLC0415

    if not _COMMAND:
        _COMMAND.append(typer.main.get_command(cli_module.app))
    command = _COMMAND[0]
    try:
        command.main(args, prog_name="pdbench", standalone_mode=False)  # type: ignore[attr-defined]
        code = 0
    except PdbenchError as exc:
        for line in exc.lines():
            print(line, file=sys.stderr)
        code = exc.exit_code
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def refused_in_one_line(code: int, err: str, name: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert name in lines[0], lines[0]
    return lines[0]


def set_column(path: Path, name: str, values: pa.Array) -> None:
    table = pq.read_table(path)
    i = table.schema.get_field_index(name)
    table = table.set_column(i, pa.field(name, values.type), values)
    pq.write_table(table.replace_schema_metadata(table.schema.metadata), path)


def copy(base: Path, tmp_path: Path) -> Path:
    return copy_run(base, tmp_path / "run")


@pytest.mark.parametrize(
    ("file", "column"),
    [
        ("strategy_fit.parquet", "rank"),
        ("strategy_fit.parquet", "share"),
        ("aggregates.parquet", "n_replicates"),
        ("aggregates.parquet", "agent_a_total_payoff"),
        ("comparisons.parquet", "p_value"),
        ("comparisons.parquet", "n_condition"),
    ],
)
def test_r03_r05_markup_in_a_number_column_is_refused_naming_the_file(
    base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str, column: str
) -> None:
    run = copy(base, tmp_path)
    n = pq.read_metadata(run / file).num_rows
    set_column(run / file, column, pa.array([MARKUP] * n))
    code, _, err = cli(["report", str(run)], capsys)
    line = refused_in_one_line(code, err, file)
    assert repr(column) in line and not (run / "report.html").exists()


def test_r03_markup_in_every_text_column_is_escaped(
    base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = copy(base, tmp_path)
    for file in ("strategy_fit.parquet", "aggregates.parquet", "comparisons.parquet"):
        table = pq.read_table(run / file)
        for field in table.schema:
            if pa.types.is_string(field.type) and field.name not in ("condition", "scope"):
                set_column(run / file, field.name, pa.array([MARKUP] * table.num_rows))
    manifest = json.loads((run / "run_manifest.json").read_text())
    manifest["run_id"] = MARKUP
    (run / "run_manifest.json").write_text(json.dumps(manifest))
    code, _, err = cli(["report", str(run)], capsys)
    assert code == 0, err
    html = (run / "report.html").read_text()
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_r04_markup_in_a_leaderboard_number_column_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A tournament leaderboard as a tournament writes it, with `matches` edited to markup.
    from pdbench.report import tournament_report  # noqa: PLC0415

    run = tmp_path / "t"
    run.mkdir()
    (run / "tournament_manifest.json").write_text(
        json.dumps(
            {"kind": "tournament", "schema_version": 2, "run_id": "t", "status": "completed"}
        )
    )
    pq.write_table(
        pa.table(
            {
                "rank": [1],
                "player": [MARKUP],
                "mean_score_per_round": [2.5],
                "matches": [MARKUP],
                "wins": [1],
                "draws": [0],
                "losses": [0],
                "cooperation_rate": [0.5],
            }
        ),
        run / "leaderboard.parquet",
    )
    with pytest.raises(Exception) as exc:
        tournament_report(run)
    assert "leaderboard.parquet" in str(exc.value) and "'matches'" in str(exc.value)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_r07_nan_and_inf_are_missing_never_a_p_value(
    base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], value: float
) -> None:
    run = copy(base, tmp_path)
    n = pq.read_metadata(run / "aggregates.parquet").num_rows
    set_column(run / "aggregates.parquet", "agent_a_total_payoff", pa.array([value] * n))
    code, out, err = cli(["compare", str(run), "--metric", "agent_a_total_payoff"], capsys)
    assert code == 0, err
    rows = pq.read_table(run / "comparisons.parquet").to_pylist()
    # Every game's value is missing: no difference, no p-value, nothing "significant".
    assert rows and all(r["p_value"] is None and r["difference"] is None for r in rows)
    table = out.replace(str(run), "").lower()
    assert "nan" not in table and "inf" not in table
    code, _, err = cli(["report", str(run)], capsys)
    assert code == 0, err
    body = (run / "report.html").read_text().lower()
    assert ">nan" not in body and ">inf" not in body and ">-inf" not in body


@pytest.mark.parametrize(
    ("file", "command"),
    [
        ("aggregates.parquet", "report"),
        ("aggregates.parquet", "compare"),
        ("strategy_fit.parquet", "report"),
        ("comparisons.parquet", "report"),
    ],
)
def test_r09_r11_a_truncated_parquet_is_one_line_naming_it(
    base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str, command: str
) -> None:
    run = copy(base, tmp_path)
    data = (run / file).read_bytes()
    (run / file).write_bytes(data[: len(data) // 2])
    code, _, err = cli([command, str(run)], capsys)
    refused_in_one_line(code, err, file)


@pytest.mark.parametrize("cut", [1, 30, 200])
def test_r12_a_torn_last_line_is_named_not_aggregated(
    base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], cut: int
) -> None:
    run = copy(base, tmp_path)
    data = (run / "rounds.jsonl").read_bytes()
    (run / "rounds.jsonl").write_bytes(data[:-cut])
    for command in ("aggregate", "profile"):
        code, _, err = cli([command, str(run)], capsys)
        line = refused_in_one_line(code, err, "rounds.jsonl")
        assert "replicate 2" in line and "rounds 0..5" in line  # the last game, 6 rounds


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("agent_a_action", "<img src=x>"),
        ("agent_b_action", "c"),
        ("agent_a_payoff", None),
        ("round_index", 99),
        ("condition", "nope"),
        ("replicate", 7),
    ],
)
def test_r13_an_invalid_record_is_named(
    base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: object
) -> None:
    run = copy(base, tmp_path)
    lines = (run / "rounds.jsonl").read_text().splitlines()
    record = json.loads(lines[2])
    record[field] = value
    lines[2] = json.dumps(record)
    (run / "rounds.jsonl").write_text("\n".join(lines) + "\n")
    code, _, err = cli(["aggregate", str(run)], capsys)
    line = refused_in_one_line(code, err, "rounds.jsonl")
    assert "record 3" in line


def test_r12_a_deleted_game_of_a_completed_run_is_named(
    base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = copy(base, tmp_path)
    lines = (run / "rounds.jsonl").read_text().splitlines(keepends=True)
    (run / "rounds.jsonl").write_text("".join(lines[6:]))  # game 0 of the first condition
    code, _, err = cli(["aggregate", str(run)], capsys)
    assert "no rounds, but the run is marked completed" in refused_in_one_line(
        code, err, "rounds.jsonl"
    )


# --------------------------------------------------------------------------------------------
# The fuzzer
# --------------------------------------------------------------------------------------------

# ~0.1 s a case in-process (Parquet I/O of the readers that succeed); the benchmark
# benchmarks/fuzz_run_dirs.py runs more (PDBENCH_FUZZ_CASES).
CASES = int(os.environ.get("PDBENCH_FUZZ_CASES", "50"))


def check_success(command: str, run: Path, base: Path, out: str) -> None:
    """What a reader that did not refuse must have produced."""
    if command == "aggregate":
        got = pq.read_table(run / "aggregates.parquet").to_pylist()
        want = pq.read_table(base / "aggregates.parquet").to_pylist()
        key = ("condition", "scope", "replicate", "agent_a_total_payoff", "n_rounds")
        shown = [tuple(r.get(k) for k in key) for r in got]
        assert shown == [tuple(r.get(k) for k in key) for r in want], "aggregated damage"
    elif command == "report":
        html = (run / "report.html").read_text()
        assert "<img" not in html, "markup in the report"
        low = html.lower()
        assert ">nan" not in low and ">inf" not in low and ">-inf" not in low
    elif command == "compare":
        for row in pq.read_table(run / "comparisons.parquet").to_pylist():
            p = row["p_value"]
            assert p is None or (math.isfinite(p) and 0.0 <= p <= 1.0)
            assert row["difference"] is not None or p is None
        assert "nan" not in out.replace(str(run), "").lower()


def test_fuzz_damaged_run_dirs_refuse_in_one_line_or_give_the_right_output(
    base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fewer resamples and permutations for compare and profile (what is checked is how they
    # read damaged input, not the precision of their intervals).
    import pdbench.runners.science.compare as compare_module  # noqa: PLC0415
    import pdbench.runners.science.profile as profile_module  # noqa: PLC0415
    from pdbench.core.compare import contrast  # noqa: PLC0415

    monkeypatch.setattr(
        compare_module,
        "contrast",
        lambda a, b, rng, **kw: contrast(a, b, rng, resamples=20, permutations=20, **kw),
    )
    monkeypatch.setattr(profile_module.profile_run, "__defaults__", ("builtin", 5))
    outcomes: dict[str, int] = {}
    for seed in range(CASES):
        rng = random.Random(seed)
        run = copy_run(base, tmp_path / f"c{seed}")
        done = damage(run, rng)
        command = COMMANDS[seed % 3] if seed % 50 else "profile"
        code, out, err = cli_fast([command, str(run)], capsys)
        where = f"case {seed} {done} {command}"
        assert "Traceback" not in err and code in (0, 2), f"{where}: {code} {err[-2000:]}"
        if code == 2:
            lines = [line for line in err.splitlines() if line.strip()]
            assert len(lines) == 1, f"{where}: {err}"
        else:
            check_success(command, run, base, out)
        outcomes[f"{command}:{code}"] = outcomes.get(f"{command}:{code}", 0) + 1
    # Both outcomes happen (the damage is not always fatal, nor always harmless).
    assert outcomes.get("aggregate:0") and outcomes.get("aggregate:2"), outcomes


# The readers' checks alone, on many more damaged directories: what aggregate and profile read
# (manifest, rounds.jsonl against its plan) and what report and compare read (checked Parquet).
READER_CASES = int(os.environ.get("PDBENCH_FUZZ_READER_CASES", "500"))


def game_values(outcomes: list[object]) -> dict[tuple[str, int], tuple[object, ...]]:
    return {
        (o.condition, o.replicate): (  # type: ignore[attr-defined]
            o.a_coop.tolist(),  # type: ignore[attr-defined]
            o.b_coop.tolist(),  # type: ignore[attr-defined]
            o.a_payoffs.tolist(),  # type: ignore[attr-defined]
            o.b_payoffs.tolist(),  # type: ignore[attr-defined]
            o.agent_a_name,  # type: ignore[attr-defined]
        )
        for o in outcomes
    }


@pytest.mark.slow
def test_fuzz_readers_refuse_damage_in_one_line_or_read_the_undamaged_data(
    base: Path, tmp_path: Path
) -> None:
    from pdbench.errors import PdbenchError  # noqa: PLC0415
    from pdbench.report import _numbers, _rows  # noqa: PLC0415
    from pdbench.storage.record.table import (  # noqa: PLC0415
        check_rounds,
        outcomes_from_table,
        planned_lengths,
        read_rounds_table,
    )
    from pdbench.storage.run_dir import read_manifest  # noqa: PLC0415

    def read_games(run: Path) -> dict[tuple[str, int], tuple[object, ...]]:
        manifest = read_manifest(run, "experiment")
        planned_lengths(manifest)
        table = read_rounds_table(run / "rounds.jsonl")
        check_rounds(table, manifest, run / "rounds.jsonl")
        return game_values(outcomes_from_table(table))

    want = read_games(base)
    refused = accepted = 0
    work = Restorer(base, tmp_path / "work")
    run, done = work.work, []
    for seed in range(READER_CASES):
        work.restore(done)
        rng = random.Random(10_000 + seed)
        done = damage(run, rng)
        where = f"case {seed} {done}"
        files = {d.split(".")[1] for d in done if d.startswith("parquet.")}
        try:
            if any(not d.startswith("parquet.") for d in done):
                got = read_games(run)
                # Every game read is an undamaged one; all of them when the run says completed
                # (a run marked running or failed may lack games it has not finished).
                assert all(want.get(k) == v for k, v in got.items()), f"{where}: damage read"
                status = json.loads((run / "run_manifest.json").read_text()).get("status")
                assert status != "completed" or got == want, f"{where}: games missing"
            for name in files & {"aggregates", "comparisons", "strategy_fit"}:
                rows = _rows(run / f"{name}.parquet")
                numbers = set(_numbers(f"{name}.parquet"))
                for row in rows or []:
                    for key, value in row.items():
                        assert not (isinstance(value, float) and not math.isfinite(value)), where
                        assert value != MARKUP or key not in numbers, (
                            f"{where}: markup read into number column {key}"
                        )
            accepted += 1
        except PdbenchError as exc:
            assert "\n" not in str(exc).strip(), f"{where}: {exc}"
            refused += 1
    assert refused and accepted, (refused, accepted)
