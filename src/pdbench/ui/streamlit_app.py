"""pdbench's Streamlit app: `pdbench ui [RUN_DIR]`, or directly
`streamlit run src/pdbench/ui/streamlit_app.py -- --run-dir <path>`.

The run directory to open comes from (first found) session state key `pdbench_run_dir` (tests),
the `--run-dir` argument after `--`, or the PDBENCH_RUN_DIR environment variable; its kind
(experiment, tournament, evolution) decides which tab comes first. Runs under `data/runs/`,
`data/tournaments/` and `data/evolutions/` (relative to the working directory) are listed too.

Tabs are lazy (`on_change="rerun"`): only the open tab's code runs on each rerun.

The view (tab, run, condition, replicate, the replay's place, the saved tournament and evolution)
is kept in the URL's query parameters by `pdbench.ui.url_state`: read at the start of each run
when it changed, written at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from pdbench.ui import url_state
from pdbench.ui.components import LAST_TAB, AppContext, inject_css
from pdbench.ui.data import RUNS_ROOT, run_kind
from pdbench.ui.tabs import TABS, tab_order
from pdbench.ui.tabs.run_experiment import PENDING_TAB

RUN_DIR_ENV = "PDBENCH_RUN_DIR"
RUN_DIR_STATE = "pdbench_run_dir"
MAIN_TAB = "main_tab"


def parse_run_dir(argv: Sequence[str]) -> str | None:
    """The value of `--run-dir` in `argv` (unknown arguments are ignored)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--run-dir", default=None)
    args, _ = parser.parse_known_args(list(argv))
    return args.run_dir


def resolve_run_dir() -> Path | None:
    """The run directory given at launch: session state, then argv, then the environment."""
    value = (
        st.session_state.get(RUN_DIR_STATE)
        or parse_run_dir(sys.argv[1:])
        or os.environ.get(RUN_DIR_ENV)
    )
    return Path(value).resolve() if value else None


def main() -> None:
    """Draw the page: header and tabs (one module per tab)."""
    st.set_page_config(page_title="pdbench", page_icon="🤝", layout="wide")
    inject_css()
    run_dir = resolve_run_dir()
    ctx = AppContext(run_dir=run_dir, runs_root=RUNS_ROOT)
    tabs = tab_order(run_kind(run_dir) if run_dir else None, run_dir is not None)
    st.markdown("### 🤝 pdbench · iterated Prisoner's Dilemma")
    st.caption(
        "🟢 C = cooperate · 🔴 D = defect · look and feel after Nicky Case's "
        "[The Evolution of Trust](https://ncase.me/trust/)"
    )
    notes = st.container()  # the link's bad or stale parameters, filled in last
    applied = url_state.sync_in([t.key for t in tabs], MAIN_TAB, {t.key: t.label for t in tabs})
    pending = st.session_state.pop(PENDING_TAB, None)
    if pending in TABS and TABS[pending] in tabs:
        st.session_state[MAIN_TAB] = TABS[pending].label
    containers = st.tabs([t.label for t in tabs], key=MAIN_TAB, on_change="rerun")
    shown = tabs[0]
    for tab, container in zip(tabs, containers, strict=True):
        if container.open:
            with container:
                tab.render(ctx)
            st.session_state[LAST_TAB] = tab.label
            shown = tab
        elif tab.on_hidden is not None:
            tab.on_hidden()
    url_state.sync_out(shown.key, applied)
    url_state.show_notes(notes)


main()
