"""`python -m pdbench.ui.serve streamlit run APP ...`: Streamlit's command line, after importing
what the app's first page needs, before the server listens.

A Streamlit server imports the app's modules only when the first browser session runs the
script, so the first visitor of a fresh server waited for pandas, pyarrow, Altair, pydantic and
the app's own modules (about 2 s of CPU on a 2-core machine) before anything was drawn. Imported
here, they are in `sys.modules` when that session starts: the server starts listening that much
later, but the page comes that much sooner. Nothing is read from disk and no Streamlit cache is
touched (the cached loaders are created here but fill on first use, in the running server).

Three more things a fresh server did during its first page, all before the first chart:
- Streamlit's one-time check whether it runs in a Python REPL (`inspect.stack()`, which looks up
  the module of every frame among some 1,400 loaded modules: 0.3-1.3 s on the first element
  drawn). Under `streamlit run` the answer is always no and no warning is printed, so the check
  is marked done (`skip_repl_check`).
- Altair's first chart loads the Vega-Lite JSON schema and builds its validator (about 60 ms more
  than the ~5 ms a validation takes after it); a one-point chart is validated here instead
  (`warm`). Every chart is still validated.
- The file watcher: after each script run Streamlit resolves the path of every loaded module to
  decide what to watch for source edits, for a developer's "rerun on save". `pdbench ui` serves
  finished runs, so the watcher is off unless STREAMLIT_SERVER_FILE_WATCHER_TYPE (or
  `--server.fileWatcherType`) says otherwise.

`pdbench ui` launches the app through this module (`pdbench ui --print-command` shows it).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

# Modules the app's first script run imports, heaviest first; each is imported once here.
WARM_MODULES = (
    "pandas",
    "pyarrow",
    "pyarrow.parquet",  # aggregates.parquet and a game's rounds, read by the first page
    "pyarrow.dataset",
    "altair",
    "narwhals._pandas_like.dataframe",  # how Altair reads a pandas frame (loaded lazily)
    "pdbench.storage.record.reader",  # a game's rounds from the columnar parts
    "streamlit.emojis",  # the favicon's emoji check loads Streamlit's emoji catalogue
    "pdbench.ui.tabs",  # every tab module, and through them the app's own modules
)
CACHE_LOGGER = "streamlit.runtime.caching.cache_data_api"
FILE_WATCHER_ENV = "STREAMLIT_SERVER_FILE_WATCHER_TYPE"


def warm(modules: Sequence[str] = WARM_MODULES) -> None:
    """Import `modules`. The app's `st.cache_data` loaders are declared at import, before the
    runtime exists: Streamlit then warns that it checks their settings against an in-memory
    cache, which is harmless (a loader's cache is made on its first call, in the server), so
    that warning is silenced for the while."""
    import importlib

    importlib.import_module(CACHE_LOGGER)  # Streamlit sets its loggers' levels when made
    cache_logger = logging.getLogger(CACHE_LOGGER)
    level = cache_logger.level
    cache_logger.setLevel(logging.ERROR)
    try:
        for name in modules:
            importlib.import_module(name)
    finally:
        cache_logger.setLevel(level)
    if "altair" in modules:
        _validate_a_chart()


def _validate_a_chart() -> None:
    """Convert and validate a one-point chart: Altair loads the Vega-Lite schema and builds its
    validator on the first chart, which would otherwise be the first page's first chart."""
    import altair as alt

    alt.Chart(alt.Data(values=[{"x": 0}])).mark_point().encode(x="x:Q").to_dict()


def skip_repl_check() -> None:
    """Mark Streamlit's one-time "not run with `streamlit run`" check as done. It walks the
    whole call stack with `inspect.stack()` on the first element a script draws; under
    `streamlit run` it never warns. (A Streamlit without the flag is left as it is.)"""
    from streamlit import delta_generator

    if hasattr(delta_generator, "_use_warning_has_been_displayed"):
        delta_generator._use_warning_has_been_displayed = True  # noqa: SLF001


def main(argv: Sequence[str] | None = None) -> int:
    """Warm the imports, then run Streamlit's command line on `argv` (after a leading
    "streamlit", as in `streamlit run APP ...`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["streamlit"]:
        args = args[1:]
    warm()
    skip_repl_check()
    os.environ.setdefault(FILE_WATCHER_ENV, "none")
    from streamlit.web.cli import main as streamlit_main

    sys.argv = ["streamlit", *args]
    try:
        streamlit_main(prog_name="streamlit")
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
