"""The Streamlit app: view, replay and launch iterated Prisoner's Dilemma runs.

`streamlit_app.py` is the entry point; `data.py` holds every loader, `tables.py` the metric
tables, `style.py` the look (emoji, colors, HTML cards), `charts.py` the Altair charts,
`components.py` shared widgets, `launcher.py` the back end of the Run Experiment tab, and
`tabs/` one module per tab.
"""
