"""What a real model does to pdbench's numbers: parse failures per output format, re-prompt
recovery (a conversation turn versus the correction appended to the same user message), the
model's mean P(C) per condition, and throughput, all with SmolLM2-135M-Instruct served by
llama.cpp (the `local` extra), offline.

For each output format (token, json, choice) it writes a temporary copy of configs/ whose agent
file (agents/local_smollm2.yaml) uses that format with log-probabilities, and an experiment of
two personas (cooperative, exploitative) against TFT and ALLD, one game of `--rounds` rounds each,
then times the command a user runs: `pdbench run CONFIG --no-cache` (a whole process, artifacts
written). From the run's rounds.jsonl and llm_calls.jsonl it prints:

- first-attempt parse failures (invalid first replies / LLM decisions), replies that needed the
  lenient reading (not the exact format), truncated replies, and fallback moves;
- recovery: of the decisions whose first reply was invalid, the share a re-prompt saved (the
  run's way: the invalid reply as an assistant turn, the correction as a new user turn);
- recovery the old way, replayed on exactly those decisions: the same correction text appended to
  the round prompt in one user message, up to `max_retries` times, same temperature and server;
- mean P(C) per condition (renormalised over C and D from the answer token's log-probabilities);
- calls/s and tokens/s over the whole command's wall time, and the median call latency.

    uv run python benchmarks/real_model_fidelity.py [--rounds 8] [--formats token,json,choice]
        [--threads 1] [--prompt-cache] [--temperature 0] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from pdbench.agents.providers.base import CompletionRequest
from pdbench.agents.providers.llamacpp import LlamaCppProvider
from pdbench.core.config import LLMAgentConfig
from pdbench.core.parse import correction_message, parse_action

REPO = Path(__file__).resolve().parents[1]
PERSONAS = ("cooperative", "exploitative")
OPPONENTS = ("TFT", "ALLD")


def write_configs(
    root: Path, fmt: str, rounds: int, threads: int, prompt_cache: bool, temperature: float
) -> Path:
    """configs/ copied under `root`, the agent set to `fmt`; returns the experiment file."""
    shutil.copytree(REPO / "configs", root)
    agent_file = root / "agents" / "local_smollm2.yaml"
    agent = yaml.safe_load(agent_file.read_text(encoding="utf-8"))
    agent.update(
        output_format=fmt,
        record_logprobs=True,
        n_threads=threads,
        prompt_cache=prompt_cache or None,
        temperature=temperature,
    )
    agent_file.write_text(yaml.safe_dump(agent, sort_keys=False), encoding="utf-8")
    example = root / "local_llm.yaml"
    data = yaml.safe_load(example.read_text(encoding="utf-8"))
    data["run"]["store_prompts"] = True
    data["horizon"]["n_rounds"] = rounds
    data["experiment"]["replicates"] = 1
    data["experiment"]["conditions"] = [
        {
            "name": f"{persona}_vs_{opponent}",
            "agent_a": {"ref": "agents/local_smollm2.yaml", "overrides": {"persona": persona}},
            "agent_b": {"ref": "agents/policies.yaml", "overrides": {"policy": opponent}},
        }
        for persona in PERSONAS
        for opponent in OPPONENTS
    ]
    example.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return example


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def decisions(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per LLM decision: condition, prompts, attempts, fallback, P(C)."""
    out = []
    for record in rounds:
        for side in ("agent_a", "agent_b"):
            attempts = (record.get("raw_responses") or {}).get(side)
            if not attempts:
                continue
            out.append(
                {
                    "condition": record["condition"],
                    "prompts": record["prompts"][side],
                    "attempts": attempts,
                    "fallback": record[f"{side}_parse_failure"],
                    "action": record[f"{side}_intended_action"],
                    "p_cooperate": record[f"{side}_p_cooperate"],
                }
            )
    return out


async def replay_old_way(
    agent: LLMAgentConfig, failed: list[dict[str, Any]], fmt: str
) -> tuple[int, int]:
    """(recovered, calls): the correction appended to the round prompt, one user message."""
    provider = LlamaCppProvider(agent, None)
    recovered = calls = 0
    try:
        for decision in failed:
            prompt = decision["prompts"]["round"]
            error = decision["attempts"][0]["error"] or "invalid"
            for attempt in range(1, agent.max_retries + 1):
                prompt = prompt.rstrip("\n") + "\n\n" + correction_message(fmt, error)
                reply = await provider.complete(
                    CompletionRequest(
                        system=decision["prompts"]["system"],
                        prompt=prompt,
                        temperature=agent.temperature,
                        max_tokens=agent.max_tokens,
                        seed=attempt,
                        output_format=fmt,
                    )
                )
                calls += 1
                result = parse_action(reply.text, fmt, agent.answer_pattern)
                if result.ok:
                    recovered += 1
                    break
                error = result.error or "invalid"
    finally:
        await provider.aclose()
    return recovered, calls


def measure(fmt: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    config = write_configs(
        work / fmt / "configs", fmt, args.rounds, args.threads, args.prompt_cache, args.temperature
    )
    run_dir = work / fmt / "run"
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pdbench.cli", "run", str(config), "-o", str(run_dir), "--no-cache"],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{fmt}: pdbench run failed:\n{proc.stderr[-2000:]}")
    calls = [c for c in read_jsonl(run_dir / "llm_calls.jsonl") if c["ok"]]
    made = decisions(read_jsonl(run_dir / "rounds.jsonl"))
    first_invalid = [d for d in made if not d["attempts"][0]["valid"]]
    recovered = [d for d in first_invalid if not d["fallback"]]
    agent_data = yaml.safe_load(
        (config.parent / "agents" / "local_smollm2.yaml").read_text(encoding="utf-8")
    )
    agent_data["prompts"] = {
        key: str((config.parent / "agents" / value).resolve())
        for key, value in agent_data["prompts"].items()
    }
    agent = LLMAgentConfig.model_validate(agent_data)
    old_recovered, old_calls = asyncio.run(replay_old_way(agent, first_invalid, fmt))
    per_condition: dict[str, list[float]] = {}
    for d in made:
        if d["p_cooperate"] is not None:
            per_condition.setdefault(d["condition"], []).append(d["p_cooperate"])
    tokens_in = sum(c["input_tokens"] or 0 for c in calls)
    tokens_out = sum(c["output_tokens"] or 0 for c in calls)
    attempts = [a for d in made for a in d["attempts"]]
    return {
        "format": fmt,
        "decisions": len(made),
        "first_invalid": len(first_invalid),
        "lenient": sum(1 for a in attempts if a["valid"] and a.get("exact") is False),
        "truncated": sum(1 for a in attempts if a.get("truncated")),
        "fallbacks": sum(1 for d in made if d["fallback"]),
        "recovered": len(recovered),
        "old_recovered": old_recovered,
        "old_calls": old_calls,
        "mean_p_cooperate": {k: statistics.fmean(v) for k, v in per_condition.items()},
        "cooperation": {
            k: statistics.fmean(
                d["action"] == "C" for d in made if d["condition"] == k and not d["fallback"]
            )
            for k in per_condition
            if any(d["condition"] == k and not d["fallback"] for d in made)
        },
        "calls": len(calls),
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "wall_s": wall,
        "median_latency_s": statistics.median(c["latency_s"] for c in calls) if calls else None,
    }


def share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else f"{part}/0 (-)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--formats", default="token,json,choice")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--prompt-cache", action="store_true")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--keep", action="store_true", help="keep the run directories")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pdbench-fidelity-"))
    try:
        results = [measure(fmt, args, work) for fmt in args.formats.split(",")]
    finally:
        if args.keep:
            print(f"runs kept under {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(
        f"SmolLM2-135M-Instruct, llama.cpp, {args.threads} thread(s), {args.rounds} rounds, "
        f"temperature {args.temperature:g}"
    )
    print(
        f"{'format':7} {'first invalid':>14} {'lenient':>8} {'cut':>4} {'fallbacks':>11} "
        f"{'recovered (turn)':>17} {'recovered (append)':>19} {'calls/s':>8} {'tok/s':>7} "
        f"{'out tok/s':>9} {'median call':>11} {'wall':>7}"
    )
    for r in results:
        print(
            f"{r['format']:7} {share(r['first_invalid'], r['decisions']):>14} {r['lenient']:>8} "
            f"{r['truncated']:>4} {share(r['fallbacks'], r['decisions']):>11} "
            f"{share(r['recovered'], r['first_invalid']):>17} "
            f"{share(r['old_recovered'], r['first_invalid']):>19} "
            f"{r['calls'] / r['wall_s']:>8.2f} {(r['tokens_in'] + r['tokens_out']) / r['wall_s']:>7.0f} "
            f"{r['tokens_out'] / r['wall_s']:>9.1f} {r['median_latency_s'] or 0:>10.2f}s "
            f"{r['wall_s']:>6.1f}s"
        )
    print("\nmean P(C) per condition (and the share of moves that were decided C):")
    for r in results:
        cells = ", ".join(
            f"{k} {v:.3f} ({r['cooperation'].get(k, float('nan')):.2f})"
            for k, v in r["mean_p_cooperate"].items()
        )
        print(f"  {r['format']:7} {cells}")


if __name__ == "__main__":
    main()
