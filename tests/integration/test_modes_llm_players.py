"""Tournaments and evolutions with LLM players get what experiments get, from the one engine:
budgets (a clean, resumable stop), llm_calls.jsonl, store_prompts, and resume after kill -9 to
the same artifacts as an uninterrupted run (timestamps aside).

The LLM players are the offline MockProvider with `latency_ms: 20` (a run takes a few seconds and
can be killed mid-way) and `invalid_rate: 0.1` (parse retries happen). The references are
uninterrupted runs with a fresh cache, made once per module.
"""

from __future__ import annotations

import shutil
import signal
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
import yaml
from tests.support.cli import run_process, signal_when_lines, start_process
from tests.support.configs import execute

from pdbench.errors import RunError

REPO = Path(__file__).resolve().parents[2]
N_ROUNDS = 10
REPETITIONS = 3
PARQUET = {
    "tournament": ("matches.parquet", "leaderboard.parquet", "payoff_matrix.parquet"),
    "evolution": ("generations.parquet",),
}
MANIFEST = {"tournament": "tournament_manifest.json", "evolution": "evolution_manifest.json"}


def llm(persona: str, name: str) -> dict[str, Any]:
    mock = {"invalid_rate": 0.1, "latency_ms": 20}
    return {
        "ref": "agents/llm_default.yaml",
        "overrides": {"persona": persona, "name": name, "mock": mock},
    }


def write_config(
    root: Path, kind: str, budget: int | None = None, store_prompts: bool = True
) -> Path:
    """root/cfg/<kind>.yaml beside a copy of configs/ (output_dir is always given)."""
    cfg_dir = root / "cfg"
    if not cfg_dir.exists():
        shutil.copytree(REPO / "configs", cfg_dir)
    data: dict[str, Any] = {
        "run": {
            "run_id": f"{kind}_llm",
            "seed": 99,
            "output_dir": "unused",
            "store_prompts": store_prompts,
            "budget": {"max_calls": budget},
        },
        "game": {"noise": 0.05},
        "horizon": {"type": "fixed", "n_rounds": N_ROUNDS},
    }
    if kind == "tournament":
        players = ["ALLD", "TFT", llm("tit_for_tat", "mock-tft"), llm("cooperative", "mock-coop")]
        data["tournament"] = {"players": players, "repetitions": REPETITIONS}
    else:
        data["evolution"] = {
            "process": "eliminate_clone",
            "eliminate": 1,
            "generations": 8,
            "repetitions": REPETITIONS,
            "population": [
                {"player": "ALLD", "count": 3},
                {"player": "TFT", "count": 3},
                {"player": llm("tit_for_tat", "mock-tft"), "count": 2},
            ],
        }
    path = cfg_dir / f"{kind}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


# Matches with an LLM player (these are logged): tournament: every pair but ALLD-TFT; evolution
# pool: (ALLD, llm), (TFT, llm), (llm, llm).
LOGGED = {"tournament": 5 * REPETITIONS, "evolution": 3 * REPETITIONS}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_bytes().splitlines():
        try:
            out.append(orjson.loads(line))
        except orjson.JSONDecodeError:  # a line torn by kill -9
            continue
    return out


def artifacts(run_dir: Path, kind: str) -> dict[str, Any]:
    """Everything a run wrote that must not depend on interruptions (timestamps aside)."""
    out: dict[str, Any] = {
        name: pq.read_table(run_dir / name).to_pylist() for name in PARQUET[kind]
    }
    out["rounds"] = [
        {k: v for k, v in rec.items() if k != "timestamp_utc"}
        for rec in read_jsonl(run_dir / "rounds.jsonl")
    ]
    manifest = orjson.loads((run_dir / MANIFEST[kind]).read_bytes())
    out["manifest"] = {
        k: manifest.get(k) for k in ("config_sha256", "totals", "final_counts", "fixated")
    }
    return out


@pytest.fixture(scope="module", params=["tournament", "evolution"])
def reference(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    kind = request.param
    root = tmp_path_factory.mktemp(f"reference_{kind}")
    out = root / "out"
    execute(write_config(root, kind), output_dir=out, cache_dir=root / "cache", concurrency=4)
    return kind, out


def test_llm_calls_and_logged_matches(reference: Any) -> None:
    kind, out = reference
    rounds = read_jsonl(out / "rounds.jsonl")
    games = {(r["condition"], r["replicate"]) for r in rounds}
    assert len(games) == LOGGED[kind] and len(rounds) == LOGGED[kind] * N_ROUNDS
    assert all("mock-" in condition for condition, _ in games)  # policy matches: not logged
    calls = read_jsonl(out / "llm_calls.jsonl")
    assert calls and not any(c["cached"] for c in calls)
    # Counted independently: every attempt recorded in the rounds is one logged call.
    attempts = sum(len(v) for r in rounds for v in (r.get("raw_responses") or {}).values())
    assert attempts == sum(1 for c in calls if c["ok"]) and attempts > len(games) * N_ROUNDS
    assert {(c["condition"], c["replicate"]) for c in calls} == games
    manifest = orjson.loads((out / MANIFEST[kind]).read_bytes())
    assert manifest["status"] == "completed" and manifest["kind"] == kind
    assert manifest["usage"]["total"]["llm_calls"] == len(calls)
    llm_rounds = [r for r in rounds if "prompts" in r]
    assert len(llm_rounds) == len(rounds)  # store_prompts: true
    sides = {side for r in rounds for side in r["prompts"]}
    assert sides <= {"agent_a", "agent_b"} and "tit_for_tat" in str(rounds[0]["prompts"]).lower()


@pytest.mark.parametrize("kind", ["tournament", "evolution"])
def test_store_prompts_false_keeps_only_hashes(tmp_path: Path, kind: str) -> None:
    cfg = write_config(tmp_path, kind, store_prompts=False)
    execute(cfg, output_dir=tmp_path / "out", cache_dir=tmp_path / "cache")
    rounds = read_jsonl(tmp_path / "out" / "rounds.jsonl")
    assert rounds and not any("prompts" in r for r in rounds)
    attempts = [a for r in rounds for side in r["raw_responses"].values() for a in side]
    assert all(len(a["prompt_sha256"]) == 64 for a in attempts)


def test_budget_stops_cleanly_and_a_resume_completes(tmp_path: Path, reference: Any) -> None:
    kind, ref_out = reference
    cfg = write_config(tmp_path, kind, budget=40)
    out, cache = tmp_path / "out", tmp_path / "cache"
    with pytest.raises(RunError) as info:
        execute(cfg, output_dir=out, cache_dir=cache, concurrency=2)
    message = str(info.value)
    assert "max_calls=40" in message and f"pdbench resume {out}" in message
    manifest = orjson.loads((out / MANIFEST[kind]).read_bytes())
    assert manifest["status"] == "stopped"
    calls = read_jsonl(out / "llm_calls.jsonl")
    # Calls that reached the provider: at most the budget (cancelled in-flight ones included).
    assert sum(1 for c in calls if not c["cached"] and not c.get("cancelled")) <= 40
    for name in PARQUET[kind]:
        assert not (out / name).exists()  # nothing computed from an incomplete set of games

    cfg.write_text(cfg.read_text().replace("max_calls: 40", "max_calls: null"))
    done = run_process(["resume", str(out), "--cache-dir", str(cache)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert artifacts(out, kind) == artifacts(ref_out, kind)


@pytest.mark.slow
def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path: Path, reference: Any) -> None:
    kind, ref_out = reference
    cfg = write_config(tmp_path, kind)
    out, cache = tmp_path / "out", tmp_path / "cache"
    command = "tournament" if kind == "tournament" else "evolve"
    args = [command, str(cfg), "-o", str(out), "--cache-dir", str(cache), "--concurrency", "2"]
    rounds = out / "rounds.jsonl"
    signal_when_lines(start_process(args, tmp_path), rounds, N_ROUNDS, signal.SIGKILL)
    manifest = orjson.loads((out / MANIFEST[kind]).read_bytes())
    assert manifest["status"] == "running"  # nobody could write anything else
    kept = {(r["condition"], r["replicate"]) for r in read_jsonl(rounds)}
    assert 1 <= len(kept) < LOGGED[kind]

    done = run_process(["resume", str(out), "--cache-dir", str(cache)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert artifacts(out, kind) == artifacts(ref_out, kind)
    manifest = orjson.loads((out / MANIFEST[kind]).read_bytes())
    assert [s["resumed"] for s in manifest["sessions"]] == [False, True]
    assert manifest["status"] == "completed"
