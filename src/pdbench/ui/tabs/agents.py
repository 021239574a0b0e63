"""👥 Agents: every agent seen in the saved experiment runs, and agents compared across runs.

An LLM agent is its model, persona and prompt version; a policy agent its policy and parameters
(`core/agents.py`). Each appearance (an agent in one condition of one run, on one side) shows its
profile as the run's artifacts hold it: cooperation, payoff, memory-one probabilities and
Fontana's dimensions with their 95% intervals over games (aggregates.parquet) and the strategy
card (strategy_fit.parquet). Two or more appearances are put side by side; each one after the
first gets the difference of the headline metrics with its interval when both faced the same
opponent design (`storage.agents.compare_appearances`, the function behind `pdbench compare
--across-runs`: the same numbers), else the page says what differs.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from pdbench.core.agents import difference_text, interval_text
from pdbench.storage.agents import (
    Appearance,
    StrategyCard,
    compare_appearances,
    pairs,
    scan_runs,
)
from pdbench.ui import data, saved_runs
from pdbench.ui.components import AppContext, text_column_width

LABEL = "👥 Agents"
KEY = "agents"  # the tab's name in the session state (e.g. a pending tab switch)
POSITION = 6  # its place among the tabs, left to right
PICKED = "ag_picked"  # the appearances picked (keys): the multiselect's state
KEPT = "ag_kept"  # the same, under a plain key Streamlit keeps while another tab is open
AGENT = "ag_agent"
ALL = "(every agent)"


def _stamp(path: str) -> tuple[int, ...]:
    """Modification times of the files an appearance is read from (the cache key)."""
    out = []
    for name in ("run_manifest.json", "aggregates.parquet", "strategy_fit.parquet"):
        try:
            out.append((Path(path) / name).stat().st_mtime_ns)
        except OSError:
            out.append(0)
    return tuple(out)


@st.cache_data(show_spinner="Reading the saved runs…", max_entries=4)
def _scan(paths: tuple[str, ...], stamps: tuple[tuple[int, ...], ...]) -> tuple[list, list]:
    del stamps  # cache key only
    return scan_runs(paths)


def _cell(text: str) -> str:
    """A table cell: a lone '-' (no value) as a dash Markdown does not turn into a bullet."""
    return "—" + text[1:] if text == "-" or text.startswith("- ") else text


def _plain(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _card_text(card: StrategyCard | None, note: str | None) -> str:
    if card is None:
        return note or "no strategy card for this agent"
    if card.verdict:
        return f"no strategy fits (closest {card.strategy})"
    share = (
        ""
        if card.share is None
        else f" · share {interval_text(card.share, card.share_low, card.share_high)}"
    )
    ties = "".join(f" = {t}" for t in card.ties)
    return f"{card.strategy}{ties}{share}"


def _agents_table(appearances: list[Appearance]) -> pd.DataFrame:
    rows: dict[str, dict[str, object]] = {}
    for a in appearances:
        row = rows.setdefault(
            a.identity.key,
            {
                "agent": a.identity.label,
                "kind": a.identity.kind,
                "runs": set(),
                "appearances": 0,
                "games": 0,
            },
        )
        row["runs"].add(a.run_label)  # type: ignore[union-attr]
        row["appearances"] = int(row["appearances"]) + 1  # type: ignore[call-overload]
        row["games"] = int(row["games"]) + a.n_games  # type: ignore[call-overload]
    for row in rows.values():
        row["runs"] = ", ".join(sorted(row["runs"]))  # type: ignore[arg-type]
    return pd.DataFrame(list(rows.values()))


def _side_by_side(picked: list[Appearance]) -> pd.DataFrame:
    """Metrics as rows, the picked appearances as columns (mean [95% interval])."""
    columns = [f"({i + 1}) {a.identity.label} — {a.where}" for i, a in enumerate(picked)]
    rows: list[list[str]] = [
        ["opponent", *(a.design["opponent"] for a in picked)],
        ["games", *(str(a.n_games) for a in picked)],
    ]
    for j, value in enumerate(picked[0].profile):
        rows.append(
            [
                value.label,
                *(
                    _cell(interval_text(p.mean, p.low, p.high))
                    for p in (a.profile[j] for a in picked)
                ),
            ]
        )
    rows.append(["strategy card", *(_card_text(a.card, a.card_note) for a in picked)])
    return pd.DataFrame(rows, columns=["metric", *columns]).set_index("metric")


def _default(appearances: list[Appearance]) -> list[str]:
    """Two appearances of the first agent seen in two runs (an LLM agent first): its first
    pair with the same design, else its first pair."""
    found = pairs(appearances)
    for _, _, matched in sorted(found, key=lambda p: p[0].kind != "llm"):
        same = [(a, b) for a, b in matched if a.design_equal(b)] or matched
        if same:
            return [same[0][0].key, same[0][1].key]
    return []


def render(ctx: AppContext) -> None:
    """Draw the tab."""
    given = ctx.run_dir is not None and data.run_kind(ctx.run_dir) == "experiment"
    runs = saved_runs.list_saved("experiment", [ctx.runs_root], [ctx.run_dir] if given else [])
    if not runs:
        st.info(f"No experiment runs yet under `{ctx.runs_root}/`.", icon="🗂️")
        return
    # oldest first (by start time, whatever the list's order): later runs minus earlier ones
    paths = tuple(r.path for r in sorted(runs, key=lambda r: (r.started, r.run_id, r.path)))
    appearances, problems = _scan(paths, tuple(_stamp(p) for p in paths))
    st.markdown("#### 👥 Every agent seen in the saved runs")
    st.caption(
        "An LLM agent is its model, persona and prompt version (a hash of its prompt files and "
        "prompt settings); a policy agent is its policy and parameters. Experiment runs only."
    )
    for line in problems:
        st.warning(f"Left out: {line}", icon="⚠️")
    if not appearances:
        return
    table = _agents_table(appearances)
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={  # the text columns as wide as their longest text: nothing cut
            name: st.column_config.TextColumn(width=text_column_width(table[name]))
            for name in ("agent", "runs")
        },
    )

    st.markdown("#### ⚖️ Side by side")
    by_key = {a.key: a for a in appearances}
    labels = {a.identity.key: a.identity.label for a in appearances}
    agent = st.selectbox("Agent", [ALL, *labels], key=AGENT, format_func=lambda k: labels.get(k, k))
    options = [a.key for a in appearances if agent == ALL or a.identity.key == agent]
    if PICKED not in st.session_state:  # first drawn, or forgotten while another tab was open
        st.session_state[PICKED] = st.session_state.get(KEPT, _default(appearances))
    st.session_state[PICKED] = [k for k in st.session_state[PICKED] if k in by_key]
    picked_keys = st.multiselect(
        "Appearances (an agent in one condition of one run; the first is the baseline)",
        list(dict.fromkeys([*st.session_state[PICKED], *options])),
        key=PICKED,
        format_func=lambda k: (
            f"{by_key[k].identity.label} — {by_key[k].where} (vs {by_key[k].design['opponent']})"
        ),
        placeholder="Pick two or more",
    )
    st.session_state[KEPT] = picked_keys
    picked = [by_key[k] for k in picked_keys]
    if len(picked) < 2:
        st.info("Pick two or more appearances to put them side by side.", icon="👆")
        if picked:
            st.table(_side_by_side(picked))
        return
    st.table(_side_by_side(picked))
    st.caption(
        "Means over games with 95% intervals (games as the unit), as the runs' aggregates hold them."
    )
    for verdict in {a.card.verdict for a in picked if a.card is not None and a.card.verdict}:
        st.caption(f"Strategy card: {verdict}")
    _differences(picked)


def _differences(picked: list[Appearance]) -> None:
    st.markdown("#### ➖ Differences (each minus the first)")
    first = picked[0]
    for i, other in enumerate(picked[1:], start=2):
        comparison = compare_appearances(first, other)
        title = f"({i}) {other.where}  minus  (1) {first.where}"
        if not comparison.same_design:
            st.warning(
                f"{title}: the designs differ ({'; '.join(comparison.differences)}), so no "
                "difference is given.",
                icon="⚖️",
            )
            continue
        st.markdown(f"**{title}** · same opponent design")
        table = pd.DataFrame(
            [
                {
                    "metric": mc.label,
                    "first mean": _cell(_plain(mc.result.baseline_mean)),
                    "this mean": _cell(_plain(mc.result.condition_mean)),
                    "difference [95% CI]": _cell(difference_text(mc.result)),
                    "p (permutation)": "—"
                    if mc.result.p_value is None
                    else f"{mc.result.p_value:.4f}",
                }
                for mc in comparison.contrasts
            ]
        ).set_index("metric")
        st.table(table)
    st.caption(
        "Difference of means over games, 95% interval: the hull of the bootstrap over games and "
        "Newcombe's MOVER interval, as `pdbench compare` gives within a run; p not adjusted. "
        "The same numbers as `pdbench compare RUN_DIR RUN_DIR --across-runs`."
    )
