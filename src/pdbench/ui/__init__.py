"""The Streamlit app: view, replay and launch iterated Prisoner's Dilemma runs, tournaments and
evolving populations.

`streamlit_app.py` is the entry point; `data.py` reads every kind of run directory (cached),
`tables.py` reshapes what it loaded for display, `style.py` holds the look (emoji, colours and
HTML cards, policies' looks taken from `pdbench.agents.policy`), `charts.py` the Altair charts,
`components.py` widgets shared by tabs, `launcher.py` turns forms into configs and runs them with
the library, `presets.py` holds the tournament and evolution forms' defaults and presets, and
`tabs/` one module per tab.
"""
