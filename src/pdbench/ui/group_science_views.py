"""The views of a saved group tournament (in the 🏆 Tournament tab) and a saved group evolution
(in the 🧬 Evolution tab), shown when the tab's results picker holds a run of that kind; the
picker keeps the choice in the URL (`tournament=`, `evolution=`) as for pairwise runs.

Group tournament: the game and the groups in words, the leaderboard as dot and whisker and as a
table (rank, ties marked, payoff per round and cooperation with their 95% intervals, games),
and the games played, filtered by a player. Group evolution: the game and the population in
words, the shares over generations of one seed (seed 0, a picker when the file holds several),
the fixation shares with their Wilson intervals beside the exact probabilities, and the payoff
table by composition. Read-only: every number is the artifacts'.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from pdbench.ui import group_science_charts as charts
from pdbench.ui import group_science_tables as gtables
from pdbench.ui.components import text_column_width
from pdbench.ui.group_science_data import GroupEvolution, GroupTournament

PLAYER_KEY = "gtn_player"  # the games table's filter
SEED_KEY = "gev_seed"  # the evolution's seed picker


def _choice[T](key: str, options: Sequence[T]) -> None:
    """Put a select box's kept value back to its first option when this run does not offer it
    (another run was picked)."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0]


def _text_columns(table: pd.DataFrame, labels: dict[str, str]) -> dict[str, Any]:
    """Column configs of a table's text columns, each as wide as its longest text and label
    (so nothing is cut), labelled by `labels`."""
    return {
        column: st.column_config.TextColumn(label, width=text_column_width([*table[column], label]))
        for column, label in labels.items()
        if column in table.columns
    }


def _game(manifest: dict[str, Any]) -> None:
    """The stage game in words, its payoffs in an expander."""
    game = manifest.get("game") or {}
    words = gtables.game_words(game)
    st.markdown(f"**The game.** {words[:1].upper()}{words[1:]}.")
    with st.expander("🎲 The stage game's payoffs, by how many co-players cooperate"):
        st.dataframe(gtables.stage_payoffs(game), hide_index=True)


# --------------------------------------------------------------------------------------------
# Group tournament


def describe_tournament(t: GroupTournament) -> str:
    """One line on a group tournament: players, group size, game, noise, repetitions, seed."""
    m = t.manifest
    totals = m.get("totals") or {}
    return (
        f"**{m.get('run_id', Path(t.path).name)}** · group tournament · {len(t.players)} players "
        f"· groups of {m.get('group_size', '?')} · {(m.get('game') or {}).get('label', '?')} · "
        f"noise {m.get('noise', 0):g} · {m.get('repetitions', '?')} repetitions per group · "
        f"seed {m.get('seed', '?')} · {int(totals.get('games', 0)):,} games, "
        f"{int(totals.get('rounds', 0)):,} rounds"
    )


def show_tournament(t: GroupTournament) -> None:
    """Draw a saved group tournament."""
    st.caption(describe_tournament(t))
    _game(t.manifest)
    st.markdown(f"**The groups.** {gtables.groups_words(t.manifest)}")
    st.markdown("##### 🏅 Leaderboard")
    st.altair_chart(
        charts.interval_chart(
            gtables.leaderboard_chart_frame(t.leaderboard),
            "payoff per round (95% interval)",
            False,
            "games",
        ),
        width="stretch",
    )
    table = gtables.leaderboard_rows(t.leaderboard)
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={
            **_text_columns(
                table,
                {
                    "rank": "rank",
                    "player": "player",
                    "payoff": "payoff per round [95%]",
                    "cooperation": "cooperation [95%]",
                },
            ),
            "games": st.column_config.NumberColumn("games", format="%d"),
            "groups": st.column_config.NumberColumn("groups", format="%d"),
        },
    )
    unit = (t.manifest.get("intervals") or {}).get("unit", "game")
    st.caption(
        "Payoff per round: the mean over a player's games of its payoff per round (a player in "
        "several seats of a game counts their mean), with its 95% interval, the "
        f"{unit} as the unit; cooperation likewise. Players rank by the mean; equal means share "
        "the better rank (marked =, then the next rank is skipped: 1, 1, 3). From "
        "leaderboard.parquet."
    )
    varied = [str(v) for v in t.manifest.get("could_vary") or []]
    if varied:
        st.caption(f"What could vary between a group's games: {'; '.join(varied)}.")
    _games(t)


def _games(t: GroupTournament) -> None:
    st.markdown("##### 🫂 The groups played")
    options = [gtables.EVERY_PLAYER, *t.players]
    _choice(PLAYER_KEY, options)
    left, _ = st.columns([2, 3])
    player = left.selectbox("Games of", options, key=PLAYER_KEY)
    picked = None if player == gtables.EVERY_PLAYER else str(player)
    rows = gtables.games_rows(t.games, picked)
    labels = {
        "members": "members (seat order)",
        "player_payoff": f"{picked}'s payoff / round",
        "payoff_per_seat": "payoff per round, seat by seat",
        "group_cooperation": "group cooperation",
        "group_payoff": "group payoff / round",
    }
    st.dataframe(
        rows,
        hide_index=True,
        width="stretch",
        column_config={
            **_text_columns(rows, labels),
            "game": st.column_config.NumberColumn("game", format="%d"),
            "repetition": st.column_config.NumberColumn("repetition", format="%d"),
            "rounds": st.column_config.NumberColumn("rounds", format="%d"),
        },
    )
    who = "" if picked is None else f" with {picked}"
    st.caption(
        f"{len(rows):,} of {len(t.games):,} games{who}, one row per game (groups.parquet): "
        "each seat's payoff per round in the members' order, and the group's share of C moves "
        "and mean payoff per round."
    )


# --------------------------------------------------------------------------------------------
# Group evolution


def describe_evolution(ev: GroupEvolution) -> str:
    """One line on a group evolution: group size, process, population, seeds, seed."""
    m = ev.manifest
    runs = len(m.get("runs") or []) or len(ev.seeds)
    return (
        f"**{m.get('run_id', Path(ev.path).name)}** · group evolution · groups of "
        f"{m.get('group_size', '?')} · {(m.get('game') or {}).get('label', '?')} · "
        f"{str(m.get('process', '?')).replace('_', ' ')} · {m.get('population_size', '?')} "
        f"individuals · {runs} {'seed' if runs == 1 else 'seeds'} · run seed {m.get('seed', '?')}"
    )


def show_evolution(ev: GroupEvolution) -> None:
    """Draw a saved group evolution."""
    st.caption(describe_evolution(ev))
    _game(ev.manifest)
    st.markdown(f"**The population.** {gtables.population_words(ev.manifest)}")
    seeds = ev.seeds
    seed = seeds[0]
    if len(seeds) > 1:
        _choice(SEED_KEY, seeds)
        left, _ = st.columns([1, 4])
        seed = int(left.selectbox("Seed", seeds, key=SEED_KEY))
    outcome = gtables.seed_outcome(ev.manifest, seed)
    if outcome:
        st.info(outcome, icon="🧭")
    st.markdown(f"##### 📈 Shares over generations · seed {seed}")
    rows = ev.seed_generations(seed)
    st.altair_chart(charts.shares_chart(rows, ev.strategies), width="stretch")
    steps = rows["generation"].nunique()
    thinned = (
        f" {charts.MAX_GENERATIONS:,} of its {steps:,} generations are drawn, evenly spaced."
        if steps > charts.MAX_GENERATIONS
        else ""
    )
    runs = len(ev.manifest.get("runs") or [])
    held = (
        f" generations.parquet holds {len(seeds)} of the {runs} seeds' runs."
        if runs > len(seeds)
        else ""
    )
    st.caption(
        f"Each type's share of the population, generation by generation (generations.parquet, "
        f"seed {seed}).{thinned}{held}"
    )
    if ev.fixation is not None:
        _fixation(ev.fixation)
    _payoffs(ev)


def _fixation(fixation: pd.DataFrame) -> None:
    seeds = int(fixation["seeds"].iloc[0])
    st.markdown(f"##### 🎯 Fixation over {seeds:,} seeds")
    st.altair_chart(
        charts.interval_chart(
            gtables.fixation_chart_frame(fixation),
            "share of seeds it took over (Wilson 95%)",
            True,
            "seeds",
            exact=True,
        ),
        width="stretch",
    )
    table = gtables.fixation_rows(fixation)
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config=_text_columns(
            table,
            {
                "strategy": "strategy",
                "fixed_in": "seeds it took over",
                "simulated": "simulated share [Wilson 95%]",
                "exact": "exact probability",
                "generations": "mean generations to fixation",
            },
        ),
    )
    st.caption(
        "The process ran once per seed on the same payoff table; a seed fixates when one type "
        "is left. The simulated share's 95% interval is the Wilson score interval of k of n "
        "seeds; beside it (◆ in the chart), the fixation probability from the initial counts "
        "computed exactly, where it applies (two types, the pairwise comparison rule or Moran "
        "with a selection intensity; — elsewhere). From fixation.parquet."
    )


def _payoffs(ev: GroupEvolution) -> None:
    st.markdown("##### 🧮 Payoff table by composition")
    table = gtables.payoff_by_composition(ev.payoffs, ev.strategies)
    labels = {c: c for c in table.columns if c != "games"}
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={
            **_text_columns(table, labels),
            "games": st.column_config.NumberColumn("games", format="%d"),
        },
    )
    st.caption(
        "Each group composition's games: a type's payoff per round in it (over its seats and "
        "the games; — where the type is absent). A type's fitness in the process is its "
        "expected payoff in a group drawn from the rest of the population. From "
        "payoff_table.parquet."
    )
