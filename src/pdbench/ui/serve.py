"""`python -m pdbench.ui.serve streamlit run APP ...`: Streamlit's command line, after importing
what the app's first page needs, before the server listens.

A Streamlit server imports the app's modules only when the first browser session runs the
script, so the first visitor of a fresh server waited for pandas, pyarrow, Altair, pydantic and
the app's own modules (about 2 s of CPU on a 2-core machine) before anything was drawn. Imported
here, they are in `sys.modules` when that session starts: the server starts listening that much
later, but the page comes that much sooner. Nothing is read from disk and no Streamlit cache is
touched (the cached loaders are created here but fill on first use, in the running server).

`pdbench ui` launches the app through this module (`pdbench ui --print-command` shows it).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

# Modules the app's first script run imports, heaviest first; each is imported once here.
WARM_MODULES = (
    "pandas",
    "pyarrow",
    "altair",
    "streamlit.emojis",  # the favicon's emoji check loads Streamlit's emoji catalogue
    "pdbench.ui.tabs",  # every tab module, and through them the app's own modules
)
CACHE_LOGGER = "streamlit.runtime.caching.cache_data_api"


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


def main(argv: Sequence[str] | None = None) -> int:
    """Warm the imports, then run Streamlit's command line on `argv` (after a leading
    "streamlit", as in `streamlit run APP ...`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["streamlit"]:
        args = args[1:]
    warm()
    from streamlit.web.cli import main as streamlit_main

    sys.argv = ["streamlit", *args]
    try:
        streamlit_main(prog_name="streamlit")
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
