"""Finding one game's lines in rounds.jsonl without reading the whole file (`ui.game_lines`), and
`data.load_game_rounds` trusting the probes only when they found the whole game. Expected spans
and rounds come from reading every line with json here."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from pdbench.ui import data, game_lines


def _true_lines(path: Path) -> dict[tuple[str, int], list[tuple[int, int, int]]]:
    """(condition, replicate) -> its (round_index, start, end) in file order, from every line."""
    out: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    offset = 0
    for line in path.read_bytes().split(b"\n")[:-1]:  # a trailing partial line is not a round
        if line.strip():
            record = json.loads(line)
            key = (record["condition"], record["replicate"])
            out.setdefault(key, []).append((record["round_index"], offset, offset + len(line)))
        offset += len(line) + 1
    return out


def _write_games(path: Path, lengths: list[int], seed: int = 1) -> None:
    """Games of these lengths one after the other (as pdbench writes them), records of random
    size, a blank line here and there, and a torn last line."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for g, n in enumerate(lengths):
            for k in range(n):
                record = {
                    "condition": f"cond_{g % 7}",
                    "replicate": g // 7,
                    "round_index": k,
                    "pad": "x" * rng.randrange(0, 3000),
                }
                fh.write(json.dumps(record) + "\n")
                if rng.random() < 0.02:
                    fh.write("\n")
        fh.write('{"condition": "torn", "repl')


def test_probes_find_every_game_of_a_file_as_pdbench_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "rounds.jsonl"
    lengths = [random.Random(g).choice([1, 2, 3, 50, 400]) for g in range(60)]
    _write_games(path, lengths)
    truth = _true_lines(path)
    spans = game_lines.probe_spans(path)
    assert set(spans) == set(truth) and len(truth) == 60
    for key, rows in truth.items():
        (span,) = spans[key]
        lines = game_lines.read_span_lines(path, [span], key)
        assert lines is not None
        assert lines.tolist() == sorted([list(r) for r in rows])
        got = [json.loads(b)["round_index"] for b in game_lines.read_lines(path, lines)]
        assert got == list(range(len(rows)))
    assert game_lines.scan_lines(path).keys() == truth.keys()


def test_probes_around_one_game_find_its_block(tmp_path: Path) -> None:
    """Given the order the games are written in, the probes looking for one game find the same
    block as the probes of the whole file."""
    path = tmp_path / "rounds.jsonl"
    _write_games(path, [random.Random(g).choice([1, 2, 50, 300]) for g in range(40)], seed=3)
    every = game_lines.probe_spans(path)
    order = {key: i for i, key in enumerate(_true_lines(path))}  # file order
    for key in order:
        assert game_lines.probe_spans(path, key, order) == {key: every[key]}


def test_probes_on_the_sample_run(sample_run: Path) -> None:
    path = sample_run / "rounds.jsonl"
    truth = _true_lines(path)
    spans = game_lines.probe_spans(path)
    assert len(spans) == len(truth) == 6
    for key, rows in truth.items():
        lines = game_lines.read_span_lines(path, spans[key], key)
        assert lines is not None and lines.tolist() == [list(r) for r in rows]


def test_a_span_holding_another_games_lines_is_refused(tmp_path: Path) -> None:
    """Games whose lines alternate: a probed block holds lines of another game, so it is not
    taken; the scan finds each game's own lines."""
    path = tmp_path / "rounds.jsonl"
    lines = [
        json.dumps({"condition": "c", "replicate": r, "round_index": k})
        for k in range(40)
        for r in (0, 1)
    ]
    path.write_text("\n".join(lines) + "\n")
    spans = game_lines.probe_spans(path)
    assert any(game_lines.read_span_lines(path, s, k) is None for k, s in spans.items())
    scanned = game_lines.scan_lines(path)
    for key, rows in _true_lines(path).items():
        assert scanned[key].tolist() == [list(r) for r in rows]


def test_game_rounds_come_from_probes_around_the_game(
    run_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_scan(path: Path) -> dict:
        raise AssertionError("the whole file was scanned")

    def no_probes_of_every_game(path: str, mtime_ns: int, size: int) -> dict:
        raise AssertionError("the whole file was probed")

    monkeypatch.setattr(game_lines, "scan_lines", no_scan)
    monkeypatch.setattr(data, "_probed_spans", no_probes_of_every_game)
    game = data.load_game_rounds(run_copy, "GTFT_vs_WSLS_noisy", 1)
    assert list(game["round_index"]) == list(range(30))
    assert data.load_round_record(run_copy, "GTFT_vs_WSLS_noisy", 1, 29)["round_index"] == 29


def test_a_game_split_in_two_blocks_is_read_whole(run_copy: Path) -> None:
    """The last five rounds of a game moved into the middle of another game: the probes see
    25 rounds where aggregates.parquet says 30, so every line is scanned and all 30 are read."""
    path = run_copy / "rounds.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    key = ("TFT_vs_ALLD", 0)
    mine = [i for i, line in enumerate(lines) if _key(line) == key]
    moved = [lines[i] for i in mine[-5:]]
    rest = [line for i, line in enumerate(lines) if i not in set(mine[-5:])]
    other = [i for i, line in enumerate(rest) if _key(line) == ("GTFT_vs_WSLS_noisy", 1)]
    at = other[len(other) // 2]
    path.write_text("".join(rest[:at] + moved + rest[at:]))
    spans = game_lines.probe_spans(path)
    probed = game_lines.read_span_lines(path, spans[key], key)
    assert probed is not None and len(probed) == 25  # a block of the game, not all of it
    game = data.load_game_rounds(run_copy, *key)
    assert list(game["round_index"]) == list(range(30))
    want = [json.loads(line)["agent_b_cum_payoff"] for line in lines if _key(line) == key]
    assert list(game["agent_b_cum_payoff"]) == want


def test_a_file_not_in_the_plans_order_is_still_read_right(run_copy: Path) -> None:
    """The manifest lists the conditions in another order than the file has them: the probes
    around the game miss it, the probes of the whole file find it."""
    manifest_path = run_copy / "run_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["conditions"] = manifest["conditions"][::-1]
    manifest_path.write_text(json.dumps(manifest))
    truth = _true_lines(run_copy / "rounds.jsonl")
    for condition, replicate in truth:
        game = data.load_game_rounds(run_copy, condition, replicate)
        want = [
            json.loads(b)["agent_a_cum_payoff"]
            for b in _lines_of(run_copy, truth, (condition, replicate))
        ]
        assert list(game["agent_a_cum_payoff"]) == want


def _lines_of(run_dir: Path, truth: dict, key: tuple[str, int]) -> list[bytes]:
    data_ = (run_dir / "rounds.jsonl").read_bytes()
    return [data_[start:end] for _, start, end in truth[key]]


def _key(line: str) -> tuple[str, int]:
    record = json.loads(line)
    return record["condition"], record["replicate"]


def test_empty_and_blank_files(tmp_path: Path) -> None:
    path = tmp_path / "rounds.jsonl"
    for content in ("", "\n\n", '{"condition": "c", "repl'):
        path.write_text(content)
        assert game_lines.probe_spans(path) == {}
        assert game_lines.scan_lines(path) == {}
    path.write_text("not json\n")
    with pytest.raises(game_lines.Unreadable):
        game_lines.probe_spans(path)
    assert game_lines.scan_lines(path) == {}
    assert game_lines.read_lines(path, np.empty((0, 3), dtype=np.int64)) == []
