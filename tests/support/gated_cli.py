"""`pdbench` with a gated MockProvider, for tests that must interrupt a run surely in progress.

Run as `python -m tests.support.gated_cli ARGS` (same arguments as `pdbench`; the repository
on PYTHONPATH). Once the file named by $PDBENCH_TEST_GATE_FILE has $PDBENCH_TEST_GATE_LINES
lines or more (e.g. rounds.jsonl with one whole game), every mock call that starts waits until
the process is stopped: the run cannot finish before the test's signal arrives, however slowly
or in whatever order games end. Calls that started earlier, replies and everything else are the
MockProvider's own, so the games written are the ones an ungated run writes.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from pdbench import cli
from pdbench.agents.providers.mock import MockProvider

GATE_FILE = Path(os.environ["PDBENCH_TEST_GATE_FILE"])
GATE_LINES = int(os.environ["PDBENCH_TEST_GATE_LINES"])


def _gate_closed() -> bool:
    try:
        return GATE_FILE.read_bytes().count(b"\n") >= GATE_LINES
    except FileNotFoundError:
        return False


_complete = MockProvider.complete


async def _gated_complete(self: MockProvider, request: Any) -> Any:
    while _gate_closed():
        await asyncio.sleep(0.05)  # cancelled when Ctrl-C stops the run
    return await _complete(self, request)


MockProvider.complete = _gated_complete  # type: ignore[method-assign]

if __name__ == "__main__":
    cli.main()
