"""The Streamlit app: view, replay and launch iterated Prisoner's Dilemma runs, tournaments and
evolving populations.

`streamlit_app.py` is the entry point; `data.py` holds the run loaders and `games_data.py` the
tournament and evolution loaders, `tables.py` the metric tables, `style.py` the look (emoji,
colors, HTML cards), `charts.py` the Altair charts, `components.py` shared widgets, `launcher.py`
the back end of the Run Experiment tab and `games_launcher.py` that of the Tournament and
Evolution tabs, and `tabs/` one module per tab.
"""
